"""Entrants: the strings every arena tool accepts for "who plays", and the agents they name.

An entrant is a baseline name (``random``, ``greedy``, ``mcts``, ``mcts:N``
with a simulation budget N; built by :func:`kahuna_env.agents.make_agent`),
the path of a policy file / training checkpoint or the named agent
``champion`` (built by :func:`policy.agent.load_agent`), or one of those
two followed by ``@mcts`` or ``@mcts:N``: the ``mcts`` search guided by that
network with N simulations (default 200; :func:`policy.search.load_guided_agent`).
Only the network kinds import :mod:`policy`'s network modules and torch, and only when they are built.

:func:`parse_entrant` is the one place an entrant string is read, for the
command-line tools and for ``kahuna-serve`` alike.  It takes the folder agent
files may come from: :data:`ANYWHERE` for the command-line tools (any path
the user's shell can name), a folder for the web (a file counts only if it
lies inside that folder once symbolic links and ``..`` are resolved; nothing
outside it is even looked at), or ``None`` (no agent files at all).  It also
takes the largest simulation budget accepted (:data:`MAX_SIMULATIONS` for the
command-line tools, a smaller one for the web).

Every bad entrant raises one exception with a one-line message that never
shows a file's content (``ValueError``; :class:`EntrantRefused` for a file
outside the allowed folder; ``FileNotFoundError`` for a missing file) that the
command line tools print as ``PROG: error: MESSAGE``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Final

from kahuna_env.agents import BASELINE_NAMES, BASELINES, Agent, make_agent
from kahuna_env.agents.mcts import DEFAULT_SIMULATIONS
from kahuna_env.cli import first_line, missing_extra
from policy.registry import SHIPPED_AGENTS

NAMED_AGENTS = tuple(SHIPPED_AGENTS)
"""Named network agents :func:`policy.agent.load_agent` knows: the registry :data:`policy.registry.SHIPPED_AGENTS`."""
SEARCH_SUFFIX = "@mcts"
"""``SOURCE@mcts`` / ``SOURCE@mcts:N``: the search guided by the network ``SOURCE``."""
MAX_SIMULATIONS = 10**6
"""Largest simulation budget any tool accepts (about an hour per decision for the guided search here)."""
ENTRANT_FORMS = (
    f"a baseline ({', '.join(BASELINE_NAMES)}; N = simulations), the path of a checkpoint / policy file, "
    f"a shipped agent ({', '.join(NAMED_AGENTS)}), or one of those two followed by @mcts or @mcts:N "
    f"(the search guided by that network, N simulations, default {DEFAULT_SIMULATIONS})"
)
"""What an entrant string may be, in one phrase: the help texts and messages of every tool that takes one."""


class _Anywhere:
    """The type of :data:`ANYWHERE`."""

    def __repr__(self) -> str:
        return "ANYWHERE"


ANYWHERE: Final = _Anywhere()
"""``agents_dir`` of the command-line tools: an agent file may be any path the user's shell can name."""
AgentsDir = Path | None | _Anywhere
"""Where agent files may come from: a folder, ``None`` (nowhere) or :data:`ANYWHERE`."""


class EntrantRefused(ValueError):
    """An entrant naming an agent file outside the allowed folder (``kahuna-serve`` answers 403)."""


@dataclasses.dataclass(frozen=True)
class EntrantSpec:
    """What an entrant string names, checked, before anything is built or loaded.

    Attributes:
        spec: the entrant string as given.
        kind: ``"baseline"``, ``"named"`` (a shipped network such as ``champion``) or ``"file"``.
        source: the baseline spec, the agent's name, or the path of the file to load (inside the
            allowed folder, links resolved, when a folder was given).
        written: how messages name the agent: its name, the file as the entrant string writes it, or
            for a file of a folder its path from the folder as the user named it (never absolute).
        simulations: the search budget: ``mcts``'s for a baseline search, the guided search's
            for ``SOURCE@mcts[:N]``; ``None`` for an agent without search.
    """

    spec: str
    kind: str
    source: str
    written: str
    simulations: int | None


def folder_label(folder: Path) -> str:
    """A folder as it may be shown to a client: as the user named it when relative, else only its name."""
    return folder.as_posix() if not folder.is_absolute() else (folder.name or "/")


def _short(text: str, limit: int = 60) -> str:
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"


def _budget(text: str, spec: str, max_simulations: int, form: str) -> int:
    """The simulation budget ``text`` of ``spec``: ASCII digits, at least 1, at most ``max_simulations``."""
    digits = text.lstrip("0")
    if not (text.isascii() and text.isdigit()) or not digits:  # int() would also take digits such as '²'
        raise ValueError(f"bad simulation budget in {_short(spec)}: expected {form} with N a positive integer")
    budget = int(digits) if len(digits) <= 20 else None  # thousands of digits are not worth converting
    if budget is None or budget > max_simulations:
        shown = f"{budget} simulations" if budget is not None else f"a {len(digits)}-digit number of simulations"
        raise ValueError(f"simulation budget too large in {_short(spec)}: {shown}, at most {max_simulations}")
    return budget


def _default_budget(spec: str, max_simulations: int) -> int:
    """:data:`DEFAULT_SIMULATIONS`, the budget of ``mcts`` / ``SOURCE@mcts``, if within ``max_simulations``."""
    if DEFAULT_SIMULATIONS > max_simulations:
        raise ValueError(
            f"simulation budget too large in {_short(spec)}: {DEFAULT_SIMULATIONS} simulations (the default), "
            f"at most {max_simulations}"
        )
    return DEFAULT_SIMULATIONS


def _search(spec: str, max_simulations: int) -> tuple[str, int]:
    """``(source, simulations)`` of ``SOURCE@mcts[:N]``; one-line ``ValueError`` for a bad search or budget."""
    source, _, search = spec.rpartition("@")
    method, colon, budget = search.partition(":")
    if method != SEARCH_SUFFIX[1:]:
        raise ValueError(f"bad search in {_short(spec)}: expected SOURCE@mcts or SOURCE@mcts:N, got @{search:.20}")
    if colon:
        simulations = _budget(budget, spec, max_simulations, "SOURCE@mcts:N")
    else:
        simulations = _default_budget(spec, max_simulations)
    if not source:
        raise ValueError(f"bad entrant {_short(spec)}: give a policy file or {' / '.join(NAMED_AGENTS)} before @mcts")
    return source, simulations


def _looks_like_path(text: str) -> bool:
    """Whether ``text`` is written as a path (a separator or a suffix), as opposed to a bare name."""
    return "/" in text or "\\" in text or Path(text).suffix != ""


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
    """The entrant of the agent file ``source`` names; raises unless it lies in the allowed folder."""
    if isinstance(agents_dir, _Anywhere):
        return EntrantSpec(spec, "file", source, source, simulations)
    path = _locate(source, spec, agents_dir)
    root = _resolved(agents_dir)
    shown = Path(folder_label(agents_dir)) / Path(path).relative_to(root) if root is not None else Path(source)
    return EntrantSpec(spec, "file", path, shown.as_posix(), simulations)


def _locate(source: str, spec: str, agents_dir: Path | None) -> str:
    """The file an entrant names inside ``agents_dir``, links resolved; raises unless it is there."""
    if agents_dir is None:
        raise EntrantRefused(f"agent files are not allowed: {_short(spec)}")
    inside = _inside_candidates(source, agents_dir)
    for path in inside:
        if _exists(path, file=True):
            return str(path)
    if not inside:
        raise EntrantRefused(f"{_short(source)} is outside the allowed agents folder {folder_label(agents_dir)}")
    raise FileNotFoundError(f"agent file not found in {folder_label(agents_dir)}: {_short(source)}")


def _names_a_file(text: str, agents_dir: AgentsDir) -> bool:
    """Whether ``text`` is an existing file where agent files may come from (looking nowhere else)."""
    if isinstance(agents_dir, _Anywhere):
        return _exists(Path(text), file=True)
    if agents_dir is None:
        return False
    return any(_exists(path, file=True) for path in _inside_candidates(text, agents_dir))


def _unknown(spec: str) -> ValueError:
    return ValueError(f"unknown entrant {_short(spec)}: expected {ENTRANT_FORMS}")


def parse_entrant(
    spec: object,
    agents_dir: AgentsDir = ANYWHERE,
    max_simulations: int = MAX_SIMULATIONS,
    max_guided_simulations: int | None = None,
) -> EntrantSpec:
    """Check an entrant string and say what it names, without building it (no torch, no file read).

    Args:
        spec: the entrant string.
        agents_dir: where agent files may come from: :data:`ANYWHERE` (the
            command-line tools), a folder (a file counts only inside it, links
            and ``..`` resolved, and nothing outside it is looked at), or ``None``.
        max_simulations: the largest search budget accepted (``mcts`` alone is
            :data:`~kahuna_env.agents.mcts.DEFAULT_SIMULATIONS`).
        max_guided_simulations: the largest budget of a network-guided search
            ``SOURCE@mcts:N`` (a simulation costs a forward pass); ``None``: ``max_simulations``.

    Raises:
        EntrantRefused: an agent file outside ``agents_dir`` (or any file when it is ``None``).
        FileNotFoundError: a file inside ``agents_dir`` that is not there.
        ValueError: anything else that is wrong (one line: a bad or too large budget, a bad
            search suffix, an unknown name, a control character).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an entrant must be a non-empty string, got {spec!r:.60}")
    if any(ord(char) < 32 or ord(char) == 127 for char in spec):
        raise ValueError(f"an entrant may not contain control characters (NUL, newline, ...), got {_short(spec)}")
    base, colon, budget = spec.partition(":")
    if base in BASELINES:
        simulations = None
        if base == "mcts":
            simulations = (
                _budget(budget, spec, max_simulations, "mcts:N") if colon else _default_budget(spec, max_simulations)
            )
        return EntrantSpec(spec, "baseline", spec, spec, simulations)
    if spec in NAMED_AGENTS:
        return EntrantSpec(spec, "named", spec, spec, None)
    if "@" in spec and not _names_a_file(spec, agents_dir):  # a file may have '@' in its name
        guided_cap = max_simulations if max_guided_simulations is None else max_guided_simulations
        source, simulations = _search(spec, guided_cap)
        if source in NAMED_AGENTS:
            return EntrantSpec(spec, "named", source, source, simulations)
        if isinstance(agents_dir, _Anywhere) and not (_looks_like_path(source) or _exists(Path(source))):
            raise _unknown(spec)
        return _file(spec, source, simulations, agents_dir)
    if isinstance(agents_dir, _Anywhere):
        if not (_looks_like_path(spec) or _exists(Path(spec))):
            raise _unknown(spec)
    elif not _looks_like_path(spec) and not _names_a_file(spec, agents_dir):
        raise _unknown(spec)  # a bare name that is no file of the folder: nothing outside it is looked at
    return _file(spec, spec, None, agents_dir)


def split_search(spec: str) -> tuple[str, int | None]:
    """``(source, simulations)`` of a guided-search entrant ``SOURCE@mcts[:N]``; ``(spec, None)`` for any other.

    A spec that is an existing file is a file, whatever it contains.  Raises a
    one-line ``ValueError`` for a bad search (``x.pt@foo``, ``x.pt@mcts:0``,
    ``x.pt@mcts:abc``, nothing before the ``@``) or a budget above :data:`MAX_SIMULATIONS`.
    """
    if "@" not in spec or _exists(Path(spec), file=True):
        return spec, None
    return _search(spec, MAX_SIMULATIONS)


def is_checkpoint_spec(spec: str) -> bool:
    """Whether an entrant needs a network (and torch), not a baseline.

    A file (a path separator or a suffix, or it exists), a named agent
    (``champion``), or either with ``@mcts[:N]``.
    """
    if spec in NAMED_AGENTS or spec.rpartition("@")[0] in NAMED_AGENTS:
        return True
    return _looks_like_path(spec) or _exists(Path(spec))


def _build(entrant: EntrantSpec, seed: int | None, sampled: bool) -> Agent:
    if entrant.kind == "baseline":
        try:
            return make_agent(entrant.source, seed=seed)
        except (TypeError, ValueError) as error:
            raise ValueError(first_line(error)) from None
    try:  # a network entrant needs torch: without it, one line naming the extra (a ValueError, as bad input)
        from policy.agent import load_agent
        from policy.search import load_guided_agent
    except ImportError as error:
        raise ValueError(f"{entrant.source}: an agent file {missing_extra('train', error)}") from None
    if entrant.simulations is not None:
        return load_guided_agent(entrant.source, simulations=entrant.simulations, seed=seed)
    return load_agent(entrant.source, deterministic=not sampled, seed=seed)


def resolve_entrant(
    spec: str,
    seed: int | None = None,
    sampled: bool = False,
    agents_dir: AgentsDir = ANYWHERE,
    max_simulations: int = MAX_SIMULATIONS,
    max_guided_simulations: int | None = None,
) -> Agent:
    """Build the agent an entrant string names (checked by :func:`parse_entrant` first).

    Baselines: ``random``, ``greedy``, ``mcts``, ``mcts:N``.  Anything that
    looks like a path, and ``champion``, is loaded with
    :func:`policy.agent.load_agent` (``sampled=True`` makes the policy
    sample its moves instead of playing the most likely one).  ``SOURCE@mcts``
    and ``SOURCE@mcts:N`` build the search guided by that network
    (:func:`policy.search.load_guided_agent`; it plays its most visited
    action, ``sampled`` does not apply).  ``agents_dir``, ``max_simulations``
    and ``max_guided_simulations`` are :func:`parse_entrant`'s.  Raises
    :class:`EntrantRefused` for a file outside ``agents_dir``,
    ``FileNotFoundError`` for a missing checkpoint and ``ValueError`` (one
    line) for a corrupt one, a bad budget or search, or an unknown name (the
    message lists the accepted forms).  A file found inside a folder is
    named in messages as the entrant wrote it, never by its absolute path.
    """
    entrant = parse_entrant(spec, agents_dir, max_simulations, max_guided_simulations)
    try:
        return _build(entrant, seed, sampled)
    except (FileNotFoundError, ValueError) as error:
        if entrant.kind != "file" or isinstance(agents_dir, _Anywhere):
            raise
        message = first_line(error).replace(entrant.source, entrant.written)
        raise (FileNotFoundError if isinstance(error, FileNotFoundError) else ValueError)(message) from None
    except OSError as error:  # a name too long for the system, a file that cannot be read
        reason = error.strerror or first_line(error)
        raise ValueError(f"cannot read agent file {_short(entrant.written)}: {reason}") from None


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
