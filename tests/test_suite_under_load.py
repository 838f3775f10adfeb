"""The suite holds on a busy machine (docs/RELIABILITY.md, "Tests hold under load").

Two rules keep it so: the process-heavy tests (Ray, Chromium) run on one xdist worker, one after
another (tests/conftest.py), and no test bounds its elapsed time by a tight constant.  These tests
hold the scheduler to the first rule and the test sources to the second.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SERIAL_GROUP, SERIAL_MODULES, SHARED_FIXTURE_MODULES, is_serial, scope_of

TESTS = Path(__file__).resolve().parent

pytest.importorskip("xdist")


def test_every_serial_module_exists():
    """A renamed module would silently lose its serial scope."""
    assert sorted(name for name in SERIAL_MODULES if not (TESTS / name).is_file()) == []


def test_serial_is_decided_by_the_module_of_the_test_id():
    assert is_serial("tests/test_rllib_faults.py::test_a_killed_env_runner_is_restarted_and_the_run_goes_on")
    assert is_serial("tests/test_web_browser.py::test_bad_input_is_a_message_on_the_page[x::y]")
    assert is_serial("test_rllib.py::test_env_only_the_player_to_move_observes_and_acts")
    assert not is_serial("tests/test_vector.py::test_only_active_games_act")
    assert not is_serial("tests/test_rllib_x.py::test_a")


def test_a_shared_fixture_module_is_one_scope_and_other_tests_are_their_own():
    assert sorted(name for name in SHARED_FIXTURE_MODULES if not (TESTS / name).is_file()) == []
    assert not SHARED_FIXTURE_MODULES & SERIAL_MODULES
    shared = "tests/test_training_run.py::test_checkpoint_loads_with_weights_only"
    assert scope_of(shared) == "tests/test_training_run.py"
    assert scope_of("tests/test_rllib_faults.py::test_resume_errors_are_one_line") == SERIAL_GROUP
    plain = "tests/test_vector.py::test_only_active_games_act"
    assert scope_of(plain) == plain


def test_pytest_n_2_runs_every_serial_test_on_one_worker(tmp_path):
    """Under ``pytest -n 2`` the serial tests share one worker (so two never run at once); the others still spread.

    (pytest-xdist's own ``--dist loadgroup`` groups nothing under pytest 9: this checks the scheduler that does.)
    """
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    body = textwrap.dedent(
        """
        import os
        import pathlib

        import pytest


        @pytest.mark.parametrize("k", range({count}))
        def test_record_the_worker(k):
            out = pathlib.Path(os.environ["KAHUNA_WORKER_LOG"])
            with out.open("a") as file:
                file.write(f"{{__name__}} {{k}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
        """
    )
    for name, count in (("test_rllib_faults", 3), ("test_web_browser", 3), ("test_plain", 12)):
        (tmp_path / f"{name}.py").write_text(body.format(count=count), encoding="utf-8")
    log = tmp_path / "workers.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**os.environ, "KAHUNA_WORKER_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard: two workers start in seconds, minutes on a busy machine
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line.split() for line in log.read_text().splitlines()]
    assert len(rows) == 18
    serial_workers = {worker for module, _, worker in rows if module != "test_plain"}
    assert len(serial_workers) == 1, rows


ELAPSED_BOUND = re.compile(r"(?:perf_counter|monotonic|time)\(\)\s*-\s*\w+\s*<\s*([0-9.]+)")


def test_no_test_bounds_its_elapsed_time_by_a_tight_constant():
    """``assert elapsed < 10`` fails on a busy machine: a bound on elapsed time is a budget or at least 60 s."""
    tight = []
    for path in sorted(TESTS.glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for bound in ELAPSED_BOUND.findall(line):
                if float(bound) < 60:
                    tight.append(f"{path.name}:{number}: {line.strip()}")
    assert tight == []


def test_the_tight_bound_check_finds_one():
    tight = "    assert time.perf_counter() - start " + "< 10"  # split, so the scan above does not find it here
    assert ELAPSED_BOUND.findall(tight) == ["10"]
    assert ELAPSED_BOUND.findall("    assert time.monotonic() - start < BUDGET_S") == []
