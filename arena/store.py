"""The results store: every evaluation game ever played, in one SQLite file (``results.sqlite``).

``kahuna-eval --db FILE``, ``kahuna-ratings --play``, ``benchmarks/ratings.sh``,
training's periodic and final evaluations (``eval.db``) and ``kahuna-exploit``'s
final match write their games here as they finish; ``kahuna-ratings`` reads
them into one ladder.  Nothing else writes the file.

Design (docs/EVALUATION.md, "The results store"):

* **Standard library only** (:mod:`sqlite3`); of the project it imports only
  :mod:`kahuna_env`, so training may use it as it uses :mod:`arena.stats`.
* **Concurrent writers.** The file is in WAL mode with a generous busy
  timeout; every write is one short ``BEGIN IMMEDIATE`` transaction, so two
  evaluations writing into one file wait for each other instead of failing.
* **Kill safety.** One transaction per game: a process killed with SIGKILL
  loses at most the games it had not yet committed; the file stays readable
  and holds no partial row.
* **Versioned schema.** ``schema_version`` holds the layout's version;
  opening an older store migrates it in one transaction (:data:`MIGRATIONS`),
  a newer one is refused.  A file that is not SQLite, or a SQLite file of
  another program, is one :class:`StoreError` line and is left untouched.
* **Entrants by content.** An entrant is its *key* — ``sha256:<hex>`` of an
  agent file (or of a training network's weights), ``baseline:<spec>`` for
  a baseline — plus a display label; the same file under two paths is one
  entrant, two different files under one path are two.

Tables (version 2):

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
``tallies(id, session, a, b, wins, draws, losses)``
    aggregate results imported from an older report (``kahuna-ratings
    --import-report``), whose games were not kept one by one; always in a
    session with ``imported = 1`` and ``source = 'import'``.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kahuna_env.agents.mcts import DEFAULT_SIMULATIONS

SCHEMA_VERSION = 2
"""The layout this module writes; older stores are migrated on opening."""
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

MIGRATIONS = {1: _MIGRATE_1_TO_2}
"""``MIGRATIONS[v]`` turns a version-``v`` store into version ``v + 1``."""
_TABLES = {"schema_version", "entrants", "sessions", "games"}


class StoreError(ValueError):
    """The store cannot be used: not a results store, a newer schema, unwritable; the message is one line."""


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
class PairCount:
    """Summed results of one ordered seat pairing: ``seat0`` scored ``points`` over ``games`` against ``seat1``."""

    seat0: str
    seat1: str
    points: float
    games: int


def baseline_entrant(spec: str) -> Entrant:
    """The entrant of a baseline name (``random``, ``greedy``, ``mcts``, ``mcts:N``; ``mcts`` is ``mcts:200``)."""
    base, _, budget = spec.partition(":")
    canonical = f"mcts:{budget or DEFAULT_SIMULATIONS}" if base == "mcts" else spec
    return Entrant(key=f"baseline:{canonical}", label=spec, kind="baseline")


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
        if readonly and not self.path.is_file():
            raise StoreError(f"{self.path}: no such results store")
        try:
            if not readonly:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            uri = f"{self.path.resolve().as_uri()}?mode={'ro' if readonly else 'rwc'}"
            self._db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"{self.path}: cannot open the results store: {_line(error)}") from None
        try:
            self._prepare()
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise StoreError(f"{self.path}: not a results store ({_line(error)})") from None
        except StoreError:
            self._db.close()
            raise

    # ------------------------------------------------------------------------------------------ opening
    def _prepare(self) -> None:
        self._db.execute("PRAGMA foreign_keys = ON")
        if self.readonly:
            version = self._version()
            if version is None:
                raise StoreError(f"{self.path}: not a results store (no schema_version table)")
            self._check_version(version)
            if version < SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {version} is older than {SCHEMA_VERSION}; "
                    "any kahuna-eval --db or kahuna-ratings --db opening it migrates it"
                )
            return
        self._check_foreign()  # before anything is written: a file of another program stays as it was
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode = WAL")
        with self._transaction():
            self._check_foreign()  # again inside the lock: another process may have created the store meanwhile
            version = self._version()
            if version is None:
                self._run_script(_SCHEMA_V1)
                self._db.execute("INSERT INTO schema_version (version) VALUES (1)")
                version = 1
            self._check_version(version)
            while version < SCHEMA_VERSION:
                self._run_script(MIGRATIONS[version])
                version += 1
                self._db.execute("UPDATE schema_version SET version = ?", (version,))

    def _check_foreign(self) -> None:
        """Refuse an SQLite file of another program, or a store of a newer version, without writing."""
        version = self._version()
        if version is None:
            tables = self._tables()
            if tables:
                raise StoreError(
                    f"{self.path}: not a results store (an SQLite file with other tables: "
                    f"{', '.join(sorted(tables)[:4])})"
                )
        else:
            self._check_version(version)

    def _run_script(self, script: str) -> None:
        """Run the statements of ``script`` inside the current transaction (``executescript`` would commit)."""
        for statement in script.split(";"):
            if statement.strip():
                self._db.execute(statement)

    def _tables(self) -> set[str]:
        rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return {name for (name,) in rows}

    def _version(self) -> int | None:
        if "schema_version" not in self._tables():
            return None
        rows = self._db.execute("SELECT version FROM schema_version").fetchall()
        if len(rows) != 1 or not isinstance(rows[0][0], int):
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
        missing = _TABLES - self._tables()
        if missing:
            raise StoreError(f"{self.path}: not a results store (missing tables: {', '.join(sorted(missing))})")

    def _transaction(self) -> Any:
        return transaction(self._db)

    def _write(self) -> Any:
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        return self._transaction()

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
        return int(self._db.execute("SELECT version FROM schema_version").fetchone()[0])

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
        if not isinstance(source, str) or not source:
            raise ValueError(f"a session needs its source tool's name, got {source!r}")
        with self._write():
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
        for name, value in (("wins", wins), ("draws", draws), ("losses", losses)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        with self._write():
            imported = self._db.execute("SELECT imported FROM sessions WHERE id = ?", (session,)).fetchone()
            if imported is None or not imported[0]:
                raise ValueError("tallies belong to an imported session (start_session(..., imported=True))")
            ids = self._entrant_id(a), self._entrant_id(b)
            if ids[0] == ids[1]:
                raise ValueError(f"a tally needs two different entrants, got {a.key} twice")
            self._db.execute(
                "INSERT INTO tallies (session, a, b, wins, draws, losses) VALUES (?, ?, ?, ?, ?, ?)",
                (session, ids[0], ids[1], wins, draws, losses),
            )

    # ------------------------------------------------------------------------------------------ reading
    def entrants(self) -> list[Entrant]:
        """Every entrant, in the order first seen."""
        rows = self._db.execute(
            "SELECT key, label, kind, run, run_update, decisions FROM entrants ORDER BY id"
        ).fetchall()
        return [Entrant(*row) for row in rows]

    def game_count(self) -> int:
        """Games stored (imported tallies not included)."""
        return int(self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    def pair_counts(self, rules: dict[str, Any] | None = None) -> list[PairCount]:
        """Summed results per ordered (seat 0, seat 1) pairing of entrant keys, imported tallies included.

        A game played twice with every seed and both entrants the same (an
        evaluation repeated with the same ``--seed``) is counted once: it is
        the same game, not new evidence.  ``rules`` keeps only the sessions
        played under those rule options.
        """
        rules_text = None if rules is None else json.dumps(rules, sort_keys=True)
        games = self._db.execute(
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
        ).fetchall()
        tallies = self._db.execute(
            """
            SELECT ea.key, eb.key, SUM(t.wins + 0.5 * t.draws), SUM(t.wins + t.draws + t.losses)
            FROM tallies t JOIN sessions s ON s.id = t.session
            JOIN entrants ea ON ea.id = t.a JOIN entrants eb ON eb.id = t.b
            WHERE ? IS NULL OR s.rules = ?
            GROUP BY t.a, t.b ORDER BY t.a, t.b
            """,
            (rules_text, rules_text),
        ).fetchall()
        return [PairCount(a, b, float(points), int(n)) for a, b, points, n in [*games, *tallies]]

    def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a read-only ``SELECT`` (for reports and tests)."""
        if not sql.lstrip().upper().startswith("SELECT"):
            raise ValueError("query() runs SELECT statements only")
        return self._db.execute(sql, tuple(parameters)).fetchall()


def _line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
