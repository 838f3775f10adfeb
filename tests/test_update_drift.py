"""``benchmarks/update_drift.py``: many updates in one process, timed per window, with and without the padding."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "update_drift.py"


def _drift(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )


@pytest.mark.parametrize("pad", [True, False], ids=["padded", "no-pad"])
def test_the_benchmark_prints_one_line_per_window(pad):
    done = _drift("--updates", "3", "--window", "2", "--decisions", "300", "400", *([] if pad else ["--no-pad"]))
    assert done.returncode == 0, done.stderr
    header, *windows = done.stdout.splitlines()
    assert "3 updates of 300-400 decisions" in header
    assert ("padded to a multiple of 256 rows" in header) is pad and ("no padding" in header) is not pad
    assert [re.match(r"\s+updates\s+(\d+)-\s*(\d+):", line).groups() for line in windows] == [("1", "2"), ("3", "3")]
    assert all(re.search(r"median \d+\.\d{3} s per update, peak memory [\d,]+ MB$", line) for line in windows)


@pytest.mark.parametrize(
    "args",
    [("--updates", "0"), ("--window", "0"), ("--decisions", "400", "300"), ("--decisions", "0", "10")],
    ids=["updates", "window", "decisions-order", "decisions-zero"],
)
def test_bad_flags_are_one_line_errors(args):
    done = _drift(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].startswith("update_drift.py: error: --updates and --window")
