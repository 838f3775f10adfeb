"""Evaluation: entrants, seat balance, reproducibility across workers, summaries, JSON and CLI errors."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
import torch

from arena.entrants import resolve_entrant
from arena.eval_cli import main as eval_main
from arena.evaluation import run_evaluation
from arena.match import GameResult, GameTask, schedule
from arena.report import summarize
from policy.model import ActorCritic, ModelConfig, agent_payload


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
    from arena.evaluation import _play_in_workers, check_entrants
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
    assert err.count("\n") == 1 and "checkpoint not found" in err


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
    import arena.evaluation
    from arena.eval_cli import main

    calls = []
    resolve = arena.evaluation.resolve_entrant

    def counting(spec, *args, **kwargs):
        calls.append(spec)
        return resolve(spec, *args, **kwargs)

    monkeypatch.setattr(arena.evaluation, "resolve_entrant", counting)
    argv = ["greedy", "mcts:5", "--games", "4", "--workers", str(workers), "--no-progress"]
    assert main(argv) == 0
    assert sorted(calls) == ["greedy", "mcts:5"]
    assert "greedy" in capsys.readouterr().out
