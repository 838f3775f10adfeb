"""Test-suite configuration: the project's markers (``integrations``, ``rllib_cluster``)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        'integrations: runs an RL library\'s documented path (docs/ECOSYSTEM.md); needs the "integrations" extra',
    )
    config.addinivalue_line(
        "markers",
        "rllib_cluster: a two-node Ray cluster on this machine (tests/test_rllib_cluster.py); needs the rllib extra",
    )
