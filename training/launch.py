"""The console scripts of the training layer, started only once their extra is installed.

``pip install kahuna-rl`` installs the environment alone; the trainer and its tools need the ``train``
extra (torch).  Each entry point here checks that first, so a missing extra is one line and exit
code 2 (:func:`kahuna_env.cli.require_extra`) instead of a traceback, then imports the tool and runs
its ``main`` (a closed output pipe ends it quietly: :func:`kahuna_env.cli.quiet_on_closed_pipe`).
This module imports nothing above the environment itself.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import MutableMapping, Sequence

from kahuna_env.cli import quiet_on_closed_pipe, require_extra


def _launch(argv: Sequence[str] | None, module: str, program: str, extra: str, *needs: str) -> int:
    require_extra(program, extra, *needs)
    return quiet_on_closed_pipe(importlib.import_module(module).main)(argv)


WAIT_POLICY = "OMP_WAIT_POLICY"
"""OpenMP's wait policy, read once when torch loads: ``PASSIVE`` threads sleep while they wait, not spin."""


def passive_threads(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy; returns whether it set it.

    Torch's OpenMP threads spin while they wait for each other; beside other work on the same
    cores they spin against a descheduled sibling and a run collapses (docs/MACHINES.md).  It must
    happen before torch loads: ``kahuna-train`` does it first thing (a script that imports torch
    itself sets the variable in its environment instead).  The collection workers inherit it.
    """
    if environ.get(WAIT_POLICY, "").strip():
        return False
    environ[WAIT_POLICY] = "PASSIVE"
    return True


def train(argv: Sequence[str] | None = None) -> int:
    """``kahuna-train`` (:mod:`training.cli`): needs the ``train`` extra; torch's threads wait passively."""
    passive_threads()
    return _launch(argv, "training.cli", "kahuna-train", "train", "torch", "yaml")


def ship(argv: Sequence[str] | None = None) -> int:
    """``kahuna-ship`` (:mod:`training.tools.ship`): needs the ``train`` extra."""
    return _launch(argv, "training.tools.ship", "kahuna-ship", "train", "torch", "yaml")


def exploit(argv: Sequence[str] | None = None) -> int:
    """``kahuna-exploit`` (:mod:`training.tools.exploit`): needs the ``train`` extra."""
    return _launch(argv, "training.tools.exploit", "kahuna-exploit", "train", "torch", "yaml")


def distill(argv: Sequence[str] | None = None) -> int:
    """``kahuna-distill`` (:mod:`training.tools.distill`): needs the ``train`` extra."""
    return _launch(argv, "training.tools.distill", "kahuna-distill", "train", "torch")


def export(argv: Sequence[str] | None = None) -> int:
    """``kahuna-export`` (:mod:`training.tools.export`): needs the ``train`` extra (``--format onnx``: ``export``)."""
    return _launch(argv, "training.tools.export", "kahuna-export", "train", "torch")


def rllib(argv: Sequence[str] | None = None) -> int:
    """``kahuna-rllib`` (:mod:`training.rllib.cli`): needs the ``rllib`` extra (torch here; Ray only once it trains)."""
    return _launch(argv, "training.rllib.cli", "kahuna-rllib", "rllib", "torch", "yaml")
