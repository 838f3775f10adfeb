"""Sequential tests (kahuna_arena/sprt.py): error rates by simulation, the statistic, and the real test on agents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.match import schedule
from kahuna_arena.sprt import (
    SPRT,
    elo_interval,
    parse_hypotheses,
    pentanomial_llr,
    pentanomial_llr_approximate,
    run_sprt,
    simulate,
)
from kahuna_arena.store import ResultsStore

SIMULATED_TESTS = 2000
TOLERANCE = 0.02


def test_simulated_error_rates_match_the_nominal_alpha_and_beta() -> None:
    # 2,000 simulated tests with A exactly elo0 stronger (H0 true) and 2,000 with A elo1 stronger (H1 true).
    test = SPRT(elo0=0.0, elo1=30.0, alpha=0.05, beta=0.05)
    rng = np.random.default_rng(20261203)
    under_h0, _ = simulate(test, 0.0, SIMULATED_TESTS, rng)
    under_h1, _ = simulate(test, 30.0, SIMULATED_TESTS, rng)
    assert (under_h0 >= 0).all() and (under_h1 >= 0).all()  # every test decided
    alpha = float((under_h0 == 1).mean())  # H1 accepted although H0 holds
    beta = float((under_h1 == 0).mean())  # H0 accepted although H1 holds
    assert abs(alpha - 0.05) <= TOLERANCE, alpha
    assert abs(beta - 0.05) <= TOLERANCE, beta


def test_a_larger_true_difference_is_decided_sooner() -> None:
    test = SPRT(elo0=0.0, elo1=30.0)
    rng = np.random.default_rng(7)
    decisions, pairs = simulate(test, 100.0, 300, rng)
    assert (decisions == 1).mean() > 0.99
    _, pairs_near = simulate(test, 15.0, 300, rng)
    assert pairs.mean() * 3 < pairs_near.mean()


def test_the_llr_rises_with_the_score_and_matches_fishtests_approximation_on_many_pairs() -> None:
    even = [10, 40, 100, 40, 10]
    strong = [5, 30, 100, 50, 15]
    assert pentanomial_llr(strong, 0, 30) > pentanomial_llr(even, 0, 30)
    assert pentanomial_llr(even, 0, 30) < 0
    for counts in (even, strong, [30, 10, 60, 10, 30]):
        assert pentanomial_llr(counts, 0, 30) == pytest.approx(pentanomial_llr_approximate(counts, 0, 30), rel=0.03)
    # One won pair is weak evidence (the exact ratio), not the near-infinite one of the approximation.
    assert 0 < pentanomial_llr([0, 0, 0, 0, 1], 0, 30) < 0.1
    assert pentanomial_llr_approximate([0, 0, 0, 0, 1], 0, 30) > 5


def test_the_elo_interval_covers_the_estimate_and_shrinks_with_more_pairs() -> None:
    elo, low, high = elo_interval([5, 30, 100, 50, 15])
    assert low < elo < high and elo > 0
    _, low_more, high_more = elo_interval([50, 300, 1000, 500, 150])
    assert high_more - low_more < (high - low) / 3


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["elo0=0"], "missing elo1"),
        (["elo0=0", "elo0=3"], "gives elo0 twice"),
        (["elo0=0", "elo2=3"], "expects elo0=X elo1=Y, got 'elo2=3'"),
        (["elo0=a", "elo1=3"], "must be a number"),
        (["elo0=nan", "elo1=3"], "must be finite"),
    ],
)
def test_bad_hypotheses_are_one_line(words: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_hypotheses(words)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"elo0": 30.0, "elo1": 0.0}, "elo0 < elo1"),
        ({"alpha": 0.0}, "alpha must be in"),
        ({"beta": 0.6}, "beta must be in"),
        ({"elo1": 5000.0}, "must lie in"),
    ],
)
def test_bad_test_settings_are_refused(arguments: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SPRT(**arguments)


def test_a_clearly_stronger_agent_is_accepted_early_and_its_games_are_the_fixed_matchs_first(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    report = run_sprt("greedy", "random", SPRT(0.0, 30.0), max_games=400, seed=4, store=store)
    assert report.decision == "H1" and report.llr >= report.test.upper
    assert report.games < 400 and report.games == report.games_played == 2 * report.pairs
    fixed = run_evaluation(["greedy", "random"], games=report.games, seed=4)
    assert fixed.pairings[0].tally.points == pytest.approx(report.score * report.games)  # the same deals and games
    assert store.game_count() == report.games
    assert store.query("SELECT source FROM sessions") == [("kahuna-sprt",)]


def test_a_weaker_agent_is_rejected(tmp_path: Path) -> None:
    report = run_sprt("random", "greedy", SPRT(0.0, 30.0), max_games=400, seed=4)
    assert report.decision == "H0" and report.llr <= report.test.lower


def test_the_decision_does_not_depend_on_the_worker_count() -> None:
    one = run_sprt("greedy", "mcts:2", SPRT(-50.0, 50.0, 0.1, 0.1), max_games=60, seed=2, workers=1)
    two = run_sprt("greedy", "mcts:2", SPRT(-50.0, 50.0, 0.1, 0.1), max_games=60, seed=2, workers=2)
    assert (one.counts, one.llr, one.decision) == (two.counts, two.llr, two.decision)


def test_no_decision_within_the_budget_is_reported_as_such() -> None:
    report = run_sprt("greedy", "mcts:2", SPRT(-5.0, 5.0), max_games=4, seed=0)
    assert report.decision is None and report.games == 4
    assert "no decision within 4 games" in report.text()


def test_kahuna_eval_sprt_prints_and_writes_the_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sprt.json"
    db = tmp_path / "r.sqlite"
    code = eval_main(
        ["greedy", "random", "--sprt", "elo0=0", "elo1=30", "--json", str(out), "--db", str(db), "--no-progress"]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "H1 accepted" in text and "games used" in text and "LLR" in text
    data = json.loads(out.read_text())
    assert data["format"] == "kahuna-sprt-v1" and data["decision"] == "H1"
    assert data["games"] == 2 * sum(data["pentanomial"]) and data["max_games"] == 2000
    assert data["bounds"][0] < 0 < data["bounds"][1] and data["llr"] >= data["bounds"][1]
    with ResultsStore(db, readonly=True) as store:
        assert store.game_count() == data["games_played"]


def test_with_common_deals_the_tests_games_are_the_common_deals_match(tmp_path: Path) -> None:
    test = SPRT(-50.0, 50.0, 0.1, 0.1)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        report = run_sprt("greedy", "random", test, max_games=8, seed=3, store=store, common_deals=True)
        stored = store.query("SELECT game_seed, agent_seed0, agent_seed1, choice_seed FROM games ORDER BY game_index")
    assert report.common_deals and report.to_dict()["common_deals"] is True
    tasks = schedule(["greedy", "random"], 8, 3, common_deals=True)[: report.games_played]
    assert stored == [tuple(str(value) for value in (t.game_seed, *t.agent_seeds, t.choice_seed)) for t in tasks]
    fixed = run_evaluation(["greedy", "random"], games=report.games, seed=3, common_deals=True)
    assert fixed.pairings[0].tally.points == pytest.approx(report.score * report.games)
    default = run_sprt("greedy", "random", test, max_games=8, seed=3)
    assert default.to_dict()["common_deals"] is False


def test_kahuna_eval_sprt_passes_common_deals_to_the_json_and_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, db = tmp_path / "sprt.json", tmp_path / "r.sqlite"
    arguments = ["greedy", "random", "--sprt", "elo0=0", "elo1=30", "--games", "4", "--seed", "3"]
    assert eval_main([*arguments, "--common-deals", "--json", str(out), "--db", str(db), "--no-progress"]) == 0
    assert "on the common deals of the seed (--common-deals)" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["common_deals"] is True and data["seed"] == 3
    with ResultsStore(db, readonly=True) as store:
        assert store.query("SELECT source, command, base_seed FROM sessions") == [
            ("kahuna-sprt", "greedy random --common-deals", 3)
        ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["greedy", "random", "mcts:2", "--sprt", "elo0=0", "elo1=30"], "--sprt tests two entrants, got 3"),
        (["greedy", "random", "--sprt", "elo0=0", "elo1=30", "--record", "x"], "--record does not apply"),
        (["greedy", "random", "--sprt", "elo0=5", "elo1=1"], "elo0 < elo1"),
        (["greedy", "random", "--sprt", "elo0=0", "elo1=30", "--alpha", "2"], "alpha must be in"),
    ],
)
def test_kahuna_eval_sprt_bad_arguments_are_one_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        eval_main(arguments)
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error and error.startswith("kahuna-eval: error:")
