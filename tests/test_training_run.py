"""End-to-end training runs: the smoke config through the CLI, exact resume, loading, and a real learning signal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from training import PolicyAgent, load_agent
from training.cli import main
from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import load_config
from training.ppo.metrics import TIME_KEYS, read_metrics
from training.ppo.trainer import build_model, train
from training.selfplay.quick_eval import evaluate_policy

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
SMOKE = CONFIGS / "smoke.yaml"
EXPECTED_KEYS = {
    "update",
    "global_step",
    "charts/SPS",
    "charts/episodic_return",
    "charts/learning_rate",
    "losses/policy_loss",
    "losses/value_loss",
    "losses/entropy",
    "losses/approx_kl",
    "losses/clipfrac",
}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke config trained to the end through the CLI entry point."""
    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    status = main(["--config", str(SMOKE), "--run-dir", str(run_dir)])
    assert status == 0
    return run_dir


def without_timing(record: dict) -> dict:
    return {key: value for key, value in record.items() if not key.startswith(TIME_KEYS)}


def test_smoke_run_writes_numbered_and_latest_checkpoints(smoke_run):
    config = load_config(SMOKE)
    names = sorted(path.name for path in (smoke_run / "checkpoints").iterdir())
    every = config.checkpoint.every
    expected = [f"update_{u:06d}.pt" for u in range(every, config.total_updates + 1, every)]
    assert names == sorted([*expected, "latest.pt"])
    counters = load_checkpoint(smoke_run / "checkpoints" / "latest.pt")["counters"]
    assert counters["update"] == config.total_updates


def test_smoke_run_writes_one_metrics_line_per_update_with_standard_keys(smoke_run):
    records = read_metrics(smoke_run / "metrics.jsonl")
    assert [r["update"] for r in records] == list(range(1, load_config(SMOKE).total_updates + 1))
    for record in records:
        assert EXPECTED_KEYS <= set(record)
    steps = [r["global_step"] for r in records]
    assert steps == sorted(steps) and steps[0] > 0
    assert any("eval/win_rate_vs_greedy" in r for r in records)
    assert any("eval/win_rate_vs_random" in r for r in records)


def test_smoke_run_writes_tensorboard_events_plot_and_final_agent(smoke_run):
    assert list((smoke_run / "tensorboard").glob("events.out.tfevents.*"))
    png = (smoke_run / "learning_curves.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert (smoke_run / "final_agent.pt").is_file()
    summary = json.loads((smoke_run / "final_eval.json").read_text())
    assert set(summary) == {"random", "greedy"}


def test_the_final_agent_and_checkpoints_record_reward_config_and_final_evaluation(smoke_run):
    # Issue 34, item 6 and issue 36: the value semantics, the config and the scores with intervals.
    config = load_config(SMOKE)
    agent = load_agent(smoke_run / "final_agent.pt")
    meta = agent.meta
    assert meta["reward"] == agent.reward == {"win": 1.0, "island_shaping": 1.0}
    assert meta["config"] == config.to_dict()
    assert set(meta["final_eval"]) == {"random", "greedy"}
    for result in meta["final_eval"].values():
        low, high = result["score_ci95"]
        assert result["games"] == config.eval.final_games and low <= result["score"] <= high
    assert meta["final_eval"] == json.loads((smoke_run / "final_eval.json").read_text())
    checkpoint = torch.load(smoke_run / "checkpoints" / "latest.pt", weights_only=True)
    assert checkpoint["meta"]["reward"] == {"win": 1.0, "island_shaping": 1.0}


def test_tensorboard_holds_the_standard_scalars(smoke_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(smoke_run / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert EXPECTED_KEYS - {"update", "global_step"} <= tags


def test_checkpoint_loads_as_a_ready_to_play_agent(smoke_run):
    agent = load_agent(smoke_run / "checkpoints" / "latest.pt")
    assert isinstance(agent, PolicyAgent)
    from kahuna_env.agents import choose_action
    from kahuna_env.engine import KahunaGame

    game = KahunaGame(seed=3)
    for _ in range(30):
        action = choose_action(agent, game, np.random.default_rng(0))
        assert action in game.legal_actions()
        game.step(action)


def test_checkpoint_and_exported_agent_hold_the_same_network(smoke_run):
    from_checkpoint = load_agent(smoke_run / "checkpoints" / "latest.pt").model.state_dict()
    exported = load_agent(smoke_run / "final_agent.pt").model.state_dict()
    assert all(torch.equal(from_checkpoint[key], exported[key]) for key in exported)


def test_checkpoint_loads_with_weights_only(smoke_run):
    payload = torch.load(smoke_run / "checkpoints" / "latest.pt", weights_only=True)
    assert payload["checkpoint_format"] == "kahuna-checkpoint-v1"
    assert set(payload["counters"]) >= {"update", "global_step", "actions", "games"}


def test_resume_continues_with_identical_counters_and_metrics(smoke_run, tmp_path):
    # Simulate a run that stopped right after its checkpoint at update 2: resume must redo updates 3-4 exactly.
    resumed = tmp_path / "resumed"
    shutil.copytree(smoke_run, resumed)
    checkpoints = resumed / "checkpoints"
    shutil.copy(checkpoints / "update_000002.pt", checkpoints / "latest.pt")
    (checkpoints / "update_000004.pt").unlink()
    assert main(["--resume", str(resumed)]) == 0

    original = load_checkpoint(smoke_run / "checkpoints" / "latest.pt")
    again = load_checkpoint(checkpoints / "latest.pt")
    for key in ("update", "global_step", "actions", "games"):
        assert again["counters"][key] == original["counters"][key]
    assert all(torch.equal(again["model_state"][k], v) for k, v in original["model_state"].items())
    first = [without_timing(r) for r in read_metrics(smoke_run / "metrics.jsonl")]
    second = [without_timing(r) for r in read_metrics(resumed / "metrics.jsonl")]
    assert second == first


def test_resume_of_a_finished_run_adds_updates_when_total_is_raised(smoke_run, tmp_path):
    extended = tmp_path / "extended"
    shutil.copytree(smoke_run, extended)
    total = load_config(SMOKE).total_updates
    assert main(["--resume", str(extended), "--set", f"total_updates={total + 1}"]) == 0
    assert load_checkpoint(extended / "checkpoints" / "latest.pt")["counters"]["update"] == total + 1
    assert [r["update"] for r in read_metrics(extended / "metrics.jsonl")][-1] == total + 1


def test_new_run_refuses_a_directory_that_already_holds_a_run(smoke_run, capsys):
    assert main(["--config", str(SMOKE), "--run-dir", str(smoke_run)]) != 0
    assert "already holds a run" in capsys.readouterr().err


def test_short_training_improves_the_win_rate_against_random(tmp_path):
    # Same evaluation games before and after ~10 s of PPO against the random baseline.  The policy
    # samples its moves: an untrained net's most likely action is a fixed quirk of its random
    # weights (it can beat `random` 0% or 99% of the time), while its sampled play is near uniform.
    config = load_config(
        SMOKE,
        [
            "total_updates=10",
            "model.hidden_sizes=[64,64]",
            "rollout.num_games=32",
            "ppo.lr=1e-3",
            "ppo.update_epochs=3",
            "ppo.minibatch_size=512",
            "pool.latest=0",
            "pool.past=0",
            "pool.greedy=0",
            "pool.random=1",
            "eval.every=0",
            "eval.final_games=0",
            "logging.tensorboard=false",
            "logging.plot=false",
        ],
    )
    before = evaluate_policy(build_model(config), "random", games=300, seed=11, deterministic=False)
    train(config, tmp_path / "run", log=lambda _: None)
    trained = load_agent(tmp_path / "run" / "final_agent.pt").model
    after = evaluate_policy(trained, "random", games=300, seed=11, deterministic=False)
    # A two-proportion z-test at ~3 standard errors: a real improvement, not noise.
    pooled = (before.wins + after.wins) / 600
    standard_error = (2 * pooled * (1 - pooled) / 300) ** 0.5
    assert after.win_rate - before.win_rate > 3 * standard_error, (before.summary(), after.summary())


def test_load_agent_reports_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_agent(tmp_path / "nothing.pt")


def test_load_agent_rejects_a_corrupt_file(tmp_path):
    path = tmp_path / "broken.pt"
    path.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_agent(path)


def test_exported_agent_cannot_be_resumed(smoke_run, tmp_path):
    from training.ppo.checkpoint import load_checkpoint as read

    with pytest.raises(ValueError, match="not a training checkpoint"):
        read(smoke_run / "final_agent.pt")


def test_load_agent_refuses_a_file_holding_python_objects_without_suggesting_an_unsafe_load(tmp_path):
    import argparse

    import torch

    path = tmp_path / "objects.pt"
    torch.save({"format": "kahuna-agent-v1", "options": argparse.Namespace(lr=1.0)}, path)
    with pytest.raises(ValueError, match="refused: loading those could run code") as error:
        load_agent(path)
    assert "weights_only" not in str(error.value)
