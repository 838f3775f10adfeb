"""Baseline agents for a whole :class:`~kahuna_env.vector.KahunaBatch`: ``greedy`` and ``random`` as array work.

:class:`BatchedGreedy` chooses, in every game of a batch at once, among the
same actions as the scalar :class:`~kahuna_env.agents.greedy.GreedyAgent`:
its choice set is the one loop's, :func:`kahuna_env.kernels.greedy_words`
(:meth:`KahunaBatch.greedy_words`), which plays every legal card action on a
scratch copy of each game's board with the board's part of the rules' step
and keys it ``(terminal, island difference, progress, bridge difference,
-cards paid)``; the scalar greedy calls the same loop on its game.  Ties are
broken uniformly by the caller's generator (not the scalar agent's draws, so
the two agree on the *set*, not on the pick).  :class:`BatchedRandom` picks
uniformly among the legal actions.

Both read the real batch, as the training shortcut reads the real game
(``greedy`` decides from public information and its own hand only, so a
determinization would change nothing).

    greedy = BatchedGreedy(seed=0)             # or make_batched_agent("greedy", seed=0)
    actions = greedy.act(batch, active, rng)   # (N,) intp; 0 where inactive or over
    batch.step(actions, active=active)
    greedy_best_masks(batch)                   # (N, 179) bool: the sets it picks from
"""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env.vector import KahunaBatch, sample_set_bits, unpack_actions

__all__ = [
    "BATCHED_BASELINES",
    "BatchedAgent",
    "BatchedGreedy",
    "BatchedRandom",
    "greedy_best_masks",
    "make_batched_agent",
]


def _rows(batch: KahunaBatch, active: np.ndarray | None) -> np.ndarray:
    """The games asked: the live ones among ``active`` (all when None)."""
    return np.flatnonzero(batch.live(active))


def greedy_best_masks(batch: KahunaBatch, active: np.ndarray | None = None) -> np.ndarray:
    """``(N, 179)`` bool: in every game, the actions the scalar greedy chooses among (its ``best_actions``).

    Rows of finished games and of games outside ``active`` are all False.
    """
    out = np.zeros((batch.n, A.NUM_ACTIONS), dtype=bool)
    rows = _rows(batch, active)
    if len(rows):
        out[rows] = unpack_actions(batch.greedy_words(rows))
    return out


class BatchedAgent:
    """An agent acting in many games of a :class:`KahunaBatch` at once (own generator, as ``SeededAgent``)."""

    name = "agent"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the agent's generator (when ``seed`` is given)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """An action for the player to act in every game: ``(N,)`` intp, 0 where over or not ``active``.

        ``rng`` (default: the agent's own generator) breaks ties.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class BatchedGreedy(BatchedAgent):
    """The ``greedy`` baseline over a batch: one of the scalar greedy's best actions in every game."""

    name = "greedy"

    def best_masks(self, batch: KahunaBatch, active: np.ndarray | None = None) -> np.ndarray:
        """``(N, 179)`` bool: the actions greedy chooses among in each game (:func:`greedy_best_masks`)."""
        return greedy_best_masks(batch, active)

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        rows = _rows(batch, active)
        actions = np.zeros(batch.n, dtype=np.intp)
        if len(rows):
            actions[rows] = sample_set_bits(batch.greedy_words(rows), self.rng if rng is None else rng)
        return actions


class BatchedRandom(BatchedAgent):
    """The ``random`` baseline over a batch: uniform among each game's legal actions."""

    name = "random"

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        # Only the games asked draw: a step in which few opponents are to move costs little.
        return batch.random_actions(self.rng if rng is None else rng, rows=_rows(batch, active))


BATCHED_BASELINES: dict[str, type[BatchedAgent]] = {"random": BatchedRandom, "greedy": BatchedGreedy}
"""The baselines with a batched form, by ``make_agent`` name (``mcts`` has none)."""


def make_batched_agent(name: str, seed: int | None = None) -> BatchedAgent:
    """The batched form of the baseline ``name`` (``random`` or ``greedy``), with its own generator."""
    if name not in BATCHED_BASELINES:
        raise ValueError(f"batched baseline agents are {', '.join(BATCHED_BASELINES)}; got {name!r}")
    return BATCHED_BASELINES[name](seed=seed)
