"""Evaluation: entrants, seat balance, reproducibility across workers, summaries, JSON and CLI errors."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
import torch

from kahuna_arena.entrants import resolve_entrant
from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.match import GameResult, GameTask, schedule
from kahuna_arena.report import summarize
from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """An untrained policy in the agent file format."""
    path = tmp_path_factory.mktemp("policy") / "tiny.pt"
    torch.manual_seed(0)
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(32,))), {"run": "test"}), path)
    return path


@pytest.fixture(scope="module")
def three_way_report():
    """A small round robin of random, greedy and a tiny search, in this process."""
    return run_evaluation(["random", "greedy", "mcts:4"], games=4, seed=3)


def _result(pairing, index, seats, scores, winner):
    task = GameTask(pairing, index, seats, 1, (2, 3), 4)
    return GameResult(task, scores, (0, 0), winner, (), 100, (50, 50), seconds=1.0, think_seconds=(0.5, 0.25))


def test_every_pairing_plays_each_seat_exactly_half_the_games():
    tasks = schedule(["random", "greedy", "mcts"], games=6, seed=0)
    for pairing in range(3):
        seat_zero = Counter(t.seats[0] for t in tasks if t.pairing == pairing)
        assert sorted(seat_zero.values()) == [3, 3]


def test_each_deal_is_played_twice_with_the_seats_swapped():
    tasks = schedule(["random", "greedy"], games=8, seed=5)
    for first, second in zip(tasks[::2], tasks[1::2], strict=True):
        assert first.game_seed == second.game_seed
        assert first.seats == second.seats[::-1]
    assert len({t.game_seed for t in tasks}) == 4


def test_a_pairings_games_do_not_depend_on_the_other_entrants():
    alone = schedule(["random", "greedy"], games=4, seed=1)
    among_more = [t for t in schedule(["random", "greedy", "mcts"], games=4, seed=1) if t.pairing == 0]
    assert [t.game_seed for t in alone] == [t.game_seed for t in among_more]


def test_the_default_seeds_are_those_of_every_earlier_evaluation():
    # Captured from schedule() before common deals existed: stored games and records depend on them.
    tasks = schedule(["random", "greedy"], games=4, seed=7)
    assert [(t.seats, t.game_seed, t.agent_seeds, t.choice_seed) for t in tasks] == [
        ((0, 1), 12311006062153109164, (15551131662330527294, 18078957492775595566), 2155098805626908166),
        ((1, 0), 12311006062153109164, (17468050383136903492, 11000000122718914964), 15520619381044623873),
        ((0, 1), 16510497387196749275, (15974119170376361336, 14364397774997824051), 15518454971522730883),
        ((1, 0), 16510497387196749275, (15433724730803230642, 12790474654961207372), 937653084448787308),
    ]
    last = schedule(["random", "greedy", "mcts:50"], games=2, seed=123, common_deals=False)[-1]
    assert (last.pairing, last.index, last.seats) == (2, 1, (2, 1))
    assert (last.game_seed, last.agent_seeds, last.choice_seed) == (
        6454790402310776908,
        (11822315779652430475, 18653346641667467),
        1328330642151028731,
    )


def _agent_seed(task, entrant):
    """The seed the entrant (by index) was reset with in ``task``, whichever seat it had."""
    return task.agent_seeds[task.seats.index(entrant)]


def test_common_deals_give_two_agents_the_same_deals_and_the_same_opponent():
    with_a = schedule(["A", "greedy"], games=6, seed=3, common_deals=True)
    with_b = schedule(["B", "greedy"], games=6, seed=3, common_deals=True)
    assert [t.game_seed for t in with_a] == [t.game_seed for t in with_b]
    assert [t.choice_seed for t in with_a] == [t.choice_seed for t in with_b]
    assert [t.seats for t in with_a] == [t.seats for t in with_b] == [(0, 1), (1, 0)] * 3
    for a, b in zip(with_a, with_b, strict=True):
        assert _agent_seed(a, 1) == _agent_seed(b, 1)  # greedy's own generator, whoever it plays
        assert _agent_seed(a, 0) != _agent_seed(b, 0)  # A and B: each its own
    # Still each deal twice with the seats swapped, and a new deal every two games.
    assert len({t.game_seed for t in with_a}) == 3
    assert all(first.game_seed == second.game_seed for first, second in zip(with_a[::2], with_a[1::2], strict=True))
    # Without the option the deals depend on the entrants' names.
    default_a = schedule(["A", "greedy"], games=6, seed=3)
    default_b = schedule(["B", "greedy"], games=6, seed=3)
    assert not {t.game_seed for t in default_a} & {t.game_seed for t in default_b}


def test_with_common_deals_every_pairing_of_a_round_robin_plays_the_same_deals():
    entrants = ["random", "greedy", "mcts:4"]
    tasks = schedule(entrants, games=4, seed=11, common_deals=True)
    pairings = [[t for t in tasks if t.pairing == p] for p in range(3)]
    assert [[t.game_seed for t in games] for games in pairings] == [[t.game_seed for t in pairings[0]]] * 3
    assert [[t.choice_seed for t in games] for games in pairings] == [[t.choice_seed for t in pairings[0]]] * 3
    for entrant in range(3):  # an entrant's own seeds of game k are the same against either opponent
        own = [[_agent_seed(t, entrant) for t in games] for games in pairings if entrant in games[0].seats]
        assert len(own) == 2 and own[0] == own[1]
    # The common deals are not the default ones.
    default = schedule(entrants, games=4, seed=11)
    assert not {t.game_seed for t in tasks} & {t.game_seed for t in default}


def test_report_seat_counts_are_balanced(three_way_report):
    for pairing in three_way_report.pairings:
        assert pairing.seat_games == (2, 2)


def test_results_are_identical_with_one_and_two_workers():
    entrants = ["random", "greedy", "mcts:3"]
    one = run_evaluation(entrants, games=2, seed=9, workers=1)
    two = run_evaluation(entrants, games=2, seed=9, workers=2)
    assert one.pairings == two.pairings
    assert one.ratings == two.ratings


def test_workers_hand_each_result_over_as_it_finishes():
    """The progress bar moves during a multi-worker evaluation, not all at once at its end."""
    from kahuna_arena.evaluation import _play_in_workers, check_entrants
    from kahuna_env.engine import KahunaConfig

    tasks = schedule(["greedy", "mcts:40"], games=8, seed=5)
    arrivals = []
    started = time.perf_counter()
    entrants = check_entrants(("greedy", "mcts:40"))
    _play_in_workers(tasks, 2, entrants, KahunaConfig(), False, lambda _: arrivals.append(time.perf_counter()))
    elapsed = time.perf_counter() - started
    assert len(arrivals) == 8
    # Each game takes a noticeable time, so results arriving one by one are spread over the run.
    assert arrivals[-1] - arrivals[0] > 0.2 * (elapsed - (arrivals[0] - started))


def test_a_different_seed_gives_different_games():
    first = run_evaluation(["random", "greedy"], games=6, seed=1)
    second = run_evaluation(["random", "greedy"], games=6, seed=2)
    assert first.pairings[0].mean_margin != second.pairings[0].mean_margin


def test_summary_counts_wins_draws_losses_and_margins_from_the_first_entrants_side():
    results = [
        _result(0, 0, (0, 1), (5, 3), 0),  # entrant 0 in seat 0 wins by 2
        _result(0, 1, (1, 0), (4, 1), 0),  # entrant 0 in seat 1 loses by 3
        _result(0, 2, (0, 1), (2, 2), None),  # a draw
        _result(0, 3, (1, 0), (0, 6), 1),  # entrant 0 in seat 1 wins by 6
    ]
    pairings, ratings = summarize(["a", "b"], 4, results)
    p = pairings[0]
    assert (p.wins, p.draws, p.losses) == (2, 1, 1)
    assert p.score == pytest.approx(2.5 / 4)
    assert p.mean_margin == pytest.approx((2 - 3 + 0 + 6) / 4)
    assert p.seat_games == (2, 2)
    assert p.seat_scores == (1.5, 1.0)
    assert p.games_per_second == pytest.approx(1.0)
    assert p.decisions == (200, 200)
    # entrant 0 sat in seat 0 twice (0.5 s each) and in seat 1 twice (0.25 s each) over 200 decisions
    assert p.seconds_per_move == pytest.approx((1.5 / 200, 1.5 / 200))
    assert ratings is None


def test_three_entrants_get_a_ratings_table_best_first(three_way_report):
    ratings = three_way_report.ratings
    assert [r.entrant for r in ratings][-1] == "random"
    assert sum(r.elo for r in ratings) / 3 == pytest.approx(1000.0)
    assert all(r.elo_se > 0 for r in ratings)


def test_pairing_results_are_one_tally_with_its_interval(three_way_report):
    for p in three_way_report.pairings:
        assert (p.wins, p.draws, p.losses, p.games) == (p.tally.wins, p.tally.draws, p.tally.losses, p.tally.games)
        assert p.interval == p.tally.interval and p.score == p.tally.score
        assert sum(t.games for t in p.seat_tallies) == p.games


def test_pairing_interval_contains_its_score(three_way_report):
    for p in three_way_report.pairings:
        low, high = p.interval
        assert low <= p.score <= high


def test_report_table_names_every_pairing_and_entrant(three_way_report):
    table = three_way_report.table()
    assert "random vs greedy" in table and "greedy vs mcts:4" in table
    assert "Elo" in table and "95% CI" in table


def test_a_checkpoint_entrant_plays_through_the_evaluation(policy_file):
    report = run_evaluation([str(policy_file), "random"], games=2, seed=0)
    assert report.pairings[0].games == 2


def test_sampled_checkpoint_entrants_sample_their_moves(policy_file):
    assert resolve_entrant(str(policy_file), seed=0, sampled=True).deterministic is False
    assert resolve_entrant(str(policy_file), seed=0).deterministic is True


def test_a_missing_checkpoint_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        resolve_entrant(str(tmp_path / "missing.pt"))


def test_a_corrupt_checkpoint_is_a_value_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        resolve_entrant(str(bad))


def test_an_unknown_entrant_lists_the_baselines():
    with pytest.raises(ValueError, match=r"unknown entrant 'alphazero'.*random, greedy, mcts, mcts:N"):
        resolve_entrant("alphazero")


def test_duplicate_entrants_are_rejected():
    with pytest.raises(ValueError, match="more than once"):
        run_evaluation(["greedy", "greedy"], games=2)


@pytest.mark.parametrize("games", [0, 3, -2])
def test_run_evaluation_rejects_bad_game_counts(games):
    with pytest.raises(ValueError, match="even"):
        run_evaluation(["random", "greedy"], games=games)


def test_cli_writes_a_table_and_json(tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert eval_main(["greedy", "random", "--games", "4", "--json", str(out), "--no-progress"]) == 0
    assert "greedy vs random" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["pairings"][0]["games"] == 4
    assert data["pairings"][0]["seat_games"] == [2, 2]
    assert len(data["pairings"][0]["score_ci95"]) == 2


def test_cli_record_writes_one_record_per_game(tmp_path, capsys):
    assert eval_main(["greedy", "random", "--games", "4", "--record", str(tmp_path), "--no-progress"]) == 0
    records = sorted(tmp_path.glob("*.json"))
    assert len(records) == 4
    assert json.loads(records[0].read_text())["format"] == "kahuna-record-v1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["greedy", "random", "--games", "0"], "--games"),
        (["greedy", "random", "--games", "5"], "even"),
        (["greedy", "random", "--workers", "-1"], "--workers"),
        (["greedy", "random", "--seed", "x"], "--seed"),
        (["greedy", "alphazero"], "unknown entrant 'alphazero'"),
        (["greedy", "mcts:0"], "mcts:N"),
        (["greedy"], "at least two entrants"),
        (["greedy", "random", "--variant", "chaos"], "--variant"),
    ],
)
def test_cli_bad_values_exit_with_a_one_line_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        eval_main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_cli_missing_checkpoint_exits_with_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        eval_main([str(tmp_path / "nope.pt"), "greedy"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "agent file not found" in err


def test_cli_corrupt_checkpoint_exits_with_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_text("garbage")
    with pytest.raises(SystemExit) as exit_info:
        eval_main([str(bad), "greedy"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.pt" in err


@pytest.mark.parametrize("workers", [1, 2])
def test_kahuna_eval_resolves_each_entrant_once(workers, monkeypatch, capsys):
    """Issue 35: each entrant is built once, in the parent, and the built agents are handed to the workers."""
    import kahuna_arena.evaluation
    from kahuna_arena.eval_cli import main

    calls = []
    resolve = kahuna_arena.evaluation.resolve_entrant

    def counting(spec, *args, **kwargs):
        calls.append(spec)
        return resolve(spec, *args, **kwargs)

    monkeypatch.setattr(kahuna_arena.evaluation, "resolve_entrant", counting)
    argv = ["greedy", "mcts:5", "--games", "4", "--workers", str(workers), "--no-progress"]
    assert main(argv) == 0
    assert sorted(calls) == ["greedy", "mcts:5"]
    assert "greedy" in capsys.readouterr().out


def _records(directory):
    """The records of an evaluation in game order, without the players' names."""
    records = [json.loads(path.read_text()) for path in directory.glob("*.json")]
    records.sort(key=lambda record: (record["pairing"], record["game"]))
    return [{key: value for key, value in record.items() if key != "players"} for record in records]


def test_one_agent_under_two_names_plays_the_same_games_with_or_without_common_deals(policy_file, tmp_path, capsys):
    """The same policy file under two paths, each against greedy: the same games, game by game (deals come from
    what an entrant is, never from how its path is written)."""
    copy = tmp_path / "copy.pt"
    copy.write_bytes(policy_file.read_bytes())
    runs = {}
    for name, spec, common in (
        ("original", policy_file, True),
        ("copy", copy, True),
        ("original-default", policy_file, False),
        ("copy-default", copy, False),
    ):
        argv = [str(spec), "greedy", "--games", "6", "--seed", "2", "--no-progress"]
        argv += ["--record", str(tmp_path / name), "--json", str(tmp_path / f"{name}.json")]
        assert eval_main([*argv, "--common-deals"] if common else argv) == 0
        assert ("common deals (--common-deals)" in capsys.readouterr().out) == common  # the table says so
        runs[name] = (_records(tmp_path / name), json.loads((tmp_path / f"{name}.json").read_text()))
    (original, original_json), (copy_records, copy_json) = runs["original"], runs["copy"]
    assert len(original) == 6 and original == copy_records  # same deals, same actions, same results
    assert original_json["common_deals"] is True and original_json["seed"] == 2
    for key in ("wins", "draws", "losses", "mean_margin", "seat_scores"):
        assert original_json["pairings"][0][key] == copy_json["pairings"][0][key]
    (default_original, default_json), (default_copy, _) = runs["original-default"], runs["copy-default"]
    assert default_json["common_deals"] is False
    assert default_original == default_copy
    assert {r["seed"] for r in default_original}.isdisjoint(r["seed"] for r in original)


def test_cli_common_deals_are_recorded_in_the_store_session(tmp_path, capsys):
    from kahuna_arena.store import ResultsStore

    db = tmp_path / "results.sqlite"
    base = ["greedy", "random", "--games", "2", "--seed", "4", "--db", str(db), "--no-progress"]
    assert eval_main(base) == 0
    assert eval_main([*base, "--common-deals"]) == 0
    capsys.readouterr()
    with ResultsStore(db, readonly=True) as store:
        sessions = store.query("SELECT command, base_seed FROM sessions ORDER BY id")
        assert sessions == [("greedy random", 4), ("greedy random --common-deals", 4)]
        stored = store.query(
            "SELECT session, game_index, game_seed, choice_seed FROM games ORDER BY session, game_index"
        )
        expected = [
            (session, t.index, str(t.game_seed), str(t.choice_seed))
            for session, common in ((1, False), (2, True))
            for t in schedule(["greedy", "random"], games=2, seed=4, common_deals=common)
        ]
        assert stored == expected
        # Two different schedules of one pairing: four games for the ladder, none merged.
        assert [count.games for count in store.pair_counts()] == [2, 2]
