"""Wilson intervals, the Bradley–Terry fit and the Elo scale, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kahuna_arena.stats import ELO_MEAN, Tally, elo_difference, expected_score, fit_bradley_terry, wilson_interval


def test_wilson_interval_of_8_out_of_10():
    # p = 0.8, z = 1.96: centre (0.8 + 0.19207) / 1.38415 = 0.71674, half-width 0.22658.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.49016, abs=1e-5)
    assert high == pytest.approx(0.94332, abs=1e-5)


def test_wilson_interval_of_50_out_of_100_is_symmetric_around_one_half():
    # half-width 1.95996 * sqrt(0.0025 + 0.000096) / 1.038415 = 0.096170
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.403830, abs=1e-5)
    assert high == pytest.approx(0.596170, abs=1e-5)


def test_wilson_interval_at_the_edges_stays_inside_zero_one():
    # 0 of 10: upper bound z^2 / (n + z^2) = 3.8415 / 13.8415 = 0.27753
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert wilson_interval(10, 10) == pytest.approx((0.72247, 1.0), abs=1e-5)


def test_wilson_interval_accepts_half_points_for_draws():
    assert wilson_interval(5.5, 10)[0] < 0.55 < wilson_interval(5.5, 10)[1]


@pytest.mark.parametrize(("successes", "trials"), [(1, 0), (-1, 10), (11, 10)])
def test_wilson_interval_rejects_impossible_counts(successes, trials):
    with pytest.raises(ValueError):
        wilson_interval(successes, trials)


def test_elo_difference_of_a_75_percent_score_is_400_log10_3():
    assert elo_difference(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert expected_score(1000 + 400 * math.log10(3), 1000) == pytest.approx(0.75)


def test_bradley_terry_recovers_strengths_4_2_1_from_results_that_fit_them_exactly():
    # Strengths 4:2:1 predict A 2 of 3 vs B, B 2 of 3 vs C, A 4 of 5 vs C: the data are their own MLE.
    scores = np.array([[0, 2, 4], [1, 0, 2], [1, 1, 0]], dtype=float)
    games = np.array([[0, 3, 5], [3, 0, 3], [5, 3, 0]], dtype=float)
    fit = fit_bradley_terry(scores, games)
    step = 400 * math.log10(2)  # 120.41 Elo per doubling of strength
    assert fit.elo == pytest.approx([ELO_MEAN + step, ELO_MEAN, ELO_MEAN - step], abs=1e-6)


def test_bradley_terry_counts_draws_as_half_wins():
    # One win each and two draws: 2 points of 4 each, equal ratings.
    fit = fit_bradley_terry(np.array([[0, 2.0], [2.0, 0]]), np.array([[0, 4], [4, 0]]))
    assert fit.elo == pytest.approx([ELO_MEAN, ELO_MEAN])


def test_bradley_terry_standard_error_matches_the_fisher_information_by_hand():
    # 3 wins of 4: p = 3/4, information of the log-strength gap n p (1 - p) = 0.75,
    # so se(gap) = sqrt(1 / 0.75) natural-log units = 1.1547 * 173.72 = 200.59 Elo; each rating half of that.
    fit = fit_bradley_terry(np.array([[0, 3.0], [1.0, 0]]), np.array([[0, 4], [4, 0]]))
    assert fit.elo[0] - fit.elo[1] == pytest.approx(400 * math.log10(3))
    assert fit.difference_se(0, 1) == pytest.approx(200.59, abs=0.01)
    assert fit.elo_se == pytest.approx([100.30, 100.30], abs=0.01)


def test_bradley_terry_without_a_prior_rejects_a_clean_sweep():
    with pytest.raises(ValueError, match="no finite"):
        fit_bradley_terry(np.array([[0, 10.0], [0.0, 0]]), np.array([[0, 10], [10, 0]]))


def test_bradley_terry_prior_draws_keep_a_clean_sweep_finite():
    # One virtual draw: 10.5 points of 11, a gap of 400 log10(10.5 / 0.5) = 528.9 Elo.
    fit = fit_bradley_terry(np.array([[0, 10.0], [0.0, 0]]), np.array([[0, 10], [10, 0]]), prior_draws=1.0)
    assert fit.elo[0] - fit.elo[1] == pytest.approx(400 * math.log10(21))


def test_bradley_terry_rejects_entrants_that_never_met():
    scores = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float)
    games = np.array([[0, 2, 0], [2, 0, 0], [0, 0, 0]], dtype=float)
    with pytest.raises(ValueError, match="not connected"):
        fit_bradley_terry(scores, games, prior_draws=1.0)


def test_bradley_terry_rejects_scores_that_do_not_add_up_to_the_games():
    with pytest.raises(ValueError, match="must equal"):
        fit_bradley_terry(np.array([[0, 3.0], [3.0, 0]]), np.array([[0, 4], [4, 0]]))


def test_tally_counts_a_draw_as_half_a_point_in_its_score_and_interval():
    tally = Tally().add(1, 3).add(0.5).add(0, -1).add(1, 2)
    assert (tally.wins, tally.draws, tally.losses, tally.games) == (2, 1, 1, 4)
    assert tally.score == pytest.approx(2.5 / 4)
    assert tally.win_rate == pytest.approx(0.5)
    assert tally.mean_margin == pytest.approx(1.0)
    assert tally.interval == wilson_interval(2.5, 4)


def test_an_empty_tally_has_the_whole_unit_interval():
    assert Tally().interval == (0.0, 1.0) and Tally().score == 0.0


def test_tally_rejects_an_outcome_that_is_not_win_draw_or_loss():
    with pytest.raises(ValueError, match="outcome"):
        Tally().add(0.7)


def test_tally_summary_names_score_interval_and_counts():
    assert Tally(wins=3, draws=1, losses=0, margin_sum=6).summary().startswith("score 0.875 [")
