"""The agents shipped with the package, by name: the one registry (no torch; the arena reads it to parse entrants).

Each is a policy file stored as package data in ``kahuna_policy/agents/`` and read
through :mod:`importlib.resources` by :func:`kahuna_policy.agent.load_agent`, so
``load_agent("champion")`` works from any install and any working directory.
``kahuna-ship`` (``training/tools/ship.py``) writes them.
"""

from __future__ import annotations

SHIPPED_AGENTS: dict[str, str] = {
    "champion": "champion.pt",
    "champion-v5": "champion-v5.pt",
}
"""Agents shipped with the package: name -> file name in ``kahuna_policy/agents/`` (package data).

``champion`` is the agent to use; ``champion-v5``, the previous champion, is the agent the champion's
recipe (``configs/champion.yaml``) continues.  Earlier champions are files in ``experiments/``
(docs/history.md), loadable by path."""
SHIPPED_AGENTS_DIR = "agents"
"""Folder of the shipped agents inside the ``policy`` package."""


def shipped_agent_names() -> list[str]:
    """The names :func:`kahuna_policy.agent.load_agent` accepts for shipped agents, sorted."""
    return sorted(SHIPPED_AGENTS)
