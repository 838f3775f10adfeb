"""Games in progress on the server, the allow-listed opponents, and the replay of records; no HTTP here.

A :class:`PlaySession` is one game of a person (``seat``) against an agent
(any entrant: ``random``, ``greedy``, ``mcts:N``, or an agent file inside
the allowed directory).  It is set up exactly as ``kahuna-play`` sets up a
game (:func:`arena.play.game_seeds`: the same seed gives the same deal, the
same agent seed and the same determinizations), and every action goes
through the one play loop :func:`arena.match.play`: the person's action
first, then the agent's actions until the person is to act again or the game
is over.  The page receives only :func:`kahuna_web.views.seat_view` of the
person's seat, and the record (which holds the deal's seed) only once the
game is over or abandoned.

Every bad request raises :class:`WebError` with a one-line message and the
HTTP status the server answers with; the game is left unchanged.

Opponents resolve through :func:`arena.entrants.resolve_entrant`, the one
entrant parser of every tool, with the allowed agents folder and this
server's simulation caps: an agent file counts only inside the folder (links
and ``..`` resolved; nothing outside it is looked at), anything else that
names a file is 403.  A game's agent thinks only when asked (a new game whose
agent opens, a move) and stops within a simulation once the game's
:class:`CancelFlag` is set (the page left, the game was abandoned, the
server is stopping); the game is then abandoned.  Asked to stop
(:meth:`PlaySession.stop`), its search ends at the next simulation instead
and it plays its best move so far (:func:`best_move_so_far`), for the rest
of its turn.  The person may take back their last action and the agent's
replies after it (:meth:`PlaySession.undo`).

The :class:`SessionStore` holds at most ``limit`` games in memory, at most
``per_client`` per client address (a client's new game sets aside its own
least recently used one, never another client's), and sets aside games idle
for ``idle_seconds``.  Every game is also kept in a
:class:`~kahuna_web.gamestore.GameStore` (``kahuna-serve --data DIR``) after
every change, and a game set aside, or held by a server that stopped, is
rebuilt from it by replaying its actions when it is asked for.
"""

from __future__ import annotations

import collections
import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.entrants import EntrantRefused, resolve_entrant
from arena.match import Chooser, agent_chooser, play
from arena.play import game_seeds
from arena.records import check_record, game_record
from arena.records import game_result as game_result_of
from arena.replay import ReplayError, replay
from kahuna_env.actions import check_action, describe_action
from kahuna_env.agents import Agent, MCTSAgent, RandomAgent
from kahuna_env.agents.mcts import SearchCancelled, action_priors
from kahuna_env.cli import first_line
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_web.gamestore import GameStore, GameStoreError, StoredGame
from kahuna_web.views import (
    action_line,
    action_summary,
    game_result,
    last_turn,
    public_facts,
    result_text,
    seat_view,
    spectator_view,
)

MAX_SEED = 2**63 - 1
"""Largest play seed the page may ask for."""
MAX_SPEC_LENGTH = 255
"""Longest entrant string accepted."""
DEFAULT_MAX_SIMULATIONS = 800
"""Largest ``mcts:N`` budget the web accepts by default: its slowest turn here about 2 s (docs/WEB.md, Budgets)."""
DEFAULT_MAX_GUIDED_SIMULATIONS = 25
"""Largest ``SOURCE@mcts:N`` budget by default (a guided simulation costs a forward pass; same measure)."""
DEFAULT_GAME_LIMIT = 256
"""Games held at most, all clients together."""
DEFAULT_PER_CLIENT = 16
"""Games held at most per client address (its new game replaces its own least recently used one)."""
DEFAULT_IDLE_SECONDS = 30 * 60.0
"""A game nobody touched for this long is forgotten."""
MAX_AGENT_FILES = 200
"""At most this many agent files are listed from the allowed directory."""
AGENT_SUFFIXES = (".pt",)
"""Files listed as agent files (any file inside the directory can still be named)."""
NEW_GAME_FIELDS = ("opponent", "seat", "seed", "variant", "discard_rule", "handicap")
"""The fields of a new-game request."""


class WebError(ValueError):
    """A request the server refuses: a one-line message and the HTTP status (4xx) to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str) -> Any:
    """``json.loads`` refusing ``NaN``, ``Infinity`` and ``-Infinity`` (a one-line ``ValueError``, as bad JSON is).

    Python's ``json`` reads them by default, but they are not JSON: a value
    holding one cannot be sent back (every later answer showing it would fail).
    """
    return json.loads(text, parse_constant=_refuse_constant)


# ------------------------------------------------------------------------------------------------ opponents
def list_agent_files(agents_dir: Path | None) -> list[str]:
    """Agent files (``*.pt``) inside ``agents_dir``, relative to it, sorted (at most :data:`MAX_AGENT_FILES`)."""
    if agents_dir is None or not agents_dir.is_dir():
        return []
    root = agents_dir.resolve()
    found = []
    for path in sorted(agents_dir.rglob("*")):
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
) -> Agent:
    """Build the agent an entrant string names, with :func:`arena.entrants.resolve_entrant`; :class:`WebError` if bad.

    Agent files only from ``agents_dir`` (403 for anything outside it, or for
    any file when it is ``None``; 404 for a file of the folder that is not
    there), search budgets at most ``max_simulations`` (``mcts:N``) and
    ``max_guided_simulations`` (``SOURCE@mcts:N``), 400 for anything else
    that is wrong.  Messages never show a file's content or an absolute path.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise WebError(f"'opponent' must be a non-empty string, got {_short(spec)}")
    spec = spec.strip()
    if len(spec) > MAX_SPEC_LENGTH:
        raise WebError(f"'opponent' is too long ({len(spec)} characters, at most {MAX_SPEC_LENGTH})")
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
        raise WebError(f"cannot load agent file {_short(spec)}: {first_line(error)} (agent files need torch)") from None
    except ValueError as error:
        message = first_line(error)
        if "simulation budget too large" in message:
            message += " on this server (kahuna-serve --max-simulations / --max-guided-simulations)"
        raise WebError(message) from None
    except OSError as error:
        raise WebError(f"cannot read agent file {_short(spec)}: {error.strerror or 'unreadable'}") from None


# ------------------------------------------------------------------------------------------------ games
def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digits_to_int(value: Any) -> Any:
    """A string of at most 30 ASCII digits (spaces around allowed) as an int; anything else unchanged."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 30:
        return int(value.strip())
    return value


def _int_field(params: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    value = params.get(key, default)
    if value is None or value == "":
        return default
    value = _digits_to_int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WebError(f"{key!r} must be an integer in {low}..{high}, got {_short(value)}")
    return value


def parse_config(params: Mapping[str, Any]) -> KahunaConfig:
    """The rule options of a new-game request (variant, discard_rule, handicap); :class:`WebError` if bad."""
    options: dict[str, Any] = {}
    for key in ("variant", "discard_rule"):
        if params.get(key) not in (None, ""):
            options[key] = params[key]
    handicap = params.get("handicap")
    if handicap not in (None, "", []):
        options["handicap"] = handicap
    try:
        return KahunaConfig.from_dict(options)
    except (TypeError, ValueError) as error:
        raise WebError(f"bad rule options: {first_line(error)}") from None


class CancelFlag:
    """A one-way flag another thread may set, read by a search before every simulation.

    A plain attribute rather than a :class:`threading.Event`: setting it takes
    no lock, so a signal handler may set it whatever the thread it interrupts holds.
    """

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Raise the flag (it is never lowered)."""
        self._set = True

    def is_set(self) -> bool:
        """Whether the flag was raised."""
        return self._set


class _SearchFlag:
    """The flag a game's searching agent reads: set when the game is cancelled or the person asked it to stop."""

    __slots__ = ("_session",)

    def __init__(self, session: PlaySession) -> None:
        self._session = session

    def is_set(self) -> bool:
        return self._session.cancel.is_set() or self._session.stopping


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


def _continuation_seeds(seed: int, ply: int, undos: int) -> tuple[int, int]:
    """(agent seed, determinization seed) of an agent taking over a game rebuilt at ``ply`` (a reload, an undo)."""
    values = np.random.SeedSequence([seed, ply, undos, 1]).generate_state(2, dtype=np.uint64)
    return int(values[0]), int(values[1])


class PlaySession:
    """One game of a person in ``seat`` against an agent, as ``kahuna-play`` would set it up.

    ``actions`` and ``undos`` rebuild a stored game (:mod:`kahuna_web.gamestore`):
    the actions are replayed from the seed; the agent then goes on with
    generators derived from the seed and the ply (:func:`_continuation_seeds`),
    so a game reloaded or taken back continues the same way every time.

    Attributes:
        cancel: set to stop the agent's thinking (within a simulation); the game is then abandoned.
        stopping: the person asked the agent to move now (``POST .../stop``): its search ends
            and it plays its best move so far, for the rest of its turn.  Also when asked while the
            move still waits in the bot queue: it is cleared when that computation ends, not when
            it starts.
        thinking: the agent is choosing a move.
        move_pending: a move of the game is being computed or waits in the bot queue (set by
            :meth:`freeze`, cleared by :meth:`computation_ended`).
        client: the address of the client that started the game.
        last_used: the store's clock when the game was last asked for.
        lock: held while a move of the game is being computed.
        summaries: what every action did, as the person may know it (:func:`kahuna_web.views.action_summary`).
        undos: the undo marks, ``{"ply", "actions"}`` (the actions taken back from that ply on).
        save_error: why the game's last change could not be stored (``None``: it was).
    """

    def __init__(
        self,
        session_id: str,
        opponent: Agent,
        opponent_name: str,
        seat: int,
        seed: int,
        config: KahunaConfig,
        client: str = "",
        actions: Sequence[int] = (),
        undos: Sequence[dict[str, Any]] = (),
        abandoned: bool = False,
        saver: Callable[[StoredGame], None] | None = None,
    ) -> None:
        self.id = session_id
        self.client = client
        self.last_used = 0.0
        self.cancel = CancelFlag()
        self.stopping = False
        self.thinking = False
        self.move_pending = False
        self.thinking_since = 0.0
        self.evicted = False
        self.searches = isinstance(opponent, MCTSAgent)
        """Whether the agent searches (its moves are computed in the bounded bot queue)."""
        if isinstance(opponent, MCTSAgent):
            opponent.cancel = _SearchFlag(self)
        self.opponent = opponent
        self.opponent_name = opponent_name
        self.seat = seat
        self.seed = seed
        self.config = config
        self.deal_seed, self._agent_seed, self._choice_seed = game_seeds(seed)
        self.undos: list[dict[str, Any]] = [dict(mark) for mark in undos]
        self.abandoned = False
        self.created = 0.0
        self.save_error: str | None = None
        self.lock = threading.Lock()
        self._saver = saver
        self._rebuild(list(actions))
        self.abandoned = abandoned and not self.game.is_over
        self.freeze(thinking=False)

    # -------------------------------------------------------------------------------------------- building
    def _rebuild(self, actions: list[int]) -> None:
        """The game from its deal with ``actions`` replayed; the agent set to go on from there."""
        self.game = KahunaGame(self.config, seed=self.deal_seed)
        self.actions: list[int] = []
        self.summaries: list[dict[str, Any]] = []
        for action in actions:
            if self.game.is_over or not self.game.is_legal(action):
                raise WebError(f"stored game {self.id[:40]!r} does not replay (an illegal action)", 422)
            self._apply(self.game.current_player, action)
        if actions or self.undos:
            agent_seed, choice_seed = _continuation_seeds(self.seed, len(actions), len(self.undos))
        else:
            agent_seed, choice_seed = self._agent_seed, self._choice_seed
        self.opponent.reset(agent_seed)
        self._rng = np.random.default_rng(choice_seed)
        self._opponent_chooser = agent_chooser(self.opponent, self._rng)

    def _apply(self, player: int, action: int) -> dict[str, Any]:
        before = public_facts(self.game)
        self.game.step(action)
        return self._note(before, player, action)

    def _note(self, before: Any, player: int, action: int) -> dict[str, Any]:
        self.actions.append(action)
        summary = action_summary(before, self.game, action, player, self.seat)
        self.summaries.append(summary)
        return summary

    # -------------------------------------------------------------------------------------------- properties
    @property
    def players(self) -> list[str]:
        """The record's ``players``: ``human`` in the person's seat (with its undos), the opponent's entrant string."""
        person = "human"
        if self.undos:
            plies = ", ".join(str(mark["ply"]) for mark in self.undos[:20]) + (", ..." if len(self.undos) > 20 else "")
            person = f"human (took moves back {len(self.undos)} time{'s' * (len(self.undos) != 1)}, at plies {plies})"
        return self._names(person)

    @property
    def finished(self) -> bool:
        """Whether no more moves are taken: the game is over or the person abandoned it."""
        return self.game.is_over or self.abandoned

    @property
    def status(self) -> str:
        """``playing``, ``over`` or ``abandoned`` (the stored status)."""
        return "over" if self.game.is_over else "abandoned" if self.abandoned else "playing"

    def _names(self, person: str = "you") -> list[str]:
        names = [self.opponent_name, self.opponent_name]
        names[self.seat] = person
        return names

    # -------------------------------------------------------------------------------------------- playing
    def advance(self, action: int | None = None) -> list[dict[str, Any]]:
        """Play the person's ``action`` (if any), then the agent until the person is to act or the game ends.

        Returns the steps for the page: who acted, what it did (the summary of
        :func:`kahuna_web.views.action_summary`: an opponent's face-down
        discard hidden) and the person's view after the action.  An illegal
        action raises :class:`WebError` (422) before anything changes.  The
        game is saved afterwards.
        """
        pending: list[int | None] = [action]

        def person(game: KahunaGame) -> int | None:
            self.thinking = False
            chosen, pending[0] = pending[0], None
            return chosen

        def agent(game: KahunaGame) -> int | None:
            if self.cancel.is_set():
                return None
            if not self.thinking:
                self.thinking_since = time.monotonic()
            self.thinking = True
            return self._agent_move(game)

        choosers: list[Chooser] = [agent, agent]
        choosers[self.seat] = person
        steps: list[dict[str, Any]] = []
        before = [public_facts(self.game)]

        def after(player: int, acted: int, game: KahunaGame) -> None:
            summary = self._note(before[0], player, acted)
            before[0] = public_facts(game)
            steps.append({**summary, "state": seat_view(game, self.seat)})
            self.freeze()  # what a reload of the page shows while the agent goes on

        try:
            play(self.game, choosers, after)
        except IllegalActionError as error:
            raise WebError(first_line(error), 422) from None
        except SearchCancelled:
            pass  # the flag is set: abandoned below
        finally:
            self.computation_ended()
        if self.cancel.is_set():
            self.abandon()
        self.save()
        return steps

    def _agent_move(self, game: KahunaGame) -> int:
        """The agent's move; a search the person stopped plays its best move so far (:func:`best_move_so_far`)."""
        if self.stopping and self.searches:
            return best_move_so_far(self.opponent, game, self._rng)
        try:
            return self._opponent_chooser(game)
        except SearchCancelled as stopped:
            if self.cancel.is_set() or not self.stopping:
                raise
            found = getattr(getattr(stopped, "result", None), "move", None)
            return best_move_so_far(self.opponent, game, self._rng, found)

    def move(self, action: Any) -> list[dict[str, Any]]:
        """The person plays ``action`` (an action id); :class:`WebError` for a bad or illegal one, state unchanged."""
        self._check_playable()
        try:
            action = check_action(_digits_to_int(action))
        except ValueError as error:
            raise WebError(first_line(error)) from None
        if self.game.current_player != self.seat:  # not reachable through advance(), kept as a guard
            raise WebError("it is not your turn", 409)
        if not self.game.is_legal(action):
            try:
                self.game.clone().step(action)
            except IllegalActionError as error:
                raise WebError(first_line(error), 422) from None
            raise WebError(f"action {action} ({describe_action(action)}) is not legal now", 422)
        return self.advance(action)

    def _check_playable(self) -> None:
        if self.evicted:
            raise WebError("this game was set aside by the server; reload it", 409)
        if self.abandoned or self.cancel.is_set():
            raise WebError("this game was abandoned; start a new game", 409)
        if self.game.is_over:
            raise WebError("the game is over; start a new game", 409)

    def undo(self) -> None:
        """Take back the person's last action and the agent's actions after it; 409 if there is none or the game ended.

        The taken-back actions are kept as an undo mark (:attr:`undos`), and
        the record names them (:attr:`players`).
        """
        self._check_playable()
        mine = [ply for ply, summary in enumerate(self.summaries) if summary["player"] == self.seat]
        if not mine:
            raise WebError("nothing to undo: you have not played yet", 409)
        ply = mine[-1]
        self.undos.append({"ply": ply, "actions": self.actions[ply:]})
        self._rebuild(self.actions[:ply])
        self.save()

    def stop(self) -> None:
        """Ask the thinking agent to move now (its best move so far); 409 when no move is being computed.

        A move still waiting in the bot queue counts: its agent then plays at once when its turn comes.
        """
        if not (self.thinking or self.move_pending):
            raise WebError("the agent is not thinking: there is nothing to stop", 409)
        self.stopping = True

    def computation_ended(self) -> None:
        """A computation of the game ended (or never started): nothing thinks, and no stop is left over."""
        self.thinking = False
        self.move_pending = False
        self.stopping = False

    def abandon(self) -> None:
        """Stop the game where it stands (its record is then ``finished: false``)."""
        if not self.game.is_over and not self.abandoned:
            self.abandoned = True
            self.save()

    # -------------------------------------------------------------------------------------------- storing
    def stored(self) -> StoredGame:
        """The game as the game store keeps it."""
        return StoredGame(
            id=self.id,
            client=self.client,
            opponent=self.opponent_name,
            seat=self.seat,
            seed=self.seed,
            config=self.config.to_dict(),
            actions=list(self.actions),
            undos=[dict(mark) for mark in self.undos],
            status=self.status,
            created=self.created,
        )

    def save(self) -> None:
        """Store the game (when the session has a store); a failure is kept in :attr:`save_error`, not raised."""
        if self._saver is None:
            return
        try:
            self._saver(self.stored())
        except GameStoreError as error:
            self.save_error = str(error)
        else:
            self.save_error = None

    # -------------------------------------------------------------------------------------------- answers
    def state(self) -> dict[str, Any]:
        """The person's view, the log, the opponent's last turn and (once finished) the result and the seed."""
        view = seat_view(self.game, self.seat)
        view["log"] = [
            {"n": n, "player": summary["player"], "text": summary["text"]}
            for n, summary in enumerate(self.summaries, start=1)
        ]
        view["turn_summary"] = last_turn(self.summaries, 1 - self.seat)
        view["thinking"] = self.thinking
        view["abandoned"] = self.abandoned
        over = self.game.is_over
        view["result"] = game_result(self.game, self._names(), self.seat, self.summaries) if over else None
        view["result_text"] = view["result"]["text"] if over else None
        view["record_ready"] = self.finished
        view["seed"] = str(self.seed) if self.finished else None  # text: JavaScript numbers hold 53 bits
        view["can_undo"] = not self.finished and any(s["player"] == self.seat for s in self.summaries)
        view["undos"] = len(self.undos)
        view["saved"] = self.save_error is None
        return view

    def response(self, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """What the API answers: the session, the steps to animate, and the current state."""
        return {
            "id": self.id,
            "seat": self.seat,
            "opponent": self.opponent_name,
            "config": self.config.to_dict(),
            "steps": steps or [],
            "state": self.state(),
        }

    def thinking_response(self) -> dict[str, Any]:
        """What ``GET`` answers while a move is computed: the position before it, ``thinking``, nothing to play.

        Built from the game as it stood when the computation began (the
        game itself changes in another thread meanwhile).
        """
        frozen = self._frozen
        if self.thinking:
            seconds = round(time.monotonic() - self.thinking_since, 1)
            state = {**frozen["state"], "thinking": True, "legal": [], "thinking_seconds": seconds}
            frozen = {**frozen, "state": state}
        return frozen

    def freeze(self, thinking: bool = True) -> None:
        """Keep :meth:`response` as it is now for :meth:`thinking_response` (before a computation, after each step).

        ``thinking``: a move is being computed (nothing may be played
        meanwhile); otherwise an analysis, which changes nothing.
        """
        frozen = self.response()
        if thinking:
            frozen["state"]["legal"] = []
            frozen["state"]["thinking"] = True
            self.move_pending = True
        self._frozen = frozen

    def record(self) -> dict[str, Any]:
        """The game as an ``arena.records`` record (as ``kahuna-play --record`` writes); 409 while in progress."""
        if not self.finished:
            raise WebError(
                "the record is available once the game is over or abandoned (it holds the deal's seed, "
                "which would tell the hidden cards)",
                409,
            )
        return game_record(
            players=self.players,
            seed=self.deal_seed,
            config=self.config,
            actions=self.actions,
            result=game_result_of(self.game),
            finished=self.game.is_over,
            play_seed=self.seed,
        )


class SessionStore:
    """The games: at most ``limit`` in memory, at most ``per_client`` per client, none idle for ``idle_seconds``.

    Every game is also kept in ``games`` (a :class:`~kahuna_web.gamestore.GameStore`;
    default: in memory only), which outlives the memory's limits: a game set
    aside (idle, or replaced in memory by its client's newer one) or held by
    a server that stopped is rebuilt from it when it is asked for again
    (:meth:`get`).  A client's new game beyond ``per_client`` sets aside that
    client's least recently used game (one not being computed); another
    client's games are never touched.  When ``limit`` games are held and none
    has been idle too long, a new game is refused (503).  ``clock``
    (seconds) is the time the idle expiry uses.
    """

    def __init__(
        self,
        agents_dir: Path | None = None,
        limit: int = DEFAULT_GAME_LIMIT,
        per_client: int = DEFAULT_PER_CLIENT,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        max_simulations: int = DEFAULT_MAX_SIMULATIONS,
        max_guided_simulations: int = DEFAULT_MAX_GUIDED_SIMULATIONS,
        clock: Callable[[], float] = time.monotonic,
        games: GameStore | None = None,
    ) -> None:
        self.agents_dir = agents_dir
        self.limit = limit
        self.per_client = per_client
        self.idle_seconds = idle_seconds
        self.max_simulations = max_simulations
        self.max_guided_simulations = max_guided_simulations
        self.clock = clock
        self.games = games if games is not None else GameStore(None)
        self._sessions: collections.OrderedDict[str, PlaySession] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._loading = threading.Lock()

    def open_game(self, params: Any, client: str = "") -> PlaySession:
        """Check a new-game request (opponent, seat, seed, variant, discard_rule, handicap) and hold the game.

        The agent has not moved yet: :meth:`PlaySession.advance` plays its
        opening actions (when it holds the first turn or a handicap setup).
        The game is returned with its lock held (so that no new game can
        replace it before its opening is computed): the caller releases it.
        """
        spec, seat, seed, config = self._new_game_request(params)
        return self.start(spec, seat, seed, config, client)

    def _new_game_request(self, params: Any) -> tuple[Any, int, int, KahunaConfig]:
        if not isinstance(params, Mapping):
            raise WebError("a new game needs a JSON object with 'opponent', 'seat', 'seed' and rule options")
        unknown = sorted(str(key)[:40] for key in params if key not in NEW_GAME_FIELDS)
        if unknown:
            raise WebError(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(NEW_GAME_FIELDS)}")
        seat = _int_field(params, "seat", 0, 1, 0)
        seed = _int_field(params, "seed", 0, MAX_SEED, None)
        if seed is None:
            seed = secrets.randbits(32)
        assert seat is not None
        return params.get("opponent", "greedy"), seat, seed, parse_config(params)

    def start(self, spec: Any, seat: int, seed: int, config: KahunaConfig, client: str = "") -> PlaySession:
        """A new game of ``client`` against ``spec``, held and stored, its lock held (see :meth:`open_game`)."""
        opponent = resolve_opponent(spec, self.agents_dir, seed, self.max_simulations, self.max_guided_simulations)
        session = PlaySession(
            secrets.token_urlsafe(12), opponent, spec.strip(), seat, seed, config, client, saver=self._save
        )
        session.lock.acquire()
        try:
            self._hold(session)
        except BaseException:
            session.lock.release()
            raise
        session.save()
        return session

    def rematch(self, session: PlaySession, swap_seats: bool, client: str = "") -> PlaySession:
        """A new game against ``session``'s opponent, its rules, a new seed (the other seat if ``swap_seats``)."""
        seat = 1 - session.seat if swap_seats else session.seat
        return self.start(session.opponent_name, seat, secrets.randbits(32), session.config, client)

    def new_game(self, params: Any, client: str = "") -> tuple[PlaySession, list[dict[str, Any]]]:
        """:meth:`open_game`, then the agent's opening steps, in the calling thread."""
        session = self.open_game(params, client)
        try:
            return session, session.advance()
        finally:
            session.lock.release()

    def _save(self, game: StoredGame) -> None:
        with self._lock:
            held = list(self._sessions)
        self.games.save(game, keep=held)

    def _hold(self, session: PlaySession) -> None:
        with self._lock:
            now = self.clock()
            session.last_used = now
            for old in [s for s in self._sessions.values() if now - s.last_used > self.idle_seconds]:
                if not old.lock.locked():
                    self._drop(old)
            own = [s for s in self._sessions.values() if s.client == session.client]
            if len(own) >= self.per_client:
                replaceable = [s for s in own if not s.lock.locked()]
                if not replaceable:
                    raise WebError(
                        f"{self.per_client} games of this address are being computed; wait for one of them", 429
                    )
                self._drop(min(replaceable, key=lambda s: s.last_used))
            if len(self._sessions) >= self.limit:
                raise WebError(f"the server holds {self.limit} games in progress; try again later", 503)
            self._sessions[session.id] = session

    def _drop(self, session: PlaySession) -> None:
        """Set ``session`` aside: out of memory (it stays in the game store and reloads when asked for)."""
        session.evicted = True
        self._sessions.pop(session.id, None)

    def discard(self, session: PlaySession) -> None:
        """Forget ``session`` (a game whose opening could not be computed), stopping its agent."""
        session.cancel.set()
        with self._lock:
            self._drop(session)
        with contextlib.suppress(GameStoreError):  # a game nobody saw: at worst it stays stored, unfinished
            self.games.delete(session.id)

    def held(self, session_id: str) -> bool:
        """Whether the game ``session_id`` is in memory now."""
        with self._lock:
            return session_id in self._sessions

    def get(self, session_id: str) -> PlaySession:
        """The game ``session_id``, reloaded from the game store if it is not in memory; 404 if there is none."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = self.clock()
        if session is not None:
            return session
        with self._loading:  # one reload at a time: two requests for a game set aside build it once
            with self._lock:
                session = self._sessions.get(session_id)
            if session is None:
                session = self._reload(session_id)
                self._hold(session)
        return session

    def _reload(self, session_id: str) -> PlaySession:
        try:
            stored = self.games.load(session_id)
        except GameStoreError as error:
            raise WebError(str(error), error.status) from None
        if stored is None:
            raise WebError(f"no game {session_id[:40]!r} on this server", 404)
        try:
            config = KahunaConfig.from_dict(stored.config)
        except (TypeError, ValueError):
            raise WebError(f"stored game {session_id[:40]!r} has rules this server does not know", 422) from None
        if stored.status == "playing":
            opponent = resolve_opponent(
                stored.opponent, self.agents_dir, stored.seed, self.max_simulations, self.max_guided_simulations
            )
        else:  # a finished game never asks its agent again: no network to load, and a file since removed is no matter
            opponent = RandomAgent()
        session = PlaySession(
            stored.id,
            opponent,
            stored.opponent,
            stored.seat,
            stored.seed,
            config,
            stored.client,
            actions=stored.actions,
            undos=stored.undos,
            abandoned=stored.status == "abandoned",
            saver=self._save,
        )
        session.created = stored.created
        return session

    def cancel_all(self) -> None:
        """Stop every agent's thinking (the server is stopping); takes no lock, so a signal handler may call it."""
        for _ in range(10):  # another thread may change the dict while it is copied
            try:
                sessions = list(self._sessions.values())
            except RuntimeError:
                continue
            for session in sessions:
                session.cancel.set()
            return


# ------------------------------------------------------------------------------------------------ replays
def replay_frames(record: Any, source: str = "record") -> dict[str, Any]:
    """Check a record with ``kahuna-replay``'s rules and return every position of it for the page.

    ``frames[k]`` is the spectator's view after ``k`` actions (``frames[0]``
    the deal); ``moves[k]`` who played action ``k + 1`` and its text.  A
    record that is malformed or does not replay raises :class:`WebError` (422).
    """
    frames: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []

    def after(player: int, action: int, game: KahunaGame) -> None:
        moves.append({"player": player, "text": describe_action(action), "line": action_line(action)})
        frames.append(spectator_view(game))

    try:
        check_record(record, source)
        frames.append(spectator_view(KahunaGame(KahunaConfig.from_dict(record["config"]), seed=record["seed"])))
        final = replay(record, on_action=after)
    except ReplayError as error:
        raise WebError(f"{source} does not replay: {first_line(error)}", 422) from None
    except ValueError as error:
        raise WebError(first_line(error), 422) from None
    players = list(record["players"])
    return {
        "players": players,
        "seed": str(record["seed"]),  # text: a 64-bit seed does not fit a JavaScript number
        "config": record["config"],
        "finished": final.is_over,
        "result": result_text(final, players) if final.is_over else "unfinished game",
        "frames": frames,
        "moves": moves,
    }
