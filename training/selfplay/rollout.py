"""What one update's self-play collection produces, and per-seat GAE.

The data of an update, in order: the pool's
:class:`~training.league.pool.GameAssignment` (who plays each game), split into
one :class:`GameBatch` per collecting process; each batch played
(:func:`training.selfplay.batched_rollout.play_games_batched`, on the seated-play
driver :func:`kahuna_env.seated.play_seated`) into :class:`PlayedGames`, the
learner's decisions; the parts joined by :func:`finish_rollout` into a
:class:`Rollout`, the same decisions with shaping, advantages and returns.
Statistics travel typed (:class:`CollectionStats`); the trainer logs
:meth:`CollectionStats.as_metrics`.

**Per-seat trajectories.**  A turn is several actions by the same player,
and from a seat's point of view the opponent's actions are part of the
environment.  So each learner seat of each game has its own trajectory: its
decisions in order, the next state of a decision being that seat's *next*
decision (however many actions later).  The terminal reward (``+win``,
``-win``, 0 for a draw) goes to the seat's last decision, which is also
where its trajectory ends.  Because every game is played to its end, no
trajectory is cut and no bootstrapping is needed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from training.league.pool import KIND_LATEST, KINDS


def trajectory_layout(trajectory: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group time-ordered transitions by trajectory id.

    Returns ``(order, row, column, lengths)``: ``order`` sorts the transitions
    by trajectory, keeping time order inside each; transition ``order[k]``
    is step ``column[k]`` of trajectory number ``row[k]`` (numbered by
    ascending id); ``lengths`` are the trajectory lengths.
    """
    trajectory = np.asarray(trajectory)
    order = np.argsort(trajectory, kind="stable")
    ids = trajectory[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
    lengths = np.diff(np.r_[starts, len(ids)])
    row = np.repeat(np.arange(len(starts)), lengths)
    column = np.arange(len(ids)) - np.repeat(starts, lengths)
    return order, row, column, lengths


def per_seat_gae(
    trajectory: np.ndarray, rewards: np.ndarray, values: np.ndarray, gamma: float, gae_lambda: float
) -> tuple[np.ndarray, np.ndarray]:
    """GAE advantages and returns for complete per-seat trajectories.

    ``trajectory[i]`` names the trajectory (game and seat) of transition
    ``i``; transitions are in time order, and each trajectory's last
    transition is terminal (its successor's value is 0).  The successor of
    any other transition is the next transition of the *same* trajectory,
    whatever lies between them in the arrays.
    """
    order, row, column, lengths = trajectory_layout(trajectory)
    count = len(order)
    if count == 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
    width = int(lengths.max())
    padded_rewards = np.zeros((len(lengths), width), dtype=np.float64)
    padded_values = np.zeros((len(lengths), width + 1), dtype=np.float64)
    padded_rewards[row, column] = rewards[order]
    padded_values[row, column] = values[order]
    # Past a trajectory's end everything is 0, so the terminal step bootstraps from 0.
    deltas = padded_rewards + gamma * padded_values[:, 1:] - padded_values[:, :-1]
    advantages = np.zeros((len(lengths), width + 1), dtype=np.float64)
    decay = gamma * gae_lambda
    for step in range(width - 1, -1, -1):
        advantages[:, step] = deltas[:, step] + decay * advantages[:, step + 1]
    result = np.empty(count, dtype=np.float32)
    result[order] = advantages[row, column]
    return result, (result + values).astype(np.float32)


def shaping_rewards(trajectory: np.ndarray, potentials: np.ndarray, gamma: float, coefficient: float) -> np.ndarray:
    """Potential-based shaping ``c * (gamma * phi(next decision) - phi(decision))``, with ``phi = 0`` after the end."""
    order, row, column, lengths = trajectory_layout(trajectory)
    width = int(lengths.max()) if len(lengths) else 0
    padded = np.zeros((len(lengths), width + 1), dtype=np.float64)
    padded[row, column] = potentials[order]
    shaped = coefficient * (gamma * padded[:, 1:] - padded[:, :-1])
    result = np.zeros(len(order), dtype=np.float32)
    result[order] = shaped[row, column]
    return result


Result = tuple[int, int, int]
"""Wins, draws, losses."""


@dataclasses.dataclass
class CollectionStats:
    """What the games of a collection came to (typed; the trainer logs :meth:`as_metrics`).

    Attributes:
        games: games played.
        actions: actions played in them (every seat's).
        decisions: learner decisions recorded.
        results: per opponent kind (:data:`~training.league.pool.KINDS`), the learner's wins, draws,
            losses; self-play games (``latest``) and games started from a position are not counted there.
        first_seat_results: self-play games from seat 0's side (wins, draws, losses).
        outcomes: the learner's result per game (1 win, 0 draw, -1 loss; seat 0's in self-play),
            in the order of :attr:`game_numbers`.
        game_numbers: the update's number of each game of :attr:`outcomes`.
        episodic_returns: each learner trajectory's summed reward (after shaping; filled by
            :func:`finish_rollout`, empty before).
    """

    games: int
    actions: int
    decisions: int
    results: dict[str, Result]
    first_seat_results: Result
    outcomes: np.ndarray
    game_numbers: np.ndarray
    episodic_returns: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    start_results: Result = (0, 0, 0)

    @classmethod
    def of_games(
        cls,
        game_numbers: np.ndarray,
        kinds: np.ndarray,
        learner_seats: np.ndarray,
        winners: np.ndarray,
        actions: int,
        decisions: int,
        started: np.ndarray | None = None,
    ) -> CollectionStats:
        """The statistics of finished games (``winners``: 0, 1, -1 for a draw) seated as ``kinds``/``learner_seats``.

        ``started``: True for the games that began from a start position; their results are
        :attr:`start_results` only.
        """
        outcomes = learner_outcomes(learner_seats, winners)
        fresh = np.ones(len(outcomes), dtype=bool) if started is None else ~np.asarray(started, dtype=bool)
        results = {}
        for code, kind in enumerate(KINDS):
            chosen = outcomes[(kinds == code) & fresh] if code != KIND_LATEST else outcomes[:0]
            results[kind] = _tally(chosen)
        selfplay = winners[(kinds == KIND_LATEST) & fresh]
        return cls(
            games=len(game_numbers),
            actions=actions,
            decisions=decisions,
            results=results,
            first_seat_results=(int((selfplay == 0).sum()), int((selfplay < 0).sum()), int((selfplay == 1).sum())),
            outcomes=outcomes,
            game_numbers=np.asarray(game_numbers, dtype=np.int64),
            start_results=_tally(outcomes[~fresh]),
        )

    @classmethod
    def join(cls, parts: list[CollectionStats], episodic_returns: np.ndarray) -> CollectionStats:
        """The statistics of all ``parts`` together, outcomes in game-number order (the update's games)."""
        games = sum(part.games for part in parts)
        outcomes = np.zeros(games, dtype=np.int8)
        for part in parts:
            outcomes[part.game_numbers] = part.outcomes
        return cls(
            games=games,
            actions=sum(part.actions for part in parts),
            decisions=sum(part.decisions for part in parts),
            results={kind: _sum([part.results[kind] for part in parts]) for kind in KINDS},
            first_seat_results=_sum([part.first_seat_results for part in parts]),
            outcomes=outcomes,
            game_numbers=np.arange(games, dtype=np.int64),
            episodic_returns=episodic_returns,
            start_results=_sum([part.start_results for part in parts]),
        )

    def as_metrics(self) -> dict[str, float]:
        """The collection's metrics under their logged names (``charts/...``, ``rollout/win_rate_vs_KIND``)."""
        returns = self.episodic_returns
        metrics = {
            "charts/episodic_return": float(np.mean(returns)) if len(returns) else 0.0,
            "charts/decisions": float(self.decisions),
            "charts/game_length": self.actions / self.games,
        }
        for kind in KINDS[1:]:
            wins, draws, losses = self.results[kind]
            if wins + draws + losses:
                metrics[f"rollout/win_rate_vs_{kind}"] = wins / (wins + draws + losses)
        wins, draws, losses = self.first_seat_results
        if wins + draws + losses:
            metrics["rollout/selfplay_first_seat_win_rate"] = wins / (wins + draws + losses)
        wins, draws, losses = self.start_results
        if wins + draws + losses:
            metrics["rollout/win_rate_from_start"] = wins / (wins + draws + losses)
        return metrics


def _tally(outcomes: np.ndarray) -> Result:
    return int((outcomes == 1).sum()), int((outcomes == 0).sum()), int((outcomes == -1).sum())


def _sum(results: list[Result]) -> Result:
    return tuple(sum(result[k] for result in results) for k in range(3))  # type: ignore[return-value]


def learner_outcomes(learner_seats: np.ndarray, winners: np.ndarray) -> np.ndarray:
    """The learner's result per game (1 win, 0 draw, -1 loss) from the winners (-1 for a draw).

    A game whose learner is seat 1 only is seen from seat 1; otherwise (seat 0, or both seats
    in self-play) from seat 0.
    """
    seat = np.where(learner_seats[:, 0], 0, 1)
    return np.where(winners < 0, 0, np.where(winners == seat, 1, -1)).astype(np.int8)


@dataclasses.dataclass(kw_only=True)
class PlayedGames:
    """The learner's decisions of played games (row ``i`` of every array is one decision), before advantages.

    Attributes:
        observations: ``(n, 246)`` float32.
        masks: ``(n, 179)`` bool legal-action masks.
        actions: chosen actions.
        log_probs: their log-probabilities under the collecting policy.
        values: the collecting policy's value estimates.
        rewards: the terminal reward on each seat's last decision (plus shaping, in a :class:`Rollout`).
        dones: True on the last decision of each seat's trajectory.
        trajectory: trajectory id ``2 * game + seat``.
        potentials: the shaping potentials (zeros when not recorded).
        stats: the games' statistics.
        logits: the masked logits each decision was sampled from, where the collection recorded them.
    """

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    trajectory: np.ndarray
    potentials: np.ndarray
    stats: CollectionStats
    logits: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.actions)


@dataclasses.dataclass(kw_only=True)
class Rollout(PlayedGames):
    """The learner's decisions of one update, joined from every process's :class:`PlayedGames`, ready to learn from.

    ``rewards`` include the shaping; ``stats`` the episodic returns.

    Attributes:
        advantages: per-seat GAE advantages.
        returns: ``advantages + values`` (the value targets).
    """

    advantages: np.ndarray
    returns: np.ndarray


@dataclasses.dataclass
class GameBatch:
    """The games one process plays in an update.

    Attributes:
        games: global game numbers (trajectory ids are ``2 * game + seat``).
        seeds: deal seed per game.
        kinds: opponent kind code per game (see :data:`training.league.pool.KINDS`).
        learner_seats: ``(n, 2)`` bool, True where the seat is the learning policy.
        snapshots: pool index of the snapshot opponent per game (-1 if none).
        rng_seed: seed of the generator for the baselines and their determinizations.
        torch_seed: seed of the generator for the policy's and the snapshots' sampling.
        mcts_simulations: budget of the ``mcts`` opponent (``mcts`` games only).
        snapshot_argmax: the snapshots play their most likely action instead of sampling.
        start_positions: per game, the position dict it starts from (None: a fresh deal from its
            seed); None: every game is a fresh deal (:mod:`kahuna_arena.start_positions`).
    """

    games: np.ndarray
    seeds: np.ndarray
    kinds: np.ndarray
    learner_seats: np.ndarray
    snapshots: np.ndarray
    rng_seed: int
    torch_seed: int
    mcts_simulations: int = 50
    snapshot_argmax: bool = False
    start_positions: list[dict | None] | None = None

    def started(self) -> np.ndarray:
        """True for the games that start from a position rather than a fresh deal."""
        if self.start_positions is None:
            return np.zeros(len(self.games), dtype=bool)
        return np.array([position is not None for position in self.start_positions], dtype=bool)


def finish_rollout(parts: list[PlayedGames], gamma: float, gae_lambda: float, island_shaping: float = 0.0) -> Rollout:
    """Join played batches into one :class:`Rollout`: shaping rewards, per-seat GAE, statistics."""
    joined = {
        name: np.concatenate([getattr(part, name) for part in parts])
        for name in ("observations", "masks", "actions", "log_probs", "values", "rewards", "dones", "trajectory")
    }
    potentials = np.concatenate([part.potentials for part in parts])
    trajectory = joined["trajectory"]
    rewards = joined["rewards"].astype(np.float32)
    if island_shaping:
        rewards = rewards + shaping_rewards(trajectory, potentials, gamma, island_shaping)
    values = joined["values"]
    advantages, returns = per_seat_gae(trajectory, rewards, values, gamma, gae_lambda)
    order, row, _, _ = trajectory_layout(trajectory)
    episodic_returns = np.bincount(row, weights=rewards[order]) if len(order) else np.zeros(0)
    return Rollout(
        **{**joined, "rewards": rewards},
        potentials=potentials,
        stats=CollectionStats.join([part.stats for part in parts], episodic_returns),
        advantages=advantages,
        returns=returns,
    )
