"""The analysis board: what a network agent thinks of a position, seen by the seat to act; no HTTP here.

:func:`analyse` answers, for a game and the seat to act in it,

* ``probabilities``: the agent's policy over that seat's legal actions
  (``{"<action id>": p}``, summing to 1; no other action appears);
* ``value``: its win probability for that seat (draws count half): the
  critic's value as the guided search reads it
  (:meth:`kahuna_policy.agent.PolicyAgent.probabilities_and_value`);
* ``search``: ``None``, or with ``simulations`` N > 0 the top moves of the
  search that network guides (``AGENT@mcts:N``, the opponents' search):
  ``[{"action", "text", "visits", "value"}]``, most visited first, ``value``
  the mean win probability of the move's simulations for the seat.

It sees only what the seat may know, by the same rules as every agent: the
network reads the seat's observation (:func:`kahuna_env.observation.encode_observation`),
and the search is handed a determinization (:meth:`KahunaGame.determinize`:
the opponent's hand, its face-down discards and the pile order resampled)
drawn with a generator seeded from the ply alone.  So two games with the
same public history and different hidden cards get the same analysis.

The agent is parsed once (:meth:`AnalysisAgents.entrant`, an
:class:`~kahuna_env.agents.spec.EntrantSpec`); its network and its search are
built from that spec through :func:`kahuna_web.opponents.resolve_opponent` (the
shipped agents by name, files only from the ``--agents`` folder), in the
function that needs them: importing this module loads no torch.  Loaded
networks are kept (:class:`AnalysisAgents`, a few at a time).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_arena.entrants import EntrantRefused, EntrantSpec, parse_entrant
from kahuna_env.agents.base import Agent
from kahuna_env.cli import first_line
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import encode_observation
from kahuna_web.opponents import MAX_SPEC_LENGTH, resolve_opponent
from kahuna_web.validate import WebError, digits_to_int
from kahuna_web.views import action_text

DEFAULT_ANALYSIS_AGENT = "champion"
"""The network analysing when the request names none."""
TOP_MOVES = 8
"""Moves listed from a search, most visited first."""
ANALYSIS_SEED = 20_260_338
"""Seeds the determinizations and the search of an analysis, with the ply (the same position, the same answer)."""
CACHED_NETWORKS = 4
"""Networks kept loaded for analyses."""
ANALYSIS_FIELDS = ("agent", "simulations")
"""Options of an analysis request (the query of ``GET .../analysis``, the body of ``POST .../hint``)."""


def analysis_options(params: Mapping[str, Any], max_simulations: int) -> tuple[str, int]:
    """``(agent, simulations)`` of a request; :class:`WebError` (400) for an unknown field or a bad value."""
    unknown = sorted(str(key)[:40] for key in params if key not in ANALYSIS_FIELDS)
    if unknown:
        raise WebError(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(ANALYSIS_FIELDS)}")
    agent = params.get("agent") or DEFAULT_ANALYSIS_AGENT
    if not isinstance(agent, str) or len(agent) > MAX_SPEC_LENGTH:
        raise WebError(f"'agent' must be an agent name or file of at most {MAX_SPEC_LENGTH} characters")
    simulations = digits_to_int(params.get("simulations", 0))
    if simulations in ("", None):
        simulations = 0
    if isinstance(simulations, bool) or not isinstance(simulations, int) or not 0 <= simulations <= max_simulations:
        shown = repr(simulations)[:40]
        raise WebError(
            f"'simulations' must be an integer in 0..{max_simulations} on this server "
            f"(kahuna-serve --max-guided-simulations), got {shown}"
        )
    return agent.strip(), simulations


class AnalysisAgents:
    """The networks that analyse: loaded on first use, the last :data:`CACHED_NETWORKS` kept, thread-safe.

    Agent names follow the opponents' rules: a shipped agent (``champion``)
    or a file inside ``agents_dir``; a baseline or a search is refused (400:
    the analysis needs a network's policy and value).
    """

    def __init__(self, agents_dir: Path | None, max_simulations: int, max_guided_simulations: int) -> None:
        self.agents_dir = agents_dir
        self.max_simulations = max_simulations
        self.max_guided_simulations = max_guided_simulations
        self._loaded: collections.OrderedDict[tuple[Any, ...], Agent] = collections.OrderedDict()
        self._lock = threading.Lock()

    def entrant(self, spec: str) -> EntrantSpec:
        """The network agent ``spec`` names, parsed once: 400 for a baseline or a search, 403/404 for a file."""
        try:
            entrant = parse_entrant(spec, self.agents_dir, self.max_simulations, self.max_guided_simulations)
        except EntrantRefused as error:
            raise WebError(first_line(error), 403) from None
        except FileNotFoundError as error:
            raise WebError(first_line(error), 404) from None
        except ValueError as error:
            raise WebError(first_line(error)) from None
        if not entrant.network or entrant.simulations is not None:
            raise WebError(
                f"the analysis needs a network agent (a shipped agent such as {DEFAULT_ANALYSIS_AGENT}, or an agent "
                f"file), got {spec[:60]!r}; 'simulations' asks for its search"
            )
        return entrant

    def _key(self, entrant: EntrantSpec) -> tuple[Any, ...]:
        if entrant.kind != "file":
            return (entrant.source,)
        try:
            stat = Path(entrant.source).stat()
        except OSError:
            raise WebError(f"agent file not found: {entrant.written[:60]!r}", 404) from None
        return (entrant.source, stat.st_mtime_ns, stat.st_size)

    def network(self, entrant: EntrantSpec) -> Agent:
        """The network agent of ``entrant`` (:meth:`entrant`), loaded once (see the class docstring)."""
        key = self._key(entrant)
        with self._lock:
            agent = self._loaded.get(key)
            if agent is not None:
                self._loaded.move_to_end(key)
                return agent
        agent = resolve_opponent(entrant, self.agents_dir, 0, self.max_simulations, self.max_guided_simulations)
        if not hasattr(agent, "probabilities_and_value"):
            raise WebError(f"{str(entrant)[:60]!r} is not a network agent")
        with self._lock:
            self._loaded[key] = agent
            while len(self._loaded) > CACHED_NETWORKS:
                self._loaded.popitem(last=False)
        return agent

    def search(self, entrant: EntrantSpec, simulations: int, seed: int) -> Agent:
        """A fresh search of ``simulations`` guided by ``entrant`` (its own generator: searches may run side by side).

        ``simulations`` is checked by :func:`analysis_options` (at most the server's guided cap).
        """
        return resolve_opponent(
            entrant.with_search(simulations), self.agents_dir, seed, self.max_simulations, self.max_guided_simulations
        )


def analyse(
    game: KahunaGame,
    agents: AnalysisAgents,
    spec: str = DEFAULT_ANALYSIS_AGENT,
    simulations: int = 0,
    cancel: Any = None,
    ply: int = 0,
) -> dict[str, Any]:
    """The analysis of ``game`` for its player to move (see the module docstring); 409 when the game is over.

    ``cancel``: a flag (``is_set()``) that stops the search when set (:class:`WebError` 409).
    ``ply``: the number of actions played (seeds the search: the same position, the same answer).
    """
    if game.is_over:
        raise WebError("the game is over: there is no move to analyse", 409)
    seat = game.current_player
    legal = game.legal_actions()
    entrant = agents.entrant(spec)
    network = agents.network(entrant)
    probabilities, value = network.probabilities_and_value(encode_observation(game, seat), game.action_mask())
    answer: dict[str, Any] = {
        "seat": seat,
        "agent": spec,
        "probabilities": {str(action): float(probabilities[action]) for action in legal},
        "value": value,
        "search": None,
    }
    if simulations:
        answer["search"] = _search(game, agents, entrant, simulations, cancel, ply)
        answer["simulations"] = simulations
    return answer


def _search(
    game: KahunaGame, agents: AnalysisAgents, entrant: EntrantSpec, simulations: int, cancel: Any, ply: int
) -> list[dict[str, Any]]:
    from kahuna_env.agents.mcts import SearchCancelled

    ply_seed = np.random.SeedSequence([ANALYSIS_SEED, ply]).generate_state(2, dtype=np.uint64)
    searcher = agents.search(entrant, simulations, int(ply_seed[0]))
    searcher.cancel = cancel
    view = game.determinize(game.current_player, np.random.default_rng(int(ply_seed[1])))
    try:
        root = searcher.search(view)
    except SearchCancelled:
        raise WebError("the analysis was stopped", 409) from None
    ranked = sorted(root.children.items(), key=lambda item: (-item[1].visits, -item[1].prior, item[0]))
    return [
        {
            "action": action,
            "text": action_text(action, game.face_up),
            "visits": child.visits,
            "value": child.value / child.visits,
            "prior": child.prior,
        }
        for action, child in ranked[:TOP_MOVES]
        if child.visits
    ]


def top_move(analysis: Mapping[str, Any], face_up: Sequence[int | None] | None = None) -> dict[str, Any]:
    """The hint of an analysis: the most visited move of its search, else the policy's most likely one.

    ``face_up``: the position's face-up row, which names a take's card (:func:`kahuna_web.views.action_text`).
    """
    if analysis.get("search"):
        best = analysis["search"][0]["action"]
    else:
        probabilities = analysis["probabilities"]
        best = int(max(probabilities, key=lambda action: (probabilities[action], -int(action))))
    return {"action": best, "text": action_text(best, face_up)}
