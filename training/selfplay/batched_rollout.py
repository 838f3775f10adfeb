"""Collection on the batched engine (``rollout.backend: vector``): ``training.selfplay.rollout.play_games`` as arrays.

The games of a :class:`~training.selfplay.rollout.GameBatch` live in one
:class:`~kahuna_env.vector.KahunaBatch` (dealt from the batch's deal seeds, so
they are the very deals the scalar backend plays).  Each tick every running
game takes one action, as in the scalar backend:

* the games whose player to move is a learner seat: one batched forward pass of
  the current policy over their observations (all of them computed at once by
  the batched engine); every decision is stored with its trajectory id
  ``2 * game + seat``;
* snapshot games: one forward pass of all the batch's snapshots stacked
  (:class:`~policy.model.StackedNetworks`: one batched product per layer),
  each snapshot sampling its own games as one pass per snapshot would;
* ``greedy`` / ``random`` games: the batched baselines
  (:class:`~kahuna_env.agents.batched.BatchedGreedy` picks among exactly the
  scalar greedy's best actions), array work over all their games at once;
* ``mcts`` games: one game at a time through ``choose_action`` (a
  determinization of the game, as everywhere).

Then one :meth:`KahunaBatch.step` applies every game's action, and the games
that ended give their terminal rewards to each learner seat's last decision.
The learning semantics (per-seat trajectories, multi-action turns, rewards,
shaping potentials, statistics) are those of the scalar backend; only the
order in which generators are consumed differs, so the two backends give
different (equally distributed) games for the same seed.
"""

from __future__ import annotations

import numpy as np
import torch

from kahuna_env.agents import choose_action, make_agent
from kahuna_env.agents.batched import BatchedGreedy, BatchedRandom
from kahuna_env.engine import KahunaConfig
from kahuna_env.vector import KahunaBatch
from policy.model import ActorCritic, StackedNetworks, sample_actions, sample_from_logits
from training.league.pool import KIND_GREEDY, KIND_MCTS, KIND_PAST, KIND_RANDOM
from training.selfplay.rollout import (
    GameBatch,
    PlayedGames,
    _Storage,
    island_potentials,
    result_stats,
    snapshot_actions,
)


def play_games_batched(
    batch: GameBatch,
    model: ActorCritic,
    snapshots: list[ActorCritic],
    game_config: KahunaConfig,
    win_reward: float = 1.0,
    record_potentials: bool = False,
    record_logits: bool = False,
) -> PlayedGames:
    """Play the games of ``batch`` to the end on the batched engine; see the module docstring.

    ``record_logits``: keep the masked logits of every learner decision (``PlayedGames.logits``).
    """
    n = len(batch.games)
    rng = np.random.default_rng(batch.rng_seed)
    generator = torch.Generator().manual_seed(batch.torch_seed)
    games = KahunaBatch(n, game_config, seed=[int(s) for s in rng.integers(2**63, size=n)])
    games.reset(game_seeds=[int(s) for s in batch.seeds])
    greedy = BatchedGreedy(seed=int(rng.integers(2**63)))
    random_agent = BatchedRandom(seed=int(rng.integers(2**63)))
    kinds = np.asarray(batch.kinds)
    mcts = None
    if (kinds == KIND_MCTS).any():
        mcts = make_agent(f"mcts:{batch.mcts_simulations}", seed=int(rng.integers(2**63)))
    learner = np.asarray(batch.learner_seats, dtype=bool)
    snapshot_of = np.asarray(batch.snapshots)
    game_number = np.asarray(batch.games, dtype=np.int64)
    rows = np.arange(n)
    is_past, is_greedy, is_random, is_mcts = (kinds == k for k in (KIND_PAST, KIND_GREEDY, KIND_RANDOM, KIND_MCTS))
    # The snapshots this batch plays against, stacked when there are several of one shape.
    used = np.unique(snapshot_of[is_past]).tolist()
    stacked = None
    if len(used) > 1 and len({snapshots[s].config for s in used}) == 1:
        stacked = StackedNetworks([snapshots[s] for s in used])
    stack_position = {snapshot: position for position, snapshot in enumerate(used)}

    storage = _Storage(capacity=max(n, 1) * 150, logits=record_logits)
    last_row = np.full((n, 2), -1, dtype=np.int64)  # each seat's latest stored decision
    winners = np.full(n, -1, dtype=np.int8)
    actions = np.zeros(n, dtype=np.intp)
    actions_played = 0
    live = games.live()
    while live.any():
        # Seat: who answers each running game's next action.
        player = games.current.astype(np.intp)
        learner_turn = live & learner[rows, player]
        opponent_turn = live & ~learner_turn
        past_turn = opponent_turn & is_past
        actions_played += int(live.sum())
        masks = games.legal_masks()
        observations = games.observations() if (learner_turn | past_turn).any() else None
        actions[:] = 0
        # Learner: one batched forward pass; every decision is stored.
        group = np.flatnonzero(learner_turn)
        if len(group):
            m = len(group)
            start = storage.reserve(m)
            stored = slice(start, start + m)
            storage.observations[stored] = observations[group]
            storage.masks[stored] = masks[group]
            storage.trajectory[stored] = 2 * game_number[group] + player[group]
            last_row[group, player[group]] = np.arange(start, start + m)
            if record_potentials:
                storage.potentials[stored] = island_potentials(storage.observations[stored])
            chosen, log_probs, values = sample_actions(
                model,
                storage.observations[stored],
                storage.masks[stored],
                generator,
                None if storage.logits is None else storage.logits[stored],
            )
            storage.actions[stored] = chosen
            storage.log_probs[stored] = log_probs
            storage.values[stored] = values
            actions[group] = chosen
        # Snapshots: one stacked forward pass for all of them (or one pass per snapshot in use).
        if past_turn.any():
            in_use = np.unique(snapshot_of[past_turn])
            groups = [np.flatnonzero(past_turn & (snapshot_of == snapshot)) for snapshot in in_use]
            if stacked is None:
                for snapshot, group in zip(in_use, groups, strict=True):
                    actions[group] = snapshot_actions(
                        snapshots[snapshot],
                        observations[group],
                        np.ascontiguousarray(masks[group]),
                        generator,
                        batch.snapshot_argmax,
                    )
            else:
                stacked_snapshot_actions(
                    stacked,
                    [stack_position[s] for s in in_use],
                    groups,
                    observations,
                    masks,
                    generator,
                    batch.snapshot_argmax,
                    actions,
                )
        # Baselines: greedy and random over all their games at once; mcts one game at a time.
        greedy_turn = opponent_turn & is_greedy
        if greedy_turn.any():
            actions[greedy_turn] = greedy.act(games, greedy_turn)[greedy_turn]
        random_turn = opponent_turn & is_random
        if random_turn.any():
            actions[random_turn] = random_agent.act(games, random_turn)[random_turn]
        for g in np.flatnonzero(opponent_turn & is_mcts):
            actions[g] = choose_action(mcts, games.game(g), rng)
        result = games.step(actions, live)
        # Finish: terminal rewards on each learner seat's last decision of the games that ended.
        ended = np.flatnonzero(result.terminated)
        if len(ended):
            winners[ended] = result.winner[ended]
            for seat in (0, 1):
                row = last_row[ended, seat]
                rewarded = learner[ended, seat] & (row >= 0)
                outcome = np.where(winners[ended] < 0, 0, np.where(winners[ended] == seat, 1, -1))
                storage.rewards[row[rewarded]] += win_reward * outcome[rewarded]
                storage.dones[row[rewarded]] = True
        live = games.live()

    return storage.played(
        {
            "games": n,
            "actions": actions_played,
            **result_stats(game_number, kinds, learner, winners),
        }
    )


def stacked_snapshot_actions(
    stacked: StackedNetworks,
    positions: list[int],
    groups: list[np.ndarray],
    observations: np.ndarray,
    masks: np.ndarray,
    generator: torch.Generator,
    argmax: bool,
    actions: np.ndarray,
) -> None:
    """Set ``actions[groups[i]]`` to the actions of the stack's network ``positions[i]`` on those games.

    One forward pass of all the stacked networks over their rows (padded to the largest group);
    then each group, in order, draws its noise from ``generator`` exactly as :func:`snapshot_actions`
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
