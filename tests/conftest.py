"""Test-suite configuration: the ``integrations`` marker (tests/test_integrations.py)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        'integrations: runs an RL library\'s documented path (docs/ECOSYSTEM.md); needs the "integrations" extra',
    )
