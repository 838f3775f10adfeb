"""The collector of the trainer: one update's games, played in this process and in worker processes.

:class:`SelfPlayCollector` splits an update's games into batches, plays them
(:func:`~training.selfplay.batched_rollout.play_games_batched`, on the seated-play
driver) here and in ``rollout.workers`` spawned processes, and joins the
learner's decisions into one :class:`~training.selfplay.rollout.Rollout` (see
:mod:`training.selfplay.rollout` for the learning semantics).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from kahuna_arena.start_positions import StartPositions
from kahuna_env.agents import Agent
from kahuna_env.engine import KahunaConfig
from kahuna_env.gym_env import make_opponent
from kahuna_env.workers import WorkerFailed, Workers
from kahuna_policy.model import ActorCritic, ModelConfig
from training.league.pool import KIND_LATEST, KINDS, START_OPPONENTS, GameAssignment, OpponentPool
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.rollout import GameBatch, Rollout, finish_rollout

BACKENDS = ("vector",)
"""Collection backends: ``vector`` (the batched engine, :func:`training.selfplay.batched_rollout.play_games_batched`).
The ``scalar`` backend (one ``KahunaGame`` per game) is gone: the scalar engine is the tests' oracle
(``tests/test_batched_rollout.py`` replays every collected game in it)."""


def play_function(backend: str) -> Any:
    """The function that plays a :class:`GameBatch` on ``backend`` (one of :data:`BACKENDS`)."""
    if backend == "vector":
        return play_games_batched
    if backend == "scalar":
        raise ValueError(
            "rollout backend 'scalar' was removed: collection plays on the batched engine ('vector'), "
            "whose games are the scalar engine's"
        )
    raise ValueError(f"unknown rollout backend {backend!r}; known: {', '.join(BACKENDS)}")


ENTRANT_KEY = "pool.entrant_agent"
"""The config key of the league's entrant: its messages name it."""


def build_entrant(spec: str) -> Agent:
    """The agent of the ``entrant`` games: what the arena's one builder makes of ``spec`` (any entrant).

    A one-line ``ValueError`` naming :data:`ENTRANT_KEY` for an entrant that cannot be built (a
    missing file, an unknown name, a module that does not import), as ``kahuna-eval`` would refuse it.
    """
    return make_opponent(spec, ENTRANT_KEY)


def _numpy_state(model: ActorCritic) -> dict[str, np.ndarray]:
    return {key: value.detach().cpu().numpy().copy() for key, value in model.state_dict().items()}


def _load_numpy_state(model: ActorCritic, state: dict[str, np.ndarray]) -> None:
    model.load_state_dict({key: torch.from_numpy(value) for key, value in state.items()})


def _setup_worker(
    state: dict[str, Any], game_config: dict[str, Any], model_config: dict[str, Any], settings: dict
) -> None:
    """A collection worker's state (:class:`kahuna_env.workers.Workers`): the rules, the learner, its snapshots.

    The league's entrant is built here from its spec, as in the main process (an agent need not pickle).
    """
    from kahuna_policy.model import model_config_from_dict

    torch.set_num_threads(1)
    state["config"] = KahunaConfig.from_dict(game_config)
    state["play"] = play_function(settings["backend"])
    state["settings"] = settings
    state["model"] = ActorCritic(model_config_from_dict(model_config)).eval()
    state["snapshots"] = {}
    spec = settings["entrant_agent"]
    state["entrant"] = None if spec is None else build_entrant(spec)


def _play_batch(
    state: dict[str, Any],
    model_state: dict[str, np.ndarray],
    pool_ids: list[int],
    new_snapshots: dict[int, tuple[dict[str, Any], dict[str, np.ndarray]]],
    batch: GameBatch,
) -> Any:
    """In a worker: load the learner's weights and the snapshots it lacks, drop the retired ones, play ``batch``."""
    from kahuna_policy.model import model_config_from_dict

    model, snapshots, settings = state["model"], state["snapshots"], state["settings"]
    _load_numpy_state(model, model_state)
    for snapshot_id, (snapshot_config, weights) in new_snapshots.items():
        snapshot = ActorCritic(model_config_from_dict(snapshot_config)).eval()
        _load_numpy_state(snapshot, weights)
        snapshots[snapshot_id] = snapshot
    for snapshot_id in list(snapshots):
        if snapshot_id not in pool_ids:
            del snapshots[snapshot_id]
    return state["play"](
        batch,
        model,
        [snapshots[i] for i in pool_ids],
        state["config"],
        settings["win_reward"],
        settings["potentials"],
        margin_reward=settings["margin_reward"],
        entrant=state["entrant"],
    )


class SelfPlayCollector:
    """Plays one update's games to the end and returns the learner's decisions as a :class:`Rollout`.

    With ``workers > 0`` the games are split into ``workers + 1`` interleaved
    batches: this process plays one, each worker process (spawned once, kept
    for the collector's life) another, in parallel.  The split and every
    batch's generators are fixed by the update's ``rng``, so results are
    deterministic for a given number of workers.  Call :meth:`close` (or use
    the collector as a context manager) to stop the workers.

    ``entrant_agent``: the spec of the opponent of the ``entrant`` games (``pool.entrant_agent``),
    built once here (``entrant``: already built from it) and once in each worker; None: no such games.
    """

    def __init__(
        self,
        num_games: int,
        game_config: KahunaConfig | None = None,
        gamma: float = 1.0,
        gae_lambda: float = 0.95,
        win_reward: float = 1.0,
        island_shaping: float = 0.0,
        workers: int = 0,
        model_config: ModelConfig | None = None,
        backend: str = "vector",
        mcts_simulations: int = 50,
        margin_reward: float = 0.0,
        start_positions: StartPositions | None = None,
        start_share: float = 0.0,
        start_opponent: str = "greedy",
        entrant_agent: str | None = None,
        entrant: Agent | None = None,
    ) -> None:
        if (start_positions is None) != (start_share == 0.0) or not 0.0 <= start_share <= 1.0:
            raise ValueError("start_share must be in (0, 1] with start_positions, and 0 without them")
        if start_opponent not in START_OPPONENTS:
            raise ValueError(f"start_opponent must be an opponent kind other than past, got {start_opponent!r}")
        self.start_positions = start_positions
        self.start_share = start_share
        self.start_kind = KINDS.index(start_opponent)
        self.play = play_function(backend)
        self.backend = backend
        self.mcts_simulations = mcts_simulations
        self.num_games = num_games
        self.game_config = game_config or KahunaConfig()
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.win_reward = win_reward
        self.island_shaping = island_shaping
        self.workers = workers
        self.margin_reward = margin_reward
        if entrant is not None and entrant_agent is None and workers:
            raise ValueError("a collector with workers needs the entrant's spec (entrant_agent): each worker builds it")
        if entrant is None and entrant_agent is not None:
            entrant = build_entrant(entrant_agent)
        self.entrant = entrant
        self._workers: Workers | None = None
        self._sent_snapshots: list[set[int]] = []  # per worker: the snapshots it holds
        if workers:
            settings = {
                "win_reward": win_reward,
                "potentials": island_shaping != 0.0,
                "backend": backend,
                "margin_reward": margin_reward,
                "entrant_agent": entrant_agent,
            }
            model_fields = dataclasses.asdict(model_config or ModelConfig())
            self._workers = Workers(workers, _setup_worker, (self.game_config.to_dict(), model_fields, settings))
            self._sent_snapshots = [set() for _ in range(workers)]

    def __enter__(self) -> SelfPlayCollector:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._workers is not None:
            self._workers.close()
        self._workers, self._sent_snapshots = None, []

    def collect(
        self,
        model: ActorCritic,
        pool: OpponentPool,
        assignment: GameAssignment,
        rng: np.random.Generator,
    ) -> Rollout:
        """Play ``num_games`` games (deals, baselines and sampling seeded from ``rng``) seated by ``assignment``."""
        count = self.num_games
        seeds = rng.integers(2**63, size=count)
        learner_seats, start_positions = assignment.learner_seats, None
        if self.start_positions is not None:
            learner_seats, start_positions = self._starts(assignment, rng)
        shards = self.workers + 1
        batches = []
        for shard in range(shards):
            games = np.arange(shard, count, shards)
            batches.append(
                GameBatch(
                    games=games,
                    seeds=seeds[games],
                    kinds=assignment.kinds[games],
                    learner_seats=learner_seats[games],
                    snapshots=assignment.snapshots[games],
                    rng_seed=int(rng.integers(2**63)),
                    torch_seed=int(rng.integers(2**63)),
                    mcts_simulations=self.mcts_simulations,
                    snapshot_argmax=pool.deterministic,
                    start_positions=None if start_positions is None else [start_positions[g] for g in games],
                )
            )
        if self._workers is not None:
            state = _numpy_state(model)
            for worker, (sent, batch) in enumerate(zip(self._sent_snapshots, batches[1:], strict=True)):
                new = {
                    i: (dataclasses.asdict(pool.snapshots[k].config), _numpy_state(pool.snapshots[k]))
                    for k, i in enumerate(pool.updates)
                    if i not in sent
                }
                sent.intersection_update(pool.updates)
                sent.update(new)
                self._workers.send(worker, _play_batch, state, list(pool.updates), new, batch)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the workers use the other cores meanwhile
        try:
            parts = [
                self.play(
                    batches[0],
                    model,
                    pool.snapshots,
                    self.game_config,
                    self.win_reward,
                    self.island_shaping != 0.0,
                    margin_reward=self.margin_reward,
                    entrant=self.entrant,
                )
            ]
        finally:
            torch.set_num_threads(threads)
        for worker in range(len(self._sent_snapshots)):
            try:
                parts.append(self._workers.receive(worker))  # type: ignore[union-attr]
            except WorkerFailed as error:
                raise WorkerFailed(f"a collection worker failed: {error}") from None
        return finish_rollout(parts, self.gamma, self.gae_lambda, self.island_shaping)

    def _starts(
        self, assignment: GameAssignment, rng: np.random.Generator
    ) -> tuple[np.ndarray, list[dict[str, Any] | None]]:
        """Pick the update's games that start from a position; returns the learner seats and each game's position.

        ``round(start_share * n)`` of the ``n`` games against ``start_opponent`` (chosen uniformly)
        start from a drawn, determinized position; the learner takes the position's seat (in
        self-play both seats stay the learner's).
        """
        assert self.start_positions is not None
        eligible = np.flatnonzero(assignment.kinds == self.start_kind)
        chosen = np.sort(rng.choice(eligible, size=round(self.start_share * len(eligible)), replace=False))
        positions, seats = self.start_positions.draw(len(chosen), rng)
        learner_seats = assignment.learner_seats.copy()
        if self.start_kind != KIND_LATEST:
            learner_seats[chosen] = np.stack([seats == 0, seats == 1], axis=1)
        per_game: list[dict[str, Any] | None] = [None] * self.num_games
        for game, position in zip(chosen.tolist(), positions, strict=True):
            per_game[game] = position
        return learner_seats, per_game
