"""Kahuna self-play on Ray RLlib (new API stack), and export of RLlib checkpoints to the agent format.

Optional: needs the ``rllib`` extra (``pip install -e ".[rllib]"``).  This
package imports without ray: the typed config (:class:`RLlibConfig`,
:func:`load_rllib_config`) and the errors are always available; the names
that need ray (:func:`train`, :func:`resume`, :func:`build_ppo_config`,
:func:`export_checkpoint`, :class:`KahunaMultiAgentEnv`,
:class:`KahunaRLModule`) are imported on first use and raise
:class:`RLlibNotInstalledError`, naming the install command, when ray is
missing.  Command line: ``kahuna-rllib`` (:mod:`training.rllib.cli`); user
guide: ``docs/RLLIB.md``.

Modules by role: ``config`` (the typed config and the one table from the
``ppo:`` keys, kahuna-train's names, to RLlib's), ``algorithm`` (RLlib's
``PPOConfig`` built from it), ``connect`` (local Ray or a cluster, probed first), ``env``, ``module``,
``learner`` and ``batched_runner`` (what RLlib runs), ``league`` and
``callbacks`` (snapshot slots, PFSP, the hooks and the driver's pushes to the
EnvRunners), ``progress`` (an iteration's metrics row and checks), ``loop``
(the run, resume, checkpoints), ``train`` (the entry the CLI calls),
``export``.
"""

from __future__ import annotations

import importlib
from typing import Any

from training.rllib.config import ConfigError, RLlibConfig, load_rllib_config, rllib_config_from_dict
from training.rllib.errors import (
    INSTALL_HINT,
    IncompatibleCheckpointError,
    RayConnectionError,
    RLlibNotInstalledError,
    TrainingError,
    require_ray,
)

_LAZY = {
    "train": "training.rllib.loop",
    "resume": "training.rllib.loop",
    "RunResult": "training.rllib.loop",
    "build_ppo_config": "training.rllib.algorithm",
    "connect_ray": "training.rllib.connect",
    "export_checkpoint": "training.rllib.export",
    "KahunaMultiAgentEnv": "training.rllib.env",
    "KahunaRLModule": "training.rllib.module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'training.rllib' has no attribute {name!r}")


__all__ = [
    "INSTALL_HINT",
    "ConfigError",
    "IncompatibleCheckpointError",
    "KahunaMultiAgentEnv",
    "KahunaRLModule",
    "RLlibConfig",
    "RLlibNotInstalledError",
    "RayConnectionError",
    "RunResult",
    "TrainingError",
    "build_ppo_config",
    "connect_ray",
    "export_checkpoint",
    "load_rllib_config",
    "require_ray",
    "resume",
    "rllib_config_from_dict",
    "train",
]
