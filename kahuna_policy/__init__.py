"""The policy layer, below :mod:`arena` and :mod:`training` (docs/ARCHITECTURE.md):

* :mod:`kahuna_policy.registry` — the one registry of shipped agents (no torch).
* :mod:`kahuna_policy.reward` — reward settings an agent was trained with; the island-shaping potential (no torch).
* :mod:`kahuna_policy.model` — the networks (``ActorCritic``), the sampler, the agent-file payload (torch).
* :mod:`kahuna_policy.agent` — agent files and ``load_agent`` (shipped names, checkpoints, exported files).
* :mod:`kahuna_policy.search` — the search guided by a network (``load_guided_agent``).

Importing :mod:`policy` itself does not import torch.
"""

from kahuna_env.version import __version__

__all__ = ["__version__"]
