"""Self-play collection: the games of a :class:`~training.selfplay.rollout.GameBatch` played on the seated-play driver.

The games live in one :class:`~kahuna_env.vector.KahunaBatch` (dealt from the
batch's deal seeds, so each is the very game ``KahunaGame(config, seed=deal
seed)`` plays with the same actions) and :func:`kahuna_env.seated.play_seated`
plays them to the end.  Each tick every running game takes one action, the
policies asked in this order:

1. the learner (:class:`~training.selfplay.policies.NetworkPolicy`): one batched
   forward pass over the games where a learner seat is to move; every decision is
   recorded with its trajectory id ``2 * game + seat``;
2. the snapshots (:class:`~training.selfplay.policies.SnapshotPolicy`): one forward
   pass of all the batch's snapshots stacked (:class:`~kahuna_policy.model.StackedNetworks`),
   each snapshot sampling its own games as one pass per snapshot would;
3. ``greedy`` and 4. ``random``: the batched baselines
   (:class:`~kahuna_env.agents.batched.BatchedGreedy` picks among exactly the
   scalar greedy's best actions), array work over all their games at once;
5. ``mcts``: one game at a time through ``choose_action`` (a determinization of
   the game, as everywhere; :class:`~kahuna_env.seated.PerGamePolicy`);
6. ``entrant``: the config's entrant (:class:`~training.selfplay.policies.EntrantPolicy`):
   all its games of the tick in one ``act_batch`` call when it has one, else one
   game at a time as ``mcts``.

The ``mcts`` search and the entrant (:data:`~training.league.pool.AGENT_KINDS`), when
the batch has games against them, are seeded in that order from the batch's generator
after the baselines, so a batch without them draws exactly what it drew before they existed.

When the games are over, each learner seat's last decision gets the game's
result (see :mod:`training.selfplay.rollout` for the learning semantics).
"""

from __future__ import annotations

import numpy as np
import torch

from kahuna_env.agents import Agent, make_agent
from kahuna_env.agents.batched import BatchedGreedy, BatchedRandom
from kahuna_env.engine import KahunaConfig
from kahuna_env.seated import BaselinePolicy, BatchPolicy, play_seated, seating_of
from kahuna_env.vector import KahunaBatch
from kahuna_policy.model import ActorCritic, StackedNetworks
from training.league.pool import AGENT_KINDS, KIND_GREEDY, KIND_LATEST, KIND_MCTS, KIND_PAST, KIND_RANDOM, KINDS
from training.selfplay.policies import EntrantPolicy, LearnerRecord, NetworkPolicy, SnapshotPolicy, TickObservations
from training.selfplay.rollout import CollectionStats, GameBatch, PlayedGames

LEARNER = 0
"""The learner's policy index in the seating; the opponents' follow (:data:`POLICY_OF_KIND`)."""
POLICY_OF_KIND = np.zeros(len(KINDS), dtype=np.intp)
"""The policy index of each opponent kind's seat (a self-play game's second seat is the learner's too).

The agent kinds (:data:`~training.league.pool.AGENT_KINDS`) are seated only in a batch with games against
them, after the baselines in their order: :func:`play_games_batched` numbers them per batch."""
for _kind, _index in {KIND_LATEST: LEARNER, KIND_PAST: 1, KIND_GREEDY: 2, KIND_RANDOM: 3}.items():
    POLICY_OF_KIND[_kind] = _index


def play_games_batched(
    batch: GameBatch,
    model: ActorCritic,
    snapshots: list[ActorCritic],
    game_config: KahunaConfig,
    win_reward: float = 1.0,
    record_potentials: bool = False,
    record_logits: bool = False,
    margin_reward: float = 0.0,
    entrant: Agent | None = None,
) -> PlayedGames:
    """Play the games of ``batch`` to the end; see the module docstring.

    ``record_potentials``: keep each decision's shaping potential; ``record_logits``: keep the masked
    logits of every learner decision (``PlayedGames.logits``); ``margin_reward``: the
    terminal reward's term per point of final margin (``reward.margin``); ``entrant``: the
    opponent of the ``entrant`` games (built once by its owner, reseeded here; a ``ValueError``
    when the batch has such games and no entrant).
    """
    n = len(batch.games)
    rng = np.random.default_rng(batch.rng_seed)
    generator = torch.Generator().manual_seed(batch.torch_seed)
    games = KahunaBatch(n, game_config, seed=[int(s) for s in rng.integers(2**63, size=n)])
    games.reset(game_seeds=[int(s) for s in batch.seeds])
    started = batch.started()
    if started.any():
        indices = np.flatnonzero(started).tolist()
        positions = [batch.start_positions[k] for k in indices]  # type: ignore[index]
        games.set_positions(indices, positions, seeds=[int(batch.seeds[k]) for k in indices])
    kinds = np.asarray(batch.kinds)
    record = LearnerRecord(batch.games, potentials=record_potentials, logits=record_logits)
    observations = TickObservations()  # one encoding per tick for the learner and the snapshots
    policies: list[BatchPolicy] = [
        NetworkPolicy(model, generator, record=record, observations=observations),
        _snapshot_policy(batch, snapshots, generator, observations),
        BaselinePolicy(BatchedGreedy(seed=int(rng.integers(2**63)))),
        BaselinePolicy(BatchedRandom(seed=int(rng.integers(2**63)))),
    ]
    policy_of_kind = POLICY_OF_KIND.copy()
    for code in AGENT_KINDS:
        if (kinds == code).any():
            agent = _seated_agent(code, batch, entrant, seed=int(rng.integers(2**63)))
            policy_of_kind[code] = len(policies)
            policies.append(EntrantPolicy(agent, rng, observations))
    learner_seats = np.asarray(batch.learner_seats, dtype=bool)
    seating = seating_of(learner_seats, LEARNER, policy_of_kind[kinds])
    actions = play_seated(games, policies, seating, on_step=observations.clear)
    winners = games.winner.astype(np.int8)
    stats = CollectionStats.of_games(batch.games, kinds, learner_seats, winners, actions, record.size, started)
    return record.played(winners, win_reward, stats, scores=games.scores, margin_reward=margin_reward)


def _seated_agent(code: int, batch: GameBatch, entrant: Agent | None, seed: int) -> Agent:
    """The agent of an agent kind for this batch, seeded with ``seed``: the ``mcts`` search, or the entrant."""
    if code == KIND_MCTS:
        return make_agent("mcts", seed=seed, simulations=batch.mcts_simulations)
    if entrant is None:
        raise ValueError(f"the batch has {KINDS[code]} games but no entrant to play them (pool.entrant_agent)")
    entrant.reset(seed)
    return entrant


def _snapshot_policy(
    batch: GameBatch, snapshots: list[ActorCritic], generator: torch.Generator, observations: TickObservations
) -> SnapshotPolicy:
    """The batch's snapshots, stacked when it plays several of one shape."""
    snapshot_of = np.asarray(batch.snapshots)
    used = np.unique(snapshot_of[np.asarray(batch.kinds) == KIND_PAST]).tolist()
    stacked = None
    if len(used) > 1 and len({snapshots[s].config for s in used}) == 1:
        stacked = StackedNetworks([snapshots[s] for s in used])
    position = {snapshot: k for k, snapshot in enumerate(used)}
    return SnapshotPolicy(snapshots, snapshot_of, generator, batch.snapshot_argmax, stacked, position, observations)
