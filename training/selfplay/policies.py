"""The networks as :class:`~kahuna_env.seated.BatchPolicy` seats of the seated-play driver (torch side).

* :class:`NetworkPolicy`: one network (the learner, or a policy being
  evaluated) answering all its games of a tick with one forward pass, sampling
  with a seeded ``torch.Generator`` or playing its most likely legal action;
  as the learner it records every decision (:class:`LearnerRecord`).
* :class:`SnapshotPolicy`: the pool's snapshots, each game against its own; all
  of them in one stacked forward pass (:class:`~kahuna_policy.model.StackedNetworks`)
  or one pass per snapshot, each snapshot drawing its noise as one pass of its
  own would;
* :class:`EntrantPolicy`: any agent of the arena (the ``mcts`` baseline, an
  entrant of the league or a target of ``kahuna-exploit``): one ``act_batch``
  call per tick over its games when it has one, else game by game.

:mod:`kahuna_env.seated` has the baselines and the per-game adapter for any
scalar agent; this module is where torch enters.
"""

from __future__ import annotations

import numpy as np
import torch

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent
from kahuna_env.observation import OBSERVATION_SIZE
from kahuna_env.seated import PerGamePolicy
from kahuna_env.vector import KahunaBatch
from kahuna_policy.model import ActorCritic, StackedNetworks, network_outputs, sample_actions, sample_from_logits
from kahuna_policy.reward import island_potentials
from training.selfplay.rollout import CollectionStats, PlayedGames

_ARRAYS = {
    "observations": ((OBSERVATION_SIZE,), np.float32),
    "masks": ((NUM_ACTIONS,), bool),
    "actions": ((), np.int64),
    "log_probs": ((), np.float32),
    "values": ((), np.float32),
    "rewards": ((), np.float32),
    "dones": ((), bool),
    "trajectory": ((), np.int64),
    "potentials": ((), np.float32),
}
"""The per-decision arrays a :class:`LearnerRecord` fills: trailing shape and dtype."""


class TickObservations:
    """Every game's observation of the player to move, computed once per tick for all the networks that read it.

    One :meth:`~kahuna_env.vector.KahunaBatch.observations` call over the whole batch costs less than
    one per network over its own rows; pass :meth:`clear` as the driver's ``on_step``.
    """

    def __init__(self) -> None:
        self.vectors: np.ndarray | None = None

    def of(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        """The observations of the games ``rows`` (``(len(rows), 246)`` float32) as they stand this tick."""
        if self.vectors is None:
            self.vectors = batch.observations()
        return self.vectors[rows]

    def clear(self, _: object = None) -> None:
        """Forget this tick's observations (the batch has stepped)."""
        self.vectors = None


class LearnerRecord:
    """The learner's decisions while the games are played: arrays that grow, each seat's latest row.

    Args:
        game_numbers: each batch row's game number (trajectory ids are ``2 * game number + seat``).
        potentials: record the shaping potential of each decision.
        logits: record the masked logits each decision was sampled from.
    """

    def __init__(self, game_numbers: np.ndarray, potentials: bool = False, logits: bool = False) -> None:
        games = len(game_numbers)
        capacity = max(games, 1) * 150
        self.game_numbers = np.asarray(game_numbers, dtype=np.int64)
        self.size = 0
        self.arrays = {name: np.zeros((capacity, *shape), dtype=dtype) for name, (shape, dtype) in _ARRAYS.items()}
        if logits:
            self.arrays["logits"] = np.zeros((capacity, NUM_ACTIONS), dtype=np.float32)
        self.potentials = potentials
        self.last_row = np.full((games, 2), -1, dtype=np.int64)
        """Each seat's latest recorded decision (-1: none yet)."""

    def reserve(self, batch: KahunaBatch, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Record that the games ``rows`` decide now; returns the new decisions' arrays to fill (views)."""
        count = len(rows)
        start = self.size
        capacity = len(self.arrays["actions"])
        if start + count > capacity:
            grow = max(count, capacity)
            for name, array in self.arrays.items():
                self.arrays[name] = np.concatenate([array, np.zeros((grow, *array.shape[1:]), dtype=array.dtype)])
        self.size = start + count
        new = {name: array[start : self.size] for name, array in self.arrays.items()}
        player = batch.current_player[rows].astype(np.intp)
        new["trajectory"][:] = 2 * self.game_numbers[rows] + player
        self.last_row[rows, player] = np.arange(start, self.size)
        return new

    def played(
        self,
        winners: np.ndarray,
        win_reward: float,
        stats: CollectionStats,
        scores: np.ndarray | None = None,
        margin_reward: float = 0.0,
    ) -> PlayedGames:
        """The recorded decisions, each seat's last one rewarded (``+win``, ``-win``, 0) from ``winners`` (-1: draw).

        With ``margin_reward`` > 0 the last decision also gets ``margin_reward * (its seat's points -
        the other's)`` from the final ``scores`` (``(games, 2)``).
        """
        lead = None  # seat 0's margin term (seat 1's is its negative)
        if margin_reward:
            if scores is None:
                raise ValueError("a margin reward needs the games' final scores")
            points = np.asarray(scores, dtype=np.float64)
            lead = margin_reward * (points[:, 0] - points[:, 1])
        arrays = {name: array[: self.size] for name, array in self.arrays.items()}
        for seat, sign in ((0, 1), (1, -1)):
            last = self.last_row[:, seat]
            decided = last >= 0
            outcome = np.where(winners < 0, 0, np.where(winners == seat, 1, -1))
            arrays["rewards"][last[decided]] += win_reward * outcome[decided]
            if lead is not None:
                arrays["rewards"][last[decided]] += sign * lead[decided]
            arrays["dones"][last[decided]] = True
        return PlayedGames(**arrays, stats=stats)


class NetworkPolicy:
    """A network playing its seats: one forward pass per tick over all its games.

    Args:
        model: the network (in eval mode).
        generator: the sampling noise (one ``(rows, 179)`` uniform draw per call).
        argmax: play the most likely legal action instead of sampling (draws no noise).
        record: the learner's record; every decision is stored there with its
            log-probability and value (None: nothing is stored).
        observations: the tick's observations, shared with the other networks (cleared by the
            driver's ``on_step``); None: each call encodes its own rows.
    """

    def __init__(
        self,
        model: ActorCritic,
        generator: torch.Generator,
        argmax: bool = False,
        record: LearnerRecord | None = None,
        observations: TickObservations | None = None,
    ) -> None:
        if argmax and record is not None:
            raise ValueError("a recording learner samples its actions: argmax must be False")
        self.model = model
        self.generator = generator
        self.argmax = argmax
        self.record = record
        self.observations = observations

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        if self.record is None:
            observations = _observations(batch, rows, self.observations)
            masks = batch.legal_masks(rows)
            if self.argmax:
                return argmax_actions(self.model, observations, masks)
            return sample_actions(self.model, observations, masks, self.generator)[0]
        new = self.record.reserve(batch, rows)
        new["observations"][:] = _observations(batch, rows, self.observations)
        new["masks"][:] = batch.legal_masks(rows)
        if self.record.potentials:
            new["potentials"][:] = island_potentials(new["observations"])
        logits = new.get("logits")
        observations, masks = new["observations"], new["masks"]
        actions, log_probs, values = sample_actions(self.model, observations, masks, self.generator, logits)
        new["actions"][:] = actions
        new["log_probs"][:] = log_probs
        new["values"][:] = values
        return actions


class SnapshotPolicy:
    """The pool's snapshots as one policy: game ``i`` plays snapshot ``snapshot_of[i]``.

    Args:
        snapshots: the networks by pool index.
        snapshot_of: ``(N,)`` the pool index of each game's snapshot (-1 where none).
        generator: the sampling noise, drawn per snapshot in ascending pool index (as one pass each would).
        argmax: play each snapshot's most likely legal action.
        stacked: the snapshots in use stacked (one batched product per layer), or None for one pass each.
        stack_position: each stacked snapshot's position in ``stacked``, by pool index.
        observations: the tick's observations, shared with the other networks (cleared by the
            driver's ``on_step``); None: each call encodes its own rows.
    """

    def __init__(
        self,
        snapshots: list[ActorCritic],
        snapshot_of: np.ndarray,
        generator: torch.Generator,
        argmax: bool = False,
        stacked: StackedNetworks | None = None,
        stack_position: dict[int, int] | None = None,
        observations: TickObservations | None = None,
    ) -> None:
        self.snapshots = snapshots
        self.snapshot_of = np.asarray(snapshot_of)
        self.generator = generator
        self.argmax = argmax
        self.stacked = stacked
        self.stack_position = stack_position or {}
        self.observations = observations

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        observations = _observations(batch, rows, self.observations)
        masks = batch.legal_masks(rows)
        snapshot_of = self.snapshot_of[rows]
        in_use = np.unique(snapshot_of)
        groups = [np.flatnonzero(snapshot_of == snapshot) for snapshot in in_use]
        actions = np.zeros(len(rows), dtype=np.intp)
        if self.stacked is None:
            for snapshot, group in zip(in_use.tolist(), groups, strict=True):
                network = self.snapshots[snapshot]
                if self.argmax:
                    actions[group] = argmax_actions(network, observations[group], masks[group])
                else:
                    actions[group] = sample_actions(network, observations[group], masks[group], self.generator)[0]
        else:
            positions = [self.stack_position[snapshot] for snapshot in in_use.tolist()]
            stacked_actions(self.stacked, positions, groups, observations, masks, self.generator, self.argmax, actions)
        return actions


class EntrantPolicy:
    """Any :class:`~kahuna_env.agents.Agent` as a seat: batched through ``act_batch`` when it has one.

    An agent with ``act_batch(observations, masks)`` that does not ask for the game (an agent file
    of any kind, a ``py:`` agent, a network of this project) gets the observations ``(rows, 246)``
    float32 and masks ``(rows, 179)`` int8 of all its games of the tick in one call: the same
    vectors :func:`~kahuna_env.agents.choose_action` would hand it game by game.  Any other (a
    search, which needs a determinized game) is asked game by game
    (:class:`~kahuna_env.seated.PerGamePolicy`, determinizations from ``rng``).  The actions are
    not corrected: an illegal one stops the games (:meth:`~kahuna_env.vector.KahunaBatch.step`).

    Args:
        agent: the agent (seeded by its owner: ``agent.reset(seed)``).
        rng: the generator of the determinizations of a per-game agent.
        observations: the tick's observations, shared with the networks (cleared by the driver's
            ``on_step``); None: each call encodes its own rows.
    """

    def __init__(self, agent: Agent, rng: np.random.Generator, observations: TickObservations | None = None) -> None:
        self.agent = agent
        self.batched = callable(getattr(agent, "act_batch", None)) and not agent.uses_game
        self.per_game = PerGamePolicy(agent, rng)
        self.observations = observations

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        if not self.batched:
            return self.per_game.act(batch, rows)
        observations = _observations(batch, rows, self.observations)
        masks = batch.legal_masks(rows).astype(np.int8)
        actions = np.asarray(self.agent.act_batch(observations, masks)).reshape(-1)  # type: ignore[attr-defined]
        if len(actions) != len(rows):
            raise ValueError(
                f"agent {self.agent.name}: act_batch gave {len(actions)} actions for {len(rows)} positions"
            )
        whole = actions.dtype.kind in "iu" or (
            actions.dtype.kind == "f" and bool(np.all(np.isfinite(actions) & (actions == np.floor(actions))))
        )
        if not whole:  # never rounded into some action: the agent answered something else
            raise ValueError(f"agent {self.agent.name}: act_batch gave {actions[:3]!r:.60}, not action numbers")
        return actions.astype(np.intp)


def _observations(batch: KahunaBatch, rows: np.ndarray, shared: TickObservations | None) -> np.ndarray:
    """The observations of the games ``rows``: from the tick's shared ones, or encoded for these rows alone."""
    return batch.observations(rows=rows) if shared is None else shared.of(batch, rows)


@torch.inference_mode()
def argmax_actions(model: ActorCritic, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The most likely legal action of each row."""
    logits, _ = network_outputs(model, observations, masks)
    return logits.argmax(dim=1).numpy()


@torch.inference_mode()
def stacked_actions(
    stacked: StackedNetworks,
    positions: list[int],
    groups: list[np.ndarray],
    observations: np.ndarray,
    masks: np.ndarray,
    generator: torch.Generator,
    argmax: bool,
    actions: np.ndarray,
) -> None:
    """Set ``actions[groups[i]]`` to the actions of the stack's network ``positions[i]`` on those rows.

    One forward pass of all the stacked networks over their rows (padded to the largest group);
    then each group, in order, draws its noise from ``generator`` exactly as one pass of its own
    would (one ``(rows, 179)`` uniform draw per group), or takes its most likely legal actions.
    """
    rows = max(len(group) for group in groups)
    padded_observations = np.zeros((stacked.size, rows, observations.shape[1]), dtype=np.float32)
    padded_masks = np.zeros((stacked.size, rows, masks.shape[1]), dtype=bool)
    for position, group in zip(positions, groups, strict=True):
        padded_observations[position, : len(group)] = observations[group]
        padded_masks[position, : len(group)] = masks[group]
    logits, _ = stacked(torch.from_numpy(padded_observations), torch.from_numpy(padded_masks))
    for position, group in zip(positions, groups, strict=True):
        own = logits[position, : len(group)]
        if argmax:
            actions[group] = own.argmax(dim=1).numpy()
        else:
            actions[group] = sample_from_logits(own, torch.rand(own.shape, generator=generator)).numpy()
