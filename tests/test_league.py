"""The league: prioritized fictitious self-play (PFSP) in the opponent pool, mcts opponents, Elo against anchors."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest
import torch

from kahuna_policy.model import ActorCritic, ModelConfig
from training.cli import main
from training.league.pool import KIND_MCTS, KIND_PAST, PFSP, GameAssignment, OpponentPool
from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import ConfigError, load_config
from training.ppo.metrics import ANCHOR_RATINGS, TIME_KEYS, elo_estimate, elo_scalars, read_metrics
from training.selfplay.quick_eval import QuickEvalResult

TINY = ModelConfig(hidden_sizes=(4,))
PAST_ONLY = {"latest": 0.0, "past": 1.0, "greedy": 0.0, "random": 0.0, "mcts": 0.0}


def pool_with(win_rates: list[float], games: float = 100.0, weighting: str = "hard", **settings) -> OpponentPool:
    pool = OpponentPool(TINY, max_snapshots=len(win_rates), pfsp=PFSP(weighting=weighting, **settings))
    for update, rate in enumerate(win_rates):
        pool.add(ActorCritic(TINY), update)
        pool.scores[update] = rate * games
        pool.games[update] = games
    return pool


def test_hard_pfsp_draws_the_opponents_the_learner_does_worst_against_most():
    pool = pool_with([0.9, 0.5, 0.1])
    counts = np.bincount(pool.assign(6000, PAST_ONLY, np.random.default_rng(3)).snapshots, minlength=3)
    assert counts[2] > counts[1] > counts[0]
    expected = (1 - pool.win_rates()) ** 2
    assert np.allclose(counts / counts.sum(), expected / expected.sum(), atol=0.02)


def test_pfsp_weights_hold_with_few_snapshots_per_update():
    pool = pool_with([0.95, 0.9, 0.2, 0.1])
    rng = np.random.default_rng(5)
    counts = np.zeros(4)
    for _ in range(300):
        snapshots = pool.assign(20, PAST_ONLY, rng, snapshots_per_update=2).snapshots
        assert len(set(snapshots.tolist())) <= 2
        counts += np.bincount(snapshots, minlength=4)
    assert counts[2] + counts[3] > 4 * (counts[0] + counts[1])


def test_exponent_and_variance_weighting():
    pool = pool_with([0.9, 0.5, 0.1], exponent=1.0)
    rates = pool.win_rates()
    assert np.allclose(pool.probabilities(), (1 - rates) / (1 - rates).sum())
    variance = pool_with([0.9, 0.5, 0.1], weighting="variance")
    assert variance.probabilities().argmax() == 1


def test_uniform_pfsp_draws_exactly_as_before():
    pool = pool_with([0.9, 0.5, 0.1], weighting="uniform")
    drawn = pool.assign(10, PAST_ONLY, np.random.default_rng(11)).snapshots
    rng = np.random.default_rng(11)
    rng.integers(2)  # the learner's first seat
    assert drawn.tolist() == rng.integers(3, size=10).tolist()


def test_unplayed_snapshots_get_the_prior_and_results_move_the_estimate():
    pool = OpponentPool(TINY, max_snapshots=3, pfsp=PFSP(weighting="hard", prior=0.5, prior_games=4, decay=0.5))
    pool.add(ActorCritic(TINY), 1)
    pool.add(ActorCritic(TINY), 2)
    assert pool.win_rates().tolist() == [0.5, 0.5]
    assignment = GameAssignment(
        kinds=np.array([KIND_PAST] * 4 + [0]),
        learner_seats=np.zeros((5, 2), dtype=bool),
        snapshots=np.array([0, 0, 0, 0, -1]),
    )
    pool.record(assignment, np.array([1, 1, 0, 1, -1], dtype=np.int8))
    assert pool.scores == [3.5, 0.0] and pool.games == [4.0, 0.0]
    assert pool.win_rates().tolist() == [(3.5 + 2) / 8, 0.5]
    pool.record(assignment, np.array([-1, -1, -1, -1, 1], dtype=np.int8))  # decay 0.5 first
    assert pool.scores == [1.75, 0.0] and pool.games == [6.0, 0.0]
    pool.add(ActorCritic(TINY), 3)
    assert pool.win_rates()[2] == 0.5


def test_dropping_the_oldest_snapshot_drops_its_statistics():
    pool = pool_with([0.9, 0.1])
    pool.add(ActorCritic(TINY), 7)
    assert pool.updates == [1, 7] and pool.games == [100.0, 0.0]


def test_pool_state_round_trips_statistics_and_old_state_loads():
    pool = pool_with([0.8, 0.3])
    again = OpponentPool(TINY, max_snapshots=2, pfsp=pool.pfsp)
    again.load_state(pool.state())
    assert again.scores == pool.scores and again.games == pool.games and again.updates == pool.updates
    old_format = [{"update": e["update"], "model_state": e["model_state"]} for e in pool.state()]
    legacy = OpponentPool(TINY, max_snapshots=2, pfsp=pool.pfsp)
    legacy.load_state(old_format)
    assert legacy.games == [0.0, 0.0] and legacy.win_rates().tolist() == [0.5, 0.5]


def test_a_snapshot_of_another_architecture_keeps_its_config_in_the_state():
    pool = OpponentPool(TINY, max_snapshots=1, deterministic=True)
    other = ActorCritic(ModelConfig(hidden_sizes=(6, 5)))
    pool.add(other, 0)
    state = pool.state()
    assert "model_config" in state[0]
    again = OpponentPool(TINY, max_snapshots=1)
    again.load_state(state)
    assert again.snapshots[0].config == other.config


def test_config_has_the_mcts_share_and_checks_pfsp_keys():
    config = load_config(overrides=["pool.mcts=0.1", "pool.mcts_simulations=7"])
    assert set(config.pool.shares()) == {"latest", "past", "greedy", "random", "mcts", "entrant"}
    assert math.isclose(sum(config.pool.shares().values()), 1.0)
    assert config.pool.mcts_simulations == 7
    for override, message in [
        ("pool.pfsp=squared", "pool.pfsp: must be 'uniform', 'hard' or 'variance', got 'squared'"),
        ("pool.pfsp_exponent=0", "pool.pfsp_exponent: must be > 0"),
        ("pool.pfsp_prior=1", "pool.pfsp_prior: must be in (0, 1)"),
        ("pool.pfsp_decay=0", "pool.pfsp_decay: must be in (0, 1]"),
        ("pool.mcts_simulations=0", "pool.mcts_simulations: must be in [1, 100000]"),
        ("pool.mcts=-1", "pool.mcts: must be >= 0"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_config(overrides=[override])


def test_eval_opponents_accept_search_baselines():
    config = load_config(overrides=["eval.opponents=[greedy, 'mcts:50', mcts]"])
    assert config.eval.opponents == ("greedy", "mcts:50", "mcts")
    for bad in ("['mcts:0']", "[alpha]", "[greedy, greedy]", "['mcts:x']"):
        with pytest.raises(ConfigError, match=r"eval\.opponents"):
            load_config(overrides=[f"eval.opponents={bad}"])


def test_elo_conversion_against_anchors():
    assert elo_estimate(0.5, 100, 917.0) == 917.0
    assert elo_estimate(10 / 11, 110, 1000.0) == pytest.approx(1400.0)
    assert elo_estimate(1 / 11, 110, 1000.0) == pytest.approx(600.0)
    sweep = elo_estimate(1.0, 100, 1215.0)
    assert math.isfinite(sweep) and sweep == pytest.approx(1215.0 + 400 * math.log10(199))
    with pytest.raises(ValueError, match="at least one game"):
        elo_estimate(0.5, 0, 917.0)
    assert ANCHOR_RATINGS == {"greedy": 624.0, "mcts:50": 979.0, "mcts": 1146.0, "mcts:1000": 1301.0}
    results = {
        "greedy": QuickEvalResult(75, 0, 25, 0.0, opponent="greedy"),
        "mcts:50": QuickEvalResult(50, 0, 50, 0.0, opponent="mcts:50"),
        "random": QuickEvalResult(100, 0, 0, 0.0, opponent="random"),
    }
    scalars = elo_scalars(results)
    assert set(scalars) == {"elo/vs_greedy", "elo/vs_mcts_50", "elo/mean"}
    assert scalars["elo/vs_greedy"] == pytest.approx(624 + 400 * math.log10(3))
    assert scalars["elo/vs_mcts_50"] == 979.0


def tiny_run_args(run_dir, *overrides: str) -> list[str]:
    from pathlib import Path

    smoke = Path(__file__).resolve().parent.parent / "configs" / "smoke.yaml"
    args = ["--config", str(smoke), "--run-dir", str(run_dir)]
    for override in (
        "rollout.num_games=8",
        "model.hidden_sizes=[16]",
        "eval.final_games=0",
        "eval.every=0",
        "logging.tensorboard=false",
        "logging.plot=false",
        *overrides,
    ):
        args += ["--set", override]
    return args


def test_mcts_games_happen_when_the_share_is_set(tmp_path):
    run_dir = tmp_path / "run"
    args = tiny_run_args(
        run_dir,
        "total_updates=1",
        "pool.latest=0.5",
        "pool.past=0",
        "pool.greedy=0",
        "pool.random=0",
        "pool.mcts=0.5",
        "pool.mcts_simulations=2",
    )
    assert main(args) == 0
    record = read_metrics(run_dir / "metrics.jsonl")[0]
    assert "rollout/win_rate_vs_mcts" in record
    assert KIND_MCTS == 4


def test_pfsp_run_resumes_exactly_with_its_statistics(tmp_path):
    run_dir = tmp_path / "run"
    args = tiny_run_args(
        run_dir,
        "total_updates=3",
        "pool.pfsp=hard",
        "pool.snapshot_every=1",
        "pool.max_snapshots=2",
        "pool.latest=0.25",
        "pool.past=0.75",
        "pool.greedy=0",
        "pool.random=0",
        "checkpoint.every=1",
    )
    assert main(args) == 0
    records = read_metrics(run_dir / "metrics.jsonl")
    assert records[-1]["league/snapshots"] == 2.0
    assert 0.0 < records[-1]["league/min_snapshot_win_rate"] <= records[-1]["league/mean_snapshot_win_rate"] < 1.0
    final = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
    assert any(entry["pfsp_games"] > 0 for entry in final["pool"])

    resumed = tmp_path / "resumed"
    shutil.copytree(run_dir, resumed)
    checkpoints = resumed / "checkpoints"
    shutil.copy(checkpoints / "update_000001.pt", checkpoints / "latest.pt")
    for update in (2, 3):
        (checkpoints / f"update_{update:06d}.pt").unlink()
    assert main(["--resume", str(resumed)]) == 0
    again = load_checkpoint(checkpoints / "latest.pt")
    for original_entry, resumed_entry in zip(final["pool"], again["pool"], strict=True):
        assert resumed_entry["pfsp_score"] == original_entry["pfsp_score"]
        assert resumed_entry["pfsp_games"] == original_entry["pfsp_games"]
        assert all(torch.equal(resumed_entry["model_state"][k], v) for k, v in original_entry["model_state"].items())
    assert all(torch.equal(again["model_state"][k], v) for k, v in final["model_state"].items())

    def without_timing(record: dict) -> dict:
        return {key: value for key, value in record.items() if not key.startswith(TIME_KEYS)}

    assert [without_timing(r) for r in read_metrics(resumed / "metrics.jsonl")] == [without_timing(r) for r in records]


def test_rllib_env_refuses_an_mcts_share_in_one_line():
    pytest.importorskip("ray")
    from training.rllib.env import KahunaMultiAgentEnv

    with pytest.raises(ValueError, match=r"pool\.mcts is not supported by the RLlib env"):
        KahunaMultiAgentEnv({"pool": {"latest": 0.9, "mcts": 0.1}})
