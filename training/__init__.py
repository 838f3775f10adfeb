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

from kahuna_env.version import __version__
from policy.agent import PolicyAgent, load_agent

__all__ = ["PolicyAgent", "__version__", "load_agent"]
