"""``benchmarks/guided_sweep.py``: settings of the guided search compared on the same deals.

The script runs once as the real command; the other runs call its ``main`` in this process (a fresh
interpreter importing torch costs seconds, and ``sys.exit(main())`` is all the command adds).
"""

from __future__ import annotations

import importlib.util
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


@pytest.fixture
def sweep_main(monkeypatch):
    """The script's ``main``, imported as the module ``guided_sweep`` (its spawned workers import it by that name)."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("guided_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "guided_sweep", module)
    spec.loader.exec_module(module)
    return module.main


def test_a_sweep_plays_each_setting_on_the_same_deals(sweep_main, capsys):
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
    assert sweep_main([settings[0], "--opponent", "random", "--games", "2", "--workers", "1"]) == 0
    again = capsys.readouterr().out
    assert again.split(" score ")[0] == lines[0].split(" score ")[0]  # same seed, same games


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
def test_bad_settings_fail_in_one_line_before_any_game(args, message, sweep_main, capsys):
    with pytest.raises(SystemExit) as exit_:
        sweep_main(list(args))
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
