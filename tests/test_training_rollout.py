"""Self-play collection: per-seat trajectories, GAE, masking, the opponent pool."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import GreedyAgent
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import OBSERVATION_LAYOUT, OBSERVATION_SIZE, encode_observation
from kahuna_policy.model import (
    MASKED_LOGIT,
    ActorCritic,
    ModelConfig,
    StackedNetworks,
    sample_actions,
    sample_from_logits,
)
from kahuna_policy.reward import island_potentials
from training.league.pool import KIND_GREEDY, KIND_LATEST, KIND_PAST, OpponentPool, split_counts
from training.ppo import trainer
from training.ppo.config import PPOConfig
from training.ppo.trainer import PAD_ROWS, padded_rows, ppo_losses, ppo_update
from training.selfplay.collector import SelfPlayCollector
from training.selfplay.rollout import per_seat_gae, shaping_rewards

# A hand-made stretch of one game, in time order: seat 0 plays a two-action turn (rows 0, 1),
# seat 1 a three-action turn (rows 2-4), then each seat's final decision (rows 5, 6).
TRAJECTORY = np.array([0, 0, 1, 1, 1, 0, 1])
REWARDS = np.array([0, 0, 0, 0, 0, 1, -1], dtype=np.float32)  # seat 0 wins
VALUES = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], dtype=np.float32)


def test_gae_with_lambda_one_gives_each_seat_its_final_reward_as_return():
    advantages, returns = per_seat_gae(TRAJECTORY, REWARDS, VALUES, gamma=1.0, gae_lambda=1.0)
    np.testing.assert_allclose(returns, [1, 1, -1, -1, -1, 1, -1], atol=1e-6)
    np.testing.assert_allclose(advantages, returns - VALUES, atol=1e-6)


def test_gae_bootstraps_from_the_same_seats_next_decision():
    # lambda = 0: A = r + gamma * V(next decision of the same seat) - V, and 0 after the last one.
    advantages, _ = per_seat_gae(TRAJECTORY, REWARDS, VALUES, gamma=0.5, gae_lambda=0.0)
    expected = [
        0.5 * 0.2 - 0.1,  # row 0 -> row 1 (same turn)
        0.5 * 0.6 - 0.2,  # row 1 -> row 5 (seat 0's next decision, past seat 1's turn)
        0.5 * 0.4 - 0.3,  # row 2 -> row 3
        0.5 * 0.5 - 0.4,  # row 3 -> row 4
        0.5 * 0.7 - 0.5,  # row 4 -> row 6
        1.0 - 0.6,  # row 5: terminal, win
        -1.0 - 0.7,  # row 6: terminal, loss
    ]
    np.testing.assert_allclose(advantages, expected, atol=1e-6)


def test_gae_discounts_per_seat_decision():
    # gamma = 0.5, lambda = 1, zero values: the return of a decision k steps before the seat's end is 0.5**k * R.
    _, returns = per_seat_gae(TRAJECTORY, REWARDS, np.zeros(7, dtype=np.float32), 0.5, 1.0)
    np.testing.assert_allclose(returns, [0.25, 0.5, -0.125, -0.25, -0.5, 1.0, -1.0], atol=1e-6)


def test_shaping_is_the_potential_difference_between_a_seats_decisions():
    potentials = np.array([0.0, 1.0, 0.0, 2.0, 2.0, 3.0, 1.0], dtype=np.float32)
    shaped = shaping_rewards(TRAJECTORY, potentials, gamma=1.0, coefficient=0.5)
    # row 0 -> 1: 0.5*(1-0); row 1 -> 5: 0.5*(3-1); row 5 terminal: 0.5*(0-3); seat 1: 2->3->4->6.
    np.testing.assert_allclose(shaped, [0.5, 1.0, 1.0, 0.0, -0.5, -1.5, -0.5], atol=1e-6)
    # The shaping of a seat sums to minus its first potential (it telescopes).
    assert shaped[TRAJECTORY == 0].sum() == pytest.approx(-potentials[0])


def random_states(seed: int, count: int) -> list[KahunaGame]:
    """Positions reached by random play from several deals (a copy at every 7th action)."""
    rng = np.random.default_rng(seed)
    states = []
    deal = 0
    while len(states) < count:
        game = KahunaGame(seed=seed * 1000 + deal)
        deal += 1
        step = 0
        while not game.is_over and len(states) < count:
            if step % 7 == 0:
                states.append(game.clone())
            legal = game.legal_actions()
            game.step(legal[rng.integers(len(legal))])
            step += 1
    return states


def batch_of(states: list[KahunaGame]) -> tuple[np.ndarray, np.ndarray]:
    observations = np.zeros((len(states), OBSERVATION_SIZE), dtype=np.float32)
    masks = np.zeros((len(states), NUM_ACTIONS), dtype=bool)
    for row, game in enumerate(states):
        encode_observation(game, game.current_player, out=observations[row])
        masks[row, game.legal_actions()] = True
    return observations, masks


def spiky_model(seed: int) -> ActorCritic:
    """A network whose logits are large and uneven, so illegal actions would often win without the mask."""
    torch.manual_seed(seed)
    model = ActorCritic(ModelConfig(hidden_sizes=(32,)))
    with torch.no_grad():
        model.policy_head.weight.mul_(3000.0)
        model.policy_head.bias.copy_(torch.randn(NUM_ACTIONS) * 50)
    return model


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_masked_policy_never_samples_an_illegal_action(seed):
    observations, masks = batch_of(random_states(seed, 40))
    model = spiky_model(seed)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(20):
        actions, log_probs, _ = sample_actions(model, observations, masks, generator)
        assert masks[np.arange(len(actions)), actions].all()
        assert np.isfinite(log_probs).all()


def test_a_uniform_draw_of_exactly_zero_never_picks_a_masked_action():
    # torch.rand returns exactly 0 once in 2**24 draws; its Gumbel noise was -inf, so a row whose only legal
    # action drew it took action 0 (the first of the masked logits, which all round to MASKED_LOGIT). That
    # crashed a default training run at update 318 (seed 3): legal action 151 only, logit -13.6, U = 0.0.
    logits = torch.full((4, NUM_ACTIONS), MASKED_LOGIT)
    logits[0, 151] = -13.6
    logits[1, NUM_ACTIONS - 1] = 2.0
    logits[2, [5, 60]] = torch.tensor([0.5, -40.0])  # the likely action draws 0: its noise is now about -4.5, finite
    logits[3, 0] = 1.0  # action 0 legal and drawing 0 (it is also the masked rows' tie-break)
    uniform = torch.rand(logits.shape, generator=torch.Generator().manual_seed(0))
    uniform[0, 151] = uniform[1, NUM_ACTIONS - 1] = uniform[2, 5] = uniform[3, 0] = 0.0
    assert sample_from_logits(logits, uniform).tolist() == [151, NUM_ACTIONS - 1, 5, 0]


def test_gumbel_sampling_is_unchanged_where_no_draw_is_zero():
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn((512, NUM_ACTIONS), generator=generator) * 3
    logits[torch.rand(logits.shape, generator=generator) < 0.8] = MASKED_LOGIT
    logits[:, 7] = 0.0
    uniform = torch.rand(logits.shape, generator=generator)
    assert (uniform > 0).all()
    expected = torch.argmax(logits - torch.log(-torch.log(uniform)), dim=1)
    assert torch.equal(sample_from_logits(logits, uniform), expected)


def test_masked_actions_have_probability_zero():
    observations, masks = batch_of(random_states(3, 50))
    with torch.no_grad():
        logits, _ = spiky_model(3)(torch.from_numpy(observations), torch.from_numpy(masks))
    probabilities = torch.softmax(logits, dim=1).numpy()
    assert (probabilities[~masks] == 0).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)


def test_masked_logits_get_no_gradient_from_the_ppo_loss():
    observations, masks = batch_of(random_states(5, 64))
    # Actions that are illegal in every one of these states.
    never_legal = np.flatnonzero(~masks.any(axis=0))
    assert len(never_legal) > 10
    torch.manual_seed(0)
    model = ActorCritic(ModelConfig(hidden_sizes=(16,)))
    logits, values = model(torch.from_numpy(observations), torch.from_numpy(masks))
    actions = torch.as_tensor([int(np.flatnonzero(row)[0]) for row in masks])
    loss, _ = ppo_losses(
        logits,
        values,
        actions,
        old_log_probs=torch.full((64,), -2.0),
        old_values=torch.zeros(64),
        advantages=torch.randn(64),
        returns=torch.randn(64),
        ppo=PPOConfig(ent_coef=0.1),
    )
    loss.backward()
    head = model.policy_head
    assert (head.weight.grad[never_legal] == 0).all()
    assert (head.bias.grad[never_legal] == 0).all()
    legal_somewhere = np.flatnonzero(masks.any(axis=0))
    assert head.weight.grad[legal_somewhere].abs().sum() > 0


def test_split_counts_follows_the_shares_and_sums_to_the_total():
    counts = split_counts(10, {"latest": 0.6, "past": 0.2, "greedy": 0.2, "random": 0.0})
    assert counts == {"latest": 6, "past": 2, "greedy": 2, "random": 0, "mcts": 0, "entrant": 0}
    assert sum(split_counts(7, {"latest": 1, "past": 1, "greedy": 1, "random": 0}).values()) == 7


def test_learner_seat_alternates_in_games_against_an_opponent():
    pool = OpponentPool(ModelConfig(hidden_sizes=(8,)), max_snapshots=2)
    assignment = pool.assign(8, {"latest": 0.0, "past": 0.0, "greedy": 1.0, "random": 0.0}, np.random.default_rng(0))
    assert (assignment.kinds == KIND_GREEDY).all()
    assert (assignment.learner_seats.sum(axis=1) == 1).all()
    assert assignment.learner_seats[:, 0].sum() == 4


def test_past_games_are_self_play_until_the_pool_has_a_snapshot():
    pool = OpponentPool(ModelConfig(hidden_sizes=(8,)), max_snapshots=2)
    shares = {"latest": 0.5, "past": 0.5, "greedy": 0.0, "random": 0.0}
    assert (pool.assign(6, shares, np.random.default_rng(0)).kinds == KIND_LATEST).all()
    pool.add(ActorCritic(ModelConfig(hidden_sizes=(8,))), update=1)
    assignment = pool.assign(6, shares, np.random.default_rng(0))
    assert (assignment.kinds == KIND_PAST).sum() == 3
    assert (assignment.snapshots[assignment.kinds == KIND_PAST] == 0).all()


def test_snapshots_per_update_limits_the_networks_of_an_update_but_not_the_odds():
    pool = OpponentPool(ModelConfig(hidden_sizes=(4,)), max_snapshots=10)
    for update in range(10):
        pool.add(ActorCritic(ModelConfig(hidden_sizes=(4,))), update)
    shares = {"latest": 0.0, "past": 1.0, "greedy": 0.0, "random": 0.0}
    rng = np.random.default_rng(0)
    used = np.zeros(10, dtype=int)
    for _ in range(400):
        snapshots = pool.assign(40, shares, rng, snapshots_per_update=2).snapshots
        assert len(set(snapshots.tolist())) <= 2
        used += np.bincount(snapshots, minlength=10)
    # Every snapshot still gets its share: 16,000 games, 1,600 expected each.
    assert used.min() > 1300 and used.max() < 1900
    # Without the limit, one update uses (nearly) the whole pool.
    assert len(set(pool.assign(40, shares, rng).snapshots.tolist())) > 5
    # A limit above the pool size uses the pool.
    assert set(pool.assign(200, shares, rng, snapshots_per_update=50).snapshots.tolist()) == set(range(10))


def test_pool_keeps_only_the_newest_snapshots():
    pool = OpponentPool(ModelConfig(hidden_sizes=(8,)), max_snapshots=2)
    for update in (1, 2, 3):
        pool.add(ActorCritic(ModelConfig(hidden_sizes=(8,))), update)
    assert pool.updates == [2, 3]


@pytest.fixture(scope="module")
def self_play_rollout():
    torch.manual_seed(0)
    model = ActorCritic(ModelConfig(hidden_sizes=(16,))).eval()
    pool = OpponentPool(model.config, max_snapshots=1)
    pool.add(model, update=0)
    collector = SelfPlayCollector(num_games=6)
    shares = {"latest": 0.5, "past": 1 / 6, "greedy": 1 / 6, "random": 1 / 6}
    rng = np.random.default_rng(1)
    assignment = pool.assign(6, shares, rng)
    rollout = collector.collect(model, pool, assignment, rng)
    return assignment, rollout


def test_each_seat_trajectory_holds_only_that_seats_decisions(self_play_rollout):
    _, rollout = self_play_rollout
    first_player = rollout.observations[:, OBSERVATION_LAYOUT["first_player"]][:, 0]
    my_turn = rollout.observations[:, OBSERVATION_LAYOUT["my_turn"]][:, 0]
    seats = rollout.trajectory % 2
    assert (my_turn == 1).all()
    np.testing.assert_array_equal(first_player == 1, seats == 0)


def test_self_play_games_train_both_seats_and_one_learner_games_one(self_play_rollout):
    assignment, rollout = self_play_rollout
    for game in range(6):
        seats = set((rollout.trajectory[rollout.trajectory // 2 == game] % 2).tolist())
        assert seats == set(np.flatnonzero(assignment.learner_seats[game]).tolist())


def test_terminal_reward_lands_on_the_last_decision_of_each_seat(self_play_rollout):
    _, rollout = self_play_rollout
    for trajectory in np.unique(rollout.trajectory):
        rows = np.flatnonzero(rollout.trajectory == trajectory)
        assert rollout.dones[rows[-1]] and not rollout.dones[rows[:-1]].any()
        assert (rollout.rewards[rows[:-1]] == 0).all()
        assert rollout.rewards[rows[-1]] in (-1.0, 0.0, 1.0)


def test_self_play_seats_get_opposite_rewards(self_play_rollout):
    assignment, rollout = self_play_rollout
    for game in np.flatnonzero(assignment.kinds == KIND_LATEST):
        finals = [rollout.rewards[np.flatnonzero(rollout.trajectory == 2 * game + seat)[-1]] for seat in (0, 1)]
        assert finals[0] == -finals[1]


def test_turns_of_several_actions_stay_in_one_trajectory(self_play_rollout):
    _, rollout = self_play_rollout
    # A decision that does not end the turn (a play or discard) is followed by the same seat's next decision.
    rows = np.flatnonzero(rollout.trajectory == rollout.trajectory[0])
    card_plays = [row for row in rows[:-1] if rollout.actions[row] < 147]
    assert card_plays, "expected at least one multi-action turn"
    assert rollout.stats.decisions == len(rollout)


def test_collection_with_a_worker_process_is_deterministic_and_complete():
    torch.manual_seed(0)
    model = ActorCritic(ModelConfig(hidden_sizes=(16,))).eval()
    pool = OpponentPool(model.config, max_snapshots=1)
    pool.add(model, update=0)
    shares = {"latest": 0.5, "past": 0.25, "greedy": 0.25, "random": 0.0}
    rollouts = []
    for _ in range(2):
        rng = np.random.default_rng(5)
        with SelfPlayCollector(num_games=4, workers=1, model_config=model.config) as collector:
            rollouts.append(collector.collect(model, pool, pool.assign(4, shares, rng), rng))
    first, second = rollouts
    np.testing.assert_array_equal(first.actions, second.actions)
    np.testing.assert_array_equal(first.advantages, second.advantages)
    # Both processes' games are there: games 0 and 2 in this process, 1 and 3 in the worker.
    assert set((first.trajectory // 2).tolist()) == {0, 1, 2, 3}
    assert first.stats.games == 4 and first.dones.sum() == len(np.unique(first.trajectory))


def test_a_collection_worker_that_fails_is_one_line_and_the_collector_still_closes():
    from kahuna_env.workers import WorkerFailed

    torch.manual_seed(0)
    model = ActorCritic(ModelConfig(hidden_sizes=(8,))).eval()  # not the network the worker was built for
    pool = OpponentPool(model.config, max_snapshots=1)
    pool.add(model, update=0)
    rng = np.random.default_rng(5)
    shares = {"latest": 1.0, "past": 0.0, "greedy": 0.0, "random": 0.0}
    collector = SelfPlayCollector(num_games=4, workers=1, model_config=ModelConfig(hidden_sizes=(16,)))
    with collector, pytest.raises(WorkerFailed, match=r"^a collection worker failed: RuntimeError: ") as caught:
        collector.collect(model, pool, pool.assign(4, shares, rng), rng)
    assert "\n" not in str(caught.value)


def test_greedy_acts_on_the_real_game_as_on_a_determinization():
    # The batched greedy of collection and evaluation never determinizes: valid only because
    # greedy's choice depends on nothing hidden. Compare it on the real game and on a
    # determinization, same seed.
    checked = 0
    for seed in range(40):
        game = KahunaGame(seed=seed)
        sampler = np.random.default_rng(seed)
        while not game.is_over:
            player = game.current_player
            on_real = GreedyAgent(seed=checked).act(None, game.action_mask(), game)
            on_copy = GreedyAgent(seed=checked).act(None, game.action_mask(), game.determinize(player, sampler))
            assert on_real == on_copy, (seed, game.to_dict())
            checked += 1
            legal = game.legal_actions()
            game.step(legal[sampler.integers(len(legal))])
    assert checked > 3000


def test_island_potentials_match_the_engine_count():
    game = KahunaGame(seed=3)
    sampler = np.random.default_rng(3)
    rows, expected = [], []
    while not game.is_over:
        for player in (0, 1):
            rows.append(encode_observation(game, player))
            mine, theirs = game.controlled_islands(player), game.controlled_islands(1 - player)
            expected.append((len(mine) - len(theirs)) / 12)
        legal = game.legal_actions()
        game.step(legal[sampler.integers(len(legal))])
    np.testing.assert_allclose(island_potentials(np.array(rows)), expected, atol=1e-6)
    assert np.abs(expected).max() > 0


def test_bf16_update_matches_the_float32_update_closely(self_play_rollout):
    # The bfloat16 autocast only changes the update's matmul precision: the same minibatches
    # give nearly the same losses and leave the weights close to the float32 update's.
    _, rollout = self_play_rollout
    results = {}
    for bf16 in (False, True):
        torch.manual_seed(3)
        model = ActorCritic(ModelConfig(architecture="board", hidden_sizes=(32,), line_width=8))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        ppo = PPOConfig(update_epochs=2, minibatch_size=64, bf16=bf16)
        stats = ppo_update(model, optimizer, rollout, ppo, torch.Generator().manual_seed(0))
        results[bf16] = (stats, torch.nn.utils.parameters_to_vector(model.parameters()).detach())
    (stats32, weights32), (stats16, weights16) = results[False], results[True]
    assert all(np.isfinite(value) for value in stats16.values())
    assert stats16["value_loss"] == pytest.approx(stats32["value_loss"], rel=0.05)
    assert stats16["entropy"] == pytest.approx(stats32["entropy"], rel=0.02)
    assert not torch.equal(weights16, weights32)  # it did run in lower precision
    assert (weights16 - weights32).abs().max() < 1e-2


def test_a_short_minibatch_is_padded_to_one_of_a_few_shapes():
    assert padded_rows(2048, 2048) == 2048
    assert padded_rows(1278, 2048) == 1280
    assert padded_rows(1, 2048) == PAD_ROWS
    assert padded_rows(44, 64) == 64  # never beyond the minibatch size
    assert padded_rows(1000, 1000) == 1000
    shapes = {padded_rows(rows, 2048) for rows in range(1, 2049)}
    assert len(shapes) == 2048 // PAD_ROWS
    assert all(padded_rows(rows, 2048) >= rows for rows in range(1, 2049))


def test_padding_the_last_minibatch_adds_nothing_to_the_update(self_play_rollout, monkeypatch):
    # The padding rows' outputs are cut off before the loss: the update with padding leaves the
    # weights where the update without it does (float32), while the network saw only full-size batches.
    _, rollout = self_play_rollout
    assert len(rollout) % 64 != 0  # a short last minibatch
    results = {}
    for padded in (True, False):
        if not padded:
            monkeypatch.setattr(trainer, "padded_rows", lambda rows, size: rows)
        torch.manual_seed(3)
        model = ActorCritic(ModelConfig(architecture="board", hidden_sizes=(32,), line_width=8))
        seen: list[int] = []
        model.register_forward_hook(lambda module, args, output, seen=seen: seen.append(len(args[0])))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        ppo = PPOConfig(update_epochs=2, minibatch_size=64, bf16=False)
        stats = ppo_update(model, optimizer, rollout, ppo, torch.Generator().manual_seed(0))
        results[padded] = (stats, torch.nn.utils.parameters_to_vector(model.parameters()).detach(), seen)
    stats_padded, weights_padded, seen_padded = results[True]
    stats_plain, weights_plain, seen_plain = results[False]
    assert set(seen_padded) == {64}
    assert len(set(seen_plain)) == 2  # the reference update did have a short minibatch
    torch.testing.assert_close(weights_padded, weights_plain, rtol=0, atol=1e-6)
    for key, value in stats_plain.items():
        assert stats_padded[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key


@pytest.mark.parametrize(
    "config",
    [
        ModelConfig(hidden_sizes=(32,)),
        ModelConfig(hidden_sizes=(48, 24), activation="relu", architecture="board", line_width=8),
    ],
    ids=["mlp", "board"],
)
def test_stacked_networks_give_each_network_its_own_outputs(config):
    torch.manual_seed(3)
    networks = [ActorCritic(config).eval() for _ in range(3)]
    for network in networks:  # weights far from the initialisation, so every layer matters
        for parameter in network.parameters():
            torch.nn.init.normal_(parameter, std=0.3)
    observations = torch.rand(3, 5, OBSERVATION_SIZE)
    masks = torch.rand(3, 5, NUM_ACTIONS) < 0.3
    logits, values = StackedNetworks(networks)(observations, masks)
    assert logits.shape == (3, 5, NUM_ACTIONS) and values.shape == (3, 5)
    for k, network in enumerate(networks):
        with torch.no_grad():
            own_logits, own_values = network(observations[k], masks[k])
        torch.testing.assert_close(logits[k], own_logits, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(values[k], own_values, rtol=1e-5, atol=1e-4)
        assert torch.equal(logits[k] == MASKED_LOGIT, ~masks[k])


def test_stacked_networks_refuse_mixed_shapes_and_misshapen_inputs():
    with pytest.raises(ValueError, match="one shape"):
        StackedNetworks([ActorCritic(ModelConfig(hidden_sizes=(8,))), ActorCritic(ModelConfig(hidden_sizes=(16,)))])
    with pytest.raises(ValueError, match="at least one"):
        StackedNetworks([])
    stacked = StackedNetworks([ActorCritic(ModelConfig(hidden_sizes=(8,))) for _ in range(2)])
    with pytest.raises(ValueError, match=r"\(networks, rows, 246\)"):
        stacked(torch.rand(3, 4, OBSERVATION_SIZE), torch.ones(3, 4, NUM_ACTIONS, dtype=torch.bool))
