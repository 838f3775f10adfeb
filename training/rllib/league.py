"""Who plays each seat in RLlib games: module ids, agent ids, and the policy-mapping function.

Needs no ray.  The env (:mod:`training.rllib.env`) draws each game's opponent
kind from ``pool`` (the native trainer's keys and meaning,
:class:`training.config.PoolConfig`) and names the agents so that the module
follows from the agent id alone:

=============  =======================================================================
kind           agents of the game
=============  =======================================================================
``latest``     ``player_0`` and ``player_1``: both seats are the learner
``past``       the learner's seat ``player_<s>``, the other ``player_<1-s>@snapshot_<k>``
``greedy``     only the learner's seat: the baseline moves inside the env
``random``     as ``greedy``
=============  =======================================================================

so :func:`league_mapping` is a pure function of the agent id, and the env
and the mapping can never disagree about a game.
"""

from __future__ import annotations

from typing import Any

LEARNER = "learner"
"""Module id of the trained policy."""

SNAPSHOT_PREFIX = "snapshot_"
"""Module ids of the frozen snapshots are ``snapshot_0``, ``snapshot_1``, ..."""

AGENTS = ("player_0", "player_1")
"""Agent id of each seat when the learner plays it."""


def snapshot_ids(slots: int) -> list[str]:
    """Module ids of ``slots`` snapshot modules."""
    return [f"{SNAPSHOT_PREFIX}{k}" for k in range(slots)]


def snapshot_agent(seat: int, slot: int) -> str:
    """Agent id of ``seat`` played by snapshot slot ``slot`` (``"player_1@snapshot_2"``)."""
    return f"{AGENTS[seat]}@{SNAPSHOT_PREFIX}{slot}"


def agent_ids(slots: int) -> list[str]:
    """Every agent id of an env with ``slots`` snapshot slots."""
    return [*AGENTS, *(snapshot_agent(seat, slot) for slot in range(slots) for seat in (0, 1))]


def league_mapping(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Policy-mapping function: ``"player_1@snapshot_2"`` -> ``"snapshot_2"``, any other agent -> the learner."""
    _, _, module = str(agent_id).partition("@")
    return module or LEARNER
