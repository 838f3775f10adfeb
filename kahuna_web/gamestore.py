"""The games of ``kahuna-serve``, kept in one SQLite file (``DATA/games.sqlite``) so that they outlive the server.

A game is stored as what rebuilds it: its id, the client address that
started it, its settings (the opponent's entrant string, the person's seat,
the play seed, the rule options), the actions played in order, the undo
marks (where the person took moves back, and which), its status (``playing``,
``over``, ``abandoned``) and two timestamps.  The rules engine is
deterministic, so replaying the actions from the seed gives the game back
exactly (:class:`kahuna_web.sessions.PlaySession` does it); the server holds
a few games in memory and reloads any other from here when it is asked for.

Habits of :mod:`arena.store`, the results store: the file is in WAL mode;
every write is one short ``BEGIN IMMEDIATE`` transaction (a killed server
loses at most the move it was writing, never leaves half a row); a
``schema_version`` table names the layout, and a file that is not SQLite, an
SQLite file of another program (a results store, say) or a newer layout is
one :class:`GameStoreError` line at start, left untouched.  Those messages
name the file: they are for the person starting the server.  What a web
client may see of a failure says neither the path nor the file's content
(:meth:`GameStore.save` and :meth:`GameStore.load` raise messages without them).

Bounded: at most ``max_games`` games (:data:`MAX_STORED_GAMES`; beyond it
the least recently touched finished game is dropped, then the least recently
touched of any kept out of memory) and at most ``max_bytes`` on disk
(:data:`MAX_STORE_BYTES`, SQLite's ``max_page_count``; a full file refuses
new games and moves are still played, unsaved).  ``path=None`` keeps the
games in memory only (a server without ``--data``, the tests).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.store import transaction

SCHEMA_VERSION = 1
"""The layout this module writes."""
STORE_FILE = "games.sqlite"
"""The file's name inside ``kahuna-serve --data DIR``."""
MAX_STORED_GAMES = 10_000
"""Games kept at most (the least recently touched finished ones go first)."""
MAX_STORE_BYTES = 256 * 1024 * 1024
"""Largest size of the file (a game is about 1 kB; 10,000 of them fit many times over)."""
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
_TABLES = {"schema_version", "web_games"}


class GameStoreError(ValueError):
    """The game store cannot be used (not one, newer, unwritable, full); the message is one line."""

    def __init__(self, message: str, status: int = 503) -> None:
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class StoredGame:
    """One stored game: everything that rebuilds it (see the module docstring).

    Attributes:
        id: the game's id (unguessable, from :func:`secrets.token_urlsafe`).
        client: the address of the client that started it.
        opponent: the opponent's entrant string.
        seat: the person's seat.
        seed: the play seed (:func:`arena.play.game_seeds` derives the deal's and the agent's).
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


class GameStore:
    """The stored games (see the module docstring); safe to use from several threads.

    ``GameStore(path)`` opens ``path`` (creating it and its folder), ``GameStore(None)`` keeps games in memory.
    Raises :class:`GameStoreError` naming the file when it cannot be used.
    """

    def __init__(
        self, path: str | Path | None, max_games: int = MAX_STORED_GAMES, max_bytes: int = MAX_STORE_BYTES
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.max_games = max_games
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
            if self._version() is None:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

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

    # ------------------------------------------------------------------------------------------ games
    def save(self, game: StoredGame, keep: Sequence[str] = ()) -> None:
        """Insert or update ``game`` (one transaction); a new game beyond :attr:`max_games` drops an old one.

        ``keep``: ids that must not be dropped (the games held in memory).
        Raises :class:`GameStoreError` (503, without the path) when the file is full or cannot be written.
        """
        if game.status not in STATUSES:
            raise ValueError(f"a stored game's status must be one of {', '.join(STATUSES)}, got {game.status!r}")
        now = time.time()
        game.created = game.created or now
        game.updated = now
        row = (
            game.id,
            game.client,
            game.opponent,
            int(game.seat),
            str(int(game.seed)),
            json.dumps(game.config, sort_keys=True),
            json.dumps([int(a) for a in game.actions]),
            json.dumps(game.undos),
            game.status,
            game.created,
            game.updated,
        )
        try:
            with self._lock, self._transaction():
                known = self._db.execute("SELECT 1 FROM web_games WHERE id = ?", (game.id,)).fetchone()
                if known is None:
                    self._make_room(set(keep) | {game.id})
                self._db.execute(
                    "INSERT INTO web_games (id, client, opponent, seat, seed, config, actions, undos, status, "
                    "created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                    "actions = excluded.actions, undos = excluded.undos, status = excluded.status, "
                    "updated = excluded.updated",
                    row,
                )
        except sqlite3.Error as error:
            full = "full" in str(error).lower()
            reason = "it is full" if full else "it cannot be written"
            raise GameStoreError(f"the game could not be saved in the server's game store: {reason}") from None

    def _make_room(self, keep: set[str]) -> None:
        count = self._db.execute("SELECT COUNT(*) FROM web_games").fetchone()[0]
        while count >= self.max_games:
            rows = self._db.execute(
                "SELECT id FROM web_games ORDER BY status = 'playing', updated LIMIT ?", (len(keep) + 1,)
            ).fetchall()
            victim = next((gid for (gid,) in rows if gid not in keep), None)
            if victim is None:
                return
            self._db.execute("DELETE FROM web_games WHERE id = ?", (victim,))
            count -= 1

    def load(self, game_id: str) -> StoredGame | None:
        """The stored game ``game_id``, ``None`` if there is none; :class:`GameStoreError` (no path) if unreadable."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT id, client, opponent, seat, seed, config, actions, undos, status, created, updated "
                    "FROM web_games WHERE id = ?",
                    (game_id,),
                ).fetchone()
        except sqlite3.Error:
            raise GameStoreError("the server's game store cannot be read") from None
        if row is None:
            return None
        try:
            return StoredGame(
                id=row[0],
                client=row[1],
                opponent=row[2],
                seat=int(row[3]),
                seed=int(row[4]),
                config=json.loads(row[5]),
                actions=[int(a) for a in json.loads(row[6])],
                undos=list(json.loads(row[7])),
                status=row[8],
                created=float(row[9]),
                updated=float(row[10]),
            )
        except (TypeError, ValueError):
            raise GameStoreError(f"stored game {game_id[:40]!r} is damaged and cannot be rebuilt", 422) from None

    def delete(self, game_id: str) -> None:
        """Forget the stored game ``game_id`` (a game whose opening could not be computed); nothing if unknown."""
        try:
            with self._lock, self._transaction():
                self._db.execute("DELETE FROM web_games WHERE id = ?", (game_id,))
        except sqlite3.Error:
            raise GameStoreError("the server's game store cannot be written") from None

    def count(self) -> int:
        """Games stored."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM web_games").fetchone()[0])

    def close(self) -> None:
        """Close the file (everything written is committed already)."""
        with self._lock:
            self._db.close()


def open_data_folder(folder: str | Path) -> GameStore:
    """The game store of ``kahuna-serve --data FOLDER`` (created when missing); :class:`GameStoreError` if unusable."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise GameStoreError(f"{folder}: is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise GameStoreError(f"{folder}: cannot create the data folder: {error.strerror or error}") from None
    return GameStore(folder / STORE_FILE)


def _line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
