"""Self-play PPO training and its tools for Kahuna (needs torch), by role (docs/ARCHITECTURE.md):

* :mod:`training.ppo` — the trainer (``train``), its config, checkpoints, run folders, metrics, CPU probing.
* :mod:`training.selfplay` — collection of self-play games (scalar and batched), GAE, the quick evaluation.
* :mod:`training.league` — the opponent pool: past snapshots, PFSP, baselines.
* :mod:`training.tools` — ``kahuna-exploit``, ``kahuna-distill``, ``kahuna-ship``, ``kahuna-export``, model cards.
* :mod:`training.rllib` — the same training on Ray RLlib (``kahuna-rllib``).
* :mod:`training.cli` — ``kahuna-train``.

The network, the agent-file format and ``load_agent`` live one layer below, in :mod:`policy`; they are
re-exported here for old imports.
"""

from typing import Any

from kahuna_env.version import __version__

__all__ = ["PolicyAgent", "__version__", "load_agent"]


def __getattr__(name: str) -> Any:
    """``PolicyAgent`` and ``load_agent`` from :mod:`kahuna_policy.agent`, imported (with torch) on first use, so the
    console scripts' launchers (:mod:`training.launch`) import this package without torch."""
    if name in ("PolicyAgent", "load_agent"):
        from kahuna_policy import agent

        return getattr(agent, name)
    raise AttributeError(f"module 'training' has no attribute {name!r}")
