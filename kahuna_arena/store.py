"""The results store: every evaluation game ever played, in one SQLite file (``results.sqlite``).

``kahuna-eval --db FILE``, ``kahuna-ratings --play``, ``benchmarks/ratings.sh``,
training's periodic and final evaluations (``eval.db``) and ``kahuna-exploit``'s
final match write their games here as they finish; ``kahuna-ratings`` reads
them into one ladder.  Nothing else writes the file.

Design (docs/EVALUATION.md, "The results store"):

* **Standard library only** (:mod:`sqlite3`); of the project it imports only
  :mod:`kahuna_env`, so training may use it as it uses :mod:`kahuna_arena.stats`.
* **Concurrent writers.** The file is in WAL mode with a generous busy
  timeout; every write is one short ``BEGIN IMMEDIATE`` transaction, so two
  evaluations writing into one file wait for each other instead of failing.
* **Kill safety.** One transaction per game: a process killed with SIGKILL
  loses at most the games it had not yet committed; the file stays readable
  and holds no partial row.
* **Copies hold every game.** Each writer checkpoints after every commit
  (``wal_autocheckpoint`` 1 page), so the ``.sqlite`` file alone holds every
  committed game even when its writer was killed (the ``-wal`` file matters
  only while a reader blocks the checkpoint).
* **Versioned schema.** ``schema_version`` holds the layout's version;
  opening an older store migrates it in one transaction (:data:`MIGRATIONS`),
  a newer one is refused.  A file that is not SQLite, an SQLite file of
  another program, one without tables (a copy missing its ``-wal``) or a
  store holding anything its layout does not (a trigger, a view, a changed
  table: SQL this program did not write, run on every insert) is one
  :class:`StoreError` line and is left untouched: nothing is written, not
  even a schema, into a file that is not already a results store.  A new
  store is built under a temporary name and linked into place whole.
* **Failures are one line.** A write that fails (a full disk, a file size
  limit, a lock held too long) is a :class:`StoreError` naming the file and
  the cause, never a bare :mod:`sqlite3` error.
* **Entrants by content.** An entrant is its *key* — ``sha256:<hex>`` of an
  agent file (or of a training network's weights), ``baseline:<spec>`` for
  a baseline — plus a display label; the same file under two paths is one
  entrant, two different files under one path are two.

Tables (version 3):

``entrants(id, key, label, kind, run, run_update, decisions)``
    ``kind``: ``baseline``, ``file``, ``search`` or ``training``; ``run``,
    ``run_update``, ``decisions`` (learner decisions so far): provenance of a
    network from a training run (``NULL`` otherwise).
``sessions(id, source, started, command, rules, base_seed, sampled, imported, note)``
    one evaluation: the tool that played it (``kahuna-eval``, ``kahuna-sprt``,
    ``kahuna-ratings``, ``training``, ``kahuna-exploit``, ``import``), the rules
    (``KahunaConfig.to_dict()`` as JSON), its base seed.
``games(id, session, seat0, seat1, game_index, game_seed, agent_seed0, agent_seed1, choice_seed,
result, score0, score1, moves, seconds_per_move0, seconds_per_move1, finished)``
    one game: the entrants of seat 0 and seat 1, every seed (as decimal text:
    they are 64-bit unsigned), ``result`` = seat 0's score (1, 0.5, 0), the
    final scores, the number of actions and each seat's mean seconds per move.
``tallies(id, session, a, b, wins, draws, losses, games_key, first_game, game_count)``
    aggregate results imported from an older report (``kahuna-ratings
    --import-report``), whose games were not kept one by one; always in a
    session with ``imported = 1`` and ``source = 'import'``.  ``games_key``
    names the games' identity (rules, seeds, entrants: not the report's
    bytes) and the tally counts games ``first_game .. first_game +
    game_count - 1`` of that schedule, so a second import of the same games
    adds nothing (``NULL`` for tallies imported before version 3).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kahuna_env.agents.external import plugin_names
from kahuna_env.agents.spec import EntrantSpec, parse_baseline, search_spec, split_search
from kahuna_env.cli import check_input_file

SCHEMA_VERSION = 3
"""The layout this module writes; older stores are migrated on opening."""
OLDEST_READABLE = 2
"""The oldest layout a read-only opening reads as it is (an older one must be migrated first)."""
BUSY_TIMEOUT_SECONDS = 120.0
"""How long a writer waits for another writer's transaction before giving up (generous: a busy machine)."""
ENTRANT_KINDS = ("baseline", "file", "search", "training")
"""What an entrant can be."""

_SCHEMA_V1 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE entrants (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    started REAL NOT NULL,
    command TEXT,
    rules TEXT NOT NULL,
    base_seed INTEGER,
    sampled INTEGER NOT NULL DEFAULT 0,
    note TEXT
);
CREATE TABLE games (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id),
    seat0 INTEGER NOT NULL REFERENCES entrants(id),
    seat1 INTEGER NOT NULL REFERENCES entrants(id),
    game_index INTEGER NOT NULL,
    game_seed TEXT NOT NULL,
    agent_seed0 TEXT,
    agent_seed1 TEXT,
    choice_seed TEXT,
    result REAL NOT NULL CHECK (result IN (0.0, 0.5, 1.0)),
    score0 INTEGER NOT NULL,
    score1 INTEGER NOT NULL,
    moves INTEGER NOT NULL,
    seconds_per_move0 REAL,
    seconds_per_move1 REAL,
    finished REAL NOT NULL,
    CHECK (seat0 != seat1)
);
CREATE INDEX games_by_entrants ON games (seat0, seat1);
"""
"""Version 1, the first layout: games without provenance or imported tallies."""

_MIGRATE_1_TO_2 = """
ALTER TABLE entrants ADD COLUMN run TEXT;
ALTER TABLE entrants ADD COLUMN run_update INTEGER;
ALTER TABLE entrants ADD COLUMN decisions INTEGER;
ALTER TABLE sessions ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
CREATE TABLE tallies (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id),
    a INTEGER NOT NULL REFERENCES entrants(id),
    b INTEGER NOT NULL REFERENCES entrants(id),
    wins INTEGER NOT NULL CHECK (wins >= 0),
    draws INTEGER NOT NULL CHECK (draws >= 0),
    losses INTEGER NOT NULL CHECK (losses >= 0),
    CHECK (a != b)
);
"""
"""Version 1 -> 2: training provenance on entrants; imported aggregate results."""

_MIGRATE_2_TO_3 = """
ALTER TABLE tallies ADD COLUMN games_key TEXT;
ALTER TABLE tallies ADD COLUMN first_game INTEGER;
ALTER TABLE tallies ADD COLUMN game_count INTEGER;
CREATE INDEX tallies_by_games ON tallies (games_key)
"""
"""Version 2 -> 3: imported tallies keyed by the identity of their games (see the module docstring)."""

MIGRATIONS = {1: _MIGRATE_1_TO_2, 2: _MIGRATE_2_TO_3}
"""``MIGRATIONS[v]`` turns a version-``v`` store into version ``v + 1``."""
_TABLES = {"schema_version", "entrants", "sessions", "games"}


class StoreError(ValueError):
    """The store cannot be used: not a results store, a newer schema, unwritable; the message is one line."""


class StoreFailure(StoreError):
    """The store could not be created, opened, read or written (a full disk, a file size limit, a lock held too
    long): a failure of the machine, not of the file; the message names the file and the cause."""


@dataclasses.dataclass(frozen=True)
class Entrant:
    """Who played: identified by ``key`` (content), shown as ``label``.

    Attributes:
        key: ``sha256:<hex>`` (an agent file or a network's weights, ``@mcts:N`` appended for a search),
            ``baseline:<spec>``.
        label: the name shown in tables (the spec as given, or ``run@update``).
        kind: one of :data:`ENTRANT_KINDS`.
        run: training run name (training entrants).
        run_update: the learner's update number when it was evaluated.
        decisions: the learner's decisions (``global_step``) at that update.
    """

    key: str
    label: str
    kind: str
    run: str | None = None
    run_update: int | None = None
    decisions: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key or not isinstance(self.label, str) or not self.label:
            raise ValueError(f"an entrant needs a non-empty key and label, got {self.key!r}, {self.label!r}")
        if self.kind not in ENTRANT_KINDS:
            raise ValueError(f"entrant kind must be one of {', '.join(ENTRANT_KINDS)}, got {self.kind!r}")


@dataclasses.dataclass(frozen=True)
class StoredGame:
    """One finished game as the store keeps it (seat 0's view of the result).

    Attributes:
        game_index: game number within its session's pairing.
        game_seed: the deal's seed.
        result: seat 0's score: 1 win, 0.5 draw, 0 loss.
        score0, score1: final points of seat 0 and seat 1.
        moves: actions played.
        agent_seeds: seeds the agents of seat 0 and seat 1 were reset with (``None`` if not applicable).
        choice_seed: seed of the determinizations handed to search agents (``None`` if not applicable).
        seconds_per_move: mean thinking time per move of seat 0 and seat 1 (``None`` if not measured).
    """

    game_index: int
    game_seed: int
    result: float
    score0: int
    score1: int
    moves: int
    agent_seeds: tuple[int | None, int | None] = (None, None)
    choice_seed: int | None = None
    seconds_per_move: tuple[float | None, float | None] = (None, None)

    def __post_init__(self) -> None:
        if self.result not in (0, 0.5, 1):
            raise ValueError(f"a game's result must be 1, 0.5 or 0 (seat 0's score), got {self.result!r}")


@dataclasses.dataclass(frozen=True)
class ImportedTally:
    """``a``'s aggregate result against ``b``, imported from a report whose games were not kept one by one.

    Attributes:
        a, b: the entrants.
        wins, draws, losses: ``a``'s results.
        games_key: the identity of the pairing's games (its rules, seeds and entrants; ``None``: unknown).
        first_game, game_count: the games of that schedule the tally covers (with the games stored one by
            one at its import): ``first_game .. first_game + game_count - 1``.
    """

    a: Entrant
    b: Entrant
    wins: int
    draws: int
    losses: int
    games_key: str | None = None
    first_game: int | None = None
    game_count: int | None = None


@dataclasses.dataclass(frozen=True)
class PairCount:
    """Summed results of one ordered seat pairing: ``seat0`` scored ``points`` over ``games`` against ``seat1``."""

    seat0: str
    seat1: str
    points: float
    games: int


def baseline_entrant(spec: str) -> Entrant:
    """The entrant of a baseline name (``random``, ``greedy``, ``mcts``, ``mcts:N``; ``mcts`` is ``mcts:200``).

    Keyed by the name's canonical form (``str`` of its :class:`~kahuna_env.agents.spec.EntrantSpec`).
    """
    canonical = parse_baseline(spec, max_simulations=None)
    if canonical is None:
        raise ValueError(f"not a baseline: {spec!r:.60}")
    return Entrant(key=f"baseline:{canonical}", label=spec, kind="baseline")


def entrant_identity(spec: str, shipped: Mapping[str, str | Path], sampled: bool = False) -> Entrant:
    """The results store's identity of an entrant: its content, with ``spec`` as the label.

    A baseline is ``baseline:SPEC`` (``mcts`` and ``mcts:200`` are one
    entrant); an agent file (of any kind) or a shipped agent is ``sha256:`` of
    the file's bytes (the same file under two paths is one entrant); a Python
    agent is ``py:MODULE:ATTR``, or ``py:sha256:<hex of the file>:ATTR`` for
    a file; another package's named agent is ``plugin:NAME``; a search guided by
    an agent appends ``@mcts:N``; a policy that samples its moves appends
    ``#sampled``.  ``shipped``: the agents shipped with the package by name, and
    their files (:data:`kahuna_policy.registry.SHIPPED_AGENTS`: the store imports only
    :mod:`kahuna_env`, so its callers pass them); the other named agents are the
    plugins' (:data:`kahuna_env.agents.external.PLUGINS`).  Raises
    ``FileNotFoundError`` for a missing file.
    """
    entrant = EntrantSpec.parse(spec, named=tuple(dict.fromkeys([*shipped, *plugin_names()])))
    if entrant.kind == "baseline":
        return baseline_entrant(spec)
    if entrant.kind == "python" or (entrant.kind == "named" and entrant.source not in shipped):
        if entrant.kind == "named":
            key = f"plugin:{entrant.source}"
        else:
            target, _, attribute = entrant.source.rpartition(":")
            key = f"py:sha256:{file_sha256(target)}:{attribute}" if target.endswith(".py") else f"py:{entrant.source}"
        if entrant.simulations is not None:
            return Entrant(key=search_spec(key, entrant.simulations), label=spec, kind="search")
        return Entrant(key=f"{key}#sampled" if sampled else key, label=spec, kind="file")
    path = Path(shipped[entrant.source]) if entrant.kind == "named" else Path(entrant.source)
    return content_entrant(spec, file_sha256(path), sampled)


def content_entrant(spec: str, digest: str, sampled: bool = False) -> Entrant:
    """The identity of a network entrant written ``spec`` whose agent file's bytes have the sha256 ``digest``."""
    key = f"sha256:{digest}"
    simulations = split_search(spec)[1]
    if simulations is not None:
        return Entrant(key=search_spec(key, simulations), label=spec, kind="search")
    return Entrant(key=f"{key}#sampled" if sampled else key, label=spec, kind="file")


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (read in chunks: an agent file of any size in bounded memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _seed_text(seed: int | None) -> str | None:
    return None if seed is None else str(int(seed))


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction of ``db``: committed at the end, rolled back on any error.

    (SQLite rolls a transaction back by itself on some errors, a full file for one: then there is
    nothing left to roll back.)  The results store and kahuna-serve's game store both write through it.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class StoreOutdated(StoreError):
    """A read-only opening of a store older than :data:`OLDEST_READABLE` (a writable opening migrates it)."""


class ResultsStore:
    """An open results store.  Use as a context manager, or call :meth:`close`.

    ``ResultsStore(path)`` opens ``path``, creating it (and its folder) when
    missing and migrating an older layout.  Raises :class:`StoreError` (one
    line) for a file that is not a results store, a newer schema, or a path
    that cannot be opened.  ``readonly=True`` never creates or changes the file.
    """

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, expected a results store file")
        try:  # a FIFO or a device: SQLite would block on it, or read a device as a database
            check_input_file(self.path, "a results store")
        except ValueError as error:
            raise StoreError(str(error)) from None
        if readonly and not self.path.is_file():
            raise StoreError(f"{self.path}: no such results store")
        if not readonly and not (self.path.exists() or self.path.is_symlink()):
            self._create()
        self._wal_note = _wal_note(self.path)  # before SQLite makes a -wal file beside it
        try:
            uri = f"{self.path.resolve().as_uri()}?mode={'ro' if readonly else 'rw'}"
            self._db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise StoreFailure(
                f"{self.path}: cannot open the results store: {failure_cause(error, self.path)}"
            ) from None
        try:
            self._prepare()
        except sqlite3.DatabaseError as error:
            self._db.close()
            if _not_a_database(error):
                raise StoreError(f"{self.path}: not a results store ({_line(error)}{self._wal_note})") from None
            raise StoreFailure(
                f"{self.path}: cannot open the results store: {failure_cause(error, self.path)}"
            ) from None
        except StoreError:
            self._db.close()
            raise

    # ------------------------------------------------------------------------------------------ opening
    def _create(self) -> None:
        """Build a new store under a temporary name in the folder and link it into place whole.

        So a file at :attr:`path` is always a complete store with its schema
        checkpointed into the file (never a header whose tables are in a
        ``-wal`` file).  When another process creates the store meanwhile,
        its file is kept and this one dropped.
        """
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{time.monotonic_ns()}.new")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(temporary, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode = WAL")
                with transaction(db):
                    _build_layout(db, SCHEMA_VERSION)
                    db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            finally:
                db.close()  # the last connection: the tables are checkpointed into the file, the -wal removed
            with contextlib.suppress(FileExistsError):  # another process created the store meanwhile: that one is used
                os.link(temporary, self.path)
        except (OSError, sqlite3.Error) as error:
            raise StoreFailure(
                f"{self.path}: cannot create the results store: {failure_cause(error, self.path)}"
            ) from None
        finally:
            for leftover in ("", "-wal", "-shm", "-journal"):
                Path(f"{temporary}{leftover}").unlink(missing_ok=True)

    def _prepare(self) -> None:
        self._db.execute("PRAGMA foreign_keys = ON")
        version = self._check_layout()  # before anything is written: a file of another program stays as it was
        if self.readonly:
            if version < OLDEST_READABLE:
                raise StoreOutdated(
                    f"{self.path}: schema version {version} is older than {OLDEST_READABLE}; "
                    "any kahuna-eval --db or kahuna-ratings --db opening it migrates it"
                )
            return
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA wal_autocheckpoint = 1")  # the .sqlite file alone holds every committed game
        if version == SCHEMA_VERSION:
            return
        with self._transaction():
            version = self._check_layout()  # again inside the lock: another process may have migrated it meanwhile
            while version < SCHEMA_VERSION:
                _run_script(self._db, MIGRATIONS[version])
                version += 1
                self._db.execute("UPDATE schema_version SET version = ?", (version,))

    def _check_layout(self) -> int:
        """The store's layout version, after checking that the file holds exactly a results store of that layout.

        Refuses (:class:`StoreError`, nothing written) an SQLite file without
        tables or with other tables, a newer version, and any object a
        results store does not have (a trigger, a view, an index, a table
        defined otherwise): its SQL would run inside this program.
        """
        rows = self._db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite~_%' ESCAPE '~'"
        ).fetchall()
        objects = {name: (kind, sql) for kind, name, sql in rows}
        if not objects:
            if self.path.stat().st_size == 0:
                raise StoreError(f"{self.path}: not a results store (an empty file; a new store is made where none is)")
            raise StoreError(f"{self.path}: not a results store (an SQLite file without tables{self._wal_note})")
        if objects.get("schema_version", ("",))[0] != "table":
            tables = sorted(name for name, (kind, _) in objects.items() if kind == "table")
            shown = ", ".join(repr(name)[1:-1][:40] for name in tables[:4]) or "none"
            raise StoreError(f"{self.path}: not a results store (an SQLite file with other tables: {shown})")
        version = self._version()  # a plain table's rows: reading them runs no SQL of the file's
        self._check_version(version)
        for name, (kind, _) in objects.items():
            if kind in ("trigger", "view"):
                raise StoreError(
                    f"{self.path}: not a results store as kahuna-rl writes it: it holds the {kind} {_shown(name)}, "
                    "SQL this program did not write (refused)"
                )
        expected = _layout(version)
        for name, (kind, sql) in objects.items():
            if name not in expected:
                raise StoreError(
                    f"{self.path}: not a results store as kahuna-rl writes it: it holds the {kind} {_shown(name)}, "
                    f"which a version-{version} store does not have (refused)"
                )
            if expected[name] != (kind, _normalized(sql)):
                raise StoreError(
                    f"{self.path}: not a results store as kahuna-rl writes it: its {kind} {_shown(name)} "
                    f"is defined otherwise than a version-{version} store's (refused)"
                )
        missing = sorted(name for name, (kind, _) in expected.items() if kind == "table" and name not in objects)
        if missing:
            raise StoreError(f"{self.path}: not a results store (missing tables: {', '.join(missing)})")
        return version

    def _version(self) -> int:
        rows = self._db.execute("SELECT version FROM schema_version").fetchall()
        if len(rows) != 1 or not isinstance(rows[0][0], int) or isinstance(rows[0][0], bool):
            raise StoreError(f"{self.path}: not a results store (a damaged schema_version table)")
        return rows[0][0]

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer version (schema {version}; this program reads up to "
                f"{SCHEMA_VERSION}): upgrade kahuna-rl"
            )
        if version < 1:
            raise StoreError(f"{self.path}: not a results store (schema version {version})")

    def _transaction(self) -> Any:
        return transaction(self._db)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction; a failure of SQLite (a full disk, a lock held too long) is one :class:`StoreError`."""
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        try:
            with self._transaction():
                yield
        except sqlite3.Error as error:
            raise StoreFailure(f"results store {self.path}: not saved: {failure_cause(error, self.path)}") from None

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a query; a failure of SQLite (an I/O error) is one :class:`StoreError`."""
        try:
            return self._db.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.Error as error:
            raise StoreFailure(f"results store {self.path}: cannot read: {failure_cause(error, self.path)}") from None

    def close(self) -> None:
        """Close the connection (everything written is already committed)."""
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        """The layout version of the open file."""
        return int(self._read("SELECT version FROM schema_version")[0][0])

    # ------------------------------------------------------------------------------------------ writing
    def entrant_id(self, entrant: Entrant) -> int:
        """The row id of ``entrant`` (added on first sight; a training entrant's provenance is kept from then)."""
        with self._write():
            return self._entrant_id(entrant)

    def _entrant_id(self, entrant: Entrant) -> int:
        self._db.execute(
            "INSERT OR IGNORE INTO entrants (key, label, kind, run, run_update, decisions) VALUES (?, ?, ?, ?, ?, ?)",
            (entrant.key, entrant.label, entrant.kind, entrant.run, entrant.run_update, entrant.decisions),
        )
        if entrant.run is not None:  # a file first seen by kahuna-eval, later evaluated by its run
            self._db.execute(
                "UPDATE entrants SET run = ?, run_update = ?, decisions = ? WHERE key = ? AND run IS NULL",
                (entrant.run, entrant.run_update, entrant.decisions, entrant.key),
            )
        return int(self._db.execute("SELECT id FROM entrants WHERE key = ?", (entrant.key,)).fetchone()[0])

    def start_session(
        self,
        source: str,
        rules: dict[str, Any],
        base_seed: int | None = None,
        sampled: bool = False,
        command: str | None = None,
        note: str | None = None,
        imported: bool = False,
    ) -> int:
        """Record the start of an evaluation; returns its session id for :meth:`add_game`."""
        with self._write():
            return self._start_session(source, rules, base_seed, sampled, command, note, imported)

    def _start_session(
        self,
        source: str,
        rules: dict[str, Any],
        base_seed: int | None,
        sampled: bool,
        command: str | None,
        note: str | None,
        imported: bool,
    ) -> int:
        if not isinstance(source, str) or not source:
            raise ValueError(f"a session needs its source tool's name, got {source!r}")
        if base_seed is not None and (
            isinstance(base_seed, bool) or not isinstance(base_seed, int) or not 0 <= base_seed < 2**63
        ):
            raise ValueError(f"a session's base seed must be an integer in [0, 2**63 - 1], got {base_seed!r}")
        cursor = self._db.execute(
            "INSERT INTO sessions (source, started, command, rules, base_seed, sampled, note, imported) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                source,
                time.time(),
                command,
                json.dumps(rules, sort_keys=True),
                base_seed,
                int(sampled),
                note,
                int(imported),
            ),
        )
        return int(cursor.lastrowid)

    def add_game(self, session: int, seat0: Entrant, seat1: Entrant, game: StoredGame) -> None:
        """Write one finished game in its own transaction (a kill after this returns never loses it)."""
        with self._write():
            ids = self._entrant_id(seat0), self._entrant_id(seat1)
            if ids[0] == ids[1]:
                raise ValueError(f"a game needs two different entrants, got {seat0.key} in both seats")
            self._db.execute(
                "INSERT INTO games (session, seat0, seat1, game_index, game_seed, agent_seed0, agent_seed1, "
                "choice_seed, result, score0, score1, moves, seconds_per_move0, seconds_per_move1, finished) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    ids[0],
                    ids[1],
                    game.game_index,
                    _seed_text(game.game_seed),
                    _seed_text(game.agent_seeds[0]),
                    _seed_text(game.agent_seeds[1]),
                    _seed_text(game.choice_seed),
                    float(game.result),
                    int(game.score0),
                    int(game.score1),
                    int(game.moves),
                    game.seconds_per_move[0],
                    game.seconds_per_move[1],
                    time.time(),
                ),
            )

    def add_tally(self, session: int, a: Entrant, b: Entrant, wins: int, draws: int, losses: int) -> None:
        """Write ``a``'s aggregate result against ``b`` (an imported report's pairing; see the module docstring)."""
        with self._write():
            imported = self._db.execute("SELECT imported FROM sessions WHERE id = ?", (session,)).fetchone()
            if imported is None or not imported[0]:
                raise ValueError("tallies belong to an imported session (start_session(..., imported=True))")
            self._add_tally(session, ImportedTally(a, b, wins, draws, losses))

    def add_import(
        self,
        rules: dict[str, Any],
        tallies: Sequence[ImportedTally],
        base_seed: int | None,
        sampled: bool,
        command: str,
        note: str,
    ) -> int:
        """Write an imported report: one session (``source = 'import'``) and its tallies, in one transaction.

        All or nothing: a failure leaves the store as it was.  Returns the session id.
        """
        with self._write():
            session = self._start_session("import", rules, base_seed, sampled, command, note, imported=True)
            for tally in tallies:
                self._add_tally(session, tally)
            return session

    def _add_tally(self, session: int, tally: ImportedTally) -> None:
        counts = (("wins", tally.wins), ("draws", tally.draws), ("losses", tally.losses))
        coverage = (("first_game", tally.first_game), ("game_count", tally.game_count))
        for name, value in (*counts, *coverage):
            if (value is not None or name in ("wins", "draws", "losses")) and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        ids = self._entrant_id(tally.a), self._entrant_id(tally.b)
        if ids[0] == ids[1]:
            raise ValueError(f"a tally needs two different entrants, got {tally.a.key} twice")
        self._db.execute(
            "INSERT INTO tallies (session, a, b, wins, draws, losses, games_key, first_game, game_count) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session,
                ids[0],
                ids[1],
                tally.wins,
                tally.draws,
                tally.losses,
                tally.games_key,
                tally.first_game,
                tally.game_count,
            ),
        )

    # ------------------------------------------------------------------------------------------ reading
    def entrants(self) -> list[Entrant]:
        """Every entrant, in the order first seen."""
        rows = self._read("SELECT key, label, kind, run, run_update, decisions FROM entrants ORDER BY id")
        return [Entrant(*row) for row in rows]

    def imported_tallies(self, games_key: str) -> list[ImportedTally]:
        """The tallies imported for the games named ``games_key`` (their coverage and counts), oldest first."""
        rows = self._read(
            "SELECT ea.key, ea.label, ea.kind, eb.key, eb.label, eb.kind, t.wins, t.draws, t.losses, t.first_game, "
            "t.game_count FROM tallies t JOIN entrants ea ON ea.id = t.a JOIN entrants eb ON eb.id = t.b "
            "WHERE t.games_key = ? ORDER BY t.id",
            (games_key,),
        )
        return [ImportedTally(Entrant(*row[0:3]), Entrant(*row[3:6]), *row[6:9], games_key, *row[9:11]) for row in rows]

    def game_count(self, session: int | None = None) -> int:
        """Games stored (imported tallies not included); with ``session``, those of that session only."""
        if session is None:
            return int(self._read("SELECT COUNT(*) FROM games")[0][0])
        return int(self._read("SELECT COUNT(*) FROM games WHERE session = ?", (session,))[0][0])

    def pair_counts(self, rules: dict[str, Any] | None = None) -> list[PairCount]:
        """Summed results per ordered (seat 0, seat 1) pairing of entrant keys, imported tallies included.

        A game played twice with every seed and both entrants the same (an
        evaluation repeated with the same ``--seed``) is counted once: it is
        the same game, not new evidence.  ``rules`` keeps only the sessions
        played under those rule options.
        """
        rules_text = None if rules is None else json.dumps(rules, sort_keys=True)
        games = self._read(
            """
            SELECT e0.key, e1.key, SUM(result), COUNT(*) FROM (
                SELECT g.seat0, g.seat1, MIN(g.result) AS result FROM games g JOIN sessions s ON s.id = g.session
                WHERE ? IS NULL OR s.rules = ?
                GROUP BY g.seat0, g.seat1, s.rules, g.game_seed, g.agent_seed0, g.agent_seed1, g.choice_seed,
                    CASE WHEN g.agent_seed0 IS NULL THEN g.id END
            ) d JOIN entrants e0 ON e0.id = d.seat0 JOIN entrants e1 ON e1.id = d.seat1
            GROUP BY d.seat0, d.seat1 ORDER BY d.seat0, d.seat1
            """,
            (rules_text, rules_text),
        )
        tallies = self._read(
            """
            SELECT ea.key, eb.key, SUM(t.wins + 0.5 * t.draws), SUM(t.wins + t.draws + t.losses)
            FROM tallies t JOIN sessions s ON s.id = t.session
            JOIN entrants ea ON ea.id = t.a JOIN entrants eb ON eb.id = t.b
            WHERE ? IS NULL OR s.rules = ?
            GROUP BY t.a, t.b ORDER BY t.a, t.b
            """,
            (rules_text, rules_text),
        )
        return [PairCount(a, b, float(points), int(n)) for a, b, points, n in [*games, *tallies]]

    def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a read-only ``SELECT`` (for reports and tests)."""
        if not sql.lstrip().upper().startswith("SELECT"):
            raise ValueError("query() runs SELECT statements only")
        return self._read(sql, parameters)


def _line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run the statements of ``script`` inside the current transaction (``executescript`` would commit)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _build_layout(db: sqlite3.Connection, version: int) -> None:
    """Create the tables of a version-``version`` store: version 1's, then each migration (as older stores got them)."""
    _run_script(db, _SCHEMA_V1)
    for older in range(1, version):
        _run_script(db, MIGRATIONS[older])


def _normalized(sql: str | None) -> str | None:
    return None if sql is None else " ".join(sql.split())


@functools.cache
def _layout(version: int) -> dict[str, tuple[str, str | None]]:
    """Every object of a version-``version`` store: name -> (type, its SQL, whitespace normalized).

    Built the way :class:`ResultsStore` builds and migrates stores, so a store it wrote matches exactly.
    """
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _build_layout(db, version)
        rows = db.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite~_%' ESCAPE '~'")
        return {name: (kind, _normalized(sql)) for kind, name, sql in rows.fetchall()}
    finally:
        db.close()


def _shown(name: str) -> str:
    """A name read from a file, quoted and cut short for a one-line message (control characters escaped)."""
    quoted = repr(name)
    return quoted if len(quoted) <= 42 else quoted[:38] + "...'"


_SQLITE_CORRUPT, _SQLITE_NOTADB, _SQLITE_FULL, _SQLITE_IOERR = 11, 26, 13, 10


def _not_a_database(error: sqlite3.Error) -> bool:
    """Whether SQLite's ``error`` says the file is no database (or a damaged one), not that it could not be used."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:  # Python before 3.11: by the message
        return "not a database" in str(error) or "malformed" in str(error)
    return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _wal_note(path: Path) -> str:
    """``; ...`` when ``path`` is an SQLite file in WAL mode with no (or an empty) ``-wal`` file beside it, else ``""``.

    Such a file is often a copy of a store in use (or of one whose writer was
    killed) made without its ``-wal`` file, where the newest content is.
    """
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError:
        return ""
    wal_mode = header.startswith(b"SQLite format 3\x00") and len(header) >= 20 and header[18:20] == b"\x02\x02"
    try:
        wal_size = Path(f"{path}-wal").stat().st_size  # an empty one is what a read-only opening leaves
    except OSError:
        wal_size = 0
    if not wal_mode or wal_size:
        return ""
    return (
        f"; in WAL mode without {path.name}-wal beside it: if this is a copy of a store, its content is in "
        "that -wal file, copy it too"
    )


def failure_cause(error: BaseException, path: Path) -> str:
    """What went wrong writing or opening the file ``path``, in one line: the error, and what the disk says.

    A failed write (SQLite's "disk I/O error" or "database or disk is full",
    or an ``OSError``) adds the file size limit (``ulimit -f``) when there is
    one and the free space of the file's disk when it is nearly full, so the
    message names the true cause.
    """
    text = error.strerror if isinstance(error, OSError) and error.strerror else _line(error)
    code = getattr(error, "sqlite_errorcode", None)
    failed_write = isinstance(error, OSError) or (code is not None and code & 0xFF in (_SQLITE_FULL, _SQLITE_IOERR))
    if not failed_write:
        return text
    notes = []
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY:
            notes.append(f"the file size limit (ulimit -f) is {limit} bytes")
    except (ImportError, OSError, ValueError):
        pass
    folder = path.parent if str(path.parent) else Path(".")
    try:
        stats = os.statvfs(folder)
        free = stats.f_bavail * stats.f_frsize
        if free < 1 << 20:
            notes.append(f"the disk holding it has {free} bytes free")
    except (AttributeError, OSError):
        pass
    return f"{text} ({'; '.join(notes)})" if notes else text
