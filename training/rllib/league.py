"""Who plays each seat in RLlib games: module ids, agent ids, and the policy-mapping function.

Needs no ray.  The env (:mod:`training.rllib.env`) draws each game's opponent
kind from ``pool`` (the native trainer's keys and meaning,
:class:`training.ppo.config.PoolConfig`) and names the agents so that the module
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

Prioritized fictitious self-play (``pool.pfsp``, the native keys and meaning,
:class:`training.league.pool.PFSP`): :class:`SlotStats` keeps on the driver, per
snapshot slot, the native pool's decayed counts of the learner's results
against it (read every iteration from the episode metrics
:data:`SLOT_SCORE_METRIC` / :data:`SLOT_GAMES_METRIC` that the EnvRunners log
for every finished ``past`` game), and gives the slot probabilities by the
native pool's own formulas; the driver pushes them into every env
(:meth:`training.rllib.env.KahunaMultiAgentEnv.set_snapshot_probabilities`)
before each iteration.  A slot that takes a new snapshot starts with fresh
counts, as a new snapshot of the native pool does.  With
``pool.snapshots_per_update = n`` each iteration plays against ``n`` slots
only, chosen as the native pool chooses an update's snapshots (the other
slots get odds 0 for that iteration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from training.league.pool import PFSP, choose_update_snapshots

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


# ---------------------------------------------------------------------------------------------- PFSP
SLOT_SCORE_METRIC = "kahuna_snapshot_{}_score"
"""EnvRunner metric (a sum per iteration): the learner's score (1 win, 0.5 draw, 0 loss) in its games against slot k."""
SLOT_GAMES_METRIC = "kahuna_snapshot_{}_games"
"""EnvRunner metric (a sum per iteration): the number of the learner's games against slot k that ended."""


def snapshot_slot(iteration: int, every: int, slots: int) -> int | None:
    """The slot that takes the learner's weights after ``iteration`` (one every ``every``, round robin), or None."""
    if slots == 0 or iteration % every:
        return None
    return (iteration // every - 1) % slots


def slot_results(runner_metrics: Mapping[str, Any], slots: int) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, games)`` per slot of one iteration from the EnvRunners' aggregated metrics (absent or NaN: 0)."""

    def value(name: str) -> float:
        try:
            number = float(runner_metrics.get(name, 0.0))
        except (TypeError, ValueError):
            return 0.0
        return 0.0 if math.isnan(number) else number

    scores = np.array([value(SLOT_SCORE_METRIC.format(slot)) for slot in range(slots)], dtype=np.float64)
    games = np.array([value(SLOT_GAMES_METRIC.format(slot)) for slot in range(slots)], dtype=np.float64)
    return scores, games


class SlotStats:
    """PFSP statistics of the snapshot slots: the native pool's counts and estimates, one entry per slot.

    ``scores``/``games`` are :class:`training.league.pool.OpponentPool`'s decayed
    counts (learner score: a win 1, a draw 1/2); the estimates and draw odds
    come from the same :class:`training.league.pool.PFSP` methods the native pool
    calls, so they cannot drift from the native trainer's.
    """

    def __len__(self) -> int:
        return len(self.snapshots)

    def win_rates(self) -> np.ndarray:
        """The learner's estimated win rate against each slot (the prior for unplayed ones)."""
        return self.pfsp.win_rates(self.scores, self.games)

    def probabilities(self) -> np.ndarray:
        """The PFSP probability of each slot being drawn for a ``past`` game."""
        return self.pfsp.probabilities(self.scores, self.games)

    def __init__(self, pfsp: PFSP, slots: int, snapshots_per_update: int | None = None, seed: int = 0) -> None:
        self.pfsp = pfsp
        self.snapshots_per_update = snapshots_per_update
        """``pool.snapshots_per_update``: the slots one iteration plays against (None: all of them)."""
        self.seed = seed
        """Seeds the choice of each iteration's slots (with the iteration number: resumes draw the same)."""
        self.snapshots = snapshot_ids(slots)
        self.scores = [0.0] * slots
        """Decayed learner score against each slot."""
        self.games = [0.0] * slots
        """Decayed number of learner games against each slot."""

    def record(self, scores: Sequence[float], games: Sequence[float]) -> None:
        """One iteration (the native pool's one update): decay every slot's counts, then add its results."""
        decay = self.pfsp.decay
        self.scores = [decay * old + float(new) for old, new in zip(self.scores, scores, strict=True)]
        self.games = [decay * old + float(new) for old, new in zip(self.games, games, strict=True)]

    def reset(self, slot: int) -> None:
        """Fresh counts for ``slot`` (it took a new snapshot)."""
        self.scores[slot] = 0.0
        self.games[slot] = 0.0

    def update(self, runner_metrics: Mapping[str, Any], iteration: int, every: int) -> None:
        """After ``iteration``: record its results against each slot, then reset the slot its snapshot went to."""
        self.record(*slot_results(runner_metrics, len(self)))
        slot = snapshot_slot(iteration, every, len(self))
        if slot is not None:
            self.reset(slot)

    def env_probabilities(self, iteration: int = 1) -> list[float] | None:
        """What the envs draw the slot of a ``past`` game with in ``iteration``: None (uniform, the plain
        draw) or the slot odds.

        Without ``snapshots_per_update`` the odds are the PFSP probabilities. With it, the iteration
        first chooses that many distinct slots as the native pool chooses an update's snapshots
        (:func:`training.league.pool.choose_update_snapshots`, from a generator seeded by ``seed`` and
        ``iteration``), and the odds are theirs renormalised (uniform among them without PFSP); the
        other slots get 0.
        """
        if not len(self):
            return None
        uniform = self.pfsp.weighting == "uniform"
        if self.snapshots_per_update is None:
            return None if uniform else [float(p) for p in self.probabilities()]
        probabilities = None if uniform else self.probabilities()
        rng = np.random.default_rng([self.seed, iteration])
        chosen = choose_update_snapshots(probabilities, len(self), self.snapshots_per_update, rng)
        odds = np.zeros(len(self))
        odds[chosen] = 1.0 if probabilities is None else probabilities[chosen]
        return [float(p) for p in odds / odds.sum()]

    def state(self) -> dict[str, list[float]]:
        """The counts as plain data (saved with each checkpoint)."""
        return {"pfsp_score": list(self.scores), "pfsp_games": list(self.games)}

    def load_state(self, state: Mapping[str, Sequence[float]]) -> None:
        """Restore :meth:`state`'s output (a ``ValueError`` if it has another number of slots)."""
        scores, games = [float(v) for v in state["pfsp_score"]], [float(v) for v in state["pfsp_games"]]
        if len(scores) != len(self) or len(games) != len(self):
            raise ValueError(f"PFSP statistics of {len(scores)} slots, but the league has {len(self)}")
        self.scores, self.games = scores, games
