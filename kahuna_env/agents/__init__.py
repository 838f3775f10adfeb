"""Baseline agents and the agent protocol (see :mod:`kahuna_env.agents.base`).

``make_agent(name, seed)`` builds a baseline by name: ``"random"`` or ``"greedy"``.
"""

from __future__ import annotations

from collections.abc import Callable

from kahuna_env.agents.base import Agent, CallableAgent, RandomAgent, choose_action
from kahuna_env.agents.greedy import GreedyAgent

BASELINES: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
}
"""Baseline agent name -> factory taking ``seed``."""


def make_agent(name: str, seed: int | None = None) -> Agent:
    """Build the baseline agent called ``name``; an unknown name is a ``ValueError`` listing the known ones."""
    if name not in BASELINES:
        raise ValueError(f"unknown agent {name!r}; baseline agents are {sorted(BASELINES)}")
    return BASELINES[name](seed=seed)


__all__ = ["BASELINES", "Agent", "CallableAgent", "GreedyAgent", "RandomAgent", "choose_action", "make_agent"]
