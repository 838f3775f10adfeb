"""Self-play collection on the seated-play driver against the scalar engine's rules and semantics (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kahuna_env.agents.greedy import best_actions
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation
from kahuna_env.seated import PerGamePolicy
from kahuna_env.vector import KahunaBatch
from kahuna_policy.model import ActorCritic, ModelConfig
from training.league.pool import KIND_GREEDY, KIND_LATEST, KIND_MCTS, KIND_PAST, KIND_RANDOM, KINDS, OpponentPool
from training.ppo.config import ConfigError, RolloutConfig
from training.selfplay import batched_rollout
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.collector import SelfPlayCollector, play_function
from training.selfplay.rollout import GameBatch

MODEL_CONFIG = ModelConfig(hidden_sizes=(32,))


def _batch(kinds: list[int], seed: int = 0, snapshot_argmax: bool = False, mcts_simulations: int = 50) -> GameBatch:
    rng = np.random.default_rng(seed)
    n = len(kinds)
    learner = np.zeros((n, 2), dtype=bool)
    for g, kind in enumerate(kinds):
        if kind == KIND_LATEST:
            learner[g] = True
        else:
            learner[g, g % 2] = True
    return GameBatch(
        games=np.arange(n),
        seeds=rng.integers(2**63, size=n),
        kinds=np.array(kinds),
        learner_seats=learner,
        snapshots=np.where(np.array(kinds) == KIND_PAST, 0, -1),
        rng_seed=int(rng.integers(2**63)),
        torch_seed=int(rng.integers(2**63)),
        snapshot_argmax=snapshot_argmax,
        mcts_simulations=mcts_simulations,
    )


def _models(seed: int = 0) -> tuple[ActorCritic, ActorCritic]:
    torch.manual_seed(seed)
    return ActorCritic(MODEL_CONFIG).eval(), ActorCritic(MODEL_CONFIG).eval()


class _Recorder:
    """Wraps ``KahunaBatch.step`` to record every tick's actions and acting games."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ticks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        original = KahunaBatch.step
        recorder = self

        def step(batch: KahunaBatch, actions, active=None):
            acting = batch.live(active)
            recorder.ticks.append((np.array(actions, copy=True), acting, batch.current_player.copy()))
            return original(batch, actions, active)

        monkeypatch.setattr(KahunaBatch, "step", step)


@pytest.fixture(scope="module")
def mixed_kinds() -> list[int]:
    return [KIND_LATEST] * 3 + [KIND_PAST] * 3 + [KIND_GREEDY] * 6 + [KIND_RANDOM] * 4


def test_batched_games_replay_in_the_scalar_engine_with_the_same_observations_masks_and_rewards(
    monkeypatch, mixed_kinds
):
    """Every game the vector backend played is, action for action, a legal scalar game from the same deal.

    Replaying the recorded actions in ``KahunaGame(config, seed=deal seed)``: each stored learner
    decision has the scalar observation and mask, each greedy move is one of the scalar greedy's
    best actions, and each learner seat's last decision carries the game's result.
    """
    recorder = _Recorder(monkeypatch)
    model, snapshot = _models()
    batch = _batch(mixed_kinds, seed=3)
    played = play_games_batched(batch, model, [snapshot], KahunaConfig(), win_reward=1.0, record_potentials=True)
    rows_by_trajectory: dict[int, list[int]] = {}
    for row, trajectory in enumerate(played.trajectory.tolist()):
        rows_by_trajectory.setdefault(trajectory, []).append(row)
    cursor = dict.fromkeys(rows_by_trajectory, 0)
    checked_greedy = 0
    for g, kind in enumerate(mixed_kinds):
        game = KahunaGame(KahunaConfig(), seed=int(batch.seeds[g]))
        for actions, acting, current in recorder.ticks:
            if not acting[g]:
                continue
            player = int(current[g])
            assert player == game.current_player
            action = int(actions[g])
            if batch.learner_seats[g, player]:
                trajectory = 2 * g + player
                row = rows_by_trajectory[trajectory][cursor[trajectory]]
                cursor[trajectory] += 1
                np.testing.assert_array_equal(played.observations[row], encode_observation(game, player))
                assert sorted(np.flatnonzero(played.masks[row]).tolist()) == sorted(game.legal_actions())
                assert played.actions[row] == action
            elif kind == KIND_GREEDY:
                assert action in best_actions(game)
                checked_greedy += 1
            assert action in game.legal_actions()
            game.step(action)
        assert game.is_over
        for seat in (0, 1):
            if not batch.learner_seats[g, seat]:
                assert 2 * g + seat not in rows_by_trajectory
                continue
            rows = rows_by_trajectory[2 * g + seat]
            assert cursor[2 * g + seat] == len(rows)  # every stored decision was replayed
            outcome = 0 if game.winner is None else (1 if game.winner == seat else -1)
            assert played.rewards[rows[-1]] == outcome and played.dones[rows[-1]]
            assert not played.dones[rows[:-1]].any() and not played.rewards[rows[:-1]].any()
    assert checked_greedy > 50
    assert played.stats.actions == sum(int(acting.sum()) for _, acting, _ in recorder.ticks)


def test_results_and_outcomes_agree_with_the_games_in_the_scalar_engine(monkeypatch, mixed_kinds):
    recorder = _Recorder(monkeypatch)
    model, snapshot = _models(1)
    batch = _batch(mixed_kinds, seed=5)
    played = play_games_batched(batch, model, [snapshot], KahunaConfig())
    winners = []
    for g in range(len(mixed_kinds)):  # the oracle: each game replayed in the scalar engine
        game = KahunaGame(KahunaConfig(), seed=int(batch.seeds[g]))
        for actions, acting, _ in recorder.ticks:
            if acting[g]:
                game.step(int(actions[g]))
        assert game.is_over
        winners.append(-1 if game.winner is None else game.winner)
    seat = np.where(batch.learner_seats[:, 0], 0, 1)
    expected_outcomes = np.where(np.array(winners) < 0, 0, np.where(np.array(winners) == seat, 1, -1))
    outcomes = played.stats.outcomes
    np.testing.assert_array_equal(outcomes, expected_outcomes)
    for code, kind in enumerate(KINDS):
        if code == KIND_LATEST:
            continue
        chosen = outcomes[np.array(mixed_kinds) == code]
        expected = (int((chosen == 1).sum()), int((chosen == 0).sum()), int((chosen == -1).sum()))
        assert played.stats.results[kind] == expected, kind
    selfplay = outcomes[np.array(mixed_kinds) == KIND_LATEST]
    wins, draws, losses = played.stats.first_seat_results
    assert (wins, draws, losses) == ((selfplay == 1).sum(), (selfplay == 0).sum(), (selfplay == -1).sum())
    assert played.stats.games == len(mixed_kinds) and played.stats.decisions == len(played)


def test_the_same_batch_gives_the_same_games_and_a_different_seed_different_ones(mixed_kinds):
    model, snapshot = _models(2)
    kinds = mixed_kinds[::2]
    first = play_games_batched(_batch(kinds, seed=7), model, [snapshot], KahunaConfig())
    again = play_games_batched(_batch(kinds, seed=7), model, [snapshot], KahunaConfig())
    other = play_games_batched(_batch(kinds, seed=8), model, [snapshot], KahunaConfig())
    np.testing.assert_array_equal(first.actions, again.actions)
    np.testing.assert_array_equal(first.observations, again.observations)
    assert len(first.actions) != len(other.actions) or not np.array_equal(first.actions, other.actions)


def test_argmax_snapshots_play_their_most_likely_action(monkeypatch):
    recorder = _Recorder(monkeypatch)
    model, snapshot = _models(4)
    kinds = [KIND_PAST] * 4
    batch = _batch(kinds, seed=11, snapshot_argmax=True)
    play_games_batched(batch, model, [snapshot], KahunaConfig())
    games = [KahunaGame(KahunaConfig(), seed=int(s)) for s in batch.seeds]
    checked = 0
    for actions, acting, current in recorder.ticks:
        for g in np.flatnonzero(acting):
            game = games[g]
            player = int(current[g])
            if not batch.learner_seats[g, player]:
                observation = torch.from_numpy(encode_observation(game, player)[None])
                mask = np.zeros((1, 179), dtype=bool)
                mask[0, game.legal_actions()] = True
                with torch.inference_mode():
                    logits, _ = snapshot(observation, torch.from_numpy(mask))
                assert int(actions[g]) == int(logits.argmax())
                checked += 1
            game.step(int(actions[g]))
    assert checked > 50


def test_mcts_opponent_games_are_played_through_choose_action(monkeypatch):
    asked = []
    original = PerGamePolicy.act

    def act(policy, batch, rows):
        asked.append(rows.tolist())
        return original(policy, batch, rows)

    monkeypatch.setattr(PerGamePolicy, "act", act)
    model, _ = _models(5)
    batch = _batch([KIND_MCTS, KIND_MCTS], seed=13, mcts_simulations=2)
    played = play_function("vector")(batch, model, [], KahunaConfig())
    assert sum(played.stats.results["mcts"]) == 2
    assert asked and all(set(rows) <= {0, 1} for rows in asked)
    assert played.dones.sum() == 2  # one learner seat per game, each with a terminal decision


def test_vector_collection_with_a_worker_is_deterministic_and_complete():
    model, _ = _models(6)
    pool = OpponentPool(MODEL_CONFIG, 5)
    pool.add(model, 1)
    shares = {"latest": 0.25, "past": 0.25, "greedy": 0.5}
    rollouts = []
    for _ in range(2):
        rng = np.random.default_rng(21)
        with SelfPlayCollector(8, workers=1, model_config=MODEL_CONFIG, backend="vector") as collector:
            rollouts.append(collector.collect(model, pool, pool.assign(8, shares, rng), rng))
    first, second = rollouts
    np.testing.assert_array_equal(first.actions, second.actions)
    assert first.stats.games == 8 and first.dones.sum() == 2 * 2 + 6  # two self-play games learn both seats
    assert first.stats.outcomes.shape == (8,)


def test_an_unknown_backend_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"rollout.backend: must be 'vector' .*, got 'gpu'"):
        RolloutConfig(backend="gpu")
    with pytest.raises(ValueError, match="unknown rollout backend 'gpu'"):
        play_function("gpu")


def test_the_removed_scalar_backend_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"rollout.backend: .*'scalar' backend was removed.*, got 'scalar'$") as error:
        RolloutConfig(backend="scalar")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="rollout backend 'scalar' was removed"):
        play_function("scalar")
    with pytest.raises(ValueError, match="'scalar' was removed"):
        SelfPlayCollector(2, backend="scalar")


@pytest.mark.parametrize("argmax", [False, True], ids=["sampled", "argmax"])
def test_stacked_snapshots_play_the_games_of_one_pass_per_snapshot(monkeypatch, argmax):
    """Several snapshots answer in one stacked pass, with the noise drawn per snapshot as one pass each would."""
    torch.manual_seed(8)
    model = ActorCritic(MODEL_CONFIG).eval()
    snapshots = [ActorCritic(MODEL_CONFIG).eval() for _ in range(3)]
    batch = _batch([KIND_PAST] * 9 + [KIND_GREEDY] * 3, seed=17, snapshot_argmax=argmax)
    batch.snapshots[:9] = [0, 1, 2, 2, 0, 1, 2, 0, 1]
    calls = []
    original = batched_rollout.StackedNetworks

    def counting(networks):
        calls.append(len(networks))
        return original(networks)

    monkeypatch.setattr(batched_rollout, "StackedNetworks", counting)
    stacked = play_games_batched(batch, model, snapshots, KahunaConfig())
    monkeypatch.setattr(batched_rollout, "StackedNetworks", lambda networks: None)  # one pass per snapshot
    separate = play_games_batched(batch, model, snapshots, KahunaConfig())
    assert calls == [3]
    np.testing.assert_array_equal(stacked.actions, separate.actions)
    np.testing.assert_array_equal(stacked.observations, separate.observations)
    np.testing.assert_array_equal(stacked.stats.outcomes, separate.stats.outcomes)


def test_collection_statistics_are_typed_and_logged_under_the_trainers_names():
    model, snapshot = _models(9)
    pool = OpponentPool(MODEL_CONFIG, 5)
    pool.add(snapshot, 1)
    shares = {"latest": 0.25, "past": 0.25, "greedy": 0.25, "random": 0.25}
    rng = np.random.default_rng(3)
    rollout = SelfPlayCollector(8, island_shaping=0.5).collect(model, pool, pool.assign(8, shares, rng), rng)
    stats = rollout.stats
    assert (stats.games, stats.decisions) == (8, len(rollout))
    assert len(stats.episodic_returns) == len(np.unique(rollout.trajectory))
    metrics = stats.as_metrics()
    assert set(metrics) == {
        "charts/episodic_return",
        "charts/decisions",
        "charts/game_length",
        "rollout/win_rate_vs_past",
        "rollout/win_rate_vs_greedy",
        "rollout/win_rate_vs_random",
        "rollout/selfplay_first_seat_win_rate",
    }
    assert metrics["charts/episodic_return"] == pytest.approx(float(np.mean(stats.episodic_returns)))
    assert metrics["charts/game_length"] == stats.actions / 8
    wins, draws, losses = stats.results["greedy"]
    assert wins + draws + losses == 2 and metrics["rollout/win_rate_vs_greedy"] == wins / 2
    wins, draws, losses = stats.first_seat_results
    assert metrics["rollout/selfplay_first_seat_win_rate"] == wins / (wins + draws + losses)
