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

A game belongs to its owner (the browser that created it,
:mod:`kahuna_web.owners`): :meth:`SessionStore.get` answers another owner
404 for it, as for a game that does not exist; only a finished game's record
may be read by anyone who has its id.  Every game is kept in a
:class:`~kahuna_web.gamestore.GameStore` (``kahuna-serve --data DIR``) after
every change, and a change that cannot be stored is refused (503, ``not
saved: CAUSE``) and undone in memory: nothing is answered 2xx that was not
written.  The :class:`SessionStore` holds at most ``limit`` games in memory
(a cache: the least recently used game not being computed is set aside, and
one idle for ``idle_seconds`` too; a game set aside is rebuilt from the game
store by replaying its actions when it is asked for) and caps what an owner
can start (:class:`Caps`): games in progress (its new game beyond it
abandons its own least recently touched one), games per minute, and, per
client address, new owners per minute.  Every cap falls on the one who
exceeds it, never on another owner's games.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.entrants import EntrantRefused, EntrantSpec, resolve_entrant
from arena.match import Chooser, agent_chooser, play
from arena.play import game_seeds
from arena.records import check_record, game_record
from arena.records import game_result as game_result_of
from arena.replay import ReplayError, replay
from kahuna_env.actions import check_action, describe_action
from kahuna_env.agents import Agent, MCTSAgent, RandomAgent
from kahuna_env.agents.mcts import SearchCancelled, action_priors
from kahuna_env.cli import first_line
from kahuna_env.config import RULE_OPTIONS
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_web.gamestore import GameStore, GameStoreError, StoredGame
from kahuna_web.owners import RecentEvents
from kahuna_web.views import (
    action_line,
    action_summary,
    action_text,
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
"""Games held in memory at most, all owners together (a cache of the game store)."""
DEFAULT_PER_OWNER = 16
"""Games in progress per owner (``kahuna-serve --max-games-per-owner``; its new game abandons its oldest)."""
DEFAULT_NEW_GAMES_PER_MINUTE = 30
"""Games an owner may start per minute (``kahuna-serve --max-new-games-per-minute``)."""
DEFAULT_NEW_OWNERS_PER_MINUTE = 30
"""Owners one client address may bring per minute (``kahuna-serve --max-new-owners-per-minute``)."""
DEFAULT_IDLE_SECONDS = 30 * 60.0
"""A game nobody touched for this long is set aside from memory (it stays stored)."""
MAX_AGENT_FILES = 200
"""At most this many agent files are listed from the allowed directory."""
AGENT_SUFFIXES = (".pt",)
"""Files listed as agent files (any file inside the directory can still be named)."""
NEW_GAME_RULE_OPTIONS = tuple(name for name in RULE_OPTIONS if name != "first_player")
"""The rule options a new game may set: KahunaConfig's, but ``first_player`` (the request's ``seat`` picks the side)."""
NEW_GAME_FIELDS = ("opponent", "seat", "seed", *NEW_GAME_RULE_OPTIONS)
"""The fields of a new-game request."""


class WebError(ValueError):
    """A request the server refuses: a one-line message and the HTTP status (4xx) to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Caps:
    """What one owner, or one client address, may start (docs/WEB.md, Threat model); beyond, 429.

    Attributes:
        games_per_owner: games in progress per owner; its new game beyond it abandons its own least
            recently touched one not being computed (429 when every one is being computed).
        new_games_per_minute: new games an owner may ask for within a minute (each request counts,
            also one refused for another reason: a flood pays for its refusals).
        new_owners_per_minute: owners (browsers without games) that one client address may bring
            within a minute: an owner that starts its first game counts.
    """

    games_per_owner: int = DEFAULT_PER_OWNER
    new_games_per_minute: int = DEFAULT_NEW_GAMES_PER_MINUTE
    new_owners_per_minute: int = DEFAULT_NEW_OWNERS_PER_MINUTE


DEFAULT_CAPS = Caps()
"""The caps of a server given none (``kahuna-serve``'s defaults)."""


def lone_surrogate(value: Any) -> bool:
    """Whether a JSON value (strings, keys, nested lists and objects) holds a lone surrogate such as ``\\ud800``.

    JSON's ``\\u`` escapes can spell one; Python reads it, but it is not text: no answer holding it could be
    encoded.  Iterative, so any nesting that parsed is walked.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str) -> Any:
    """``json.loads`` refusing ``NaN``, ``Infinity``, ``-Infinity`` and lone surrogates (a one-line ``ValueError``).

    Python's ``json`` reads them by default, but they are not JSON text: a
    value holding one cannot be sent back (every later answer showing it would fail).
    """
    data = json.loads(text, parse_constant=_refuse_constant)
    if lone_surrogate(data):
        raise ValueError("a string holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair): not text")
    return data


# ------------------------------------------------------------------------------------------------ opponents
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
) -> Agent:
    """Build the agent an entrant string names, with :func:`arena.entrants.resolve_entrant`; :class:`WebError` if bad.

    ``spec`` may also be an :class:`~arena.entrants.EntrantSpec` parsed already (the analysis board's).
    Agent files only from ``agents_dir`` (403 for anything outside it, or for
    any file when it is ``None``; 404 for a file of the folder that is not
    there), search budgets at most ``max_simulations`` (``mcts:N``) and
    ``max_guided_simulations`` (``SOURCE@mcts:N``), 400 for anything else
    that is wrong.  Messages never show a file's content or an absolute path.
    """
    if isinstance(spec, str) and spec.strip():
        spec = spec.strip()
        if len(spec) > MAX_SPEC_LENGTH:
            raise WebError(f"'opponent' is too long ({len(spec)} characters, at most {MAX_SPEC_LENGTH})")
    elif not isinstance(spec, EntrantSpec):  # a spec parsed already (the analysis board's) is built as it is
        raise WebError(f"'opponent' must be a non-empty string, got {_short(spec)}")
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
            f"cannot load agent file {_short(str(spec))}: {first_line(error)} (agent files need torch)"
        ) from None
    except ValueError as error:
        message = first_line(error)
        if "simulation budget too large" in message:
            message += " on this server (kahuna-serve --max-simulations / --max-guided-simulations)"
        raise WebError(message) from None
    except OSError as error:
        raise WebError(f"cannot read agent file {_short(str(spec))}: {error.strerror or 'unreadable'}") from None


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
    """The rule options of a new-game request (:data:`NEW_GAME_RULE_OPTIONS`); :class:`WebError` if bad."""
    # A form sends "" and a client may send [] (no handicap) for an option left at its default.
    options = {key: params[key] for key in NEW_GAME_RULE_OPTIONS if params.get(key) not in (None, "", [])}
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


Snapshot = tuple[list[int], list[dict[str, Any]], bool, str]
"""A game as :meth:`PlaySession._snapshot` keeps it: actions, undo marks, abandoned, owner."""


def undo_note(who: str, plies: Sequence[int]) -> str:
    """``you took moves back 2 times, at plies 5, 9``: the note of a game's undos (at most 20 plies named)."""
    shown = ", ".join(str(ply) for ply in plies[:20]) + (", ..." if len(plies) > 20 else "")
    times = f"{len(plies)} time{'s' * (len(plies) != 1)}"
    return f"{who} took moves back {times}, at pl{'ies' if len(plies) != 1 else 'y'} {shown}"


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
        owner: :func:`kahuna_web.owners.owner_key` of the owner token of the browser that created it.
        client: the address of the client that started the game.
        last_used: the store's clock when the game was last asked for.
        lock: held while a move of the game is being computed.
        summaries: what every action did, as the person may know it (:func:`kahuna_web.views.action_summary`).
        undos: the undo marks, ``{"ply", "actions"}`` (the actions taken back from that ply on).
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
        owner: str = "",
    ) -> None:
        self.id = session_id
        self.owner = owner
        self.client = client
        self.last_used = 0.0
        self.cancel = CancelFlag()
        self.stopping = False
        self.thinking = False
        self.move_pending = False
        self.thinking_since = 0.0
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

    def _snapshot(self) -> Snapshot:
        """What :meth:`_restore` needs to put the game back as it is now (a change that could not be stored)."""
        return list(self.actions), [dict(mark) for mark in self.undos], self.abandoned, self.owner

    def _restore(self, snapshot: Snapshot) -> None:
        actions, undos, abandoned, owner = snapshot
        self.undos, self.owner = undos, owner
        self._rebuild(actions)
        self.abandoned = abandoned

    def _note(self, before: Any, player: int, action: int) -> dict[str, Any]:
        self.actions.append(action)
        summary = action_summary(before, self.game, action, player, self.seat)
        self.summaries.append(summary)
        return summary

    # -------------------------------------------------------------------------------------------- properties
    @property
    def players(self) -> list[str]:
        """The record's ``players``: ``human`` in the person's seat, the opponent's entrant string."""
        return self._names("human")

    def notes(self) -> list[str]:
        """What the page shows under the game besides the board: the undos (``you took moves back ...``)."""
        return [undo_note("you", [mark["ply"] for mark in self.undos])] if self.undos else []

    @property
    def finished(self) -> bool:
        """Whether no more moves are taken: the game is over or the person abandoned it."""
        return self.game.is_over or self.abandoned

    @property
    def status(self) -> str:
        """``playing``, ``over`` or ``abandoned`` (the stored status)."""
        return "over" if self.game.is_over else "abandoned" if self.abandoned else "playing"

    @property
    def agent_to_act(self) -> bool:
        """Whether the agent is to act now (its opening: it holds the first turn or a handicap setup)."""
        return not self.finished and self.game.current_player != self.seat

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
        game is saved afterwards (:meth:`commit`: 503 and nothing played if it cannot be).
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
        snapshot = self._snapshot()
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
        if self.cancel.is_set() and not self.game.is_over:
            self.abandoned = True
        self.commit(snapshot)
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
        if self.abandoned or self.cancel.is_set():
            raise WebError("this game was abandoned; start a new game", 409)
        if self.game.is_over:
            raise WebError("the game is over; start a new game", 409)

    def undo(self) -> None:
        """Take back the person's last action and the agent's actions after it; 409 if there is none or the game ended.

        The taken-back actions are kept as an undo mark (:attr:`undos`), and
        the record holds them (its ``undos`` field).
        """
        self._check_playable()
        mine = [ply for ply, summary in enumerate(self.summaries) if summary["player"] == self.seat]
        if not mine:
            raise WebError("nothing to undo: you have not played yet", 409)
        ply = mine[-1]
        snapshot = self._snapshot()
        self.undos.append({"ply": ply, "actions": self.actions[ply:]})
        self._rebuild(self.actions[:ply])
        self.commit(snapshot)

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
        """Stop the game where it stands (its record is then ``finished: false``); 503 if it cannot be stored."""
        if not self.game.is_over and not self.abandoned:
            snapshot = self._snapshot()
            self.abandoned = True
            self.commit(snapshot)

    def claim(self, owner: str) -> None:
        """Make a game stored before games had owners ``owner``'s (the first browser that opens it)."""
        snapshot = self._snapshot()
        self.owner = owner
        self.commit(snapshot)

    # -------------------------------------------------------------------------------------------- storing
    def stored(self) -> StoredGame:
        """The game as the game store keeps it."""
        return StoredGame(
            id=self.id,
            owner=self.owner,
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

    def commit(self, snapshot: Snapshot | None = None) -> None:
        """Store the game (when the session has a store); if it cannot be, put it back as ``snapshot`` and refuse.

        The refusal is :class:`WebError` 503 ``not saved: CAUSE`` (``disk full``, ...): the change it
        was for is then not in memory either, so nothing unstored is ever answered 2xx.
        """
        if self._saver is None:
            return
        try:
            self._saver(self.stored())
        except GameStoreError as error:
            if snapshot is not None:
                self._restore(snapshot)
            raise WebError(f"not saved: {error}", error.status) from None

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
            "notes": self.notes(),
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
        extra: dict[str, Any] = {}
        if self.undos:
            extra["undos"] = [{"player": self.seat, **mark} for mark in self.undos]
        return game_record(
            players=self.players,
            seed=self.deal_seed,
            config=self.config,
            actions=self.actions,
            result=game_result_of(self.game),
            finished=self.game.is_over,
            play_seed=self.seed,
            **extra,
        )


class SessionStore:
    """The games (see the module docstring): owned, capped, kept in ``games``, at most ``limit`` in memory.

    Every game is kept in ``games`` (a :class:`~kahuna_web.gamestore.GameStore`;
    default: in memory only), which outlives the memory: a game set aside
    (idle for ``idle_seconds``, or the least recently used when ``limit``
    games are held) or held by a server that stopped is rebuilt from it when
    it is asked for again (:meth:`get`); a game being computed is never set
    aside, and only one copy of a game is ever played (a game set aside that a
    request still holds is taken back rather than rebuilt).  When ``limit``
    games are all being computed, a new one is refused (503).  ``caps``: what
    an owner and an address may start (:class:`Caps`).  ``clock`` (seconds)
    is the time the idle expiry and the per-minute caps use.
    """

    def __init__(
        self,
        agents_dir: Path | None = None,
        limit: int = DEFAULT_GAME_LIMIT,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        max_simulations: int = DEFAULT_MAX_SIMULATIONS,
        max_guided_simulations: int = DEFAULT_MAX_GUIDED_SIMULATIONS,
        clock: Callable[[], float] = time.monotonic,
        games: GameStore | None = None,
        caps: Caps = DEFAULT_CAPS,
    ) -> None:
        self.agents_dir = agents_dir
        self.limit = limit
        self.idle_seconds = idle_seconds
        self.max_simulations = max_simulations
        self.max_guided_simulations = max_guided_simulations
        self.clock = clock
        self.games = games if games is not None else GameStore(None)
        self.caps = caps
        self._sessions: collections.OrderedDict[str, PlaySession] = collections.OrderedDict()
        self._alive: weakref.WeakValueDictionary[str, PlaySession] = weakref.WeakValueDictionary()
        self._games_started = RecentEvents(clock)  # per owner
        self._owners_brought = RecentEvents(clock)  # per client address
        self._failed: collections.OrderedDict[str, tuple[str, WebError]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._loading = threading.Lock()

    def open_game(self, params: Any, client: str, owner: str) -> PlaySession:
        """Check a new-game request (opponent, seat, seed, variant, discard_rule, handicap) and hold the game.

        The game is ``owner``'s (:func:`kahuna_web.owners.owner_key`), started
        from the address ``client``.  The agent has not moved yet:
        :meth:`PlaySession.advance` plays its opening actions (when it holds
        the first turn or a handicap setup).  The game is returned with its
        lock held (so that it cannot be set aside before its opening is
        computed): the caller releases it.
        """
        spec, seat, seed, config = self._new_game_request(params)
        return self.start(spec, seat, seed, config, client, owner)

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

    def start(self, spec: Any, seat: int, seed: int, config: KahunaConfig, client: str, owner: str) -> PlaySession:
        """A new game of ``owner`` against ``spec``, within the caps, held and stored, locked (:meth:`open_game`)."""
        playing = self._admit(owner, client)  # first: a refused flood loads no agent
        opponent = resolve_opponent(spec, self.agents_dir, seed, self.max_simulations, self.max_guided_simulations)
        session = PlaySession(
            secrets.token_urlsafe(12), opponent, spec.strip(), seat, seed, config, client, saver=self._save, owner=owner
        )
        session.lock.acquire()
        try:
            self._hold(session)
            session.commit()
        except BaseException:
            with self._lock:
                self._drop(session)
            session.lock.release()
            raise
        self._make_way(playing, len(playing) + 1 - self.caps.games_per_owner)
        return session

    def rematch(self, session: PlaySession, swap_seats: bool, client: str, owner: str) -> PlaySession:
        """A new game against ``session``'s opponent, its rules, a new seed (the other seat if ``swap_seats``)."""
        seat = 1 - session.seat if swap_seats else session.seat
        return self.start(session.opponent_name, seat, secrets.randbits(32), session.config, client, owner)

    def new_game(self, params: Any, client: str, owner: str) -> tuple[PlaySession, list[dict[str, Any]]]:
        """:meth:`open_game`, then the agent's opening steps, in the calling thread."""
        session = self.open_game(params, client, owner)
        try:
            return session, session.advance()
        finally:
            session.lock.release()

    # -------------------------------------------------------------------------------------------- caps
    def _admit(self, owner: str, client: str) -> list[str]:
        """The caps of a new game of ``owner`` from ``client`` (:class:`Caps`): 429 beyond them.

        Returns the owner's games in progress, the least recently touched
        first: once the new game is stored, those beyond its games in progress
        make way (:meth:`_make_way`), so one that is not being computed must be there.
        """
        caps = self.caps
        if not self._games_started.add_if_below(owner, caps.new_games_per_minute):  # every try counts
            raise WebError(
                f"you started {caps.new_games_per_minute} games within a minute, the most this server allows; "
                "wait a moment",
                429,
            )
        playing = self._stored(self.games.owned, owner, "playing")
        new_owner = not playing and not self._stored(self.games.owned, owner, None, 1)
        if new_owner and not self._owners_brought.add_if_below(client, caps.new_owners_per_minute):
            raise WebError(
                f"{caps.new_owners_per_minute} new players started games from this address within a minute, "
                "the most this server allows; wait a moment",
                429,
            )
        excess = len(playing) - caps.games_per_owner + 1
        if excess > 0 and sum(not self._computing(game_id) for game_id in playing) < excess:
            raise WebError(
                f"you have {len(playing)} games in progress, the most this server allows, and they are being "
                "computed; wait for one of them or abandon one",
                429,
            )
        return playing

    def _computing(self, game_id: str) -> bool:
        with self._lock:
            session = self._sessions.get(game_id) or self._alive.get(game_id)
        return session is not None and session.lock.locked()

    def _make_way(self, playing: list[str], excess: int) -> None:
        """Abandon ``excess`` of the owner's games in progress ``playing`` (the oldest first) for its new one.

        Games being computed are left alone; one that cannot be stored
        abandoned stays in progress (the owner is then over its cap by one
        until its next new game: the new game itself is stored already).
        """
        for game_id in playing:
            if excess <= 0:
                return
            with contextlib.suppress(WebError):
                excess -= self._abandon(game_id)

    def _abandon(self, game_id: str) -> bool:
        """Abandon the game ``game_id``; ``False`` if it is being computed (left alone)."""
        with self._loading:  # no reload of it meanwhile
            with self._lock:
                session = self._sessions.get(game_id) or self._alive.get(game_id)
            if session is None:
                try:
                    self.games.abandon(game_id)
                except GameStoreError as error:
                    raise WebError(f"not saved: {error}", error.status) from None
                return True
            if not session.lock.acquire(blocking=False):
                return False
            try:
                session.abandon()
            finally:
                session.lock.release()
            return True

    @staticmethod
    def _stored(method: Callable[..., Any], *args: Any) -> Any:
        """``method(*args)`` of the game store, its :class:`GameStoreError` as a :class:`WebError`."""
        try:
            return method(*args)
        except GameStoreError as error:
            raise WebError(str(error), error.status) from None

    # -------------------------------------------------------------------------------------------- memory
    def _save(self, game: StoredGame) -> None:
        """Store ``game``; the games dropped to make room leave the memory too (none being computed is dropped)."""
        with self._lock:
            computing = [s.id for s in self._sessions.values() if s.lock.locked()]
        dropped = self.games.save(game, keep=computing)
        with self._lock:
            for game_id in dropped:
                self._sessions.pop(game_id, None)
                self._alive.pop(game_id, None)

    def _hold(self, session: PlaySession) -> None:
        with self._lock:
            now = self.clock()
            session.last_used = now
            for old in [s for s in self._sessions.values() if now - s.last_used > self.idle_seconds]:
                if not old.lock.locked():
                    self._drop(old)
            while session.id not in self._sessions and len(self._sessions) >= self.limit:
                spare = [s for s in self._sessions.values() if not s.lock.locked()]
                if not spare:
                    raise WebError(f"the server is computing {self.limit} games at once; try again in a moment", 503)
                self._drop(min(spare, key=lambda s: s.last_used))
            self._sessions[session.id] = session
            self._alive[session.id] = session

    def _drop(self, session: PlaySession) -> None:
        """Set ``session`` aside: out of memory (it stays in the game store and reloads when asked for)."""
        self._sessions.pop(session.id, None)

    def discard(self, session: PlaySession) -> None:
        """Forget ``session`` (a game whose opening could not be computed), stopping its agent."""
        session.cancel.set()
        with self._lock:
            self._drop(session)
            self._alive.pop(session.id, None)
        with contextlib.suppress(GameStoreError):  # a game nobody saw: at worst it stays stored, unfinished
            self.games.delete(session.id)

    def fail(self, session: PlaySession, error: WebError) -> None:
        """Forget ``session``, whose opening failed after its id was answered (``202``); asking for it then says why.

        Its owner's :meth:`get` of it raises ``error`` (503 ``not saved: ...``, say) instead of the 404 of a
        game that does not exist; the last ``limit`` such failures are remembered.
        """
        with self._lock:
            self._failed[session.id] = (session.owner, error)
            while len(self._failed) > self.limit:
                self._failed.popitem(last=False)
        self.discard(session)

    def held(self, session_id: str) -> bool:
        """Whether the game ``session_id`` is in memory now."""
        with self._lock:
            return session_id in self._sessions

    # -------------------------------------------------------------------------------------------- reading
    def get(self, session_id: str, owner: str | None = None, record: bool = False) -> PlaySession:
        """The game ``session_id``, reloaded from the game store if it is not in memory; 404 if there is none.

        ``owner``: the asking owner (``None``: the server itself); another
        owner's game is 404 as well, except a finished game when ``record``
        (its record is readable by anyone who has its id).  A game stored
        before games had owners is claimed by the first owner that opens it
        while it is in progress.
        """
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = self.clock()
        if session is None:
            with self._loading:  # one reload at a time: two requests for a game set aside build it once
                with self._lock:
                    session = self._sessions.get(session_id) or self._alive.get(session_id)
                if session is None:
                    session = self._reload(session_id, owner, record)
                self._hold(session)
        if owner is not None and session.owner == "" and not session.finished:
            with self._loading:
                if session.owner == "":
                    session.claim(owner)
        if not _visible(session.owner, session.finished, owner, record):
            raise _no_game(session_id)
        return session

    def _reload(self, session_id: str, owner: str | None, record: bool) -> PlaySession:
        with self._lock:
            failed = self._failed.get(session_id)
        if failed is not None and failed[0] == owner:
            raise failed[1]  # an opening that failed after its id was answered (:meth:`fail`)
        stored = self._stored(self.games.load, session_id)
        if stored is None or not _visible(stored.owner, stored.status != "playing", owner, record):
            raise _no_game(session_id)  # another owner's game: not even built (no agent loaded for a stranger)
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
            owner=stored.owner,
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


def _visible(game_owner: str, finished: bool, owner: str | None, record: bool) -> bool:
    """Whether ``owner`` may see a game of ``game_owner`` (see :meth:`SessionStore.get`)."""
    if owner is None or game_owner == owner or game_owner == "":  # "": stored before owners (claimed when opened)
        return True
    return record and finished


def _no_game(session_id: str) -> WebError:
    return WebError(f"no game {session_id[:40]!r} on this server", 404)


# ------------------------------------------------------------------------------------------------ replays
def replay_frames(record: Any, source: str = "record") -> dict[str, Any]:
    """Check a record with ``kahuna-replay``'s rules and return every position of it for the page.

    ``frames[k]`` is the spectator's view after ``k`` actions (``frames[0]``
    the deal); ``moves[k]`` who played action ``k + 1`` and its text
    (:func:`~kahuna_web.views.action_text`); ``notes`` what the page says
    besides (the undos of the record's ``undos`` field).  A record that is
    malformed, holds a string that is not text (a lone surrogate) or does not
    replay raises :class:`WebError` (422).
    """
    frames: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    face_up: list[Sequence[int | None]] = []  # the face-up row before the next action

    def after(player: int, action: int, game: KahunaGame) -> None:
        moves.append({"player": player, "text": action_text(action, face_up[0]), "line": action_line(action)})
        frames.append(spectator_view(game))
        face_up[0] = game.face_up

    if lone_surrogate(record):
        raise WebError(f"{source} holds a string that is not text (a lone surrogate such as \\ud800)", 422)
    try:
        check_record(record, source)
        deal = KahunaGame(KahunaConfig.from_dict(record["config"]), seed=record["seed"])
        frames.append(spectator_view(deal))
        face_up.append(deal.face_up)
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
        "notes": record_notes(record),
    }


def record_notes(record: Mapping[str, Any]) -> list[str]:
    """The notes of a checked record: who took moves back, at which plies (its ``undos`` field)."""
    plies: dict[int, list[int]] = {}
    for mark in record.get("undos", []):
        plies.setdefault(mark["player"], []).append(mark["ply"])
    return [undo_note(record["players"][player], plies[player]) for player in sorted(plies)]
