"""The results store (kahuna_arena/store.py): concurrent writers, kill safety, migration, bad files, identity."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import entrant_identity, run_evaluation
from kahuna_arena.store import _SCHEMA_V1, SCHEMA_VERSION, Entrant, ResultsStore, StoredGame, StoreError

GREEDY = Entrant("baseline:greedy", "greedy", "baseline")
RANDOM = Entrant("baseline:random", "random", "baseline")
RULES = {"variant": "standard"}


def _eval_command(db: Path, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "kahuna_arena.eval_cli", *arguments, "--db", str(db), "--no-progress"]


def _rows(db: Path, sql: str) -> list[tuple]:
    with ResultsStore(db, readonly=True) as store:
        return store.query(sql)


def test_two_concurrent_evaluations_into_one_store_lose_no_game(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    runs = [
        subprocess.Popen(
            _eval_command(db, "greedy", "random", "--games", "60", "--seed", str(seed)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    for run in runs:
        _, error = run.communicate(timeout=300)
        assert run.returncode == 0, error
    assert _rows(db, "SELECT COUNT(*) FROM games") == [(120,)]
    assert _rows(db, "SELECT COUNT(*) FROM sessions") == [(2,)]
    assert _rows(db, "SELECT session, COUNT(*) FROM games GROUP BY session") == [(1, 60), (2, 60)]
    assert _rows(db, "SELECT COUNT(*) FROM entrants") == [(2,)]


def test_sigkill_mid_evaluation_loses_at_most_the_game_in_flight(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    run = subprocess.Popen(
        _eval_command(db, "greedy", "random", "--games", "4000", "--seed", "3"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120  # generous: the games start within seconds
        count = 0
        while count < 5 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
            try:
                count = _rows(db, "SELECT COUNT(*) FROM games")[0][0]
            except (StoreError, sqlite3.Error):
                count = 0  # the store is not created yet
        assert run.poll() is None and count >= 5, "the evaluation ended or never wrote before it could be killed"
        os.kill(run.pid, signal.SIGKILL)
    finally:
        run.wait(timeout=60)
    assert run.returncode == -signal.SIGKILL
    with ResultsStore(db) as store:  # readable, and writable again
        stored = store.query("SELECT game_index, result, score0, score1, moves FROM games ORDER BY game_index")
    assert 5 <= len(stored) < 4000
    assert [index for index, *_ in stored] == list(range(len(stored)))  # one worker: games in order, no gap
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # Every stored row is a whole game: the same games replayed give the same results.
    games = len(stored) - len(stored) % 2
    replay = run_evaluation(["greedy", "random"], games=games, seed=3)
    assert replay.pairings[0].moves == sum(row[4] for row in stored[:games])
    assert replay.pairings[0].tally.points == sum(
        row[1] if index % 2 == 0 else 1 - row[1] for index, row in enumerate(stored[:games])
    )


def test_a_version_1_store_is_migrated_keeping_its_games(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as raw:
        raw.executescript(_SCHEMA_V1)
        raw.execute("INSERT INTO schema_version VALUES (1)")
        raw.execute("INSERT INTO entrants (key, label, kind) VALUES ('baseline:greedy', 'greedy', 'baseline')")
        raw.execute("INSERT INTO entrants (key, label, kind) VALUES ('baseline:random', 'random', 'baseline')")
        raw.execute("INSERT INTO sessions (source, started, rules) VALUES ('kahuna-eval', 0, '{}')")
        raw.execute(
            "INSERT INTO games (session, seat0, seat1, game_index, game_seed, result, score0, score1, moves, finished)"
            " VALUES (1, 1, 2, 0, '7', 1.0, 6, 2, 90, 0)"
        )
    with pytest.raises(StoreError, match="schema version 1 is older"):
        ResultsStore(db, readonly=True)
    with ResultsStore(db) as store:
        assert store.schema_version == SCHEMA_VERSION == 3
        assert store.game_count() == 1
        assert [(e.key, e.run) for e in store.entrants()] == [("baseline:greedy", None), ("baseline:random", None)]
        session = store.start_session("import", RULES, imported=True)
        store.add_tally(session, GREEDY, RANDOM, 3, 0, 1)  # the new table exists
    with ResultsStore(db, readonly=True) as store:
        assert store.schema_version == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00garbage\xff" * 500, "not a results store (file is not a database)"),
        (b"kahuna-eval-v1 {}\n", "not a results store (file is not a database)"),
    ],
)
def test_a_file_that_is_not_sqlite_is_one_line_and_unchanged(tmp_path: Path, content: bytes, message: str) -> None:
    db = tmp_path / "results.sqlite"
    db.write_bytes(content)
    with pytest.raises(StoreError, match=re.escape(message)) as caught:
        ResultsStore(db)
    assert "\n" not in str(caught.value)
    assert db.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_a_foreign_sqlite_file_is_refused_and_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as raw:
        raw.execute("CREATE TABLE customers (name TEXT)")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="an SQLite file with other tables: customers"):
        ResultsStore(db)
    assert db.read_bytes() == before


def test_a_store_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "new.sqlite"
    with ResultsStore(db):
        pass
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match="newer version \\(schema 99; this program reads up to 3\\)"):
        ResultsStore(db)


def test_kahuna_eval_with_a_bad_db_is_one_line_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("my notes\n" * 100)
    with pytest.raises(SystemExit) as caught:
        eval_main(["greedy", "random", "--games", "2", "--db", str(db), "--no-progress"])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not a results store" in error
    assert db.read_text() == "my notes\n" * 100
    with pytest.raises(SystemExit) as caught:
        eval_main(["greedy", "random", "--games", "2", "--db", str(tmp_path), "--no-progress"])
    assert caught.value.code == 2
    assert "is a directory" in capsys.readouterr().err


def test_kahuna_eval_writes_every_game_with_its_seeds_and_times(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    assert (
        eval_main(["greedy", "random", "mcts:2", "--games", "4", "--seed", "5", "--db", str(db), "--no-progress"]) == 0
    )
    rows = _rows(
        db,
        "SELECT e0.label, e1.label, game_index, game_seed, agent_seed0, choice_seed, result, score0, score1, moves,"
        " seconds_per_move0 FROM games g JOIN entrants e0 ON e0.id = g.seat0 JOIN entrants e1 ON e1.id = g.seat1",
    )
    assert len(rows) == 12
    report = run_evaluation(["greedy", "random", "mcts:2"], games=4, seed=5)
    assert sum(row[9] for row in rows) == sum(p.moves for p in report.pairings)
    for _, _, _, game_seed, agent_seed, choice_seed, result, score0, score1, moves, per_move in rows:
        assert result == (1.0 if score0 > score1 else 0.0 if score0 < score1 else result)
        assert int(game_seed) >= 0 and int(agent_seed) >= 0 and int(choice_seed) >= 0 and moves > 0
        assert per_move is not None and per_move >= 0
    assert _rows(db, "SELECT source, base_seed FROM sessions") == [("kahuna-eval", 5)]


def test_entrants_are_identified_by_content(tmp_path: Path) -> None:
    assert entrant_identity("mcts").key == entrant_identity("mcts:200").key == "baseline:mcts:200"
    assert entrant_identity("mcts:50").key != entrant_identity("mcts").key
    champion = entrant_identity("champion")
    assert champion.key.startswith("sha256:") and champion.label == "champion" and champion.kind == "file"
    copy = tmp_path / "copy.pt"
    source = Path(__import__("kahuna_policy.agent", fromlist=["x"]).shipped_agent_source("champion"))
    copy.write_bytes(source.read_bytes())
    assert entrant_identity(str(copy)).key == champion.key  # the same file under another path
    assert entrant_identity(f"{copy}@mcts:50").key == champion.key + "@mcts:50"
    assert entrant_identity("champion", sampled=True).key == champion.key + "#sampled"
    assert entrant_identity("champion-v5").key != champion.key


def test_a_game_repeated_with_the_same_seeds_counts_once(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("kahuna-eval", RULES)
        for _ in range(3):  # the same evaluation run three times
            store.add_game(session, GREEDY, RANDOM, StoredGame(0, 11, 1.0, 6, 2, 80, (1, 2), 3))
        store.add_game(session, GREEDY, RANDOM, StoredGame(1, 12, 0.5, 4, 4, 80, (1, 2), 3))
        counts = store.pair_counts()
    assert [(c.seat0, c.seat1, c.points, c.games) for c in counts] == [("baseline:greedy", "baseline:random", 1.5, 2)]


def test_bad_rows_are_refused_and_change_nothing(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("kahuna-eval", RULES)
        with pytest.raises(ValueError, match=r"result must be 1, 0\.5 or 0"):
            store.add_game(session, GREEDY, RANDOM, StoredGame(0, 11, 0.7, 6, 2, 80))
        with pytest.raises(ValueError, match="two different entrants"):
            store.add_game(session, GREEDY, GREEDY, StoredGame(0, 11, 1.0, 6, 2, 80))
        with pytest.raises(ValueError, match="imported session"):
            store.add_tally(session, GREEDY, RANDOM, 1, 0, 0)
        with pytest.raises(ValueError, match="SELECT statements only"):
            store.query("DELETE FROM games")
        assert store.game_count() == 0
        assert store.query("SELECT COUNT(*) FROM entrants") == [(0,)]  # the failed game's entrants rolled back
    with pytest.raises(StoreError, match="no such results store"):
        ResultsStore(tmp_path / "missing.sqlite", readonly=True)


def test_training_evaluations_and_the_exploit_final_match_land_in_the_store(tmp_path: Path) -> None:
    from tests.test_exploit import TINY
    from training.tools.exploit import main as exploit_main

    db = tmp_path / "results.sqlite"
    run_dir = tmp_path / "br-greedy"
    store_options = ["--set", f"eval.db={db}", "--set", "eval.every=1", "--set", "eval.games=4"]
    arguments = ["greedy", "--minutes", "5", *TINY, *store_options, "--games", "10", "--run-dir", str(run_dir)]
    assert exploit_main(arguments) == 0
    sessions = _rows(db, "SELECT source, command FROM sessions ORDER BY id")
    assert sessions == [
        ("training", "periodic evaluation of br-greedy at update 1"),
        ("training", "periodic evaluation of br-greedy at update 2"),
        ("kahuna-exploit", "final match of br-greedy against greedy"),
    ]
    assert _rows(db, "SELECT session, COUNT(*) FROM games GROUP BY session") == [(1, 4), (2, 4), (3, 10)]
    learners = _rows(db, "SELECT label, run, run_update, decisions > 0 FROM entrants WHERE kind = 'training'")
    assert learners == [("br-greedy@1", "br-greedy", 1, 1), ("br-greedy@2", "br-greedy", 2, 1)]
    # Seat balance is kept: the learner sits in seat 0 in half of every evaluation's games.
    per_seat = _rows(
        db,
        "SELECT g.session, SUM(e.kind = 'training') FROM games g JOIN entrants e ON e.id = g.seat0 GROUP BY g.session",
    )
    assert per_seat == [(1, 2), (2, 2), (3, 5)]


def test_a_bad_eval_db_is_refused_before_training(tmp_path: Path) -> None:
    from training.ppo.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"eval\.db"):
        load_config(None, ["eval.db=''"])
