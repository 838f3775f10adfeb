"""kahuna-distill: the guided search's moves distilled into its own network (training/tools/distill.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import THIRD_CHAMPION

from kahuna_env.engine import KahunaGame
from kahuna_policy.agent import load_agent
from training.tools.distill import (
    Decisions,
    FitSettings,
    build_parser,
    fit_student,
    game_seeds,
    generate,
    main,
    opponent_of,
)

# Tiny teacher budgets keep these tests fast; the behaviour does not depend on the budget.
SIMULATIONS = 4


def error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("kahuna-distill: error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def data() -> Decisions:
    return generate("champion", SIMULATIONS, games=6, seed=3, opponents=["greedy", "self", "random"], workers=0)


def test_generation_records_legal_teacher_decisions_with_a_choice(data):
    assert len(data) > 100
    assert data.masks.sum(axis=1).min() >= 2  # forced moves are not recorded
    assert data.masks[np.arange(len(data)), data.actions].all()
    assert sorted(set(data.games.tolist())) == list(range(6))
    # The self-play games (2 and 3) record both seats: about twice the decisions of a one-seat game.
    per_game = np.bincount(data.games)
    assert per_game[2] > 1.5 * per_game[0] and per_game[3] > 1.5 * per_game[1]


def test_the_same_seed_gives_the_same_data_in_one_process_or_two(data):
    again = generate("champion", SIMULATIONS, games=6, seed=3, opponents=["greedy", "self", "random"], workers=2)
    for name in ("observations", "masks", "actions", "games"):
        np.testing.assert_array_equal(getattr(again, name), getattr(data, name))
    other = generate("champion", SIMULATIONS, games=2, seed=4, opponents=["greedy"], workers=0)
    assert not np.array_equal(other.actions[:50], data.actions[:50])


def test_deals_are_not_the_evaluation_deals_and_opponents_alternate():
    assert game_seeds(0, 0) != game_seeds(0, 1) != game_seeds(1, 0)
    assert [opponent_of(game, ["greedy", "self"]) for game in range(6)] == ["greedy", "greedy", "self", "self"] + [
        "greedy"
    ] * 2
    deal = game_seeds(0, 0)[0]
    assert KahunaGame(seed=deal).to_dict() != KahunaGame(seed=0).to_dict()


def test_the_fit_moves_the_policy_towards_the_search_and_keeps_the_best_held_out_epoch(data):
    model = load_agent("champion").model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fitted, report = fit_student(model, data, FitSettings(epochs=3, lr=3e-4, kl=0.1, holdout=0.34))
    losses = [epoch["held_out_loss"] for epoch in report["epochs"]]
    assert len(losses) == 4 and report["best_epoch"] == int(np.argmin(losses))
    assert report["held_out_decisions"] + report["train_decisions"] == len(data)
    changed = any(not torch.equal(before[k], v) for k, v in fitted.state_dict().items())
    assert changed == (report["best_epoch"] > 0)
    assert report["epochs"][report["best_epoch"]]["held_out_loss"] <= losses[0]


def test_one_game_is_too_little_to_hold_out(data):
    one = data.subset(np.flatnonzero(data.games == 0))
    with pytest.raises(ValueError, match=r"too little data to fit: .* in 1 game"):
        fit_student(load_agent("champion").model, one, FitSettings(epochs=1))


# The third champion was trained from fresh weights (meta "training"); champion continued champion-v5, which
# continued the fourth, which continued the third ("total_training").
@pytest.mark.parametrize(("student", "name"), [("champion", "champion"), (str(THIRD_CHAMPION), "champion-v3")])
def test_the_cli_writes_a_loadable_agent_with_its_provenance(tmp_path, capsys, student, name):
    out = tmp_path / "distilled"
    args = ["--games", "4", "--simulations", str(SIMULATIONS), "--workers", "0", "--epochs", "1", "--out", str(out)]
    assert main([*args, "--student", student]) == 0
    agent = load_agent(out / "agent.pt")
    meta = agent.meta
    assert meta["distill"]["teacher"] == f"{student}@mcts:{SIMULATIONS}"
    assert meta["distill"]["opponents"] == ["greedy", f"mcts:{SIMULATIONS}", "self"]
    assert meta["student_meta"]["name"] == name
    student_meta = load_agent(student).meta
    shipped = student_meta.get("total_training") or student_meta["training"]
    spent = meta["distill"]["generate_seconds"] + meta["distill"]["fit_seconds"]
    assert meta["total_training"]["train_seconds"] == pytest.approx(shipped["train_seconds"] + spent)
    recorded = len(np.load(out / "data.npz")["actions"])
    assert meta["total_training"]["distill_decisions"] == meta["distill"]["decisions"] == recorded
    assert "held-out agreement with the search" in capsys.readouterr().out
    # The value semantics of the student's critic are recorded (issue 34, item 6).
    assert meta["reward"] == load_agent(student).reward == {"win": 1.0, "island_shaping": 1.0}
    assert agent.reward == meta["reward"]
    # An existing agent is never overwritten.
    assert_refused(capsys, [*args], f"--out {out / 'agent.pt'} exists (an agent file); give another path", out)


def assert_refused(capsys, args: list[str], message: str, out: Path | None = None) -> None:
    before = sorted(p.name for p in out.iterdir()) if out is not None and out.exists() else None
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in error_line(capsys)
    if out is not None:
        assert (sorted(p.name for p in out.iterdir()) if out.exists() else None) == before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--opponents", "greedy,bogus"], "--opponents: unknown opponent 'bogus'"),
        (["--opponents", "mcts:0"], "--opponents: unknown opponent 'mcts:0'"),
        (["--lr", "0"], "--lr must be a finite number > 0, got 0.0"),
        (["--kl", "nan"], "--kl must be a finite number >= 0, got nan"),
        (["--student", "no-such-agent"], "no agent 'no-such-agent'"),
        (["--games", "0"], "--games"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "never"
    assert_refused(capsys, ["--workers", "0", "--out", str(out), *extra], message)
    assert not out.exists()


def test_an_out_folder_that_cannot_be_created_is_one_line(capsys):
    # Issue 34, item 7: --out /proc/x was a FileNotFoundError traceback.
    assert_refused(capsys, ["--workers", "0", "--out", "/proc/x"], "cannot create --out /proc/x")
    assert not Path("/proc/x").exists()


def test_an_earlier_distillations_data_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "distilled"
    out.mkdir()
    (out / "data.npz").write_bytes(b"earlier data")
    assert_refused(capsys, ["--workers", "0", "--out", str(out)], f"--out {out / 'data.npz'} exists; give another", out)
    assert (out / "data.npz").read_bytes() == b"earlier data"


def test_every_option_has_help_with_its_default(capsys):
    parser = build_parser()
    assert [action.option_strings for action in parser._actions if not action.help] == []
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for option, default in (("--epochs", "6"), ("--lr", "0.0001"), ("--batch-size", "512"), ("--value-coef", "1")):
        assert f"{option} {option[2:].upper().replace('-', '_')} " in shown
        assert f"(default {default})" in shown, option
