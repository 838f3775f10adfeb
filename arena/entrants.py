"""Entrants: the strings every arena tool accepts for "who plays", and the agents they name.

An entrant is a baseline name (``random``, ``greedy``, ``mcts``, ``mcts:N``
with a simulation budget N; built by :func:`kahuna_env.agents.make_agent`),
the path of a policy file / training checkpoint or the named agent
``champion`` (built by :func:`training.agent.load_agent`), or one of those
two followed by ``@mcts`` or ``@mcts:N``: the ``mcts`` search guided by that
network with N simulations (default 200; :func:`training.search.load_guided_agent`).
Only the network kinds import :mod:`training` and torch, and only when they are built.

Every bad entrant raises one exception with a one-line message
(``ValueError``; ``FileNotFoundError`` for a missing file) that the command
line tools print as ``PROGRAM: error: MESSAGE``.
"""

from __future__ import annotations

import re
from pathlib import Path

from arena.cli import first_line
from kahuna_env.agents import BASELINE_NAMES, BASELINES, Agent, make_agent
from kahuna_env.agents.mcts import DEFAULT_SIMULATIONS

NAMED_AGENTS = ("champion", "champion-v2", "champion-v1")
"""Named network agents :func:`training.agent.load_agent` knows (shipped with the package)."""
SEARCH_SUFFIX = "@mcts"
"""``SOURCE@mcts`` / ``SOURCE@mcts:N``: the search guided by the network ``SOURCE``."""


def split_search(spec: str) -> tuple[str, int | None]:
    """``(source, simulations)`` of a guided-search entrant ``SOURCE@mcts[:N]``; ``(spec, None)`` for any other.

    A spec that is an existing file is a file, whatever it contains.  Raises a
    one-line ``ValueError`` for a bad search (``x.pt@foo``, ``x.pt@mcts:0``,
    ``x.pt@mcts:abc``, nothing before the ``@``).
    """
    source, at, search = spec.rpartition("@")
    if not at or Path(spec).is_file():
        return spec, None
    base, colon, budget = search.partition(":")
    if base != SEARCH_SUFFIX[1:]:
        raise ValueError(f"bad search in {spec!r}: expected SOURCE@mcts or SOURCE@mcts:N, got @{search}")
    if colon and not (budget.isascii() and budget.isdigit() and int(budget) >= 1):
        raise ValueError(f"bad simulation budget in {spec!r}: expected SOURCE@mcts:N with N a positive integer")
    if not source:
        raise ValueError(f"bad entrant {spec!r}: give a policy file or {' / '.join(NAMED_AGENTS)} before @mcts")
    return source, int(budget) if colon else DEFAULT_SIMULATIONS


def is_checkpoint_spec(spec: str) -> bool:
    """Whether an entrant needs a network (and torch), not a baseline.

    A file (a path separator or a suffix, or it exists), a named agent
    (``champion``), or either with ``@mcts[:N]``.
    """
    if spec in NAMED_AGENTS or spec.rpartition("@")[0] in NAMED_AGENTS:
        return True
    return "/" in spec or "\\" in spec or Path(spec).suffix != "" or Path(spec).exists()


def _check_budget(spec: str) -> None:
    """Reject ``mcts:N`` unless N is written with ASCII digits and is at least 1 (``int`` accepts ``²``-like text)."""
    base, colon, budget = spec.partition(":")
    if base == "mcts" and colon and not (budget.isascii() and budget.isdigit() and int(budget) >= 1):
        raise ValueError(f"bad simulation budget in {spec!r}: expected mcts:N with N a positive integer")


def resolve_entrant(spec: str, seed: int | None = None, sampled: bool = False) -> Agent:
    """Build the agent an entrant string names.

    Baselines: ``random``, ``greedy``, ``mcts``, ``mcts:N``.  Anything that
    looks like a path, and ``champion``, is loaded with
    :func:`training.agent.load_agent` (``sampled=True`` makes the policy
    sample its moves instead of playing the most likely one).  ``SOURCE@mcts``
    and ``SOURCE@mcts:N`` build the search guided by that network
    (:func:`training.search.load_guided_agent`; it plays its most visited
    action, ``sampled`` does not apply).  Raises ``FileNotFoundError`` for a
    missing checkpoint and ``ValueError`` (one line) for a corrupt one, a bad
    budget or search, or an unknown name (the message lists the accepted forms).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an entrant must be a non-empty string, got {spec!r}")
    if spec.partition(":")[0] in BASELINES:
        _check_budget(spec)
        try:
            return make_agent(spec, seed=seed)
        except (TypeError, ValueError) as error:
            raise ValueError(first_line(error)) from None
    source, simulations = split_search(spec)
    if simulations is not None and is_checkpoint_spec(source):
        from training.search import load_guided_agent

        return load_guided_agent(source, simulations=simulations, seed=seed)
    if simulations is None and is_checkpoint_spec(spec):
        from training.agent import load_agent

        return load_agent(spec, deterministic=not sampled, seed=seed)
    raise ValueError(
        f"unknown entrant {spec!r}: expected a baseline ({', '.join(BASELINE_NAMES)}), "
        f"the path of a checkpoint / policy file, {' / '.join(NAMED_AGENTS)}, or one of those two with @mcts[:N]"
    )


def entrant_label(spec: str) -> str:
    """A file-name-safe short label for an entrant (the file stem for checkpoints; ``stem-mcts_N`` for a search)."""
    try:
        source, simulations = split_search(spec)
    except ValueError:
        source, simulations = spec, None
    text = Path(source).stem if is_checkpoint_spec(source) else source
    if simulations is not None:
        text = f"{text}-mcts_{simulations}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "entrant"
