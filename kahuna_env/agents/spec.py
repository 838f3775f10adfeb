"""Agent specs: the strings every tool accepts for "who plays", read once into an :class:`EntrantSpec`.

==========================  ==========================================================
form                        names
==========================  ==========================================================
``random``, ``greedy``      a baseline (:func:`kahuna_env.agents.make_agent` builds it)
``mcts``, ``mcts:N``        the rollout search, N simulations (default 200)
``NAME``                    a named network agent (the shipped ``champion``)
``PATH``                    an agent file or training checkpoint
``NAME@mcts[:N]``,          the search guided by that network, N simulations
``PATH@mcts[:N]``           (default 200)
``py:MODULE:ATTR``          a Python agent: ``ATTR`` of the importable module
``py:FILE.py:ATTR``         ``MODULE`` or of the file ``FILE.py`` (the agent protocol
                            of :mod:`kahuna_env.agents.external`); ``@mcts[:N]``
                            after it guides the search with its ``value``
==========================  ==========================================================

An agent file is any file: its kind (a Kahuna agent file or checkpoint, a
TorchScript or ONNX export, a Stable-Baselines3 ``.zip``) is read from its
content when it is built (:func:`kahuna_env.agents.external.agent_file_kind`).
A ``NAME`` is a shipped agent or one a package declares in the
``kahuna_env.opponents`` entry-point group (:data:`kahuna_env.agents.external.PLUGINS`).

:meth:`EntrantSpec.parse` is the one reader of that grammar, for the
environment (``gymnasium.make("Kahuna-v0", opponent=...)``), the arena's
command-line tools, training's configs and tools, and ``kahuna-serve`` alike;
``str()`` writes a spec back in its canonical form (``mcts`` is ``mcts:200``),
which parses to the same spec.  Parsing builds nothing, reads no file and
imports no torch: the baselines are built by :func:`~kahuna_env.agents.make_agent`,
the network kinds where torch is (:func:`kahuna_arena.entrants.resolve_entrant`, or the
``kahuna_env.opponents`` entry points of :mod:`kahuna_env.gym_env`).

``kahuna_env`` knows no network by name: a caller passes the names it may
build (``named``): the arena the registry :data:`kahuna_policy.registry.SHIPPED_AGENTS`,
the environment its entry points.  It also passes the folder agent files may
come from: :data:`ANYWHERE` for the command-line tools (any path the user's
shell can name), a folder for the web (a file counts only if it lies inside
that folder once symbolic links and ``..`` are resolved; nothing outside it is
even looked at), or ``None`` (no agent files at all); and the largest
simulation budget accepted.

A budget is written in one way only: ``mcts:05`` is refused (write
``mcts:5``), so one agent never has two names in a results store.  ``py:``
names code to run: it is read only where any path may be named
(:data:`ANYWHERE`, the command-line tools); the web server refuses it unless
its operator named the entrant.

Every bad spec raises one exception with a one-line message that never shows
a file's content: ``ValueError`` (:class:`UnknownEntrant` for a name that is
none of the forms, :class:`BadBudget` for a budget that is not a positive
integer); :class:`EntrantRefused` for a file outside the allowed folder;
``FileNotFoundError`` for a missing file of the folder.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from pathlib import Path
from typing import Final

from kahuna_env.agents.search import DEFAULT_SIMULATIONS

BASELINE_KINDS: tuple[str, ...] = ("random", "greedy", "mcts")
"""The baselines by name (:data:`kahuna_env.agents.BASELINES` builds each); only ``mcts`` takes a budget."""
BASELINE_NAMES: tuple[str, ...] = (*BASELINE_KINDS, "mcts:N")
"""The baseline forms, for help texts and error messages."""
PYTHON_PREFIX = "py:"
"""``py:MODULE:ATTR`` / ``py:FILE.py:ATTR``: a Python agent (:mod:`kahuna_env.agents.external`)."""
SEARCH_SUFFIX = "@mcts"
"""``SOURCE@mcts`` / ``SOURCE@mcts:N``: the search guided by the network ``SOURCE``."""


def search_spec(source: str, simulations: int) -> str:
    """``SOURCE@mcts:N``: the one writer of a guided search's spec (and of the keys built like it)."""
    return f"{source}@{budget_spec(simulations)}"


def budget_spec(simulations: int, baseline: str = "mcts") -> str:
    """``mcts:N``: the one writer of a budgeted search's name (the baseline's, and after a guided search's ``@``)."""
    return f"{baseline}:{simulations}"


MAX_SIMULATIONS = 10**6
"""Largest simulation budget any tool accepts (about an hour per decision for the guided search here)."""


class _Anywhere:
    """The type of :data:`ANYWHERE`."""

    def __repr__(self) -> str:
        return "ANYWHERE"


ANYWHERE: Final = _Anywhere()
"""``agents_dir`` of the command-line tools: an agent file may be any path the user's shell can name."""
AgentsDir = Path | None | _Anywhere
"""Where agent files may come from: a folder, ``None`` (nowhere) or :data:`ANYWHERE`."""


class EntrantRefused(ValueError):
    """A spec naming an agent file outside the allowed folder (``kahuna-serve`` answers 403)."""


class UnknownEntrant(ValueError):
    """A spec that is none of the forms: not a baseline, a named agent, a file or a search."""


class BadBudget(ValueError):
    """A simulation budget that is not a positive integer written in ASCII digits (``budget``: as written)."""

    def __init__(self, message: str, budget: str) -> None:
        super().__init__(message)
        self.budget = budget


def entrant_forms(named: Collection[str]) -> str:
    """What a spec may be, in one phrase, for the help texts and messages (``named``: the named agents)."""
    return (
        f"a baseline ({', '.join(BASELINE_NAMES)}; N = simulations), the path of an agent file (a checkpoint, "
        f"a TorchScript / ONNX export, an SB3 .zip), a named agent ({', '.join(named) or 'none installed'}), "
        f"a Python agent (py:MODULE:ATTR or py:FILE.py:ATTR), or one of those followed by @mcts or @mcts:N "
        f"(the search guided by that agent, N simulations, default {DEFAULT_SIMULATIONS})"
    )


@dataclasses.dataclass(frozen=True)
class EntrantSpec:
    """What a spec names, checked, before anything is built or loaded (see the module docstring).

    Attributes:
        kind: ``"baseline"``, ``"named"`` (a network such as ``champion``), ``"file"`` or ``"python"``.
        source: the baseline (``random``, ``greedy``, ``mcts``), the agent's name, the path of the
            file to load (inside the allowed folder, links resolved, when a folder was given), or for a
            Python agent ``MODULE:ATTR`` / ``FILE.py:ATTR``.
        written: how messages and ``str()`` name the agent: its name, the file as the spec writes it,
            or for a file of a folder its path from the folder as the user named it (never absolute).
        simulations: the search budget: ``mcts``'s for the baseline search, the guided search's for
            ``SOURCE@mcts[:N]``; ``None`` for an agent without search.
    """

    kind: str
    source: str
    written: str
    simulations: int | None

    @classmethod
    def parse(
        cls,
        text: object,
        agents_dir: AgentsDir = ANYWHERE,
        max_simulations: int | None = MAX_SIMULATIONS,
        max_guided_simulations: int | None = None,
        named: Collection[str] = (),
        python: bool | None = None,
    ) -> EntrantSpec:
        """Check a spec and say what it names, without building it (no torch, no file read, no import).

        Args:
            text: the spec.
            agents_dir: where agent files may come from: :data:`ANYWHERE`, a folder (a file
                counts only inside it, links and ``..`` resolved, and nothing outside it is
                looked at), or ``None``.
            max_simulations: the largest search budget accepted (``mcts`` alone is
                :data:`~kahuna_env.agents.search.DEFAULT_SIMULATIONS`); ``None``: no cap.
            max_guided_simulations: the largest budget of a network-guided search
                ``SOURCE@mcts:N`` (a simulation costs a forward pass); ``None``: ``max_simulations``.
            named: the named network agents the caller can build (``champion``, ...).
            python: whether ``py:`` agents (code to run) are accepted; ``None`` (the default): only with
                :data:`ANYWHERE`, where the user names what runs (the command-line tools), never where files
                must come from a folder (the web server, whose operator names its Python agents itself).

        Raises:
            EntrantRefused: an agent file outside ``agents_dir`` (or any file when it is ``None``).
            FileNotFoundError: a file inside ``agents_dir`` that is not there.
            ValueError: anything else that is wrong (one line: a bad or too large budget, a bad
                search suffix, an unknown name (:class:`UnknownEntrant`), a control character).
        """
        if not isinstance(text, str) or not text:
            raise ValueError(f"an entrant must be a non-empty string, got {text!r:.60}")
        if any(ord(char) < 32 or ord(char) == 127 for char in text):
            raise ValueError(f"an entrant may not contain control characters (NUL, newline, ...), got {quoted(text)}")
        baseline = parse_baseline(text, max_simulations)
        if baseline is not None:
            return baseline
        if text.startswith(PYTHON_PREFIX):
            if not (isinstance(agents_dir, _Anywhere) if python is None else python):
                raise EntrantRefused(f"Python agents (py:...) are not allowed here: {quoted(text)}")
            guided_cap = max_simulations if max_guided_simulations is None else max_guided_simulations
            return _python(text, guided_cap, agents_dir)
        if text in named:
            return cls("named", text, text, None)
        if "@" in text and not _names_a_file(text, agents_dir):  # a file may have '@' in its name
            guided_cap = max_simulations if max_guided_simulations is None else max_guided_simulations
            source, simulations = _search(text, guided_cap, named)
            if source in named:
                return cls("named", source, source, simulations)
            if isinstance(agents_dir, _Anywhere) and not (looks_like_path(source) or _exists(Path(source))):
                raise _unknown(text, named)
            return _file(text, source, simulations, agents_dir)
        if isinstance(agents_dir, _Anywhere):
            if not (looks_like_path(text) or _exists(Path(text))):
                raise _unknown(text, named)
        elif not looks_like_path(text) and not _names_a_file(text, agents_dir):
            raise _unknown(text, named)  # a bare name that is no file of the folder: nothing outside it is looked at
        return _file(text, text, None, agents_dir)

    def __str__(self) -> str:
        """The spec in its canonical form (a budget always written): it parses back to this spec."""
        if self.kind == "baseline":
            return self.source if self.simulations is None else budget_spec(self.simulations, self.source)
        return self.written if self.simulations is None else search_spec(self.written, self.simulations)

    @property
    def network(self) -> bool:
        """Whether the agent is built from outside this package: a named agent, a file or a Python agent."""
        return self.kind != "baseline"

    @property
    def agent(self) -> EntrantSpec:
        """The agent itself, without a guided search (``x.pt@mcts:50`` -> ``x.pt``)."""
        return dataclasses.replace(self, simulations=None) if self.kind != "baseline" else self

    def with_search(self, simulations: int) -> EntrantSpec:
        """The search with ``simulations`` guided by this network (``SOURCE@mcts:N``); budget checked by the caller."""
        if not self.network:
            raise ValueError(f"only a network guides a search, got {str(self)!r}")
        return dataclasses.replace(self, simulations=simulations)


def parse_baseline(text: str, max_simulations: int | None = MAX_SIMULATIONS) -> EntrantSpec | None:
    """The baseline ``text`` names (``random``, ``greedy``, ``mcts``, ``mcts:N``), or ``None`` for another form.

    A baseline's name with a bad suffix (``greedy:3``) or a bad or too large
    budget (``mcts:0``, ``mcts:abc``) is a one-line ``ValueError``.
    """
    base, colon, budget = text.partition(":")
    if base not in BASELINE_KINDS:
        return None
    if colon and base != "mcts":
        raise UnknownEntrant(f"unknown agent {quoted(text)}; baseline agents are {', '.join(BASELINE_NAMES)}")
    if base != "mcts":
        return EntrantSpec("baseline", base, base, None)
    simulations = _budget(budget, text, max_simulations, "mcts:N") if colon else _default_budget(text, max_simulations)
    return EntrantSpec("baseline", base, base, simulations)


def split_search(text: str, named: Collection[str] = ()) -> tuple[str, int | None]:
    """``(source, simulations)`` of a guided-search spec ``SOURCE@mcts[:N]``; ``(text, None)`` for any other.

    A spec that is an existing file is a file, whatever it contains.  Raises a
    one-line ``ValueError`` for a bad search (``x.pt@foo``, ``x.pt@mcts:0``,
    ``x.pt@mcts:abc``, nothing before the ``@``) or a budget above :data:`MAX_SIMULATIONS`.
    """
    if "@" not in text or _exists(Path(text), file=True):
        return text, None
    return _search(text, MAX_SIMULATIONS, named)


def looks_like_path(text: str) -> bool:
    """Whether ``text`` is written as a path (a separator or a suffix), as opposed to a bare name."""
    return "/" in text or "\\" in text or Path(text).suffix != ""


def folder_label(folder: Path) -> str:
    """A folder as it may be shown to a client: as the user named it when relative, else only its name."""
    return folder.as_posix() if not folder.is_absolute() else (folder.name or "/")


def quoted(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to ``limit`` characters (ending ``...'``): a spec as messages show it."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def _budget(text: str, spec: str, max_simulations: int | None, form: str) -> int:
    """The simulation budget ``text`` of ``spec``: ASCII digits, at least 1, at most ``max_simulations``.

    Written without leading zeros: ``mcts:05`` and ``mcts:5`` would be one agent under two names.
    """
    digits = text.lstrip("0")
    if not (text.isascii() and text.isdigit()) or not digits:  # int() would also take digits such as '²'
        raise BadBudget(f"bad simulation budget in {quoted(spec)}: expected {form} with N a positive integer", text)
    if digits != text:
        raise BadBudget(f"bad simulation budget in {quoted(spec)}: write N without leading zeros ({digits})", text)
    budget = int(digits) if len(digits) <= 20 else None  # thousands of digits are not worth converting
    if budget is None or (max_simulations is not None and budget > max_simulations):
        shown = f"{budget} simulations" if budget is not None else f"a {len(digits)}-digit number of simulations"
        at_most = f"at most {max_simulations}" if max_simulations is not None else "at most 20 digits"
        raise ValueError(f"simulation budget too large in {quoted(spec)}: {shown}, {at_most}")
    return budget


def _default_budget(spec: str, max_simulations: int | None) -> int:
    """:data:`DEFAULT_SIMULATIONS`, the budget of ``mcts`` / ``SOURCE@mcts``, if within ``max_simulations``."""
    if max_simulations is not None and DEFAULT_SIMULATIONS > max_simulations:
        raise ValueError(
            f"simulation budget too large in {quoted(spec)}: {DEFAULT_SIMULATIONS} simulations (the default), "
            f"at most {max_simulations}"
        )
    return DEFAULT_SIMULATIONS


def _search(spec: str, max_simulations: int | None, named: Collection[str]) -> tuple[str, int]:
    """``(source, simulations)`` of ``SOURCE@mcts[:N]``; one-line ``ValueError`` for a bad search or budget."""
    source, _, search = spec.rpartition("@")
    method, colon, budget = search.partition(":")
    if method != SEARCH_SUFFIX[1:]:
        raise ValueError(f"bad search in {quoted(spec)}: expected SOURCE@mcts or SOURCE@mcts:N, got @{search:.20}")
    if colon:
        simulations = _budget(budget, spec, max_simulations, "SOURCE@mcts:N")
    else:
        simulations = _default_budget(spec, max_simulations)
    if not source:
        names = " / ".join(named) or "a named agent"
        raise ValueError(f"bad entrant {quoted(spec)}: give a policy file or {names} before @mcts")
    return source, simulations


_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
"""A dotted Python name: a module (``my_agents.kahuna``) or an attribute path (``Agent.build``)."""


def _python(spec: str, max_simulations: int | None, agents_dir: AgentsDir) -> EntrantSpec:
    """The spec of a Python agent ``py:MODULE:ATTR`` / ``py:FILE.py:ATTR`` (optionally ``@mcts[:N]``)."""
    text, simulations = spec, None
    _, _, after = spec.rpartition("@")
    if "@" in spec and after.partition(":")[0] == SEARCH_SUFFIX[1:]:
        text, simulations = _search(spec, max_simulations, ())
    target, colon, attribute = text[len(PYTHON_PREFIX) :].rpartition(":")
    if not colon or not target or not _MODULE.match(attribute):
        raise ValueError(
            f"bad Python agent {quoted(spec)}: expected py:MODULE:ATTR or py:FILE.py:ATTR (ATTR a Python name)"
        )
    if target.endswith(".py"):
        if isinstance(agents_dir, _Anywhere):
            if not _exists(Path(target), file=True):
                raise FileNotFoundError(f"Python agent file not found: {quoted(target)}")
            return EntrantSpec("python", f"{target}:{attribute}", text, simulations)
        path = _locate(target, spec, agents_dir)
        return EntrantSpec("python", f"{path}:{attribute}", text, simulations)
    if not _MODULE.match(target):
        raise ValueError(f"bad Python agent {quoted(spec)}: {quoted(target)} is neither a module name nor a .py file")
    return EntrantSpec("python", f"{target}:{attribute}", text, simulations)


def _exists(path: Path, file: bool = False) -> bool:
    """``path.is_file()`` / ``path.exists()``, false for a name the system refuses (too long, ...)."""
    try:
        return path.is_file() if file else path.exists()
    except (OSError, ValueError):
        return False


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a name the system refuses
        return None


def _inside_candidates(source: str, folder: Path) -> list[Path]:
    """The places ``source`` may name inside ``folder`` (links and ``..`` resolved); never looks elsewhere.

    A relative path is taken in the folder and then from the working
    directory (so ``runs/x/final_agent.pt`` works with ``--agents runs``).
    """
    root = _resolved(folder)
    raw = Path(source)
    candidates = [raw] if raw.is_absolute() else [folder / raw, raw]
    inside = []
    for candidate in candidates:
        path = _resolved(candidate)
        if root is not None and path is not None and path.is_relative_to(root):
            inside.append(path)
    return inside


def _file(spec: str, source: str, simulations: int | None, agents_dir: AgentsDir) -> EntrantSpec:
    """The spec of the agent file ``source`` names; raises unless it lies in the allowed folder."""
    if isinstance(agents_dir, _Anywhere):
        return EntrantSpec("file", source, source, simulations)
    path = _locate(source, spec, agents_dir)
    root = _resolved(agents_dir)
    shown = Path(folder_label(agents_dir)) / Path(path).relative_to(root) if root is not None else Path(source)
    return EntrantSpec("file", path, shown.as_posix(), simulations)


def _locate(source: str, spec: str, agents_dir: Path | None) -> str:
    """The file a spec names inside ``agents_dir``, links resolved; raises unless it is there."""
    if agents_dir is None:
        raise EntrantRefused(f"agent files are not allowed: {quoted(spec)}")
    inside = _inside_candidates(source, agents_dir)
    for path in inside:
        if _exists(path, file=True):
            return str(path)
    if not inside:
        raise EntrantRefused(f"{quoted(source)} is outside the allowed agents folder {folder_label(agents_dir)}")
    raise FileNotFoundError(f"agent file not found in {folder_label(agents_dir)}: {quoted(source)}")


def _names_a_file(text: str, agents_dir: AgentsDir) -> bool:
    """Whether ``text`` is an existing file where agent files may come from (looking nowhere else)."""
    if isinstance(agents_dir, _Anywhere):
        return _exists(Path(text), file=True)
    if agents_dir is None:
        return False
    return any(_exists(path, file=True) for path in _inside_candidates(text, agents_dir))


def _unknown(spec: str, named: Collection[str]) -> UnknownEntrant:
    return UnknownEntrant(f"unknown entrant {quoted(spec)}: expected {entrant_forms(named)}")
