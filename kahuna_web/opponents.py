"""The opponents the server allows: entrant strings built into agents, agent files listed, a stopped search's move.

Opponents resolve through :func:`kahuna_arena.entrants.resolve_entrant`, the one
entrant parser of every tool, with the allowed agents folder and this
server's simulation caps: an agent file counts only inside the folder (links
and ``..`` resolved; nothing outside it is looked at), anything else that
names a file is 403.  A search asked to stop early plays its best move so
far (:func:`best_move_so_far`).  Every refusal is a one-line
:class:`~kahuna_web.validate.WebError`; no HTTP here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_arena.entrants import NAMED_AGENTS, EntrantRefused, EntrantSpec, parse_entrant, resolve_entrant
from kahuna_env.agents import Agent
from kahuna_env.agents import spec as entrant_forms
from kahuna_env.agents.mcts import action_priors
from kahuna_env.agents.spec import ANYWHERE, looks_like_path
from kahuna_env.cli import first_line
from kahuna_env.engine import KahunaGame
from kahuna_web.validate import WebError, lone_surrogate, short

MAX_SPEC_LENGTH = 255
"""Longest entrant string accepted."""
DEFAULT_MAX_SIMULATIONS = 800
"""Largest ``mcts:N`` budget the web accepts by default: its slowest turn here about 2 s (docs/WEB.md, Budgets)."""
DEFAULT_MAX_GUIDED_SIMULATIONS = 25
"""Largest ``SOURCE@mcts:N`` budget by default (a guided simulation costs a forward pass; same measure)."""
MAX_AGENT_FILES = 200
"""At most this many agent files are listed from the allowed directory."""
AGENT_SUFFIXES = (".pt", ".zip", ".onnx")
"""Files listed as agent files: the project's and TorchScript's ``.pt``, SB3's ``.zip``, ``.onnx`` (any file
inside the directory can still be named; its kind is read from its content)."""
OPERATOR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}\Z")
"""A name the operator gives an entrant (``kahuna-serve --entrant NAME=SPEC``): what the page offers and sends."""


def operator_entrant(text: str) -> tuple[str, EntrantSpec]:
    """``(NAME, spec)`` of ``kahuna-serve --entrant NAME=SPEC``; a one-line ``ValueError`` if it is not one.

    The operator names the entrant, so any form is accepted, ``py:`` agents
    (code to run) and files anywhere included: the page's users only pick
    the name.  NAME must not already be an entrant (a baseline or a shipped
    agent) nor look like a path.
    """
    name, equals, spec = text.partition("=")
    if not equals or not OPERATOR_NAME.match(name):
        raise ValueError(
            f"--entrant must be NAME=SPEC with NAME a letter and up to 39 letters, digits, - or _, got {text!r:.80}"
        )
    try:
        parse_entrant(name)
    except ValueError:
        pass
    else:
        raise ValueError(f"--entrant {name}: {name!r} is already an entrant's name; choose another")
    if looks_like_path(name):
        raise ValueError(f"--entrant {name}: a name, not a path")
    try:
        return name, parse_entrant(spec, ANYWHERE, python=True)
    except ValueError as error:
        raise ValueError(f"--entrant {name}: {first_line(error)}") from None


def _named(spec: str, named: Mapping[str, EntrantSpec], max_guided_simulations: int) -> EntrantSpec | None:
    """The operator-named entrant ``spec`` is (``NAME`` or ``NAME@mcts:N``), or ``None`` for another form."""
    name = spec.partition("@")[0]
    if name not in named:
        return None
    if name == spec:
        return named[name]
    try:
        _, simulations = entrant_forms.split_search(spec, (*NAMED_AGENTS, *named))
        if simulations > max_guided_simulations:
            raise ValueError(f"simulation budget too large in {spec!r:.60}: at most {max_guided_simulations}")
        return named[name].with_search(simulations)
    except ValueError as error:
        raise WebError(first_line(error)) from None


def list_agent_files(agents_dir: Path | None) -> list[str]:
    """Agent files (``*.pt``) inside ``agents_dir``, relative to it, sorted (at most :data:`MAX_AGENT_FILES`)."""
    if agents_dir is None or not agents_dir.is_dir():
        return []
    root = agents_dir.resolve()
    found = []
    for path in sorted(agents_dir.rglob("*")):
        if lone_surrogate(str(path)):  # not UTF-8: a name no page could show or send back
            continue
        if path.suffix in AGENT_SUFFIXES and path.is_file() and path.resolve().is_relative_to(root):
            found.append(path.relative_to(agents_dir).as_posix())
            if len(found) >= MAX_AGENT_FILES:
                break
    return found


def resolve_opponent(
    spec: Any,
    agents_dir: Path | None,
    seed: int | None,
    max_simulations: int = DEFAULT_MAX_SIMULATIONS,
    max_guided_simulations: int = DEFAULT_MAX_GUIDED_SIMULATIONS,
    named: Mapping[str, EntrantSpec] | None = None,
) -> Agent:
    """Build the agent an entrant string names (:func:`kahuna_arena.entrants.resolve_entrant`); :class:`WebError`
    if bad.

    Agent files only from ``agents_dir`` (403 for anything outside it, or for
    any file when it is ``None``; 404 for a file of the folder that is not
    there), search budgets at most ``max_simulations`` (``mcts:N``) and
    ``max_guided_simulations`` (``SOURCE@mcts:N``), 400 for anything else
    that is wrong.  Messages never show a file's content or an absolute path.
    ``spec`` may also be an :class:`~kahuna_arena.entrants.EntrantSpec` parsed already (the analysis board's).
    ``named``: the operator's entrants (:func:`operator_entrant`), by name; ``NAME`` and ``NAME@mcts:N``
    build them as the operator wrote them, ``py:`` agents and files outside ``agents_dir`` included.
    """
    if isinstance(spec, str) and spec.strip():
        spec = spec.strip()
        if len(spec) > MAX_SPEC_LENGTH:
            raise WebError(f"'opponent' is too long ({len(spec)} characters, at most {MAX_SPEC_LENGTH})")
        operator = _named(spec, named or {}, max_guided_simulations)
        if operator is not None:
            spec, agents_dir = operator, ANYWHERE
    elif not isinstance(spec, EntrantSpec):  # a spec parsed already (the analysis board's) is built as it is
        raise WebError(f"'opponent' must be a non-empty string, got {short(spec)}")
    try:
        return resolve_entrant(
            spec,
            seed=seed,
            agents_dir=agents_dir,
            max_simulations=max_simulations,
            max_guided_simulations=max_guided_simulations,
        )
    except EntrantRefused as error:
        hint = " (start kahuna-serve with --agents DIR to allow a folder)" if agents_dir is None else ""
        raise WebError(first_line(error) + hint, 403) from None
    except FileNotFoundError as error:
        raise WebError(first_line(error), 404) from None
    except ImportError as error:
        raise WebError(
            f"cannot load agent file {short(str(spec))}: {first_line(error)} (agent files need torch)"
        ) from None
    except ValueError as error:
        message = first_line(error)
        if "simulation budget too large" in message:
            message += " on this server (kahuna-serve --max-simulations / --max-guided-simulations)"
        raise WebError(message) from None
    except OSError as error:
        raise WebError(f"cannot read agent file {short(str(spec))}: {error.strerror or 'unreadable'}") from None


def best_move_so_far(agent: Agent, game: KahunaGame, rng: np.random.Generator, found: Any = None) -> int:
    """The move of a search stopped early: ``found``, else its prior's best, else the first legal move.

    ``found``: the best move of the simulations done, as the search reports
    it when stopped (the ``result.move`` of its :class:`SearchCancelled`: the
    most visited root move, or the best finalist of a halving root); counted
    only when legal here.  The prior is the agent's evaluator's (a network)
    or the baseline's cheap one, for ``game.current_player``'s view only (a
    determinization drawn with ``rng``).
    """
    legal = game.legal_actions()
    if isinstance(found, int) and found in legal:
        return found
    view = game.determinize(game.current_player, rng)
    evaluator = getattr(agent, "evaluator", None)
    try:
        if evaluator is not None:
            (priors,), _ = evaluator.evaluate([view], [legal])
        else:
            priors = action_priors(view, legal)
    except Exception:  # a move must be played whatever the prior does
        return legal[0]
    return legal[int(np.argmax(priors))]
