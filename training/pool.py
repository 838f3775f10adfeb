"""The opponent pool: past snapshots of the policy, and how each update's games are split among opponents.

Every training game has an opponent *kind*:

* ``latest`` — pure self-play: both seats are the current policy and both seats' decisions are learned from;
* ``past`` — one seat is the current policy, the other a snapshot drawn uniformly from the pool
  (optionally from a few snapshots drawn for the update, so that each tick needs only a few
  forward passes of snapshots: see ``pool.snapshots_per_update``);
* ``greedy`` / ``random`` — one seat is the current policy, the other the baseline (it reads only
  the public state and its own cards or the legal actions; see :func:`training.rollout.baseline_action`);
* ``mcts`` — one seat is the current policy, the other the ``mcts`` search baseline (budget
  ``pool.mcts_simulations``), which gets a determinization through ``choose_action`` like every
  search agent; one game at a time, so it is expensive: keep its share small.

The games of an update are split by the configured shares (largest remainder, so the split is the
same every update); in one-learner games the learner's seat alternates, so both the first and the
second player are learned.  Until the pool holds a snapshot, ``past`` games are played as ``latest``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from training.model import ActorCritic, ModelConfig

KINDS = ("latest", "past", "greedy", "random", "mcts")
"""Opponent kinds, in the order of their integer codes."""
KIND_LATEST, KIND_PAST, KIND_GREEDY, KIND_RANDOM, KIND_MCTS = range(5)
"""Integer codes of the opponent kinds (``KINDS[code]`` is the name)."""


@dataclasses.dataclass
class GameAssignment:
    """Who plays each game of one update.

    Attributes:
        kinds: opponent kind code per game (index into :data:`KINDS`).
        learner_seats: ``(num_games, 2)`` bool, True where the seat is the learning policy.
        snapshots: pool index of the snapshot opponent per game (-1 when not a ``past`` game).
    """

    kinds: np.ndarray
    learner_seats: np.ndarray
    snapshots: np.ndarray


def split_counts(total: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Split ``total`` games by ``shares`` (normalised) with the largest-remainder method, in :data:`KINDS` order."""
    weights = np.array([shares.get(kind, 0.0) for kind in KINDS], dtype=np.float64)
    exact = weights / weights.sum() * total
    counts = np.floor(exact).astype(int)
    remainder = exact - counts
    for index in np.argsort(-remainder, kind="stable")[: total - counts.sum()]:
        counts[index] += 1
    return {kind: int(count) for kind, count in zip(KINDS, counts, strict=True)}


class OpponentPool:
    """Snapshots of the policy (oldest first), with at most ``max_snapshots`` kept.

    ``deterministic``: the snapshots play their most likely legal action instead of
    sampling (a frozen opponent as it plays in evaluation, e.g. the target of a best response).
    """

    def __init__(self, model_config: ModelConfig, max_snapshots: int, deterministic: bool = False) -> None:
        self.model_config = model_config
        self.max_snapshots = max_snapshots
        self.deterministic = deterministic
        self.snapshots: list[ActorCritic] = []
        self.updates: list[int] = []

    def __len__(self) -> int:
        return len(self.snapshots)

    def add(self, model: ActorCritic, update: int) -> None:
        """Store a frozen copy of ``model`` taken after ``update``; drop the oldest beyond capacity."""
        snapshot = ActorCritic(self.model_config)
        snapshot.load_state_dict(model.state_dict())
        snapshot.eval().requires_grad_(False)
        self.snapshots.append(snapshot)
        self.updates.append(update)
        while len(self.snapshots) > self.max_snapshots:
            self.snapshots.pop(0)
            self.updates.pop(0)

    def state(self) -> list[dict[str, Any]]:
        """The pool as plain data for a checkpoint."""
        return [
            {"update": update, "model_state": {k: v.detach().clone() for k, v in snapshot.state_dict().items()}}
            for update, snapshot in zip(self.updates, self.snapshots, strict=True)
        ]

    def load_state(self, entries: list[Mapping[str, Any]]) -> None:
        """Restore the pool from :meth:`state`'s output."""
        self.snapshots, self.updates = [], []
        for entry in entries:
            snapshot = ActorCritic(self.model_config)
            snapshot.load_state_dict(entry["model_state"])
            snapshot.eval().requires_grad_(False)
            self.snapshots.append(snapshot)
            self.updates.append(int(entry["update"]))

    def assign(
        self,
        num_games: int,
        shares: Mapping[str, float],
        rng: np.random.Generator,
        snapshots_per_update: int | None = None,
    ) -> GameAssignment:
        """Split ``num_games`` among the opponent kinds, pick snapshots and the learner's seats.

        Each ``past`` game's snapshot is uniform over the pool.  With
        ``snapshots_per_update = n``, ``n`` distinct snapshots (all of them if
        the pool is smaller) are drawn for this update first and each game
        picks one of those: still uniform over the pool for every game, but
        the update plays against at most ``n`` networks, each answering its
        games with one batched forward pass per tick.
        """
        shares = dict(shares)
        if not self.snapshots:
            shares["latest"] = shares.get("latest", 0.0) + shares.get("past", 0.0)
            shares["past"] = 0.0
        counts = split_counts(num_games, shares)
        kinds = np.repeat(np.arange(len(KINDS)), [counts[kind] for kind in KINDS])
        learner_seats = np.zeros((num_games, 2), dtype=bool)
        snapshots = np.full(num_games, -1, dtype=np.int64)
        # Alternate the learner's seat inside each block, starting from a random seat each update.
        first_seat = int(rng.integers(2))
        start = 0
        for code, kind in enumerate(KINDS):
            count = counts[kind]
            block = slice(start, start + count)
            if code == KIND_LATEST:
                learner_seats[block] = True
            else:
                seats = (first_seat + np.arange(count)) % 2
                learner_seats[np.arange(start, start + count), seats] = True
            if code == KIND_PAST and count:
                if snapshots_per_update is None:
                    snapshots[block] = rng.integers(len(self.snapshots), size=count)
                else:
                    size = min(snapshots_per_update, len(self.snapshots))
                    chosen = rng.choice(len(self.snapshots), size=size, replace=False)
                    snapshots[block] = chosen[rng.integers(size, size=count)]
            start += count
        return GameAssignment(kinds=kinds, learner_seats=learner_seats, snapshots=snapshots)
