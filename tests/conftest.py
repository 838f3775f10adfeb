"""Test-suite configuration: the project's markers (``integrations``, ``rllib_cluster``, ``serial``), and the
xdist scheduling that keeps the suite's process-heavy tests from running beside each other under ``pytest -n``.

The suite must pass on a busy machine (docs/RELIABILITY.md, "Tests hold under load"): no test bounds its work
by a tight wall-clock constant, and the tests that start Ray (a local instance or a two-node cluster) or
Chromium, each a handful of processes with timeouts of their own inside, are ``serial``: under ``-n N`` one
worker runs them all, one after another, never two at once, while the other workers share the rest.

This is done by the scheduler below, not by ``xdist_group`` markers: pytest-xdist 3.8 marks a group by
rewriting ``item._nodeid``, which pytest 9 no longer reads, so ``--dist loadgroup`` silently groups nothing.

Ray's worker processes run at the tests' own priority (``RAY_worker_niceness=0``, set below), not at Ray's
default nice 15: beside CPU-bound work at nice 0 a nice-15 process gets a few percent of a core, and a
restarted EnvRunner took over six minutes to set itself up (8 s of CPU) while three busy loops ran.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("RAY_worker_niceness", "0")  # inherited by every Ray this test run starts (see above)
# One OpenMP / BLAS thread per test process (set before anything imports torch or numpy's BLAS): under
# ``pytest -n 2`` on two cores each worker would otherwise start a pool of two spinning threads, and a
# test of small forward passes ran 15x slower beside the other worker.  Code that
# wants more (a training run's ``threads``) sets its own count; a value already in the environment is kept.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

SERIAL_GROUP = "serial"
"""The scheduling scope of the process-heavy tests: one worker runs them all, one after another."""

SERIAL_MODULES = frozenset(
    {
        "test_rllib.py",
        "test_rllib_batched.py",
        "test_rllib_cluster.py",
        "test_rllib_episodes.py",
        "test_rllib_faults.py",
        "test_rllib_learner.py",
        "test_rllib_pfsp.py",
        "test_rllib_recipe.py",
        "test_web_browser.py",
    }
)
"""Modules whose tests start Ray or Chromium: all their tests are ``serial``."""


SHARED_FIXTURE_MODULES = frozenset(
    {
        "test_distill.py",  # data: a search teacher's games
        "test_packaging.py",  # wheel, installed: the wheel built and installed in a fresh venv
        "test_schedule.py",  # slow_run: a smoke run on a simulated slow machine
        "test_training_hardening.py",  # finished_run: a two-update run
        "test_training_rollout.py",  # self_play_rollout: self-play games
        "test_training_run.py",  # smoke_run: the smoke config trained through the CLI
    }
)
"""Modules whose tests share an expensive module-scoped fixture: under ``-n N`` each module is one scope (one
worker runs all its tests), so the fixture is built once, not once on every worker that gets one of its tests."""


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test, as each collection process and kahuna-eval worker runs (torch is imported
    here, not at the top: importing the conftest must not load it); the test's thread count is put back after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def is_serial(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (``tests/test_x.py::test_y[...]``) belongs to a :data:`SERIAL_MODULES` module."""
    return _module(nodeid) in SERIAL_MODULES


def scope_of(nodeid: str) -> str:
    """The xdist scope of the test ``nodeid``: :data:`SERIAL_GROUP`, its module's path (a
    :data:`SHARED_FIXTURE_MODULES` module) or the test itself."""
    if is_serial(nodeid):
        return SERIAL_GROUP
    if _module(nodeid) in SHARED_FIXTURE_MODULES:
        return nodeid.split("::", 1)[0]
    return nodeid


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        'integrations: runs an RL library\'s documented path (docs/ECOSYSTEM.md); needs the "integrations" extra',
    )
    config.addinivalue_line(
        "markers",
        "rllib_cluster: a two-node Ray cluster on this machine (tests/test_rllib_cluster.py); needs the rllib extra",
    )
    config.addinivalue_line(
        "markers",
        "serial: starts Ray or a browser; under pytest -n one worker runs all of these, one after another "
        "(tests/conftest.py)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SERIAL_MODULES` ``serial`` (so ``-m "not serial"`` leaves them out)."""
    for item in items:
        if is_serial(item.nodeid):
            item.add_marker(pytest.mark.serial)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist load`` (what ``-n N`` means): xdist's load balancing, but every ``serial`` test in one scope.

    A scope is a unit of work given to one worker; a :data:`SHARED_FIXTURE_MODULES` module is one scope too, and
    every other test is a scope of its own, as with plain ``load``.  Any other ``--dist`` is left to xdist.  The
    serial scope being the largest, xdist hands it out first, so it does not end the run alone.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SerialScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return SerialScopeScheduling(config, log)
