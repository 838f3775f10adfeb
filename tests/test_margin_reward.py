"""``reward.margin``: the terminal reward's term per point of final score margin, checked against the scalar engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_batched_rollout import _batch

from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.vector import KahunaBatch
from kahuna_policy.model import ActorCritic, ModelConfig
from training.league.pool import KIND_GREEDY, KIND_LATEST, KIND_PAST, KIND_RANDOM
from training.ppo.config import ConfigError, load_config
from training.rllib.config import load_rllib_config
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.collector import SelfPlayCollector
from training.selfplay.policies import LearnerRecord

KINDS = [KIND_LATEST] * 3 + [KIND_PAST] * 2 + [KIND_GREEDY] * 4 + [KIND_RANDOM] * 3
MODEL_CONFIG = ModelConfig(hidden_sizes=(32,))


def test_the_margin_term_is_the_scalar_games_point_difference(monkeypatch):
    """Same games with and without the margin; the last decision's reward differs by margin * (mine - theirs)."""
    ticks: list[tuple[np.ndarray, np.ndarray]] = []
    original = KahunaBatch.step

    def step(batch, actions, active=None):
        ticks.append((np.array(actions, copy=True), batch.live(active)))
        return original(batch, actions, active)

    torch.manual_seed(0)
    model, snapshot = ActorCritic(MODEL_CONFIG).eval(), ActorCritic(MODEL_CONFIG).eval()
    batch = _batch(KINDS, seed=4)
    plain = play_games_batched(batch, model, [snapshot], KahunaConfig(), win_reward=2.0)
    monkeypatch.setattr(KahunaBatch, "step", step)
    margined = play_games_batched(batch, model, [snapshot], KahunaConfig(), win_reward=2.0, margin_reward=0.25)
    np.testing.assert_array_equal(plain.actions, margined.actions)  # the margin changes no game
    np.testing.assert_array_equal(plain.trajectory, margined.trajectory)
    nonzero = 0
    for g in range(len(KINDS)):  # the oracle: each game replayed in the scalar engine
        game = KahunaGame(KahunaConfig(), seed=int(batch.seeds[g]))
        for actions, acting in ticks:
            if acting[g]:
                game.step(int(actions[g]))
        assert game.is_over
        for seat in (0, 1):
            rows = np.flatnonzero(margined.trajectory == 2 * g + seat)
            if not batch.learner_seats[g, seat]:
                assert len(rows) == 0
                continue
            margin = game.scores[seat] - game.scores[1 - seat]
            nonzero += margin != 0
            assert margined.rewards[rows[-1]] == pytest.approx(plain.rewards[rows[-1]] + 0.25 * margin)
            np.testing.assert_array_equal(margined.rewards[rows[:-1]], plain.rewards[rows[:-1]])
    assert nonzero > 5


def test_a_margin_without_scores_is_refused():
    record = LearnerRecord(np.arange(2))
    with pytest.raises(ValueError, match="a margin reward needs the games' final scores"):
        record.played(np.array([0, 1]), 1.0, None, margin_reward=0.1)  # type: ignore[arg-type]


def test_collection_workers_apply_the_margin_too():
    """The workers' batches get the setting: returns are no longer only the results."""
    from training.league.pool import OpponentPool

    torch.manual_seed(1)
    model = ActorCritic(MODEL_CONFIG).eval()
    pool = OpponentPool(model.config, max_snapshots=1)
    shares = {"latest": 0.5, "past": 0.0, "greedy": 0.5, "random": 0.0}
    returns = {}
    for margin in (0.0, 0.1):
        with SelfPlayCollector(6, workers=1, model_config=MODEL_CONFIG, margin_reward=margin) as collector:
            rng = np.random.default_rng(7)
            rollout = collector.collect(model, pool, pool.assign(6, shares, rng), rng)
        assert set((rollout.trajectory // 2).tolist()) == set(range(6))  # both processes' games
        returns[margin] = rollout.stats.episodic_returns
    assert set(returns[0.0].tolist()) <= {-1.0, 0.0, 1.0}
    assert not set(np.round(returns[0.1], 6).tolist()) <= {-1.0, 0.0, 1.0}
    # The same games: the winner has at least the loser's points, so the margin never flips a result.
    np.testing.assert_array_equal(np.sign(returns[0.1]), returns[0.0])


@pytest.mark.parametrize("value", ["-0.1", "-1"])
def test_a_negative_margin_is_one_config_error(value):
    with pytest.raises(ConfigError, match=rf"^reward.margin: must be a finite number >= 0, got {value}"):
        load_config(None, [f"reward.margin={value}"])


def test_the_rllib_trainer_refuses_a_margin():
    pytest.importorskip("ray")
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "configs" / "rllib.yaml"
    with pytest.raises(ConfigError, match=r"^reward.margin: is not supported by the RLlib trainer"):
        load_rllib_config(config, ["reward.margin=0.1"])
    assert load_rllib_config(config, ["reward.margin=0"]).reward.margin == 0


def test_files_record_the_margin_only_when_it_is_used():
    from kahuna_policy.reward import recorded_reward, reward_record

    assert reward_record({"win": 1.0, "island_shaping": 1.0, "margin": 0.0}) == {"win": 1.0, "island_shaping": 1.0}
    used = {"win": 1.0, "island_shaping": 1.0, "margin": 0.03}
    assert reward_record(used) == used
    assert recorded_reward({"meta": {"reward": used}}) == used
    assert recorded_reward({"meta": {"reward": {"win": 2.0}}}) == {"win": 2.0, "island_shaping": 0.0}
    for bad in (-0.1, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match=r"^f.pt: the recorded reward.margin is not a finite number >= 0$"):
            recorded_reward({"meta": {"reward": {**used, "margin": bad}}}, "f.pt")


def test_a_margin_run_records_it_and_ships(tmp_path):
    from pathlib import Path

    from kahuna_policy.agent import load_agent
    from training.cli import main
    from training.tools import ship as ship_module

    smoke = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    run = tmp_path / "run"
    assert main(["--config", str(smoke), "--run-dir", str(run), "--set", "reward.margin=0.05"]) == 0
    agent = load_agent(run / "final_agent.pt")
    assert agent.reward == agent.meta["reward"] == {"win": 1.0, "island_shaping": 1.0, "margin": 0.05}
    shipped = load_agent(ship_module.ship(run, out=tmp_path / "shipped.pt", commit="abc"))
    assert shipped.meta["reward"] == shipped.reward == agent.reward
