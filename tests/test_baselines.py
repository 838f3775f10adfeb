"""The baseline scripts of benchmarks/baselines/ (issue 80): a run leaves snapshots the arena plays.

The CleanRL-style script trains for a budget of work (``--max-steps 1``: one
update), never of time; its final snapshot is an ONNX entrant ``kahuna-eval``
plays; ``evaluate.py`` adds its curve point once; ``table.py`` reads the run;
a run folder is never taken over by another run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BASELINES = Path(__file__).resolve().parents[1] / "benchmarks" / "baselines"
KAHUNA_EVAL = Path(sys.executable).parent / "kahuna-eval"


def script(name: str, *arguments: str | Path) -> subprocess.CompletedProcess:
    """Run ``benchmarks/baselines/NAME`` with ``arguments``; its status and output."""
    command = [sys.executable, str(BASELINES / name), *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def cleanrl_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished CleanRL-style run of one update (its budget in steps, ``--minutes`` far away)."""
    out = tmp_path_factory.mktemp("baselines") / "cleanrl-s0"
    done = script("cleanrl_ppo.py", "--out", out, "--seed", "0", "--minutes", "30", "--max-steps", "1")
    assert done.returncode == 0, done.stderr
    return out


def test_a_run_ends_at_its_step_budget_with_a_final_snapshot_the_arena_plays(cleanrl_run, tmp_path):
    progress = json.loads((cleanrl_run / "progress.json").read_text())
    assert progress["finished"] and [snapshot["name"] for snapshot in progress["snapshots"]] == ["final"]
    final = progress["snapshots"][0]
    assert final["decisions"] >= 1 and final["minutes"] < 30
    report = tmp_path / "eval.json"
    command = [KAHUNA_EVAL, cleanrl_run / final["path"], "greedy", "--games", "2", "--no-progress", "--json", report]
    done = subprocess.run(list(map(str, command)), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    pairing = json.loads(report.read_text())["pairings"][0]
    assert pairing["games"] == 2 and pairing["wins"] + pairing["draws"] + pairing["losses"] == 2


def test_a_finished_run_is_left_as_it_is_and_another_seed_is_refused_in_one_line(cleanrl_run):
    before = {path.name: path.read_bytes() for path in cleanrl_run.iterdir()}
    again = script("cleanrl_ppo.py", "--out", cleanrl_run, "--seed", "0", "--minutes", "30", "--max-steps", "1")
    assert again.returncode == 0 and "is finished" in again.stdout
    other = script("cleanrl_ppo.py", "--out", cleanrl_run, "--seed", "1", "--minutes", "30", "--max-steps", "1")
    assert other.returncode == 2
    assert other.stderr.count("\n") == 1 and "holds --seed 0" in other.stderr
    assert {path.name: path.read_bytes() for path in cleanrl_run.iterdir()} == before


def test_a_folder_that_holds_no_run_is_refused_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    done = script("sb3_maskable_ppo.py", "--out", tmp_path, "--minutes", "1")
    assert done.returncode == 2 and done.stderr.startswith("sb3_maskable_ppo.py: error: --out")
    assert done.stderr.count("\n") == 1 and sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_evaluate_adds_each_snapshot_to_the_curve_once_and_the_table_reads_it(cleanrl_run):
    first = script("evaluate.py", cleanrl_run, "--games", "2", "--workers", "1")
    assert first.returncode == 0, first.stderr
    curve = json.loads((cleanrl_run / "curve.json").read_text())
    assert [(point["name"], point["games"]) for point in curve["points"]] == [("final", 2)]
    again = script("evaluate.py", cleanrl_run, "--games", "2", "--workers", "1")
    assert again.returncode == 0 and json.loads((cleanrl_run / "curve.json").read_text()) == curve
    other = script("evaluate.py", cleanrl_run, "--games", "4")
    assert other.returncode == 2 and "--games 2" in other.stderr
    shown = script("table.py", cleanrl_run.parent, "--no-plot")
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if line.startswith("| cleanrl ")]
    assert len(rows) == 1 and "not evaluated" in rows[0]  # no protocol.json: the protocol's columns say so


LIBRARY_SCRIPTS = [("sb3_maskable_ppo.py", "sb3_contrib"), ("tianshou_dqn.py", "tianshou")]
"""The scripts that count decisions, and the library each needs (the trainers' scripts count none)."""


@pytest.mark.parametrize(("name", "module"), LIBRARY_SCRIPTS, ids=["sb3", "tianshou"])
def test_each_library_s_script_runs_from_a_fresh_clone_for_a_budget_of_work(name, module, tmp_path):
    """The command docs/BASELINES.md gives for the row, with a budget of a few hundred decisions."""
    pytest.importorskip(module)
    out = tmp_path / "run"
    done = script(name, "--out", out, "--seed", "0", "--minutes", "30", "--max-steps", "200")
    assert done.returncode == 0, done.stderr[-2000:]
    progress = json.loads((out / "progress.json").read_text())
    assert progress["finished"] and progress["snapshots"][-1]["name"] == "final"
    assert (out / progress["snapshots"][-1]["path"]).is_file()
