"""Entrants: the strings every arena tool accepts for "who plays", and the agents they name.

An entrant is a baseline name (``random``, ``greedy``, ``mcts``, ``mcts:N``
with a simulation budget N; built by :func:`kahuna_env.agents.make_agent`)
or the path of a policy file / training checkpoint (built by
:func:`training.agent.load_agent`).  Only the second kind imports
:mod:`training` and torch, and only when it is built.

Every bad entrant raises one exception with a one-line message
(``ValueError``; ``FileNotFoundError`` for a missing file) that the command
line tools print as ``PROGRAM: error: MESSAGE``.
"""

from __future__ import annotations

import re
from pathlib import Path

from arena.cli import first_line
from kahuna_env.agents import BASELINE_NAMES, BASELINES, Agent, make_agent


def is_checkpoint_spec(spec: str) -> bool:
    """Whether an entrant string names a file, not a baseline (it has a path separator or a suffix, or exists)."""
    return "/" in spec or "\\" in spec or Path(spec).suffix != "" or Path(spec).exists()


def _check_budget(spec: str) -> None:
    """Reject ``mcts:N`` unless N is written with ASCII digits and is at least 1 (``int`` accepts ``²``-like text)."""
    base, colon, budget = spec.partition(":")
    if base == "mcts" and colon and not (budget.isascii() and budget.isdigit() and int(budget) >= 1):
        raise ValueError(f"bad simulation budget in {spec!r}: expected mcts:N with N a positive integer")


def resolve_entrant(spec: str, seed: int | None = None, sampled: bool = False) -> Agent:
    """Build the agent an entrant string names.

    Baselines: ``random``, ``greedy``, ``mcts``, ``mcts:N``.  Anything that
    looks like a path is loaded with :func:`training.agent.load_agent`
    (``sampled=True`` makes the policy sample its moves instead of playing
    the most likely one).  Raises ``FileNotFoundError`` for a missing
    checkpoint and ``ValueError`` (one line) for a corrupt one, a bad budget
    or an unknown name (the message lists the accepted forms).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an entrant must be a non-empty string, got {spec!r}")
    if spec.partition(":")[0] in BASELINES:
        _check_budget(spec)
        try:
            return make_agent(spec, seed=seed)
        except (TypeError, ValueError) as error:
            raise ValueError(first_line(error)) from None
    if is_checkpoint_spec(spec):
        from training.agent import load_agent

        return load_agent(spec, deterministic=not sampled, seed=seed)
    raise ValueError(
        f"unknown entrant {spec!r}: expected a baseline ({', '.join(BASELINE_NAMES)}) "
        "or the path of a checkpoint / policy file"
    )


def entrant_label(spec: str) -> str:
    """A file-name-safe short label for an entrant (the file stem for checkpoints)."""
    text = Path(spec).stem if is_checkpoint_spec(spec) else spec
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "entrant"
