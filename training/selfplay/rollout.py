"""Vectorised self-play collection with per-seat trajectories, and per-seat GAE.

One update plays ``num_games`` complete games side by side.  Each tick, every
running game takes one action: the games whose player to move is a learner
seat are answered by one batched forward pass of the current policy; the
others by their opponent (one batched pass per pool snapshot in use, the
baselines one game at a time through ``choose_action``).

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
from typing import Any

import numpy as np
import torch

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent, GreedyAgent, choose_action, make_agent
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation
from policy.model import ActorCritic, sample_actions
from policy.reward import island_potentials
from training.league.pool import (
    KIND_GREEDY,
    KIND_LATEST,
    KIND_MCTS,
    KIND_PAST,
    KIND_RANDOM,
    KINDS,
)


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


@dataclasses.dataclass
class Rollout:
    """The learner's decisions of one update (row ``i`` of every array is one decision).

    Attributes:
        observations: ``(n, 246)`` float32.
        masks: ``(n, 179)`` bool legal-action masks.
        actions: chosen actions.
        log_probs: their log-probabilities under the collecting policy.
        values: the collecting policy's value estimates.
        rewards: rewards (terminal reward on each seat's last decision, plus shaping).
        dones: True on the last decision of each seat's trajectory.
        trajectory: trajectory id ``2 * game + seat``.
        advantages: per-seat GAE advantages.
        returns: ``advantages + values`` (the value targets).
        stats: collection statistics (games, actions, results per opponent kind, episodic returns).
    """

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    trajectory: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray
    stats: dict[str, Any]

    def __len__(self) -> int:
        return len(self.actions)


class _Storage:
    """Growable preallocated arrays for the learner's decisions."""

    def __init__(self, capacity: int, logits: bool = False) -> None:
        self.size = 0
        self.logits = np.zeros((capacity, NUM_ACTIONS), dtype=np.float32) if logits else None
        self.observations = np.zeros((capacity, OBSERVATION_SIZE), dtype=np.float32)
        self.masks = np.zeros((capacity, NUM_ACTIONS), dtype=bool)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.log_probs = np.zeros(capacity, dtype=np.float32)
        self.values = np.zeros(capacity, dtype=np.float32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=bool)
        self.trajectory = np.zeros(capacity, dtype=np.int64)
        self.potentials = np.zeros(capacity, dtype=np.float32)

    def reserve(self, count: int) -> int:
        """Room for ``count`` more rows; returns the first new row."""
        start = self.size
        if start + count > len(self.actions):
            grow = max(count, len(self.actions))
            for name in ("observations", "masks", "actions", "log_probs", "values", "rewards", "dones"):
                array = getattr(self, name)
                setattr(self, name, np.concatenate([array, np.zeros((grow, *array.shape[1:]), dtype=array.dtype)]))
            for name in ("trajectory", "potentials"):
                array = getattr(self, name)
                setattr(self, name, np.concatenate([array, np.zeros(grow, dtype=array.dtype)]))
            if self.logits is not None:
                self.logits = np.concatenate([self.logits, np.zeros((grow, NUM_ACTIONS), dtype=np.float32)])
        self.size = start + count
        return start

    def played(self, stats: dict[str, Any]) -> PlayedGames:
        """The stored rows, trimmed to what was played, with the collection ``stats``."""
        n = self.size
        return PlayedGames(
            observations=self.observations[:n],
            masks=self.masks[:n],
            actions=self.actions[:n],
            log_probs=self.log_probs[:n],
            values=self.values[:n],
            rewards=self.rewards[:n],
            dones=self.dones[:n],
            trajectory=self.trajectory[:n],
            potentials=self.potentials[:n],
            stats=stats,
            logits=None if self.logits is None else self.logits[:n],
        )


def baseline_action(agent: Agent, game: KahunaGame, rng: np.random.Generator) -> int:
    """The action ``choose_action(agent, game, rng)`` gives, without the work the training baselines do not use.

    ``greedy`` decides from the public state and its own hand only, so its
    action on the real game is the one it takes on every determinization
    (``tests/test_training_rollout.py`` checks this on thousands of
    positions); training skips the determinized copy, which cost a third of
    a greedy move.  (A training opponent's view never reaches the learner,
    whose observations are encoded separately.)  Other agents go through
    :func:`choose_action`.
    """
    if type(agent) is GreedyAgent:
        return agent.act(None, None, game)  # type: ignore[arg-type]  # greedy reads the legal actions itself
    return choose_action(agent, game, rng)


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


@dataclasses.dataclass
class PlayedGames:
    """The learner's decisions from one :class:`GameBatch`, before advantages (row ``i`` is one decision).

    ``rewards`` hold the terminal rewards only; ``potentials`` the shaping potentials (zeros when off);
    ``logits`` the masked logits each decision was sampled from, where the collection recorded them.
    ``stats["outcomes"]`` is the learner's result of each game of the batch (in ``batch.games`` order,
    1 win, 0 draw, -1 loss; seat 0's for self-play games).
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
    stats: dict[str, Any]
    logits: np.ndarray | None = None


def snapshot_actions(
    snapshot: ActorCritic,
    observations: np.ndarray,
    masks: np.ndarray,
    generator: torch.Generator,
    argmax: bool,
) -> np.ndarray:
    """A snapshot opponent's actions: sampled like the learner's, or its most likely legal ones (``argmax``)."""
    if argmax:
        with torch.inference_mode():
            logits, _ = snapshot(torch.from_numpy(observations), torch.from_numpy(masks))
        return logits.argmax(dim=1).numpy()
    return sample_actions(snapshot, observations, masks, generator)[0]


def learner_outcomes(learner_seats: np.ndarray, winners: np.ndarray) -> np.ndarray:
    """The learner's result per game (1 win, 0 draw, -1 loss) from the winners (-1 for a draw).

    A game whose learner is seat 1 only is seen from seat 1; otherwise (seat 0, or both seats
    in self-play) from seat 0.
    """
    seat = np.where(learner_seats[:, 0], 0, 1)
    return np.where(winners < 0, 0, np.where(winners == seat, 1, -1)).astype(np.int8)


def result_stats(
    games: np.ndarray, kinds: np.ndarray, learner_seats: np.ndarray, winners: np.ndarray
) -> dict[str, Any]:
    """The result statistics of finished games (``winners``: 0, 1, -1 for a draw), as ``PlayedGames.stats`` has them.

    ``results``: per opponent kind, the learner's wins, draws, losses (self-play games excluded);
    ``first_seat_results``: self-play games from seat 0's side; ``game_numbers`` and ``outcomes``
    (see :func:`learner_outcomes`).
    """
    outcomes = learner_outcomes(learner_seats, winners)
    results = {}
    for code, kind in enumerate(KINDS):
        chosen = outcomes[kinds == code] if code != KIND_LATEST else outcomes[:0]
        results[kind] = [int((chosen == 1).sum()), int((chosen == 0).sum()), int((chosen == -1).sum())]
    selfplay = winners[kinds == KIND_LATEST]
    return {
        "results": results,
        "first_seat_results": [int((selfplay == 0).sum()), int((selfplay < 0).sum()), int((selfplay == 1).sum())],
        "game_numbers": np.asarray(games, dtype=np.int64),
        "outcomes": outcomes,
    }


def play_games(
    batch: GameBatch,
    model: ActorCritic,
    snapshots: list[ActorCritic],
    game_config: KahunaConfig,
    win_reward: float = 1.0,
    record_potentials: bool = False,
) -> PlayedGames:
    """Play the games of ``batch`` to the end, one action per running game per tick; see the module docstring."""
    # Setup: the deals, the baselines, storage for the learner's decisions.
    table = _GameTable(batch, game_config, record_potentials)
    generator = torch.Generator().manual_seed(batch.torch_seed)
    active = list(range(len(batch.games)))
    while active:
        # Seat: who answers each running game's next action.
        learner_games, by_snapshot, baseline_games = table.seat(active)
        table.actions_played += len(active)
        # Learner: one batched forward pass for all its games; every decision is stored.
        if learner_games:
            table.learner_moves(learner_games, model, generator)
        # Snapshots: one batched forward pass per snapshot in use (nothing stored).
        for snapshot, group in by_snapshot.items():
            table.snapshot_moves(group, snapshots[snapshot], generator)
        # Baselines: greedy and random, one game at a time.
        for g in baseline_games:
            table.baseline_move(g)
        # Finish: terminal rewards on each learner seat's last decision of the games that ended.
        active = table.finish_ended(active, win_reward)
    return table.played()


class _GameTable:
    """The running games of one :class:`GameBatch` and the learner's decisions so far (see :func:`play_games`)."""

    def __init__(self, batch: GameBatch, game_config: KahunaConfig, record_potentials: bool) -> None:
        count = len(batch.games)
        self.rng = np.random.default_rng(batch.rng_seed)
        self.games = [KahunaGame(game_config, seed=int(seed)) for seed in batch.seeds]
        self.baselines = {
            KIND_GREEDY: make_agent("greedy", seed=int(self.rng.integers(2**63))),
            KIND_RANDOM: make_agent("random", seed=int(self.rng.integers(2**63))),
        }
        if (batch.kinds == KIND_MCTS).any():
            self.baselines[KIND_MCTS] = make_agent(f"mcts:{batch.mcts_simulations}", seed=int(self.rng.integers(2**63)))
        self.snapshot_argmax = batch.snapshot_argmax
        self.winners = np.full(count, -1, dtype=np.int8)
        self.record_potentials = record_potentials
        self.kinds = batch.kinds.tolist()
        self.snapshot_of = batch.snapshots.tolist()
        self.learner = batch.learner_seats.tolist()
        self.game_number = batch.games.tolist()
        self.storage = _Storage(capacity=max(count, 1) * 150)
        self.last_row = [[-1, -1] for _ in range(count)]  # each seat's latest stored decision
        self.actions_played = 0
        self.scratch = np.zeros((count, OBSERVATION_SIZE), dtype=np.float32)
        self.scratch_masks = np.zeros((count, NUM_ACTIONS), dtype=bool)

    def seat(self, active: list[int]) -> tuple[list[int], dict[int, list[int]], list[int]]:
        """Split the running games by who moves next: the learner, a snapshot (by pool index), a baseline."""
        learner_games: list[int] = []
        by_snapshot: dict[int, list[int]] = {}
        baseline_games: list[int] = []
        for g in active:
            if self.learner[g][self.games[g].current_player]:
                learner_games.append(g)
            elif self.kinds[g] == KIND_PAST:
                by_snapshot.setdefault(self.snapshot_of[g], []).append(g)
            else:
                baseline_games.append(g)
        return learner_games, by_snapshot, baseline_games

    def learner_moves(self, group: list[int], model: ActorCritic, generator: torch.Generator) -> None:
        """Encode the group's positions into storage, sample the learner's actions, store and play them."""
        storage = self.storage
        n = len(group)
        start = storage.reserve(n)
        observations = storage.observations[start : start + n]
        masks = storage.masks[start : start + n]
        for j, g in enumerate(group):
            game = self.games[g]
            player = game.current_player
            encode_observation(game, player, out=observations[j])
            masks[j, game.legal_actions()] = True
            storage.trajectory[start + j] = 2 * self.game_number[g] + player
            self.last_row[g][player] = start + j
        if self.record_potentials:
            storage.potentials[start : start + n] = island_potentials(observations)
        actions, log_probs, values = sample_actions(model, observations, masks, generator)
        storage.actions[start : start + n] = actions
        storage.log_probs[start : start + n] = log_probs
        storage.values[start : start + n] = values
        for g, action in zip(group, actions.tolist(), strict=True):
            self.games[g].step(action)

    def snapshot_moves(self, group: list[int], snapshot: ActorCritic, generator: torch.Generator) -> None:
        """Sample and play a snapshot's actions in its games (scratch buffers, nothing stored)."""
        n = len(group)
        observations = self.scratch[:n]
        masks = self.scratch_masks[:n]
        masks[:] = False
        for j, g in enumerate(group):
            game = self.games[g]
            encode_observation(game, game.current_player, out=observations[j])
            masks[j, game.legal_actions()] = True
        actions = snapshot_actions(snapshot, observations, masks, generator, self.snapshot_argmax)
        for g, action in zip(group, actions.tolist(), strict=True):
            self.games[g].step(action)

    def baseline_move(self, g: int) -> None:
        """Play the baseline's action in game ``g``."""
        self.games[g].step(baseline_action(self.baselines[self.kinds[g]], self.games[g], self.rng))

    def finish_ended(self, active: list[int], win_reward: float) -> list[int]:
        """Reward the learner seats of the games that just ended; returns the games still running."""
        still_running = []
        for g in active:
            game = self.games[g]
            if not game.is_over:
                still_running.append(g)
                continue
            winner = game.winner
            self.winners[g] = -1 if winner is None else winner
            for seat in (0, 1):
                row = self.last_row[g][seat]
                if not self.learner[g][seat] or row < 0:
                    continue
                outcome = 0 if winner is None else (1 if winner == seat else -1)
                self.storage.rewards[row] += win_reward * outcome
                self.storage.dones[row] = True
        return still_running

    def played(self) -> PlayedGames:
        """The stored decisions and the statistics, trimmed to what was played."""
        return self.storage.played(
            {
                "games": len(self.games),
                "actions": self.actions_played,
                **result_stats(
                    np.asarray(self.game_number),
                    np.asarray(self.kinds),
                    np.asarray(self.learner, dtype=bool).reshape(-1, 2),
                    self.winners,
                ),
            }
        )


def finish_rollout(parts: list[PlayedGames], gamma: float, gae_lambda: float, island_shaping: float = 0.0) -> Rollout:
    """Join played batches into one :class:`Rollout`: shaping rewards, per-seat GAE, statistics."""
    joined = {
        name: np.concatenate([getattr(part, name) for part in parts])
        for name in ("observations", "masks", "actions", "log_probs", "values", "rewards", "dones", "trajectory")
    }
    trajectory = joined["trajectory"]
    rewards = joined["rewards"].astype(np.float32)
    if island_shaping:
        potentials = np.concatenate([part.potentials for part in parts])
        rewards = rewards + shaping_rewards(trajectory, potentials, gamma, island_shaping)
    values = joined["values"]
    advantages, returns = per_seat_gae(trajectory, rewards, values, gamma, gae_lambda)
    order, row, _, _ = trajectory_layout(trajectory)
    episodic_returns = np.bincount(row, weights=rewards[order]) if len(order) else np.zeros(0)
    results = {kind: [sum(part.stats["results"][kind][k] for part in parts) for k in range(3)] for kind in KINDS}
    games = sum(part.stats["games"] for part in parts)
    outcomes = np.zeros(games, dtype=np.int8)
    for part in parts:
        outcomes[part.stats["game_numbers"]] = part.stats["outcomes"]
    stats: dict[str, Any] = {
        "games": sum(part.stats["games"] for part in parts),
        "actions": sum(part.stats["actions"] for part in parts),
        "decisions": len(trajectory),
        "episodic_returns": episodic_returns,
        "results": results,
        "first_seat_results": [sum(part.stats["first_seat_results"][k] for part in parts) for k in range(3)],
        "outcomes": outcomes,
    }
    return Rollout(
        observations=joined["observations"],
        masks=joined["masks"],
        actions=joined["actions"],
        log_probs=joined["log_probs"],
        values=values,
        rewards=rewards,
        dones=joined["dones"],
        trajectory=trajectory,
        advantages=advantages,
        returns=returns,
        stats=stats,
    )
