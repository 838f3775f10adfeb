"""The console scripts of the training layer, started only once their extra is installed.

``pip install kahuna-rl`` installs the environment alone; the trainer and its tools need the ``train``
extra (torch).  Each entry point here checks that first, so a missing extra is one line and exit
code 2 (:func:`kahuna_env.cli.require_extra`) instead of a traceback, then imports the tool and runs
its ``main``.  This module imports nothing above the environment itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from kahuna_env.cli import require_extra


def _launch(argv: Sequence[str] | None, module: str, program: str, extra: str, *needs: str) -> int:
    require_extra(program, extra, *needs)
    return importlib.import_module(module).main(argv)


def train(argv: Sequence[str] | None = None) -> int:
    """``kahuna-train`` (:mod:`training.cli`): needs the ``train`` extra."""
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
