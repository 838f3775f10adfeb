"""Seated play on the batched engine: the one driver that plays games with a policy in every seat.

Every loop of the project that plays games side by side (self-play
collection, quick evaluation, distillation's data games, the RLlib batched
runner, :class:`~kahuna_env.vector_env.KahunaVectorEnv`'s opponents) is
:func:`play_seated` over a :class:`~kahuna_env.vector.KahunaBatch`:

* a **policy** is anything with ``act(batch, rows) -> actions``
  (:class:`BatchPolicy`): the actions of the player to move in the games
  ``rows``.  Here: the batched baselines (:class:`BaselinePolicy` over
  :mod:`kahuna_env.agents.batched`) and any scalar :class:`~kahuna_env.agents.Agent`
  asked game by game (:class:`PerGamePolicy`: search agents, agent files, callables);
  the learner network and stacked snapshots are adapters in
  :mod:`training.selfplay.policies` (torch stays out of ``kahuna_env``);
* a **seating** is an ``(N, 2)`` int array: for each game and seat, the index of
  the policy playing it, or :data:`AWAIT` where the caller acts (a learner
  stepped from outside, as the vector env's);
* :func:`play_seated` steps, tick by tick, every live game whose player to move
  has a policy (each policy answering all its games of the tick in one call,
  the policies asked in list order), until no game is left to it: every game is
  over or waits for its caller.

A learner seat that is a policy records its own decisions (its ``act`` sees the
rows it decides); a game's end is reported to ``on_step``.  The scalar engine
stays the oracle: the games a seating plays equal, move for move, the games
``KahunaGame(config, seed=game seed)`` plays with the same actions
(``tests/test_seated.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kahuna_env.agents import Agent, choose_action
from kahuna_env.agents.batched import BatchedAgent
from kahuna_env.engine import KahunaGame
from kahuna_env.vector import KahunaBatch, StepResult

__all__ = ["AWAIT", "BaselinePolicy", "BatchPolicy", "PerGamePolicy", "play_seated", "seating_of"]

AWAIT = -1
"""A seat the driver leaves to its caller: :func:`play_seated` stops when every live game waits on one."""


@runtime_checkable
class BatchPolicy(Protocol):
    """Plays the player to move in many games of a batch at once."""

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        """Actions ``(len(rows),)`` for the player to move in the live games ``rows`` (ascending indices)."""
        ...


class BaselinePolicy:
    """A batched baseline (:class:`~kahuna_env.agents.batched.BatchedAgent`) as a :class:`BatchPolicy`.

    It draws from its agent's own generator, so the games it plays are those of
    calling ``agent.act(batch, active)`` with the same games active.
    """

    def __init__(self, agent: BatchedAgent) -> None:
        self.agent = agent

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        active = np.zeros(batch.n, dtype=bool)
        active[rows] = True
        return self.agent.act(batch, active)[rows]


class PerGamePolicy:
    """Any scalar :class:`~kahuna_env.agents.Agent` (search included) asked game by game.

    Each game's position becomes a :class:`~kahuna_env.engine.KahunaGame` and the
    agent answers through :func:`~kahuna_env.agents.choose_action`, so it sees
    only a determinization (never the hidden cards), exactly as in a scalar game.

    Args:
        agents: one agent for every game, or a sequence (game ``i`` asks ``agents[i]``).
        rngs: the generator of the determinizations: one for every game, or a sequence
            (game ``i`` uses ``rngs[i]``).
    """

    def __init__(
        self,
        agents: Agent | Sequence[Agent],
        rngs: np.random.Generator | Sequence[np.random.Generator],
    ) -> None:
        self.agents = agents
        self.rngs = rngs

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        actions = np.zeros(len(rows), dtype=np.intp)
        one_agent = not isinstance(self.agents, (list, tuple))
        one_rng = isinstance(self.rngs, np.random.Generator)
        for k, (g, position) in enumerate(zip(rows.tolist(), batch.to_dicts(rows), strict=True)):
            agent = self.agents if one_agent else self.agents[g]  # type: ignore[index]
            rng = self.rngs if one_rng else self.rngs[g]  # type: ignore[index]
            actions[k] = choose_action(agent, KahunaGame.from_dict(position), rng)  # type: ignore[arg-type]
        return actions


def seating_of(learner_seats: np.ndarray, learner: int, opponent: np.ndarray | int) -> np.ndarray:
    """The ``(N, 2)`` seating with policy ``learner`` where ``learner_seats`` is True and ``opponent`` elsewhere.

    ``opponent``: one policy index for every game, or an ``(N,)`` array of them.
    """
    learner_seats = np.asarray(learner_seats, dtype=bool)
    opponent = np.broadcast_to(np.asarray(opponent, dtype=np.intp), (len(learner_seats),))
    return np.where(learner_seats, learner, opponent[:, None]).astype(np.intp)


def play_seated(
    batch: KahunaBatch,
    policies: Sequence[BatchPolicy],
    seating: np.ndarray,
    on_step: Callable[[StepResult], None] | None = None,
) -> int:
    """Step every live game whose player to move has a policy, until none has; returns the actions played.

    ``seating`` (``(N, 2)`` ints): the index in ``policies`` of the policy playing each
    game's seat, or :data:`AWAIT`.  It is read afresh every tick, so ``on_step`` (called
    after every step with its :class:`~kahuna_env.vector.StepResult`) may deal a game
    again and change its row.  An illegal action raises
    :class:`~kahuna_env.engine.IllegalActionError` (naming the game) with no game changed.
    """
    everyone = np.arange(batch.n)
    actions = np.zeros(batch.n, dtype=np.intp)
    played = 0
    while True:
        policy_of = np.where(batch.over, AWAIT, seating[everyone, batch.current_player])
        to_move = policy_of != AWAIT
        count = int(np.count_nonzero(to_move))
        if not count:
            return played
        actions[:] = 0
        for index, policy in enumerate(policies):
            rows = np.flatnonzero(policy_of == index)
            if len(rows):
                actions[rows] = policy.act(batch, rows)
        result = batch.step(actions, to_move)
        played += count
        if on_step is not None:
            on_step(result)
