"""The games on the server: owned, capped, held in memory as a cache of the game store; no HTTP here.

A game belongs to its owner (the browser that created it,
:mod:`kahuna_web.owners`): :meth:`SessionStore.get` answers another owner
404 for it, as for a game that does not exist; only a finished game's record
may be read by anyone who has its id.  Every game is kept in a
:class:`~kahuna_web.gamestore.GameStore` (``kahuna-serve --data DIR``) after
every change, and a change that cannot be stored is refused (503, ``not
saved: CAUSE``) and undone in memory: nothing is answered 2xx that was not
written.  The :class:`SessionStore` holds at most ``limit`` games
(:class:`~kahuna_web.sessions.PlaySession`) in memory
(a cache: the least recently used game not being computed is set aside, and
one idle for ``idle_seconds`` too; a game set aside is rebuilt from the game
store by replaying its actions when it is asked for) and caps what an owner
can start (:class:`Caps`): games in progress (its new game beyond it
abandons its own least recently touched one), games per minute, and, per
client address, new owners per minute.  Every cap falls on the one who
exceeds it, never on another owner's games.  An owner's new games are
admitted one at a time (a lock per owner held from the check of its caps
until its games beyond them are abandoned), so a burst of new games over many
connections ends with the owner within its cap like a sequence of them.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kahuna_env.agents import RandomAgent
from kahuna_env.engine import KahunaConfig
from kahuna_web.gamestore import GameStore, GameStoreError, StoredGame
from kahuna_web.opponents import DEFAULT_MAX_GUIDED_SIMULATIONS, DEFAULT_MAX_SIMULATIONS, resolve_opponent
from kahuna_web.owners import RecentEvents
from kahuna_web.sessions import PlaySession
from kahuna_web.validate import WebError, new_game_request

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
        entrants: Mapping[str, Any] | None = None,
    ) -> None:
        self.agents_dir = agents_dir
        self.entrants = dict(entrants or {})  # the operator's named entrants (kahuna-serve --entrant NAME=SPEC)
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
        self._admitting: dict[str, tuple[threading.Lock, list[int]]] = {}  # per owner: its lock, its users

    def _opponent(self, spec: Any, seed: int | None) -> Any:
        """The agent ``spec`` names on this server (its folder, caps and named entrants; :class:`WebError` if bad)."""
        return resolve_opponent(
            spec, self.agents_dir, seed, self.max_simulations, self.max_guided_simulations, self.entrants
        )

    def open_game(self, params: Any, client: str, owner: str) -> PlaySession:
        """Check a new-game request (opponent, seat, seed, variant, discard_rule, handicap) and hold the game.

        The game is ``owner``'s (:func:`kahuna_web.owners.owner_key`), started
        from the address ``client``.  The agent has not moved yet:
        :meth:`PlaySession.advance` plays its opening actions (when it holds
        the first turn or a handicap setup).  The game is returned with its
        lock held (so that it cannot be set aside before its opening is
        computed): the caller releases it.
        """
        spec, seat, seed, config = new_game_request(params)
        return self.start(spec, seat, seed, config, client, owner)

    def start(self, spec: Any, seat: int, seed: int, config: KahunaConfig, client: str, owner: str) -> PlaySession:
        """A new game of ``owner`` against ``spec``, within the caps, held and stored, locked (:meth:`open_game`)."""
        with self._admission(owner):  # the cap checked and made good as one step (the module docstring)
            playing = self._admit(owner, client)  # first: a refused flood loads no agent
            opponent = self._opponent(spec, seed)
            session = PlaySession(
                secrets.token_urlsafe(12),
                opponent,
                spec.strip(),
                seat,
                seed,
                config,
                client,
                saver=self._save,
                owner=owner,
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
            try:
                self._make_way(playing, len(playing) + 1 - self.caps.games_per_owner)
            except WebError:  # its older games could not make way: the new game is not started after all
                self.discard(session)
                session.lock.release()
                raise
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
    @contextlib.contextmanager
    def _admission(self, owner: str) -> Iterator[None]:
        """Hold ``owner``'s admission lock: its new games one at a time (other owners' are not held back)."""
        with self._lock:
            lock, users = self._admitting.setdefault(owner, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._lock:  # forgotten once nobody waits for it: the dict holds only the owners starting games
                users[0] -= 1
                if users[0] == 0:
                    del self._admitting[owner]

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
            raise self._all_computing(len(playing))
        return playing

    def _all_computing(self, playing: int) -> WebError:
        """The 429 of an owner with ``playing`` games in progress, at its cap, none of which can make way now."""
        return WebError(
            f"you have {playing} game{'s' * (playing != 1)} in progress and this server allows "
            f"{self.caps.games_per_owner}; they are being computed: wait for one of them or abandon one",
            429,
        )

    def _computing(self, game_id: str) -> bool:
        with self._lock:
            session = self._sessions.get(game_id) or self._alive.get(game_id)
        return session is not None and session.lock.locked()

    def _make_way(self, playing: list[str], excess: int) -> None:
        """Abandon ``excess`` of the owner's games in progress ``playing`` (the oldest first) for its new one.

        Games being computed are left alone (one may have started a move since :meth:`_admit` counted it).
        When fewer than ``excess`` could be abandoned, raises :class:`WebError`: the cause of a failed write
        (503, ``not saved: ...``), else the 429 of :meth:`_all_computing`; the caller then takes the new game
        back, so the owner stays within its cap.
        """
        failure: WebError | None = None
        abandoned = 0
        for game_id in playing:
            if abandoned >= excess:
                return
            try:
                abandoned += self._abandon(game_id)
            except WebError as error:
                failure = error
        if abandoned < excess:
            raise failure or self._all_computing(len(playing) - abandoned)

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
        game that does not exist; the last ``limit`` such failures are remembered.  A request that reached the
        game before it was forgotten answers ``error`` too (:attr:`PlaySession.failed`), not the position rolled back.
        """
        session.failed = error  # set while the opening still holds the game's lock
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
        # A finished game never asks its agent again: no network to load, and a file since removed is no matter.
        opponent = self._opponent(stored.opponent, stored.seed) if stored.status == "playing" else RandomAgent()
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
