"""The results store when the machine or the file is against it (issue 66): a full disk, a file size limit,
hostile SQL in the file, a copy made without its ``-wal`` file, an older layout.

Writes are made to fail for real: a child process runs under ``RLIMIT_FSIZE`` (``ulimit -f``) with
``SIGXFSZ`` ignored, so every write past the limit fails in the kernel as on a full disk (``EFBIG``
instead of ``ENOSPC``).  The work is bounded by the games asked for, never by a clock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.ratings_cli import main as ratings_main
from kahuna_arena.store import (
    _SCHEMA_V1,
    MIGRATIONS,
    SCHEMA_VERSION,
    Entrant,
    ResultsStore,
    StoredGame,
    StoreError,
    StoreFailure,
    failure_cause,
)

resource = pytest.importorskip("resource")

REPOSITORY = Path(__file__).resolve().parents[1]
GREEDY = Entrant("baseline:greedy", "greedy", "baseline")
RANDOM = Entrant("baseline:random", "random", "baseline")
RULES = {"variant": "standard"}
HANG_S = 600
"""Guard against a hang of a child process (seconds), not a speed check."""


def _file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn``: writes past ``limit`` bytes fail (``EFBIG``) instead of killing the process (``SIGXFSZ``)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _eval(arguments: list[str], limit: int) -> subprocess.CompletedProcess[str]:
    """``kahuna-eval ARGUMENTS --no-progress`` in a child process whose files may not grow past ``limit`` bytes."""
    return subprocess.run(
        [sys.executable, "-m", "kahuna_arena.eval_cli", *arguments, "--no-progress"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
        preexec_fn=_file_size_limit(limit),
    )


def _games(db: Path) -> int:
    with ResultsStore(db, readonly=True) as store:
        return store.game_count()


# ---------------------------------------------------------------------------------------------- writes that fail
def test_a_store_that_fills_up_mid_evaluation_is_one_line_and_every_other_output_is_written(tmp_path: Path) -> None:
    db, report, records = tmp_path / "store" / "results.sqlite", tmp_path / "report.json", tmp_path / "records"
    done = _eval(
        ["greedy", "random", "--games", "4000", "--db", str(db), "--json", str(report), "--record", str(records)],
        limit=64 * 1024,  # the store stops growing after a few hundred games; reports and records stay far below
    )
    assert done.returncode == 1, done.stderr
    found = re.fullmatch(
        r"kahuna-eval: error: results store (\S+): not saved: (disk I/O error|database or disk is full) "
        r"\(the file size limit \(ulimit -f\) is 65536 bytes\); stopped after (\d+) of 4000 games: "
        rf"(\d+) in --db {re.escape(str(db))}, (\d+) in --json {re.escape(str(report))}, "
        rf"(\d+) records in {re.escape(str(records))}/\n",
        done.stderr,
    )
    assert found, done.stderr
    assert found[1] == str(db)
    played = int(found[3])
    data = json.loads(report.read_text())
    assert data["partial"] is True and data["total_games"] == played and 0 < played < 4000
    assert len(list(records.glob("*.json"))) == played  # the game the store failed on has its record too
    assert _games(db) == played - 1  # every game before it is in the store
    # Issue 76: the line says what each output holds (it said "stopped after 285" with 284 in the store).
    assert [int(found[4]), int(found[5]), int(found[6])] == [played - 1, played, played]
    assert f"partial results written to {report}" in done.stdout


def _fail_from(call: int, error: BaseException, real: Callable) -> Callable:
    """``real``, except that its ``call``-th call and every later one raise ``error`` (a disk that fills up)."""
    calls = [0]

    def write(*args, **kwargs):
        calls[0] += 1
        if calls[0] >= call:
            raise error
        return real(*args, **kwargs)

    return write


@pytest.mark.parametrize(
    ("failing", "stored", "recorded"),
    [("record", 3, 2), ("store", 2, 3)],
    ids=["the third record fails", "the third store row fails"],
)
def test_the_stop_line_counts_what_each_output_holds(tmp_path, monkeypatch, capsys, failing, stored, recorded):
    # Issue 76: "stopped after 285 of 1000 games" with 284 in the store; "51 game records written" with 50 files.
    import kahuna_arena.evaluation

    db, report, records = tmp_path / "r.sqlite", tmp_path / "r.json", tmp_path / "games"
    full = OSError(28, "No space left on device")
    if failing == "record":
        monkeypatch.setattr(
            kahuna_arena.evaluation, "write_record", _fail_from(3, full, kahuna_arena.evaluation.write_record)
        )
    else:
        failure = StoreFailure(f"results store {db}: not saved: database or disk is full")
        monkeypatch.setattr(ResultsStore, "add_game", _fail_from(3, failure, ResultsStore.add_game))
    arguments = ["random", "greedy", "--games", "8", "--no-progress", "--db", str(db), "--json", str(report)]
    with pytest.raises(SystemExit) as stop:
        eval_main([*arguments, "--record", str(records)])
    assert stop.value.code == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.endswith(
        f"stopped after 3 of 8 games: {stored} in --db {db}, 3 in --json {report}, {recorded} records in {records}/"
    ), line
    assert _games(db) == stored  # each number is what the output holds
    assert json.loads(report.read_text())["total_games"] == 3
    assert len(list(records.glob("*.json"))) == recorded


@pytest.mark.parametrize("existing", [False, True], ids=["new store", "existing store"])
def test_a_store_that_cannot_be_opened_for_lack_of_room_names_the_cause(tmp_path: Path, existing: bool) -> None:
    db = tmp_path / "results.sqlite"
    if existing:
        with ResultsStore(db):
            pass
    before = db.read_bytes() if existing else None
    done = _eval(["greedy", "random", "--games", "2", "--db", str(db)], limit=16 * 1024)  # below SQLite's 32 KiB index
    assert done.returncode == 1
    verb = "open" if existing else "create"
    assert re.fullmatch(
        rf"kahuna-eval: error: {re.escape(str(db))}: cannot {verb} the results store: "
        r"(disk I/O error|database or disk is full) \(the file size limit \(ulimit -f\) is 16384 bytes\)\n",
        done.stderr,
    ), done.stderr
    assert "not a results store" not in done.stderr
    if existing:
        assert db.read_bytes() == before
    else:
        assert not db.exists() and [p.name for p in tmp_path.iterdir()] == []  # no half-made store left behind


def test_a_full_disk_is_named_with_its_free_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FullDisk:
        f_bavail, f_frsize = 0, 4096

    monkeypatch.setattr(os, "statvfs", lambda folder: FullDisk)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    with sqlite3.connect(":memory:") as db:
        db.execute("PRAGMA max_page_count = 1")  # SQLite's own "database or disk is full"
        with pytest.raises(sqlite3.OperationalError) as caught:
            db.execute("CREATE TABLE t (x)")
    cause = failure_cause(caught.value, tmp_path / "results.sqlite")
    assert cause == "database or disk is full (the disk holding it has 0 bytes free)"
    assert failure_cause(OSError(28, "No space left on device"), tmp_path / "r.json") == (
        "No space left on device (the disk holding it has 0 bytes free)"
    )
    assert failure_cause(sqlite3.OperationalError("no such table: x"), tmp_path / "r.sqlite") == "no such table: x"


def test_a_write_that_fails_is_a_store_failure_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    with ResultsStore(db) as store:
        session = store.start_session("kahuna-eval", RULES)
        store._db.execute("PRAGMA max_page_count = 1")  # this connection may not grow the file any more
        with pytest.raises(StoreFailure, match=rf"^results store {re.escape(str(db))}: not saved: "):
            for index in range(1000):  # a page holds a few dozen rows: it fails long before the end
                store.add_game(session, GREEDY, RANDOM, StoredGame(index, index, 1.0, 5, 1, 80))
        assert store.game_count() < 1000


# ---------------------------------------------------------------------------------------------- hostile SQL
@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "CREATE TRIGGER wipe AFTER INSERT ON games BEGIN DELETE FROM games; END",
            "it holds the trigger 'wipe', SQL this program did not write (refused)",
        ),
        ("CREATE VIEW busy AS SELECT 1", "it holds the view 'busy', SQL this program did not write (refused)"),
        ("CREATE TABLE extra (x)", "it holds the table 'extra', which a version-3 store does not have (refused)"),
        ("CREATE INDEX mine ON games (moves)", "it holds the index 'mine', which a version-3 store does not have"),
        ("ALTER TABLE games ADD COLUMN evil TEXT", "its table 'games' is defined otherwise than a version-3 store's"),
        ('CREATE TABLE "\x1b[2J" (x)', r"it holds the table '\x1b[2J'"),
    ],
)
def test_sql_objects_a_store_never_has_are_refused_at_open_and_nothing_changes(
    tmp_path: Path, sql: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    with ResultsStore(db):
        pass
    with sqlite3.connect(db) as raw:
        raw.execute(sql)
    before = db.read_bytes()
    for readonly in (False, True):
        with pytest.raises(StoreError) as caught:
            ResultsStore(db, readonly=readonly)
        text = str(caught.value)
        assert text.startswith(f"{db}: not a results store as kahuna-rl writes it: ") and message in text
        assert "\n" not in text and "\x1b" not in text
    with pytest.raises(SystemExit) as exit_info:
        ratings_main(["--db", str(db)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error
    assert db.read_bytes() == before


# ---------------------------------------------------------------------------------------------- copies and files
def _write_games(store: ResultsStore, count: int) -> None:
    session = store.start_session("kahuna-eval", RULES)
    for index in range(count):
        store.add_game(session, GREEDY, RANDOM, StoredGame(index, index, 1.0, 5, 1, 80))


def test_a_copy_of_only_the_sqlite_file_of_a_store_still_being_written_holds_every_game(tmp_path: Path) -> None:
    # As after kill -9: the writer never closed, so nothing but its own commits reached the file.
    db, copy = tmp_path / "live" / "results.sqlite", tmp_path / "copy" / "results.sqlite"
    store = ResultsStore(db)
    try:
        _write_games(store, 25)
        copy.parent.mkdir()
        shutil.copyfile(db, copy)  # the .sqlite file alone, its -wal left behind
    finally:
        store.close()
    assert _games(copy) == 25


def _store_written_by_an_older_version_and_killed(folder: Path) -> Path:
    """A store whose writer (an older kahuna-rl, no checkpoints) was killed: its tables are in the -wal only."""
    folder.mkdir()
    code = f"""
import os, sqlite3
from kahuna_arena.store import _SCHEMA_V1, MIGRATIONS, _run_script
db = sqlite3.connect({str(folder / "results.sqlite")!r}, isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA wal_autocheckpoint = 0")
db.execute("BEGIN")
_run_script(db, _SCHEMA_V1)
_run_script(db, MIGRATIONS[1])
db.execute("INSERT INTO schema_version VALUES (2)")
db.execute("COMMIT")
os.kill(os.getpid(), 9)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, timeout=HANG_S, check=False)
    assert done.returncode == -signal.SIGKILL
    assert (folder / "results.sqlite-wal").stat().st_size > 0
    return folder / "results.sqlite"


def test_a_copy_without_its_wal_file_is_named_as_such_and_left_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = _store_written_by_an_older_version_and_killed(tmp_path / "killed")
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(original, copy)
    before = copy.read_bytes()
    for arguments in (
        ["--db", str(copy)],
        ["--db", str(copy), "--import-report", str(REPOSITORY / "docs/ratings.json")],
    ):
        with pytest.raises(SystemExit) as exit_info:
            ratings_main(arguments)
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert error == (
            f"kahuna-ratings: error: {copy}: not a results store (an SQLite file without tables; in WAL mode without "
            "copy.sqlite-wal beside it: if this is a copy of a store, its content is in that -wal file, copy it too)\n"
        )
        assert copy.read_bytes() == before  # no schema written into it
    with ResultsStore(original) as store:  # the original, with its -wal, is a store
        assert store.schema_version == SCHEMA_VERSION


@pytest.mark.parametrize("content", [b"", b"my notes\n"], ids=["empty", "text"])
def test_kahuna_ratings_never_writes_a_schema_into_a_file_it_did_not_create(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.sqlite"
    path.write_bytes(content)
    with pytest.raises(SystemExit) as exit_info:
        ratings_main(["--db", str(path)])
    assert exit_info.value.code == 2
    assert "not a results store" in capsys.readouterr().err
    assert path.read_bytes() == content


def _version_2_store(path: Path) -> None:
    with sqlite3.connect(path) as raw:
        for script in (_SCHEMA_V1, MIGRATIONS[1]):
            raw.executescript(script)
        raw.execute("INSERT INTO schema_version VALUES (2)")
        raw.execute("INSERT INTO entrants (key, label, kind) VALUES ('baseline:greedy', 'greedy', 'baseline')")
        raw.execute("INSERT INTO entrants (key, label, kind) VALUES ('baseline:random', 'random', 'baseline')")
        raw.execute("INSERT INTO sessions (source, started, rules, imported) VALUES ('import', 0, '{}', 1)")
        raw.execute("INSERT INTO tallies (session, a, b, wins, draws, losses) VALUES (1, 1, 2, 3, 0, 1)")


def test_a_version_2_store_is_read_as_it_is_and_migrated_by_a_writer(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    _version_2_store(db)
    before = db.read_bytes()
    with ResultsStore(db, readonly=True) as store:
        assert store.schema_version == 2 and [c.points for c in store.pair_counts()] == [3.0]
    assert db.read_bytes() == before
    with ResultsStore(db) as store:
        assert store.schema_version == SCHEMA_VERSION == 3
        assert store.query("SELECT wins, games_key, first_game FROM tallies") == [(3, None, None)]


def test_a_new_store_is_linked_into_place_whole(tmp_path: Path) -> None:
    db = tmp_path / "a" / "results.sqlite"
    with ResultsStore(db):
        pass
    assert sorted(p.name for p in db.parent.iterdir()) == ["results.sqlite"]  # no temporary file left
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as raw:  # its tables are in the file itself
        assert raw.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_training_run_whose_results_store_cannot_be_written_ends_with_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A StoreFailure is a ValueError (one line), but a full disk under eval.db is no configuration problem (2).
    from training.cli import run_training_command

    def run() -> int:
        raise StoreFailure("results store runs/x/eval.db: not saved: database or disk is full")

    with pytest.raises(SystemExit) as exit_info:
        run_training_command("kahuna-train", tuple, run, lambda: "interrupted", lambda: "; earlier checkpoints kept")
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (
        "kahuna-train: error: results store runs/x/eval.db: not saved: database or disk is full; "
        "earlier checkpoints kept\n"
    )
