"""kahuna-ratings (kahuna_arena/ratings_cli.py): one ladder over the store, imports, scheduling, the runs plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.ladder import ImportOutcome, check_report, fit_ladder, import_report, schedule_pairings
from kahuna_arena.ratings_cli import main
from kahuna_arena.store import Entrant, ResultsStore, StoredGame
from kahuna_env.agents import BASELINES

REPO = Path(__file__).resolve().parents[1]
README_REPORT = REPO / "docs" / "ratings.json"
RULES = {"variant": "standard", "handicap": None, "discard_rule": "instead_of_play", "first_player": 0}


def _ladder_elo(ladder, label: str) -> float:
    return next(row.elo for row in ladder.rows if row.entrant.label == label)


def test_importing_the_readme_report_reproduces_its_table_and_is_marked_imported(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert import_report(store, README_REPORT) == ImportOutcome(added=28, known=0)
        ladder = fit_ladder(store, RULES, {"greedy": 624, "mcts:50": 979, "mcts": 1146, "mcts:1000": 1301})
        assert store.game_count() == 0  # totals, not games
        assert store.query("SELECT source, imported FROM sessions") == [("import", 1)]
        assert import_report(store, README_REPORT) == ImportOutcome(added=0, known=28)  # adds nothing
        assert store.query("SELECT COUNT(*) FROM tallies") == [(28,)]
    report = json.loads(README_REPORT.read_text())
    for row in report["ratings"]:  # the ratings table (docs/RATINGS.md), within rounding of the anchor shift
        label = row["entrant"] if row["entrant"].partition(":")[0] in BASELINES else f"{row['entrant']} [ratings.json]"
        assert _ladder_elo(ladder, label) == pytest.approx(row["elo"], abs=1.0)
    assert all(row.games == 700 for row in ladder.rows)


def test_the_ladder_over_stored_games_is_kahuna_evals_own_fit(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        report = run_evaluation(["random", "greedy", "mcts:2"], games=6, seed=3, store=store)
        report_again = run_evaluation(["random", "greedy", "mcts:2"], games=6, seed=3, store=store)  # a repeat
        ladder = fit_ladder(store, RULES, {"greedy": 500.0})
    assert report == report_again
    elo = {r.entrant: r.elo for r in report.ratings}
    assert _ladder_elo(ladder, "greedy") == pytest.approx(500.0)
    for name in ("random", "mcts:2"):  # the same differences as kahuna-eval's table (repeated games count once)
        assert _ladder_elo(ladder, name) - 500.0 == pytest.approx(elo[name] - elo["greedy"], abs=1e-6)
    greedy = next(row for row in ladder.rows if row.entrant.label == "greedy")
    assert greedy.elo_se == pytest.approx(0.0, abs=1e-6) and greedy.games == 12  # the anchor is the reference


def test_an_entrant_not_linked_to_the_anchors_is_listed_without_a_rating(tmp_path: Path) -> None:
    a, b = Entrant("baseline:greedy", "greedy", "baseline"), Entrant("baseline:random", "random", "baseline")
    c, d = Entrant("baseline:mcts:3", "mcts:3", "baseline"), Entrant("baseline:mcts:4", "mcts:4", "baseline")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("kahuna-eval", RULES)
        store.add_game(session, a, b, StoredGame(0, 1, 1.0, 5, 1, 80))
        store.add_game(session, c, d, StoredGame(0, 2, 0.0, 1, 5, 80))
        ladder = fit_ladder(store, RULES, {"greedy": 624.0})
    rated = {row.entrant.label: row.elo for row in ladder.rows}
    assert rated["greedy"] == pytest.approx(624.0) and rated["random"] < 624.0
    assert rated["mcts:3"] is None and rated["mcts:4"] is None
    assert "not linked to the anchors" in ladder.table()


def _store_and_newcomer(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store of a small round robin, and the arguments that schedule and play two pairings for `mcts:3`."""
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        run_evaluation(["random", "greedy", "mcts:2"], games=4, seed=0, store=store)
    return db, ["--db", str(db), "--entrant", "mcts:3", "--schedule", "2", "--play", "--games", "4"]


def test_a_newcomer_is_scheduled_first_and_play_adds_its_own_games_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, arguments = _store_and_newcomer(tmp_path)
    with ResultsStore(db, readonly=True) as store:
        before = store.game_count()
    out = tmp_path / "ladder.json"
    assert main([*arguments, "--json", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "mcts:3 vs" in text and "no games yet" in text and "8 games played and stored" in text
    with ResultsStore(db, readonly=True) as store:
        assert store.game_count() == before + 8
        seeds = store.query("SELECT base_seed FROM sessions ORDER BY id")
    assert [seed for (seed,) in seeds] == [0, 1, 2]  # fresh deals for every pairing played
    data = json.loads(out.read_text())
    assert data["format"] == "kahuna-ratings-v1"
    newcomer = next(row for row in data["ratings"] if row["entrant"] == "mcts:3")
    assert newcomer["games"] == 8 and newcomer["elo"] is not None and newcomer["elo_ci95"][0] < newcomer["elo"]


def test_play_with_common_deals_plays_every_pairing_on_the_same_fresh_deals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, arguments = _store_and_newcomer(tmp_path)
    assert main([*arguments, "--common-deals", "--no-progress"]) == 0
    assert "8 games played and stored" in capsys.readouterr().out
    with ResultsStore(db, readonly=True) as store:
        sessions = store.query("SELECT id, base_seed, command FROM sessions ORDER BY id")
        games = store.query("SELECT session, game_index, game_seed FROM games WHERE session > 1 ORDER BY id")
    (_, _, _), (first, seed_a, command_a), (second, seed_b, command_b) = sessions
    assert seed_a == seed_b == 1  # one fresh seed for the call, not one per pairing
    assert command_a.endswith("--common-deals") and command_b.endswith("--common-deals")
    deals = {session: [seed for s, _, seed in games if s == session] for session in (first, second)}
    assert len(deals[first]) == 4 and deals[first] == deals[second]  # game k of each pairing: the same deal
    assert deals[first][0] == deals[first][1] and deals[first][0] != deals[first][2]  # seats swapped on a deal


def test_schedule_prefers_uncertain_even_pairings(tmp_path: Path) -> None:
    a, b, c, d = (Entrant(f"baseline:mcts:{n}", f"mcts:{n}", "baseline") for n in (1, 2, 3, 4))
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("kahuna-eval", RULES)
        seed = 0
        for first, second, games, wins in ((a, b, 400, 200), (b, c, 400, 200), (c, d, 4, 2), (a, d, 4, 4)):
            for game in range(games):
                seed += 1
                store.add_game(session, first, second, StoredGame(game, seed, float(game < wins), 5, 3, 80))
        ladder = fit_ladder(store, RULES, {"mcts:1": 500.0})
    pairings = schedule_pairings(ladder, [], 6)
    values = [p.value for p in pairings]
    assert values == sorted(values, reverse=True) and len(pairings) == 6
    # mcts:4 has 8 games, the others hundreds: its pairings are the most informative.
    assert "mcts:4" in (pairings[0].a.label, pairings[0].b.label)
    assert {pairings[-1].a.label, pairings[-1].b.label} in ({"mcts:1", "mcts:2"}, {"mcts:2", "mcts:3"})


def test_elo_across_training_runs_is_drawn(tmp_path: Path) -> None:
    greedy = Entrant("baseline:greedy", "greedy", "baseline")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("training", RULES)
        for run in ("run-a", "run-b"):
            for update, wins in ((10, 1), (20, 3), (30, 4)):
                learner = Entrant(f"sha256:{run}{update}", f"{run}@{update}", "training", run, update, 1000 * update)
                for game in range(4):
                    store.add_game(session, learner, greedy, StoredGame(game, game, float(game < wins), 5, 3, 80))
    db = tmp_path / "r.sqlite"
    assert main(["--db", str(db), "--plot", str(tmp_path / "elo.png"), "--anchor", "greedy=624"]) == 0
    assert (tmp_path / "elo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--schedule", "2", "--play", "--schedule", "0"], "--schedule: expected a positive integer"),
        (["--play"], "--play needs --schedule N"),
        (["--schedule", "2", "--common-deals"], "--common-deals needs --play"),
        (["--anchor", "mcts"], "expected ENTRANT=ELO"),
        (["--anchor", "nobody=3"], "unknown entrant"),
        (["--plot", "elo.svg"], "--plot must name a .png file"),
        (["--entrant", "mcts:abc", "--schedule", "1"], "mcts:abc"),
        (["--schedule", "1000"], "at most 100 pairings"),
        (["--schedule", "1", "--play", "--games", "10000000000"], "--games: games per pairing must be at most 100,000"),
        (["--schedule", "100", "--play", "--games", "2000"], "plays 200,000 games; one call plays at most 100,000"),
        (["--schedule", "1", "--play", "--workers", "1000"], "--workers: at most 256 worker processes, got 1000"),
    ],
)
def test_bad_arguments_are_one_line(
    tmp_path: Path, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    with ResultsStore(db):
        pass
    with pytest.raises(SystemExit) as caught:
        main(["--db", str(db), *arguments])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error and error.startswith("kahuna-ratings: error:")


def test_a_missing_store_is_one_line_and_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--db", str(tmp_path / "none.sqlite")])
    assert "no such results store" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


def _report_text(
    wins: str = "1",
    losses: str = "3",
    games: str = "4",
    per_pairing: str = "4",
    config: str = "{}",
    seed: str = "0",
    partial: str = "false",
    twice: bool = False,
) -> bytes:
    """A report of greedy vs random (1-0-3 over 4 games) as text, with one field written as given."""
    pairing = f'{{"a": "greedy", "b": "random", "games": {games}, "wins": {wins}, "draws": 0, "losses": {losses}}}'
    pairings = f"{pairing}, {pairing}" if twice else pairing
    return (
        f'{{"format": "kahuna-eval-v1", "entrants": ["greedy", "random"], "games_per_pairing": {per_pairing}, '
        f'"seed": {seed}, "config": {config}, "partial": {partial}, "pairings": [{pairings}]}}'
    ).encode()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b'{"format": "kahuna-record-v1"}', "format must be 'kahuna-eval-v1'"),
        (b'{"format": "kahuna-eval-v1", "entrants": ["a"], "pairings": []}', "at least two entrant strings"),
        (_report_text(wins=-1), "pairings[0]: 'wins', 'draws' and 'losses' must be non-negative integers"),
        (_report_text(config='{"variant": 3}'), "'config' is not a rule set"),
        (_report_text(games="NaN"), "NaN is not a number a report holds"),
        (_report_text(games="Infinity"), "Infinity is not a number a report holds"),
        (_report_text(wins="-Infinity"), "-Infinity is not a number a report holds"),
        (_report_text(games="-4"), "'games' must be an integer, the sum of wins, draws and losses (4), got -4"),
        (_report_text(games="4.0"), "'games' must be an integer, the sum of wins, draws and losses (4), got 4.0"),
        (_report_text(games="5"), "'games' must be an integer, the sum of wins, draws and losses (4), got 5"),
        (_report_text(wins="2.5", losses="1.5"), "'wins', 'draws' and 'losses' must be non-negative integers"),
        (_report_text(per_pairing="3"), "'games_per_pairing' must be an even integer in [2, 100000], got 3"),
        (_report_text(per_pairing="1e400"), "1e400 is not a number a report holds (beyond the range of a float)"),
        (_report_text(per_pairing="1" + "0" * 5000), "Exceeds the limit"),
        (_report_text(per_pairing="6"), "a partial report (an evaluation that ended early)"),
        (_report_text(partial="true"), "a partial report (an evaluation that ended early)"),
        (_report_text(seed="-1"), "'seed' must be an integer in [0, 2**63 - 1], got -1"),
        (_report_text(twice=True), "'greedy' and 'random' are paired twice (counted twice)"),
    ],
)
def test_a_malformed_report_is_one_line_and_imports_nothing(
    tmp_path: Path, content: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    report.write_bytes(content)
    new, existing = tmp_path / "new.sqlite", tmp_path / "r.sqlite"
    ResultsStore(existing).close()
    before = existing.read_bytes()
    for db in (new, existing):
        with pytest.raises(SystemExit) as caught:
            main(["--db", str(db), "--import-report", str(report)])
        assert caught.value.code == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error
    assert not new.exists()  # the report is checked before a store is created
    assert existing.read_bytes() == before


def test_the_browser_summary_shows_file_names_never_folders_or_the_store_path(tmp_path: Path) -> None:
    from kahuna_arena.ladder import ladder_summary
    from kahuna_arena.store import StoreError

    secret = "/home/someone/private/runs/x/final_agent.pt"
    learner = Entrant("sha256:abc", secret, "file")
    tracked = Entrant("sha256:def", "run-a@10", "training", "run-a", 10, 5000)
    greedy = Entrant("baseline:greedy", "greedy", "baseline")
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        session = store.start_session("kahuna-eval", RULES)
        for game in range(6):
            store.add_game(session, learner, greedy, StoredGame(game, game, float(game % 3 != 0), 5, 3, 80))
            store.add_game(session, tracked, greedy, StoredGame(game, 100 + game, float(game % 2), 5, 3, 80))
    summary = ladder_summary(db)
    text = json.dumps(summary)
    assert "/home/someone" not in text and "final_agent.pt" in text and str(tmp_path) not in text
    assert summary["games"] == 12 and summary["runs"]["run-a"][0]["decisions"] == 5000
    assert {row["entrant"] for row in summary["ratings"]} == {"final_agent.pt", "run-a@10", "greedy"}
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a store")
    with pytest.raises(StoreError) as caught:
        ladder_summary(bad)
    assert str(tmp_path) not in str(caught.value) and "cannot be read" in str(caught.value)


def test_the_results_tab_serves_the_ladder_of_the_store(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from kahuna_web.app import create_app

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        run_evaluation(["random", "greedy", "mcts:2"], games=4, seed=0, store=store)
    with TestClient(create_app(ladder_db=db), base_url="http://127.0.0.1") as client:
        answer = client.get("/api/ladder")
        assert answer.status_code == 200
        data = answer.json()
        assert data["games"] == 12 and {row["entrant"] for row in data["ratings"]} == {"random", "greedy", "mcts:2"}
        assert data["anchors"] == {"greedy": 624.0} and len(data["pairings"]) == 3 and data["runs"] == {}
        assert client.get("/api/board").json()["results_store"] is True
    with TestClient(create_app(), base_url="http://127.0.0.1") as client:
        assert client.get("/api/board").json()["results_store"] is False  # the page then never asks for the ladder
        assert client.get("/api/ladder").status_code == 404
    bad = tmp_path / "bad.sqlite"
    bad.write_text("no store here")
    with TestClient(create_app(ladder_db=bad), base_url="http://127.0.0.1") as client:
        answer = client.get("/api/ladder")
        assert answer.status_code == 503 and str(tmp_path) not in answer.text and "cannot be read" in answer.text


def test_kahuna_serve_refuses_a_db_that_is_not_a_results_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    from kahuna_web.server import main as serve_main

    bad = tmp_path / "bad.sqlite"
    bad.write_text("no store here")
    with pytest.raises(SystemExit) as caught:
        serve_main(["--db", str(bad), "--port", "0"])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "kahuna-serve: error: --db" in error and "cannot be read" in error


def _tiny_agent(path: Path, seed: int) -> Path:
    import torch

    from kahuna_policy.model import ActorCritic, ModelConfig
    from training.ppo.checkpoint import export_agent

    torch.manual_seed(seed)
    export_agent(path, ActorCritic(ModelConfig(hidden_sizes=(8,))), {"run": f"tiny-{seed}"})
    return path


def test_a_report_records_what_each_entrant_held_and_an_import_keys_it_so(tmp_path: Path) -> None:
    """A file replaced after its games were played is not taken for the agent those games were played by."""
    from kahuna_arena.evaluation import entrant_identity

    agent = _tiny_agent(tmp_path / "agent.pt", 1)
    played_as = entrant_identity(str(agent)).key
    report = run_evaluation(["greedy", str(agent), f"{agent}@mcts:2"], games=2, seed=0)
    assert report.to_dict()["identities"] == {
        "greedy": "baseline:greedy",
        str(agent): played_as,
        f"{agent}@mcts:2": f"{played_as}@mcts:2",
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    _tiny_agent(agent, 2)  # the name now holds another network
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert import_report(store, path).added == 3
        keys = dict(store.query("SELECT label, key FROM entrants"))
    assert keys == {"greedy": "baseline:greedy", str(agent): played_as, f"{agent}@mcts:2": f"{played_as}@mcts:2"}
    assert entrant_identity(str(agent)).key != played_as


def test_an_older_report_joins_its_baselines_only(tmp_path: Path) -> None:
    """docs/ratings.json predates the record: its `champion` was the third champion, not what the name holds now."""
    digest = check_report(README_REPORT, json.loads(README_REPORT.read_text())).digest()[:16]  # of its games
    with ResultsStore(tmp_path / "r.sqlite") as store:
        import_report(store, README_REPORT)
        keys = dict(store.query("SELECT label, key FROM entrants"))
    assert keys["greedy"] == "baseline:greedy" and keys["mcts"] == "baseline:mcts:200"
    assert keys["champion [ratings.json]"] == f"report:{digest}:champion"
    assert keys["champion@mcts:50 [ratings.json]"] == f"report:{digest}:champion@mcts:50"
    assert "champion" not in keys  # today's champion is another entrant


@pytest.mark.parametrize(
    ("identities", "message"),
    [
        (["greedy"], r"'identities' must map every entrant to its store key \(a string\)$"),
        ({"greedy": "baseline:greedy"}, r"'identities' must map every entrant to its store key \(a string\)$"),
        ({"greedy": 3, "random": "baseline:random"}, r"must map every entrant to its store key \(a string\)$"),
        ("x", r"'identities' must map every entrant to its store key \(a string\)$"),
        ({"greedy": "sha256:" + "a" * 64, "random": "baseline:random"}, "recorded for 'greedy' is not a store key"),
        ({"greedy": "baseline:greedy", "random": "baseline:greedy"}, "recorded for 'random' is not a store key"),
    ],
)
def test_a_report_with_malformed_identities_is_refused_in_one_line(
    tmp_path: Path, identities: object, message: str
) -> None:
    report = run_evaluation(["random", "greedy"], games=2, seed=0).to_dict()
    report["identities"] = identities
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(ValueError, match=message):
            import_report(store, path)
        assert store.query("SELECT COUNT(*) FROM sessions") == [(0,)]  # nothing written


@pytest.mark.parametrize(
    ("spec", "key", "fits"),
    [
        ("mcts", "baseline:mcts:200", True),
        ("mcts", "baseline:mcts:50", False),
        ("runs/a.pt", "sha256:" + "0" * 64, True),
        ("runs/a.pt", "sha256:" + "0" * 64 + "#sampled", True),
        ("runs/a.pt", "sha256:" + "0" * 63, False),
        ("runs/a.pt", "baseline:greedy", False),
        ("champion@mcts:50", "sha256:" + "f" * 64 + "@mcts:50", True),
        ("champion@mcts:50", "sha256:" + "f" * 64 + "@mcts:200", False),
        ("champion@mcts:50", "sha256:" + "f" * 64, False),
    ],
)
def test_a_recorded_identity_must_be_a_key_of_that_kind_of_entrant(spec: str, key: str, fits: bool) -> None:
    from kahuna_arena.ladder import _key_fits

    assert _key_fits(spec, key) is fits


# ---------------------------------------------------------------------------------------------- imports keyed by games
def _ladder_games(db: Path) -> dict[str, tuple[int, float]]:
    """Each entrant's games and score on the ladder of the store at ``db``."""
    with ResultsStore(db, readonly=True) as store:
        return {row.entrant.label: (row.games, row.score) for row in fit_ladder(store, RULES, {"greedy": 624}).rows}


def _import(db: Path, report: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The first line ``kahuna-ratings --import-report`` prints (it succeeds)."""
    capsys.readouterr()
    assert main(["--db", str(db), "--import-report", str(report)]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_reimporting_the_same_games_in_any_formatting_adds_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    assert _import(db, README_REPORT, capsys).startswith("imported 28 pairing totals")
    before = _ladder_games(db)
    copy = tmp_path / "reformatted.json"  # the same games, other bytes (a reformatted copy)
    copy.write_text(json.dumps(json.loads(README_REPORT.read_text()), indent=7, sort_keys=True))
    for _ in range(4):
        line = _import(db, copy, capsys)
        assert line == (
            f"nothing imported from {copy}: the games of its 28 pairing(s) are already in the store "
            "(imported before, or stored one by one)"
        )
    assert _ladder_games(db) == before
    with ResultsStore(db, readonly=True) as store:
        assert store.query("SELECT COUNT(*) FROM tallies") == [(28,)]


def _eval_report(tmp_path: Path, name: str, games: int, db: Path | None = None) -> Path:
    """``kahuna-eval greedy random --games GAMES --seed 5 --json NAME`` (into ``db`` when given)."""
    path = tmp_path / name
    arguments = ["greedy", "random", "--games", str(games), "--seed", "5", "--json", str(path), "--no-progress"]
    assert eval_main([*arguments, *(["--db", str(db)] if db is not None else [])]) == 0
    return path


def test_a_report_of_games_stored_by_kahuna_eval_db_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    report = _eval_report(tmp_path, "eval.json", 6, db)
    before = _ladder_games(db)
    assert before["greedy"][0] == 6
    assert _import(db, report, capsys).startswith(f"nothing imported from {report}")
    assert _ladder_games(db) == before  # greedy 6 games, not 12


def test_a_longer_match_on_the_same_deals_adds_only_its_new_games(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Game k of a pairing does not depend on --games: a longer match on the same seed repeats the shorter one."""
    db = tmp_path / "r.sqlite"
    _eval_report(tmp_path, "four.json", 4, db)  # games 0-3, stored one by one
    eight, twelve = _eval_report(tmp_path, "eight.json", 8), _eval_report(tmp_path, "twelve.json", 12)
    assert _import(db, eight, capsys).startswith("imported 1 pairing totals")  # games 4-7
    wins = {n: json.loads(path.read_text())["pairings"][0]["wins"] for n, path in ((8, eight), (12, twelve))}
    assert _ladder_games(db)["greedy"] == (8, pytest.approx(wins[8] / 8))
    assert _import(db, twelve, capsys).startswith("imported 1 pairing totals")  # games 8-11
    assert _ladder_games(db)["greedy"] == (12, pytest.approx(wins[12] / 12))
    assert _import(db, eight, capsys).startswith("nothing imported")
    with ResultsStore(db, readonly=True) as store:
        coverage = store.query("SELECT first_game, game_count, wins + draws + losses FROM tallies ORDER BY id")
    assert coverage == [(0, 8, 4), (8, 4, 4)]


def test_counts_that_contradict_the_stored_games_are_refused_and_import_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    report = _eval_report(tmp_path, "eval.json", 6, db)
    data = json.loads(report.read_text())
    pairing = data["pairings"][0]
    pairing["wins"], pairing["losses"] = pairing["losses"], pairing["wins"]  # the same games, other results
    report.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as caught:
        main(["--db", str(db), "--import-report", str(report)])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "pairings[0] ('greedy' vs 'random'): its counts contradict the games" in error
    with ResultsStore(db, readonly=True) as store:
        assert store.query("SELECT COUNT(*) FROM sessions WHERE imported = 1") == [(0,)]
