"""The games of ``kahuna-serve``, kept in one SQLite file (``DATA/games.sqlite``) so that they outlive the server.

A game is stored as what rebuilds it: its id, its owner (the SHA-256 of
the owner token of the browser that created it, :mod:`kahuna_web.owners`),
the client address that started it, its settings (the opponent's entrant string, the person's seat,
the play seed, the rule options), the actions played in order, the undo
marks (where the person took moves back, and which), its status (``playing``,
``over``, ``abandoned``) and two timestamps.  The rules engine is
deterministic, so replaying the actions from the seed gives the game back
exactly (:class:`kahuna_web.sessions.PlaySession` does it); the server holds
a few games in memory and reloads any other from here when it is asked for.

Habits of :mod:`kahuna_arena.store`, the results store: the file is in WAL mode;
every write is one short ``BEGIN IMMEDIATE`` transaction (a killed server
loses at most the move it was writing, never leaves half a row); a
``schema_version`` table names the layout, and a file that is not SQLite, an
SQLite file of another program (a results store, say) or a newer layout is
one :class:`GameStoreError` line at start, left untouched.  Those messages
name the file: they are for the person starting the server.  What a web
client may see of a failure says neither the path nor the file's content
(:meth:`GameStore.save` and :meth:`GameStore.load` raise messages without them).

Bounded: at most ``max_games`` games (:data:`MAX_STORED_GAMES`).  A new game
beyond it makes room only by dropping games nobody can miss: finished (over
or abandoned) more than ``retention_seconds`` ago, or in progress and
untouched for ``idle_seconds``, the least recently touched first; when there
is none, the new game is refused (:class:`GameStoreError`, 503).  No game in
progress that is younger, and no finished game within its retention, is ever
dropped, whoever asks.  The file holds at most ``max_bytes``
(:data:`MAX_STORE_BYTES`, SQLite's ``max_page_count``).  Every write that
fails (the file full, the disk full, the file read-only, an I/O error) is a
:class:`GameStoreError` saying so in words (:func:`write_failure`), and
nothing of it is kept: the caller refuses the change it was for.
``path=None`` keeps the games in memory only (a server without ``--data``,
the tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kahuna_arena.store import transaction

try:
    import resource
except ImportError:  # not on Windows: no file size limit to name
    resource = None  # type: ignore[assignment]

SCHEMA_VERSION = 2
"""The layout this module writes (1: no owner column; a file of layout 1 is migrated when opened)."""
STORE_FILE = "games.sqlite"
"""The file's name inside ``kahuna-serve --data DIR``."""
MAX_STORED_GAMES = 10_000
"""Games kept at most (``kahuna-serve --max-stored-games``)."""
RETENTION_SECONDS = 24 * 3600.0
"""A finished game is kept at least this long after its last change (``kahuna-serve --retention-hours``)."""
STORE_IDLE_SECONDS = 30 * 24 * 3600.0
"""A game in progress untouched this long may be dropped to make room (``kahuna-serve --idle-days``)."""
MAX_STORE_BYTES = 256 * 1024 * 1024
"""Largest size of the file (a game is about 1 kB; 10,000 of them fit many times over)."""
FREE_SPACE_MARGIN = 1024 * 1024
"""A disk with less room than this (bytes) is full, as far as a failed write's message goes."""
BUSY_TIMEOUT_SECONDS = 30.0
"""How long a write waits for another connection's transaction (one server writes: only a safety net)."""
STATUSES = ("playing", "over", "abandoned")
"""A stored game's status."""

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE web_games (
    id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    opponent TEXT NOT NULL,
    seat INTEGER NOT NULL CHECK (seat IN (0, 1)),
    seed TEXT NOT NULL,
    config TEXT NOT NULL,
    actions TEXT NOT NULL,
    undos TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('playing', 'over', 'abandoned')),
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX web_games_by_age ON web_games (status, updated);
"""
"""Layout 1; a new file is made with it, then migrated with :data:`_MIGRATIONS` like an old one."""
_MIGRATIONS = {
    2: (
        "ALTER TABLE web_games ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX web_games_by_owner ON web_games (owner, status, updated)",
    ),
}
"""The statements that bring a file of layout ``version - 1`` to ``version``."""
_TABLES = {"schema_version", "web_games"}
_COLUMNS = "id, owner, client, opponent, seat, seed, config, actions, undos, status, created, updated"


class GameStoreError(ValueError):
    """The game store cannot be used (not one, newer, unwritable, full); the message is one line.

    Raised by :meth:`GameStore.save` and :meth:`GameStore.delete`, the message
    is the cause alone, in words (``disk full``), without the file's path.
    """

    def __init__(self, message: str, status: int = 503) -> None:
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class StoredGame:
    """One stored game: everything that rebuilds it (see the module docstring).

    Attributes:
        id: the game's id (unguessable, from :func:`secrets.token_urlsafe`).
        owner: :func:`kahuna_web.owners.owner_key` of its creator's owner token (``""``: a game stored
            before games had owners, claimed by the first browser that opens it).
        client: the address of the client that started it.
        opponent: the opponent's entrant string.
        seat: the person's seat.
        seed: the play seed (:func:`kahuna_arena.play.game_seeds` derives the deal's and the agent's).
        config: the rule options (:meth:`kahuna_env.engine.KahunaConfig.to_dict`).
        actions: every action of the line played, in order (taken-back actions are not in it).
        undos: the undo marks: ``{"ply": k, "actions": [...]}``, the actions taken back from ply ``k`` on.
        status: one of :data:`STATUSES`.
        created, updated: seconds since the epoch.
    """

    id: str
    client: str
    opponent: str
    seat: int
    seed: int
    config: dict[str, Any]
    actions: list[int]
    undos: list[dict[str, Any]]
    status: str = "playing"
    created: float = 0.0
    updated: float = 0.0
    owner: str = ""


class GameStore:
    """The stored games (see the module docstring); safe to use from several threads.

    ``GameStore(path)`` opens ``path`` (creating it and its folder), ``GameStore(None)`` keeps games in memory.
    Raises :class:`GameStoreError` naming the file when it cannot be used.  ``clock`` (seconds since the
    epoch) stamps the games and ages them for the retention.
    """

    def __init__(
        self,
        path: str | Path | None,
        max_games: int = MAX_STORED_GAMES,
        max_bytes: int = MAX_STORE_BYTES,
        retention_seconds: float = RETENTION_SECONDS,
        idle_seconds: float = STORE_IDLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.max_games = max_games
        self.max_bytes = max_bytes
        self.retention_seconds = retention_seconds
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._lock = threading.Lock()
        shown = str(self.path) if self.path is not None else "the in-memory game store"
        try:
            if self.path is not None:
                if self.path.is_dir():
                    raise GameStoreError(f"{self.path}: is a folder, expected the game store file")
                self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path) if self.path is not None else ":memory:"
            self._db = sqlite3.connect(
                target, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
        except OSError as error:
            raise GameStoreError(f"{shown}: cannot open the game store: {error.strerror or error}") from None
        except sqlite3.Error as error:
            raise GameStoreError(f"{shown}: cannot open the game store: {_line(error)}") from None
        try:
            self._prepare(max_bytes)
        except sqlite3.DatabaseError as error:
            self._db.close()
            if _unwritable(error):
                raise GameStoreError(
                    f"{shown}: the game store is read-only ({_line(error)}): kahuna-serve writes every game there; "
                    "make it writable or choose another --data folder"
                ) from None
            raise GameStoreError(f"{shown}: not a kahuna-serve game store ({_line(error)})") from None
        except GameStoreError as error:
            self._db.close()
            raise GameStoreError(f"{shown}: {error}") from None

    # ------------------------------------------------------------------------------------------ opening
    def _prepare(self, max_bytes: int) -> None:
        self._check_foreign()  # before anything is written: another program's file stays as it was
        if self.path is not None and self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode = WAL")
        page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        self._db.execute(f"PRAGMA max_page_count = {max(16, max_bytes // page_size)}")
        with self._transaction():
            self._check_foreign()
            version = self._version()
            if version is None:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute("INSERT INTO schema_version (version) VALUES (1)")
                version = 1
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step]:
                    self._db.execute(statement)
            # Written at every start (the same version when it is current): a read-only file says so now,
            # in one line, rather than at the first move of the first game.
            self._db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    def _tables(self) -> set[str]:
        return {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _version(self) -> int | None:
        if "schema_version" not in self._tables():
            return None
        rows = self._db.execute("SELECT version FROM schema_version").fetchall()
        if len(rows) != 1 or not isinstance(rows[0][0], int):
            raise GameStoreError("not a kahuna-serve game store (a damaged schema_version table)")
        return rows[0][0]

    def _check_foreign(self) -> None:
        tables = self._tables()
        version = self._version()
        if version is None:
            if tables:
                shown = ", ".join(sorted(tables)[:4])
                raise GameStoreError(f"not a kahuna-serve game store (an SQLite file with other tables: {shown})")
            return
        missing = _TABLES - tables
        if missing:  # a results store has a schema_version table too
            raise GameStoreError(f"not a kahuna-serve game store (missing tables: {', '.join(sorted(missing))})")
        if version > SCHEMA_VERSION:
            raise GameStoreError(
                f"written by a newer kahuna-serve (schema {version}; this one reads {SCHEMA_VERSION}): "
                "upgrade kahuna-rl"
            )
        if version < 1:
            raise GameStoreError(f"not a kahuna-serve game store (schema version {version})")

    def _transaction(self) -> Any:
        return transaction(self._db)  # the results store's: BEGIN IMMEDIATE, COMMIT, ROLLBACK on any error

    def _write(self, work: Callable[[], None]) -> None:
        """``work`` in one transaction; a failure is rolled back whole and raised as :func:`write_failure`."""
        try:
            with self._lock:
                try:
                    with self._transaction():
                        work()
                except sqlite3.Error:
                    if self._db.in_transaction:  # a COMMIT that failed leaves it open: nothing of it is kept
                        with contextlib.suppress(sqlite3.Error):
                            self._db.execute("ROLLBACK")
                    raise
        except sqlite3.Error as error:
            raise write_failure(error, self._no_room()) from None

    def _no_room(self) -> str | None:
        """Why a file of the store could not grow, when it is so: the disk, the process's file size limit (a write
        past it is an I/O error to SQLite) or the store's own ``max_bytes``; ``None`` when none of them is."""
        size_limit = f"the game store reached its size limit ({self.max_bytes // 1024} kB)"
        if self.path is None:
            return size_limit
        try:
            stats = os.statvfs(self.path.parent)
            if stats.f_bavail * stats.f_frsize < FREE_SPACE_MARGIN:
                return "disk full"
            files = (self.path, self.path.with_name(self.path.name + "-wal"))
            largest = max((path.stat().st_size for path in files if path.exists()), default=0)
        except (OSError, AttributeError):
            return None
        if resource is not None:
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            if limit != resource.RLIM_INFINITY and largest >= limit - FREE_SPACE_MARGIN:
                return "the server's file size limit (ulimit -f) was reached"
        return size_limit if largest >= self.max_bytes - FREE_SPACE_MARGIN else None

    # ------------------------------------------------------------------------------------------ games
    def save(self, game: StoredGame, keep: Sequence[str] = ()) -> list[str]:
        """Insert or update ``game`` (one transaction); a new game beyond :attr:`max_games` drops old ones.

        Returns the ids of the games dropped to make room.  ``keep``: ids that must not be dropped (the
        games being computed).  Raises :class:`GameStoreError` (503, the cause in words, without the path)
        when there is no room or the file cannot be written; then nothing was written.
        """
        if game.status not in STATUSES:
            raise ValueError(f"a stored game's status must be one of {', '.join(STATUSES)}, got {game.status!r}")
        now = self.clock()
        created = game.created or now
        row = (
            game.id,
            game.owner,
            game.client,
            game.opponent,
            int(game.seat),
            str(int(game.seed)),
            json.dumps(game.config, sort_keys=True),
            json.dumps([int(a) for a in game.actions]),
            json.dumps(game.undos),
            game.status,
            created,
            now,
        )

        dropped: list[str] = []

        def work() -> None:
            known = self._db.execute("SELECT 1 FROM web_games WHERE id = ?", (game.id,)).fetchone()
            if known is None:
                dropped[:] = self._make_room(set(keep) | {game.id}, now)
            self._db.execute(
                f"INSERT INTO web_games ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET owner = excluded.owner, actions = excluded.actions, "
                "undos = excluded.undos, status = excluded.status, updated = excluded.updated",
                row,
            )

        self._write(work)
        game.created, game.updated = created, now
        return dropped

    def _make_room(self, keep: set[str], now: float) -> list[str]:
        """Drop games nobody can miss until a new one fits (see the module docstring), their ids; no room: 503."""
        count = self._db.execute("SELECT COUNT(*) FROM web_games").fetchone()[0]
        if count < self.max_games:
            return []
        rows = self._db.execute(
            "SELECT id FROM web_games WHERE (status != 'playing' AND updated < ?) OR (status = 'playing' "
            "AND updated < ?) ORDER BY updated LIMIT ?",
            (now - self.retention_seconds, now - self.idle_seconds, count - self.max_games + 1 + len(keep)),
        ).fetchall()
        victims = [gid for (gid,) in rows if gid not in keep][: count - self.max_games + 1]
        if count - len(victims) >= self.max_games:
            raise GameStoreError(
                f"no room for a new game: the server keeps {self.max_games} games and none can be dropped yet "
                f"(a finished game is kept {_duration(self.retention_seconds)}, one in progress until idle "
                f"{_duration(self.idle_seconds)}); try again later"
            )
        self._db.executemany("DELETE FROM web_games WHERE id = ?", [(gid,) for gid in victims])
        return victims

    def load(self, game_id: str) -> StoredGame | None:
        """The stored game ``game_id``, ``None`` if there is none; :class:`GameStoreError` (no path) if unreadable."""
        try:
            with self._lock:
                row = self._db.execute(f"SELECT {_COLUMNS} FROM web_games WHERE id = ?", (game_id,)).fetchone()
        except sqlite3.Error:
            raise GameStoreError("the server's game store cannot be read") from None
        if row is None:
            return None
        try:
            return StoredGame(
                id=row[0],
                owner=row[1],
                client=row[2],
                opponent=row[3],
                seat=int(row[4]),
                seed=int(row[5]),
                config=json.loads(row[6]),
                actions=[int(a) for a in json.loads(row[7])],
                undos=list(json.loads(row[8])),
                status=row[9],
                created=float(row[10]),
                updated=float(row[11]),
            )
        except (TypeError, ValueError):
            raise GameStoreError(f"stored game {game_id[:40]!r} is damaged and cannot be rebuilt", 422) from None

    def delete(self, game_id: str) -> None:
        """Forget the stored game ``game_id`` (a game whose opening could not be computed); nothing if unknown."""
        self._write(lambda: self._db.execute("DELETE FROM web_games WHERE id = ?", (game_id,)))

    def count(self) -> int:
        """Games stored."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM web_games").fetchone()[0])

    def owned(self, owner: str, status: str | None = None, limit: int = -1) -> list[str]:
        """The ids of ``owner``'s games (with ``status`` only, if given), the least recently touched first.

        At most ``limit`` of them (-1: all).  :class:`GameStoreError` (503, no path) if the file cannot be read.
        """
        query = "SELECT id FROM web_games WHERE owner = ? AND (? IS NULL OR status = ?) ORDER BY updated LIMIT ?"
        try:
            with self._lock:
                return [gid for (gid,) in self._db.execute(query, (owner, status, status, limit)).fetchall()]
        except sqlite3.Error:
            raise GameStoreError("the server's game store cannot be read") from None

    def abandon(self, game_id: str) -> None:
        """Mark the stored game ``game_id`` abandoned if it is in progress (one not held in memory)."""
        self._write(
            lambda: self._db.execute(
                "UPDATE web_games SET status = 'abandoned', updated = ? WHERE id = ? AND status = 'playing'",
                (self.clock(), game_id),
            )
        )

    def close(self) -> None:
        """Close the file (everything written is committed already)."""
        with self._lock:
            self._db.close()


def open_data_folder(folder: str | Path, **limits: Any) -> GameStore:
    """The game store of ``kahuna-serve --data FOLDER`` (created when missing); :class:`GameStoreError` if unusable.

    ``limits``: the :class:`GameStore` bounds (``max_games``, ``retention_seconds``, ``idle_seconds``, ...).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise GameStoreError(f"{folder}: is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise GameStoreError(f"{folder}: cannot create the data folder: {error.strerror or error}") from None
    return GameStore(folder / STORE_FILE, **limits)


_UNWRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")
"""SQLite error names that mean the file (or its folder) cannot be written."""


def _unwritable(error: sqlite3.Error) -> bool:
    return str(getattr(error, "sqlite_errorname", "")).startswith(_UNWRITABLE)


def write_failure(error: sqlite3.Error, no_room: str | None = None) -> GameStoreError:
    """Why a write failed, in words and without the path (``no_room``: why a file could not grow, if it could not)."""
    name = str(getattr(error, "sqlite_errorname", ""))
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) and no_room is not None:
        cause = no_room
    elif name.startswith("SQLITE_FULL"):
        cause = "disk full"
    elif _unwritable(error):
        cause = "the game store is read-only"
    elif name.startswith("SQLITE_IOERR"):
        cause = "the disk could not be written (I/O error)"
    elif name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        cause = "the game store is locked by another program"
    elif name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        cause = "the game store is damaged"
    else:
        cause = f"the game store cannot be written ({_line(error)})"
    return GameStoreError(cause)


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:g} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:g} hours"
    return f"{seconds / 60:g} minutes"


def _line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
