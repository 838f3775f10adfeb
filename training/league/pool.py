"""The opponent pool: past snapshots of the policy, and how each update's games are split among opponents.

Every training game has an opponent *kind*:

* ``latest`` — pure self-play: both seats are the current policy and both seats' decisions are learned from;
* ``past`` — one seat is the current policy, the other a snapshot drawn from the pool: uniformly,
  or with prioritized fictitious self-play (PFSP, below) favouring the snapshots the learner does
  worst against (optionally from a few snapshots drawn for the update, so that each tick needs
  only a few forward passes of snapshots: see ``pool.snapshots_per_update``);
* ``greedy`` / ``random`` — one seat is the current policy, the other the baseline (it reads only
  the public state and its own cards or the legal actions; played batched, :mod:`kahuna_env.agents.batched`);
* ``mcts`` — one seat is the current policy, the other the ``mcts`` search baseline (budget
  ``pool.mcts_simulations``), which gets a determinization through ``choose_action`` like every
  search agent; one game at a time, so it is expensive: keep its share small;
* ``entrant`` — one seat is the current policy, the other any entrant (``pool.entrant_agent``: an
  agent file of any kind, a ``py:`` agent, a named agent, a guided search ``X@mcts:N``, a baseline;
  :mod:`kahuna_env.agents.spec`), built once by the arena's one builder
  (:func:`kahuna_env.gym_env.make_opponent`).  An agent with ``act_batch`` answers all its games of
  a tick in one call; any other (a search) is asked game by game through ``choose_action``
  (:class:`~training.selfplay.policies.EntrantPolicy`).

The ``mcts`` and ``entrant`` opponents are :data:`AGENT_KINDS`: an agent of the arena in a seat,
reseeded for every batch of games from the batch's generator, so the same seed gives the same games.

The games of an update are split by the configured shares (largest remainder, so the split is the
same every update); in one-learner games the learner's seat alternates, so both the first and the
second player are learned.  Until the pool holds a snapshot, ``past`` games are played as ``latest``.

PFSP (AlphaStar's prioritized fictitious self-play): the pool keeps, per snapshot, exponentially
decayed counts of the learner's training results against it (:meth:`OpponentPool.record`: every
update first multiplies all counts by ``decay``, then adds its games; a win scores 1, a draw 1/2).
The learner's estimated win rate against snapshot ``i`` is
``p_i = (score_i + prior * prior_games) / (games_i + prior_games)``, so an unplayed snapshot gets
``prior``; its drawing weight is ``(1 - p_i) ** exponent`` (``hard``, AlphaStar's ``f_hard``),
``p_i * (1 - p_i)`` (``variance``) or 1 (``uniform``, the default: the draw is then exactly the
uniform one of earlier versions).  The counts live with the snapshots in the checkpoint.

A fixed target (:class:`FixedTarget`, the frozen opponent of a best response: ``kahuna-exploit``)
is a league of its own: the pool holds that network alone, played by its most likely action, and
the learner's snapshots never join it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kahuna_policy.model import ActorCritic, ModelConfig, model_config_from_dict

if TYPE_CHECKING:
    from training.ppo.config import PoolConfig

KINDS = ("latest", "past", "greedy", "random", "mcts", "entrant")
"""Opponent kinds, in the order of their integer codes (each has its share ``pool.KIND``).

A new kind goes at the end: no code is saved (checkpoints and metrics name the kinds), but the
largest-remainder split of :func:`split_counts` and the order of an update's games follow this
order, so a kind appended with a zero share leaves every existing config's games as they were."""
START_OPPONENTS = tuple(kind for kind in KINDS if kind != "past")
"""Opponent kinds whose games may start from a position (``rollout.start_opponent``; every kind but ``past``,
whose results steer the snapshot weighting)."""
KIND_LATEST, KIND_PAST, KIND_GREEDY, KIND_RANDOM, KIND_MCTS, KIND_ENTRANT = range(len(KINDS))
"""Integer codes of the opponent kinds (``KINDS[code]`` is the name)."""
AGENT_KINDS = (KIND_MCTS, KIND_ENTRANT)
"""The kinds whose opponent is an :class:`~kahuna_env.agents.Agent` of the arena (the ``mcts`` baseline, the
config's entrant), played by :class:`~training.selfplay.policies.EntrantPolicy`; in this order they draw their seeds."""
PFSP_WEIGHTINGS = ("uniform", "hard", "variance")
"""How ``past`` games weight the snapshots: uniformly, ``(1 - p) ** exponent``, or ``p * (1 - p)``."""


@dataclasses.dataclass(frozen=True)
class PFSP:
    """Prioritized fictitious self-play settings (see the module docstring).

    Attributes:
        weighting: one of :data:`PFSP_WEIGHTINGS`.
        exponent: ``p`` of the ``hard`` weighting ``(1 - p_win) ** p``.
        prior: win rate assumed for a snapshot the learner has not played.
        prior_games: weight of the prior, in games.
        decay: factor applied to every snapshot's counts once per update (1: never forget).
    """

    weighting: str = "uniform"
    exponent: float = 2.0
    prior: float = 0.5
    prior_games: float = 4.0
    decay: float = 0.98

    @classmethod
    def from_config(cls, pool: PoolConfig) -> PFSP:
        """The settings of a ``pool:`` config section (``pool.pfsp`` and the ``pool.pfsp_*`` keys)."""
        return cls(
            weighting=pool.pfsp,
            exponent=pool.pfsp_exponent,
            prior=pool.pfsp_prior,
            prior_games=pool.pfsp_prior_games,
            decay=pool.pfsp_decay,
        )

    def __post_init__(self) -> None:
        if self.weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"pool.pfsp: must be one of {', '.join(PFSP_WEIGHTINGS)}, got {self.weighting!r}")

    def weights(self, win_rates: np.ndarray) -> np.ndarray:
        """Drawing weights of snapshots with estimated win rates ``win_rates`` (not normalised)."""
        if self.weighting == "hard":
            return (1.0 - win_rates) ** self.exponent
        if self.weighting == "variance":
            return win_rates * (1.0 - win_rates)
        return np.ones_like(win_rates)

    def win_rates(self, scores: Sequence[float], games: Sequence[float]) -> np.ndarray:
        """Estimated win rates from decayed learner scores and game counts (the prior for unplayed opponents)."""
        scores, games = np.asarray(scores, dtype=np.float64), np.asarray(games, dtype=np.float64)
        return (scores + self.prior * self.prior_games) / (games + self.prior_games)

    def probabilities(self, scores: Sequence[float], games: Sequence[float]) -> np.ndarray:
        """The probability of drawing each opponent for a ``past`` game (uniform if all weights are 0)."""
        weights = self.weights(self.win_rates(scores, games))
        total = weights.sum()
        if not total > 0:
            return np.full(len(weights), 1.0 / len(weights))
        return weights / total


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


@dataclasses.dataclass(frozen=True)
class FixedTarget:
    """A frozen network that is a run's whole league: the opponent of a best response (``kahuna-exploit``).

    The pool of a fixed target (:meth:`OpponentPool.from_config` with ``fixed_target``) holds this
    network only, as the snapshot of update 0, playing its most likely legal action (as it plays in
    evaluation); no snapshot of the learner ever joins it (:meth:`OpponentPool.add_learner`).  Its
    games are the ``past`` share of the pool's shares.

    Attributes:
        model: the target's network (its architecture may differ from the learner's).
    """

    model: ActorCritic


class OpponentPool:
    """Snapshots of the policy (oldest first), with at most ``max_snapshots`` kept.

    ``deterministic``: the snapshots play their most likely legal action instead of
    sampling (a frozen opponent as it plays in evaluation, e.g. the target of a best response).
    A run's league is built by :meth:`from_config`: the learner's own snapshots, or a
    :class:`FixedTarget` alone.
    """

    def __init__(
        self,
        model_config: ModelConfig,
        max_snapshots: int,
        deterministic: bool = False,
        pfsp: PFSP | None = None,
    ) -> None:
        self.model_config = model_config
        self.max_snapshots = max_snapshots
        self.deterministic = deterministic
        self.pfsp = pfsp or PFSP()
        self.snapshots: list[ActorCritic] = []
        self.updates: list[int] = []
        self.scores: list[float] = []
        """Decayed learner score (wins + draws / 2) against each snapshot."""
        self.games: list[float] = []
        """Decayed number of learner games against each snapshot."""
        self.fixed_target: FixedTarget | None = None
        """The frozen network that is the whole league (:meth:`from_config`), or None."""

    @classmethod
    def from_config(
        cls, model_config: ModelConfig, settings: PoolConfig, fixed_target: FixedTarget | None = None
    ) -> OpponentPool:
        """The league of a run with the learner's network ``model_config`` and the ``pool:`` section ``settings``.

        Without ``fixed_target``: an empty pool of the learner's snapshots (``pool.max_snapshots``
        kept, drawn by ``pool.pfsp``).  With one: a pool holding only that network, played by its
        most likely action, which :meth:`add_learner` leaves unchanged.
        """
        pfsp = PFSP.from_config(settings)
        if fixed_target is None:
            return cls(model_config, settings.max_snapshots, pfsp=pfsp)
        pool = cls(model_config, 1, deterministic=True, pfsp=pfsp)
        pool.add(fixed_target.model, 0)
        pool.fixed_target = fixed_target
        return pool

    def __len__(self) -> int:
        return len(self.snapshots)

    def add_learner(self, model: ActorCritic, update: int) -> bool:
        """Add a snapshot of the learner taken after ``update`` (:meth:`add`), unless the league is a fixed target.

        Returns whether the snapshot was added.
        """
        if self.fixed_target is not None:
            return False
        self.add(model, update)
        return True

    def add(self, model: ActorCritic, update: int) -> None:
        """Store a frozen copy of ``model`` taken after ``update``; drop the oldest past capacity."""
        snapshot = ActorCritic(model.config)
        snapshot.load_state_dict(model.state_dict())
        snapshot.eval().requires_grad_(False)
        self.snapshots.append(snapshot)
        self.updates.append(update)
        self.scores.append(0.0)
        self.games.append(0.0)
        while len(self.snapshots) > self.max_snapshots:
            for values in (self.snapshots, self.updates, self.scores, self.games):
                values.pop(0)

    def win_rates(self) -> np.ndarray:
        """The learner's estimated win rate against each snapshot (the prior for unplayed ones)."""
        return self.pfsp.win_rates(self.scores, self.games)

    def probabilities(self) -> np.ndarray:
        """The probability of each snapshot being drawn for a ``past`` game (uniform if all weights are 0)."""
        return self.pfsp.probabilities(self.scores, self.games)

    def record(self, assignment: GameAssignment, outcomes: np.ndarray) -> None:
        """Decay every snapshot's counts, then add the learner's results (1 win, 0 draw, -1 loss) of ``past`` games."""
        decay = self.pfsp.decay
        self.scores = [decay * value for value in self.scores]
        self.games = [decay * value for value in self.games]
        outcomes = np.asarray(outcomes)
        for index in np.flatnonzero(assignment.snapshots >= 0).tolist():
            snapshot = int(assignment.snapshots[index])
            self.scores[snapshot] += (float(outcomes[index]) + 1.0) / 2.0
            self.games[snapshot] += 1.0

    def state(self) -> list[dict[str, Any]]:
        """The pool as plain data for a checkpoint (a snapshot of another architecture carries its ``model_config``)."""
        entries = []
        for index, (update, snapshot) in enumerate(zip(self.updates, self.snapshots, strict=True)):
            entry: dict[str, Any] = {
                "update": update,
                "model_state": {k: v.detach().clone() for k, v in snapshot.state_dict().items()},
                "pfsp_score": self.scores[index],
                "pfsp_games": self.games[index],
            }
            if snapshot.config != self.model_config:
                entry["model_config"] = dataclasses.asdict(snapshot.config)
            entries.append(entry)
        return entries

    def load_state(self, entries: list[Mapping[str, Any]]) -> None:
        """Restore the pool from :meth:`state`'s output (entries without PFSP counts, from older runs, start at 0).

        A ``ValueError`` (one line), with the pool unchanged, for more entries than
        ``max_snapshots`` or an entry whose update or PFSP counts are not valid
        (:func:`pool_entry_problem`).
        """
        if len(entries) > self.max_snapshots:
            raise ValueError(
                f"the pool holds {len(entries)} snapshots, more than pool.max_snapshots {self.max_snapshots}"
            )
        for index, entry in enumerate(entries):
            problem = pool_entry_problem(entry)
            if problem:
                raise ValueError(f"pool[{index}]: {problem}")
        self.snapshots, self.updates, self.scores, self.games = [], [], [], []
        for entry in entries:
            snapshot = ActorCritic(entry_model_config(entry, self.model_config))
            snapshot.load_state_dict(entry["model_state"])
            snapshot.eval().requires_grad_(False)
            self.snapshots.append(snapshot)
            self.updates.append(int(entry["update"]))
            self.scores.append(float(entry.get("pfsp_score", 0.0)))
            self.games.append(float(entry.get("pfsp_games", 0.0)))

    def assign(
        self,
        num_games: int,
        shares: Mapping[str, float],
        rng: np.random.Generator,
        snapshots_per_update: int | None = None,
    ) -> GameAssignment:
        """Split ``num_games`` among the opponent kinds, pick snapshots and the learner's seats.

        Each ``past`` game's snapshot is drawn from the pool with the PFSP
        probabilities (:meth:`probabilities`; uniform by default).  With
        ``snapshots_per_update = n``, ``n`` distinct snapshots (all of them if
        the pool is smaller) are drawn for this update first (with those
        probabilities, without replacement) and each game picks one of those
        (uniformly; with PFSP, by the chosen snapshots' renormalised
        probabilities), so the update plays against at most ``n`` networks,
        each answering its games with one batched forward pass per tick.
        Uniform draws are exactly those of earlier versions.
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
                snapshots[block] = self._draw_snapshots(count, rng, snapshots_per_update)
            start += count
        return GameAssignment(kinds=kinds, learner_seats=learner_seats, snapshots=snapshots)

    def _draw_snapshots(self, count: int, rng: np.random.Generator, snapshots_per_update: int | None) -> np.ndarray:
        pool_size = len(self.snapshots)
        if self.pfsp.weighting == "uniform":
            if snapshots_per_update is None:
                return rng.integers(pool_size, size=count)
            chosen = choose_update_snapshots(None, pool_size, snapshots_per_update, rng)
            return chosen[rng.integers(len(chosen), size=count)]
        probabilities = self.probabilities()
        if snapshots_per_update is None:
            return rng.choice(pool_size, size=count, p=probabilities)
        chosen = choose_update_snapshots(probabilities, pool_size, snapshots_per_update, rng)
        return chosen[rng.choice(len(chosen), size=count, p=probabilities[chosen] / probabilities[chosen].sum())]


def choose_update_snapshots(
    probabilities: np.ndarray | None, pool_size: int, snapshots_per_update: int, rng: np.random.Generator
) -> np.ndarray:
    """The distinct snapshots one update plays against (``pool.snapshots_per_update``).

    ``min(snapshots_per_update, pool_size)`` of them (and no more than have a
    nonzero probability), drawn without replacement: uniformly when
    ``probabilities`` is None, else with those PFSP probabilities.  The
    native pool then draws each game's snapshot among them; the RLlib driver
    turns them into the slot odds it pushes to the envs
    (:meth:`training.rllib.league.SlotStats.env_probabilities`).
    """
    if probabilities is None:
        return rng.choice(pool_size, size=min(snapshots_per_update, pool_size), replace=False)
    size = min(snapshots_per_update, pool_size, int(np.count_nonzero(probabilities)))
    return rng.choice(pool_size, size=size, replace=False, p=probabilities)


def league_scalars(pool: OpponentPool) -> dict[str, float]:
    """PFSP diagnostics: the pool's size, the learner's estimated win rates against its snapshots, the draw odds.

    Reads only ``len(pool)``, ``pool.win_rates()`` and ``pool.probabilities()``
    (the RLlib league's slot statistics have the same three).
    """
    if not len(pool):
        return {"league/snapshots": 0.0}
    win_rates = pool.win_rates()
    probabilities = pool.probabilities()
    return {
        "league/snapshots": float(len(pool)),
        "league/min_snapshot_win_rate": float(win_rates.min()),
        "league/mean_snapshot_win_rate": float(win_rates.mean()),
        "league/max_snapshot_probability": float(probabilities.max()),
    }


def entry_model_config(entry: Mapping[str, Any], default: ModelConfig) -> ModelConfig:
    """The architecture of a checkpoint pool entry: its own ``model_config`` if it has one, else ``default``."""
    if "model_config" in entry:
        return model_config_from_dict(entry["model_config"])
    return default


def pool_entry_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with a checkpoint pool entry's update and PFSP counts (None if nothing).

    ``update`` is an integer >= 0; ``pfsp_score`` and ``pfsp_games`` (absent in
    older checkpoints: 0) finite numbers >= 0 with the score at most the games
    (a score counts a win as 1 and a draw as 1/2 of the decayed games).
    """
    update = entry.get("update")
    if isinstance(update, bool) or not isinstance(update, int) or update < 0:
        return f"update must be an integer >= 0, got {type(update).__name__}"
    counts = {}
    for key in ("pfsp_score", "pfsp_games"):
        value = entry.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{key} must be a number, got {type(value).__name__}"
        if not math.isfinite(value) or value < 0:
            return f"{key} must be a finite number >= 0, got {value!r}"
        counts[key] = float(value)
    if counts["pfsp_score"] > counts["pfsp_games"] * (1 + 1e-9) + 1e-9:
        return f"pfsp_score {counts['pfsp_score']!r} exceeds pfsp_games {counts['pfsp_games']!r}"
    return None
