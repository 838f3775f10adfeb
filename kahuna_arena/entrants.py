"""Entrants: the strings every arena tool accepts for "who plays", and the agents they name.

An entrant is an agent spec (:mod:`kahuna_env.agents.spec`, the one grammar
and its one reader, :class:`EntrantSpec`): a baseline name (``random``,
``greedy``, ``mcts``, ``mcts:N`` with a simulation budget N; built by
:func:`kahuna_env.agents.make_agent`), the path of a policy file / training
checkpoint or the named agent ``champion`` (built by
:func:`kahuna_policy.agent.load_agent`), or one of those two followed by ``@mcts`` or
``@mcts:N``: the ``mcts`` search guided by that network with N simulations
(default 200; :func:`kahuna_policy.search.load_guided_agent`).  Only the network kinds
import :mod:`policy`'s network modules and torch, and only when they are built.

:func:`parse_entrant` reads an entrant for the command-line tools and for
``kahuna-serve`` alike: :meth:`EntrantSpec.parse` with the shipped agents
(:data:`kahuna_policy.registry.SHIPPED_AGENTS`) as the named ones.  It takes the
folder agent files may come from: :data:`ANYWHERE` for the command-line tools
(any path the user's shell can name), a folder for the web (a file counts only
if it lies inside that folder once symbolic links and ``..`` are resolved;
nothing outside it is even looked at), or ``None`` (no agent files at all).  It
also takes the largest simulation budget accepted (:data:`MAX_SIMULATIONS` for
the command-line tools, a smaller one for the web).  :func:`resolve_entrant`
builds what a string or a parsed spec names.

Every bad entrant raises one exception with a one-line message that never
shows a file's content (``ValueError``; :class:`EntrantRefused` for a file
outside the allowed folder; ``FileNotFoundError`` for a missing file) that the
command line tools print as ``PROG: error: MESSAGE``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kahuna_env.agents import Agent, make_agent
from kahuna_env.agents import spec as _spec
from kahuna_env.agents.external import (
    FILE_KINDS,
    ArrayAgent,
    PythonAgent,
    agent_file_kind,
    guided_agent,
    load_onnx,
    load_plugin,
    load_python,
    plugin_names,
)
from kahuna_env.agents.spec import (
    ANYWHERE,
    MAX_SIMULATIONS,
    SEARCH_SUFFIX,
    AgentsDir,
    EntrantRefused,
    EntrantSpec,
    UnknownEntrant,
    entrant_forms,
    folder_label,
    looks_like_path,
    quoted,
)
from kahuna_env.cli import first_line, missing_extra
from kahuna_policy.registry import SHIPPED_AGENTS

NAMED_AGENTS = tuple(dict.fromkeys([*SHIPPED_AGENTS, *plugin_names()]))
"""Named agents: the shipped ones (:data:`kahuna_policy.registry.SHIPPED_AGENTS`,
:func:`kahuna_policy.agent.load_agent` builds them) and those packages declare in the
:data:`kahuna_env.agents.external.PLUGINS` entry-point group."""
ENTRANT_FORMS = entrant_forms(NAMED_AGENTS)
"""What an entrant string may be, in one phrase: the help texts and messages of every tool that takes one."""

__all__ = [
    "ANYWHERE",
    "ENTRANT_FORMS",
    "MAX_SIMULATIONS",
    "NAMED_AGENTS",
    "SEARCH_SUFFIX",
    "AgentsDir",
    "EntrantRefused",
    "EntrantSpec",
    "UnknownEntrant",
    "entrant_label",
    "folder_label",
    "is_checkpoint_spec",
    "parse_entrant",
    "resolve_entrant",
    "split_search",
]


def parse_entrant(
    spec: object,
    agents_dir: AgentsDir = ANYWHERE,
    max_simulations: int = MAX_SIMULATIONS,
    max_guided_simulations: int | None = None,
    python: bool | None = None,
) -> EntrantSpec:
    """:meth:`EntrantSpec.parse` with :data:`NAMED_AGENTS` as the named ones: the arena's and the web's reader.

    ``py:`` agents are read only with :data:`ANYWHERE` unless ``python`` says otherwise.  Raises
    :class:`EntrantRefused`, ``FileNotFoundError`` or a one-line ``ValueError`` as :meth:`EntrantSpec.parse` does.
    """
    return EntrantSpec.parse(spec, agents_dir, max_simulations, max_guided_simulations, NAMED_AGENTS, python)


def split_search(spec: str) -> tuple[str, int | None]:
    """``(source, simulations)`` of ``SOURCE@mcts[:N]``, ``(spec, None)`` for any other.

    :func:`kahuna_env.agents.spec.split_search` with the shipped agents named in its messages.
    """
    return _spec.split_search(spec, NAMED_AGENTS)


def is_checkpoint_spec(spec: str) -> bool:
    """Whether an entrant needs a network (and torch), not a baseline.

    A file (a path separator or a suffix, or it exists), a named agent
    (``champion``), or either with ``@mcts[:N]``; a bad entrant when written as
    a path (its error comes when it is parsed to be built).
    """
    try:
        return parse_entrant(spec).network
    except ValueError:
        return looks_like_path(spec)


def one_torch_thread(specs: Iterable[str]) -> None:
    """One torch thread in this process when an entrant needs a network: the worker processes are the
    parallelism, and two torch threads per worker on two cores slow every decision down."""
    if any(is_checkpoint_spec(spec) for spec in specs):
        import torch

        torch.set_num_threads(1)


def _torch_side(entrant: EntrantSpec, what: str) -> Any:
    """``kahuna_policy``'s loaders, or one line naming the ``train`` extra (a ``ValueError``, as bad input)."""
    try:
        import kahuna_policy.agent
        import kahuna_policy.external
        import kahuna_policy.search
    except ImportError as error:
        raise ValueError(f"{entrant.written}: {what} {missing_extra('train', error)}") from None
    return kahuna_policy


def _build(entrant: EntrantSpec, seed: int | None, sampled: bool) -> Agent:
    """The one builder of every kind of entrant (:mod:`kahuna_env.agents.external` for what comes from outside)."""
    if entrant.kind == "baseline":
        return make_agent(entrant, seed=seed)
    if entrant.kind == "python":
        agent = load_python(entrant.source, seed=seed)
    elif entrant.kind == "named" and entrant.source not in SHIPPED_AGENTS:
        agent = load_plugin(entrant.source, seed=seed)
    else:
        kind = "kahuna" if entrant.kind == "named" else agent_file_kind(entrant.source)
        if kind == "onnx":
            agent = load_onnx(entrant.source, sampled=sampled, seed=seed, name=entrant.written)
        else:
            policy = _torch_side(entrant, "an agent file" if kind == "kahuna" else FILE_KINDS[kind])
            if kind == "sb3":
                agent = policy.external.load_sb3(entrant.source, sampled=sampled, seed=seed, name=entrant.written)
            elif kind == "torchscript":
                agent = policy.external.load_torchscript(
                    entrant.source, sampled=sampled, seed=seed, name=entrant.written
                )
            elif entrant.simulations is not None:
                return policy.search.load_guided_agent(entrant.source, simulations=entrant.simulations, seed=seed)
            else:
                return policy.agent.load_agent(entrant.source, deterministic=not sampled, seed=seed)
    if entrant.simulations is None:
        return agent
    if isinstance(agent, (ArrayAgent, PythonAgent)):
        return guided_agent(agent, entrant, seed=seed)
    if hasattr(agent, "model"):  # a plugin's network agent of this project (PolicyAgent): its own guided search
        policy = _torch_side(entrant, "a guided search")
        if isinstance(agent, policy.agent.PolicyAgent):
            return policy.search.GuidedMCTSAgent(agent.model, simulations=entrant.simulations, seed=seed)
    raise ValueError(f"{entrant}: {entrant.agent} gives no value to guide the search; play it without @mcts")


def resolve_entrant(
    spec: str | EntrantSpec,
    seed: int | None = None,
    sampled: bool = False,
    agents_dir: AgentsDir = ANYWHERE,
    max_simulations: int = MAX_SIMULATIONS,
    max_guided_simulations: int | None = None,
) -> Agent:
    """Build the agent an entrant names: a string (checked by :func:`parse_entrant` first) or a parsed spec.

    Baselines: ``random``, ``greedy``, ``mcts``, ``mcts:N``.  Anything that
    looks like a path, and ``champion``, is loaded with
    :func:`kahuna_policy.agent.load_agent` (``sampled=True`` makes the policy
    sample its moves instead of playing the most likely one).  ``SOURCE@mcts``
    and ``SOURCE@mcts:N`` build the search guided by that network
    (:func:`kahuna_policy.search.load_guided_agent`; it plays its most visited
    action, ``sampled`` does not apply).  ``agents_dir``, ``max_simulations``
    and ``max_guided_simulations`` are :func:`parse_entrant`'s (``agents_dir``
    also says, for a parsed spec, where its file was found).  Raises
    :class:`EntrantRefused` for a file outside ``agents_dir``,
    ``FileNotFoundError`` for a missing checkpoint and ``ValueError`` (one
    line) for a corrupt one, a bad budget or search, or an unknown name (the
    message lists the accepted forms).  A file found inside a folder is
    named in messages as the entrant wrote it, never by its absolute path.
    """
    if isinstance(spec, EntrantSpec):
        entrant = spec
    else:
        entrant = parse_entrant(spec, agents_dir, max_simulations, max_guided_simulations)
    try:
        return _build(entrant, seed, sampled)
    except (FileNotFoundError, ValueError) as error:
        if entrant.kind != "file" or agents_dir is ANYWHERE:
            raise
        message = first_line(error).replace(entrant.source, entrant.written)
        raise (FileNotFoundError if isinstance(error, FileNotFoundError) else ValueError)(message) from None
    except OSError as error:  # a name too long for the system, a file that cannot be read
        reason = error.strerror or first_line(error)
        raise ValueError(f"cannot read agent file {quoted(entrant.written)}: {reason}") from None


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
