"""The engine owns the game state: other modules use its public queries (kahuna_env/engine.py docstring).

Only :mod:`kahuna_env.engine` touches the private slots of
:class:`~kahuna_env.engine.KahunaGame` (its record, ``_state``, and what goes with it); the two declared friends,
:mod:`kahuna_env.observation` and :mod:`kahuna_env.agents.greedy`, may hand the record to a loop that reads it
(per-decision hot paths) but never assign them.  Checked on the source of every module of the project.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kahuna_env.engine import KahunaGame

ROOT = Path(__file__).resolve().parent.parent
PRIVATE_FIELDS = frozenset(name for name in KahunaGame.__slots__ if name.startswith("_"))
OWNER = "kahuna_env/engine.py"
FRIENDS = ("kahuna_env/observation.py", "kahuna_env/agents/greedy.py")
SOURCES = sorted(
    path.relative_to(ROOT).as_posix()
    for package in ("kahuna_env", "kahuna_policy", "training", "kahuna_arena", "benchmarks")
    for path in (ROOT / package).rglob("*.py")
)


def _field_uses(source: str) -> list[tuple[int, str, bool]]:
    """``(line, field, is a write)`` for every ``x.<private state field>`` outside ``self.``/``cls.``."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_FIELDS:
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue  # the module's own objects (e.g. a batch engine's own arrays)
            uses.append((node.lineno, node.attr, isinstance(node.ctx, (ast.Store, ast.Del))))
    return uses


def test_the_scan_finds_private_reads_and_writes():
    assert _field_uses("g._state\ng._legal = None\nself._state") == [(1, "_state", False), (2, "_legal", True)]


@pytest.mark.parametrize("path", [p for p in SOURCES if p != OWNER])
def test_only_the_engine_touches_the_game_state_and_its_friend_only_reads_it(path):
    uses = _field_uses((ROOT / path).read_text(encoding="utf-8"))
    if path in FRIENDS:
        uses = [use for use in uses if use[2]]
    assert not uses, f"{path} reaches into KahunaGame state: {uses}; use the engine's public queries"
