"""``benchmarks/search_labels.py``: search-labelled games of a student and the fit to the search's corrections."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import benchmark_module

from policy.agent import load_agent

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--games", "2", "--chunk", "2", "--simulations", "4", "--verify", "8", "--verify-gap", "0", "--workers", "1"]


@pytest.fixture(scope="module")
def module():
    return benchmark_module("search_labels")


@pytest.fixture(scope="module")
def labelled(module, tmp_path_factory):
    """Two search-labelled games of the champion against greedy (4 and 8 simulations)."""
    out = tmp_path_factory.mktemp("labels") / "data"
    assert module.main(["generate", *TINY, "--out", str(out)]) == 0
    return out


def _data(**columns) -> dict[str, np.ndarray]:
    """Three decisions; the student played 1 in each."""
    base = {
        "raw": np.array([1, 1, 1]),
        "search": np.array([2, 2, 1]),
        "actions": np.array([[2, 1, -1, -1], [2, 1, -1, -1], [1, 2, -1, -1]]),
        "visits": np.array([[20, 20, 0, 0], [20, 3, 0, 0], [20, 20, 0, 0]]),
        "values": np.array([[0.7, 0.5, np.nan, np.nan], [0.9, 0.1, np.nan, np.nan], [0.9, 0.1, np.nan, np.nan]]),
        "verify": np.array([-1, 2, 1]),
    }
    base.update({f"verify_{key}": base[key] for key in ("actions", "visits", "values")})
    return base | columns


def test_a_correction_needs_another_move_enough_visits_and_a_value_gap(module):
    data = _data()
    # Row 0: move 2 beats 1 by 0.2 with 20 visits each.  Row 1: the student's move has 3 visits.  Row 2: same move.
    assert module.corrections(data, gap=0.1, min_visits=10).tolist() == [True, False, False]
    assert module.corrections(data, gap=0.2, min_visits=10).tolist() == [False, False, False]
    assert module.corrections(data, gap=0.1, min_visits=3).tolist() == [True, True, False]
    # The second search did not run on row 0 (-1): never a correction from it.
    assert module.corrections(data, gap=0.1, min_visits=3, verified=True).tolist() == [False, True, False]
    # A student's move the search kept no statistics for is never a correction.
    missing = _data(actions=np.array([[2, 3, -1, -1], [2, 1, -1, -1], [1, 2, -1, -1]]))
    assert module.corrections(missing, gap=0.1, min_visits=0).tolist() == [False, True, False]


def test_root_statistics_keep_the_most_visited_actions_padded(module):
    root = types.SimpleNamespace(
        visit_counts=lambda: {3: 5, 7: 9, 1: 5, 8: 1, 9: 0},
        mean_values=lambda: {3: 0.5, 7: 0.75, 1: 0.25, 8: 1.0},
    )
    actions, visits, values = module.root_statistics(root)
    assert actions.tolist() == [7, 1, 3, 8] and visits.tolist() == [9, 5, 5, 1]
    assert values.tolist() == [0.75, 0.25, 0.5, 1.0]
    actions, visits, values = module.root_statistics(None)
    assert actions.tolist() == [-1] * 4 and visits.tolist() == [0] * 4 and np.isnan(values).all()


def test_generate_records_legal_moves_of_both_searches_and_is_reproducible(module, labelled, tmp_path):
    data = module.load_chunks(labelled)
    rows = np.arange(len(data["raw"]))
    assert len(rows) > 20 and sorted(data["won"][:, 0].tolist()) == [0, 1]
    assert data["masks"][rows, data["raw"]].all() and data["masks"][rows, data["search"]].all()
    assert (data["masks"].sum(axis=1) > 1).all()
    ran = data["verify"] >= 0
    assert ran.any() and data["masks"][rows[ran], data["verify"][ran]].all()
    # The second search runs only where the first disagreed with the student, and it ran more simulations.
    assert (data["search"][ran] != data["raw"][ran]).all()
    assert (data["verify_visits"][ran].sum(axis=1) > data["visits"][ran].sum(axis=1)).all()
    assert (data["verify_actions"][~ran] == -1).all()
    # The student's move is its network's most likely one.
    observations, masks = torch.from_numpy(data["observations"]), torch.from_numpy(data["masks"])
    with torch.inference_mode():
        logits, _ = load_agent("champion").model(observations, masks)
    assert np.array_equal(logits.argmax(dim=1).numpy(), data["raw"])
    again = tmp_path / "again"
    assert module.main(["generate", *TINY, "--out", str(again)]) == 0
    other = module.load_chunks(again)
    assert all(np.array_equal(data[key], other[key], equal_nan=True) for key in data)


def test_generate_resumes_and_refuses_other_arguments(module, labelled, capsys):
    before = {path.name: path.stat().st_mtime_ns for path in labelled.iterdir()}
    assert module.main(["generate", *TINY, "--out", str(labelled)]) == 0
    assert {path.name: path.stat().st_mtime_ns for path in labelled.iterdir()} == before
    with pytest.raises(SystemExit) as refused:
        module.main(["generate", *TINY, "--seed", "7", "--out", str(labelled)])
    assert refused.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("search_labels: error: ") and "(seed)" in error and "\n" not in error


def test_fit_writes_networks_that_follow_the_corrections(module, labelled, tmp_path, capsys):
    out = tmp_path / "fit"
    argv = ["fit", "--data", str(labelled), "--gap", "0", "--min-visits", "0", "--repeat", "50"]
    argv += ["--lr", "0.01", "--kl", "0"]
    assert module.main([*argv, "--epochs", "3", "--evaluate", "0", "3", "--games", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "epoch 3: " in printed and "against greedy" in printed
    champion = load_agent("champion").model.state_dict()
    untouched = load_agent(out / "epoch-0.pt").model.state_dict()
    assert all(torch.equal(champion[key], untouched[key]) for key in champion)
    fitted = load_agent(out / "epoch-3.pt")
    data = module.load_chunks(labelled)
    chosen = module.corrections(data, 0.0, 0)
    assert chosen.any()
    with torch.inference_mode():
        moves = fitted.model(torch.from_numpy(data["observations"]), torch.from_numpy(data["masks"]))[0].argmax(dim=1)
    trained = chosen & ~module.held_out_rows(data["games"], 0)
    assert trained.any() and np.mean(moves.numpy()[trained] == data["search"][trained]) > 0.5
    assert fitted.reward == load_agent("champion").reward


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "--data", "EMPTY", "--out", "OUT"], "no chunks in"),
        (["fit", "--data", "BROKEN", "--out", "OUT"], "cannot be read"),
        (["fit", "--data", "EMPTY", "--epochs", "2", "--evaluate", "3", "--out", "OUT"], "past --epochs 2"),
        (["fit", "--data", "EMPTY", "--games", "3", "--out", "OUT"], "--games must be even"),
        (["fit", "--data", "EMPTY", "--gap", "nan", "--out", "OUT"], "--gap"),
        (["generate", "--student", "no-such-agent", "--out", "OUT"], "student 'no-such-agent'"),
        (["generate", "--games", "3", "--out", "OUT"], "--games"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(module, tmp_path, capsys, argv, message):
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "BROKEN").mkdir()
    (tmp_path / "BROKEN" / "chunk-00000.npz").write_bytes(b"not a chunk")
    argv = [str(tmp_path / arg) if arg in ("EMPTY", "BROKEN", "OUT") else arg for arg in argv]
    with pytest.raises(SystemExit) as refused:
        module.main(argv)
    assert refused.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("search_labels") and ": error: " in error and message in error and "\n" not in error
    assert not (tmp_path / "OUT").exists()
