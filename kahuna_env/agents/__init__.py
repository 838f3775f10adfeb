"""Baseline agents and the agent protocol (see :mod:`kahuna_env.agents.base`).

``make_agent(name, seed)`` builds a baseline by name: ``"random"``, ``"greedy"``
or ``"mcts"``; the search baseline also accepts a simulation budget in the
name (``"mcts:400"``) or as a keyword (``make_agent("mcts", simulations=400)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kahuna_env.agents.base import Agent, CallableAgent, RandomAgent, SeededAgent, choose_action
from kahuna_env.agents.greedy import GreedyAgent
from kahuna_env.agents.mcts import MCTSAgent

BASELINES: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "mcts": MCTSAgent,
}
"""Baseline agent name -> factory taking ``seed`` (and, for ``mcts``, its search options)."""

BASELINE_NAMES: tuple[str, ...] = ("random", "greedy", "mcts", "mcts:N")
"""The forms :func:`make_agent` accepts, for help texts and error messages."""


def make_agent(name: str, seed: int | None = None, **options: Any) -> Agent:
    """Build the baseline agent called ``name`` (e.g. ``"greedy"`` or ``"mcts:400"``).

    ``options`` are passed to the agent's constructor (only ``mcts`` takes
    any: ``simulations``, ``exploration``, ``rollout``, ``rollout_depth``).
    An unknown name or a bad budget is a ``ValueError`` listing the known names.
    """
    if not isinstance(name, str):
        raise ValueError(f"agent name must be a string, got {name!r}")
    base, colon, budget = name.partition(":")
    if base not in BASELINES or (colon and base != "mcts"):
        raise ValueError(f"unknown agent {name!r}; baseline agents are {', '.join(BASELINE_NAMES)}")
    if options and base != "mcts":
        raise ValueError(f"agent {name!r} takes no options, got {sorted(options)}")
    if colon:
        # str.isdigit() also accepts digits int() refuses (superscripts such as '²'): ASCII only.
        if not (budget.isascii() and budget.isdigit()) or int(budget) < 1:
            raise ValueError(
                f"bad simulation budget in {name!r}: mcts budget must be a positive integer, got {budget!r}"
            )
        if "simulations" in options:
            raise ValueError(f"agent {name!r} names a budget; do not also pass simulations=")
        options["simulations"] = int(budget)
    return BASELINES[base](seed=seed, **options)


__all__ = [
    "BASELINES",
    "BASELINE_NAMES",
    "Agent",
    "CallableAgent",
    "GreedyAgent",
    "MCTSAgent",
    "RandomAgent",
    "SeededAgent",
    "choose_action",
    "make_agent",
]
