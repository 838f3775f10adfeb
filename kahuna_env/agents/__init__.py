"""Baseline agents and the agent protocol (see :mod:`kahuna_env.agents.base`).

``make_agent(name, seed)`` builds a baseline by name: ``"random"``, ``"greedy"``
or ``"mcts"``; the search baseline also accepts a simulation budget in the
name (``"mcts:400"``) or as a keyword (``make_agent("mcts", simulations=400)``).
Names are read by :meth:`EntrantSpec.parse <kahuna_env.agents.spec.EntrantSpec.parse>`,
the one reader of agent specs (:mod:`kahuna_env.agents.spec`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kahuna_env.agents.base import Agent, CallableAgent, RandomAgent, SeededAgent, choose_action
from kahuna_env.agents.greedy import GreedyAgent
from kahuna_env.agents.mcts import MCTSAgent
from kahuna_env.agents.spec import BASELINE_KINDS, BASELINE_NAMES, BadBudget, EntrantSpec, parse_baseline

BASELINES: dict[str, Callable[..., Agent]] = dict(
    zip(BASELINE_KINDS, (RandomAgent, GreedyAgent, MCTSAgent), strict=True)
)
"""Baseline agent name (the grammar's :data:`~kahuna_env.agents.spec.BASELINE_KINDS`) -> factory taking ``seed``
(and, for ``mcts``, its search options)."""


def make_agent(name: str | EntrantSpec, seed: int | None = None, **options: Any) -> Agent:
    """Build the baseline agent called ``name`` (e.g. ``"greedy"`` or ``"mcts:400"``, or its parsed spec).

    ``options`` are passed to the agent's constructor (only ``mcts`` takes
    any: ``simulations``, ``exploration``, ``rollout``, ``rollout_depth``).
    An unknown name or a bad budget is a ``ValueError`` listing the known names.
    """
    if isinstance(name, EntrantSpec):
        spec = name
    elif isinstance(name, str):
        try:
            spec = parse_baseline(name, max_simulations=None)
        except BadBudget as error:
            raise ValueError(
                f"bad simulation budget in {name!r}: mcts budget must be a positive integer, got {error.budget!r}"
            ) from None
    else:
        raise ValueError(f"agent name must be a string, got {name!r}")
    if spec is None or spec.kind != "baseline":
        raise ValueError(f"unknown agent {str(name)!r}; baseline agents are {', '.join(BASELINE_NAMES)}")
    if options and spec.source != "mcts":
        raise ValueError(f"agent {str(name)!r} takes no options, got {sorted(options)}")
    if spec.source == "mcts" and name != "mcts":  # the budget written in the name (or the spec)
        if "simulations" in options:
            raise ValueError(f"agent {str(name)!r} names a budget; do not also pass simulations=")
        options["simulations"] = spec.simulations
    return BASELINES[spec.source](seed=seed, **options)


__all__ = [
    "BASELINES",
    "BASELINE_NAMES",
    "Agent",
    "CallableAgent",
    "EntrantSpec",
    "GreedyAgent",
    "MCTSAgent",
    "RandomAgent",
    "SeededAgent",
    "choose_action",
    "make_agent",
]
