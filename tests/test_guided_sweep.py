"""``benchmarks/guided_sweep.py``: settings of the guided search compared on the same deals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "guided_sweep.py"


def _sweep(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


def test_a_sweep_plays_each_setting_on_the_same_deals():
    settings = ('{"simulations": 2}', '{"simulations": 2, "prior_temperature": 1.0}')
    done = _sweep(*settings, "--opponent", "random", "--games", "2", "--workers", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line, setting in zip(lines, settings, strict=True):
        assert line.startswith(f"{setting} vs random: ")
        record = line.removeprefix(f"{setting} vs random: ").split()[0]
        wins, draws, losses = (int(n) for n in record.split("-"))
        assert wins + draws + losses == 2 and "ms/move" in line
    again = _sweep(settings[0], "--opponent", "random", "--games", "2", "--workers", "1")
    assert again.stdout.split(" score ")[0] == lines[0].split(" score ")[0]  # same seed, same games


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("{simulations: 2}",), "is not JSON"),
        (("[2]",), "JSON object"),
        (('{"prior_temperature": 0}',), "prior_temperature"),
        (('{"no_such_option": 1}',), "no_such_option"),
        (('{"simulations": 2}', "--opponent", "nobody"), "unknown entrant"),
        (('{"simulations": 2}', "--games", "3"), "even"),
    ],
)
def test_bad_settings_fail_in_one_line_before_any_game(args, message):
    done = _sweep(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
