"""Statistics for evaluation: one win/draw/loss tally, Wilson score intervals, Bradley–Terry ratings.

* :class:`Tally` — wins, draws, losses and point margins of one side, with
  the one interval the project reports (Wilson on the score); every
  ``kahuna-eval`` pairing and every evaluation during training is a Tally.
* :func:`wilson_interval` — the 95% (by default) Wilson score interval of a
  proportion.  Evaluation applies it to an entrant's *score* (wins plus half
  the draws, over the games), which is the win rate when there are no draws.
* :func:`fit_bradley_terry` — the Bradley–Terry model ``P(i beats j) =
  s_i / (s_i + s_j)`` fitted by maximum likelihood with Hunter's MM
  iterations; a draw counts as half a win for each side.  ``prior_draws``
  adds that many virtual drawn games to every pairing that was played,
  which keeps the ratings finite when an entrant wins (or loses) every game.
* Ratings are reported on the Elo scale, ``400 * log10(s_i)``, shifted so
  that the mean rating of the entrants is :data:`ELO_MEAN` (1000).  Only
  differences mean anything: a 400-point gap is 10:1 odds, 0 points is 50%.
* :data:`ANCHOR_RATINGS` — the project's one Elo scale: fixed ratings of
  baseline anchors.  ``kahuna-ratings``' ladder pins its fit by them, and the
  trainer's ``elo/*`` metrics rate an evaluation against an anchor by them, so
  a run's curve and the ladder read the same numbers.
* Uncertainty comes from the observed Fisher information of the
  log-likelihood at the fit (including the virtual draws).  Ratings are
  identified only up to a shift, so the covariance is the pseudo-inverse of
  the information matrix, which is the covariance of the mean-centred
  ratings.  :attr:`BradleyTerryFit.elo_se` is each rating's standard error
  in Elo points; multiply by 1.96 for a 95% interval.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95% standard normal quantile."""
ELO_MEAN = 1000.0
"""Mean of the reported Elo ratings (the anchor)."""
ELO_PER_NATURAL_LOG = 400.0 / math.log(10.0)
"""Elo points per unit of natural log-strength (about 173.7)."""
ANCHOR_RATINGS: Mapping[str, float] = types.MappingProxyType(
    {"greedy": 624.0, "mcts:50": 979.0, "mcts": 1146.0, "mcts:1000": 1301.0}
)
"""The Elo scale: baseline anchors at their ratings in docs/RATINGS.md's table (docs/ratings.json), read-only.

``kahuna_arena.ladder.DEFAULT_ANCHORS`` (the ladder's default pins) and ``training.ppo.metrics``' ``elo/*``
estimates are this object; docs/RATINGS.md and docs/TRAINING.md quote it."""


def wilson_interval(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` for ``successes`` out of ``trials`` (successes may be fractional).

    Raises ``ValueError`` when ``trials`` is not positive or ``successes`` is
    outside ``[0, trials]``.
    """
    if trials <= 0:
        raise ValueError(f"wilson_interval needs at least one trial, got {trials}")
    if not 0.0 <= successes <= trials:
        raise ValueError(f"wilson_interval: successes must be in [0, {trials}], got {successes}")
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


@dataclasses.dataclass(frozen=True)
class Tally:
    """Wins, draws and losses of one side over a set of games, with the one interval the project reports.

    The *score* is (wins + draws / 2) / games, the win rate when nothing is
    drawn; its 95% Wilson interval (:func:`wilson_interval`) is what every
    evaluation prints: ``kahuna-eval`` pairings and the evaluations during
    training alike.

    Attributes:
        wins: games won.
        draws: games drawn.
        losses: games lost.
        margin_sum: sum over the games of this side's final points minus the other side's.
    """

    wins: int = 0
    draws: int = 0
    losses: int = 0
    margin_sum: float = 0.0

    @property
    def games(self) -> int:
        """Games counted."""
        return self.wins + self.draws + self.losses

    @property
    def points(self) -> float:
        """wins + draws / 2."""
        return self.wins + 0.5 * self.draws

    @property
    def score(self) -> float:
        """(wins + draws / 2) / games; 0.0 before any game."""
        return self.points / self.games if self.games else 0.0

    @property
    def win_rate(self) -> float:
        """wins / games; 0.0 before any game."""
        return self.wins / self.games if self.games else 0.0

    @property
    def mean_margin(self) -> float:
        """Mean final point margin; 0.0 before any game."""
        return self.margin_sum / self.games if self.games else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of :attr:`score`; ``(0.0, 1.0)`` before any game."""
        return wilson_interval(self.points, self.games) if self.games else (0.0, 1.0)

    def add(self, outcome: float, margin: float = 0.0) -> Tally:
        """This tally plus one game whose outcome for this side is 1 (win), 0.5 (draw) or 0 (loss)."""
        if outcome not in (0, 0.5, 1):
            raise ValueError(f"a game's outcome must be 1 (win), 0.5 (draw) or 0 (loss), got {outcome!r}")
        return Tally(
            wins=self.wins + (outcome == 1),
            draws=self.draws + (outcome == 0.5),
            losses=self.losses + (outcome == 0),
            margin_sum=self.margin_sum + margin,
        )

    def summary(self) -> str:
        """``score 0.850 [0.827, 0.871] over 1000 games; 849 W / 2 D / 149 L; mean margin +4.37``."""
        low, high = self.interval
        return (
            f"score {self.score:.3f} [{low:.3f}, {high:.3f}] over {self.games} games; "
            f"{self.wins} W / {self.draws} D / {self.losses} L; mean margin {self.mean_margin:+.2f}"
        )


def elo_difference(score: float) -> float:
    """Elo gap implied by an expected score in ``(0, 1)``: ``400 * log10(score / (1 - score))``."""
    if not 0.0 < score < 1.0:
        raise ValueError(f"elo_difference needs a score strictly between 0 and 1, got {score}")
    return 400.0 * math.log10(score / (1.0 - score))


def expected_score(elo_a: float, elo_b: float) -> float:
    """Bradley–Terry / Elo expected score of a player rated ``elo_a`` against one rated ``elo_b``."""
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


@dataclasses.dataclass(frozen=True)
class BradleyTerryFit:
    """Result of :func:`fit_bradley_terry`.

    Attributes:
        elo: rating of each entrant, mean :data:`ELO_MEAN`.
        elo_se: standard error of each rating, in Elo points.
        covariance: covariance matrix of the ratings in Elo points squared.
        iterations: MM iterations used.
    """

    elo: np.ndarray
    elo_se: np.ndarray
    covariance: np.ndarray
    iterations: int

    def difference_se(self, i: int, j: int) -> float:
        """Standard error of ``elo[i] - elo[j]`` in Elo points."""
        c = self.covariance
        return float(math.sqrt(max(0.0, c[i, i] + c[j, j] - 2.0 * c[i, j])))


def fit_bradley_terry(
    scores: np.ndarray,
    games: np.ndarray,
    prior_draws: float = 0.0,
    tolerance: float = 1e-10,
    max_iterations: int = 100_000,
) -> BradleyTerryFit:
    """Fit Bradley–Terry strengths to pairwise results and return Elo ratings with standard errors.

    Args:
        scores: ``scores[i, j]`` is what ``i`` scored against ``j`` (wins plus
            half the draws); the diagonal is ignored.
        games: ``games[i, j]`` games played between ``i`` and ``j`` (symmetric).
        prior_draws: virtual drawn games added to every pairing with games.
        tolerance: stop when no log-strength moves by more than this.
        max_iterations: give up (``ValueError``) after this many MM steps.

    Raises ``ValueError`` for inconsistent inputs, a comparison graph that is
    not connected, or results without a finite maximum-likelihood fit (some
    group of entrants never scored against the others) when ``prior_draws``
    is 0.
    """
    scores, games = _checked_results(scores, games, prior_draws)
    log_strength, iterations = _mm_log_strengths(scores, games, tolerance, max_iterations)
    strength = np.exp(log_strength)
    p = strength[:, None] / (strength[:, None] + strength[None, :])
    weight = games * p * p.T
    information = np.diag(weight.sum(axis=1)) - weight
    covariance = np.linalg.pinv(information) * ELO_PER_NATURAL_LOG**2
    elo = ELO_MEAN + ELO_PER_NATURAL_LOG * log_strength
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return BradleyTerryFit(elo=elo, elo_se=se, covariance=covariance, iterations=iterations)


def _checked_results(scores: np.ndarray, games: np.ndarray, prior_draws: float) -> tuple[np.ndarray, np.ndarray]:
    """The score and game matrices with the prior draws added, after every check of :func:`fit_bradley_terry`."""
    scores = np.asarray(scores, dtype=float)
    games = np.asarray(games, dtype=float)
    n = scores.shape[0]
    if scores.shape != (n, n) or games.shape != (n, n) or n < 2:
        raise ValueError(
            f"scores and games must be square matrices of the same size >= 2, got {scores.shape}, {games.shape}"
        )
    off = ~np.eye(n, dtype=bool)
    if not np.allclose(games, games.T) or (games[off] < 0).any():
        raise ValueError("games must be symmetric and non-negative")
    if (scores[off] < 0).any() or not np.allclose((scores + scores.T)[off], games[off]):
        raise ValueError("scores[i, j] + scores[j, i] must equal games[i, j] for every pairing")
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be >= 0, got {prior_draws}")
    played = (games > 0) & off
    scores = np.where(played, scores + prior_draws / 2.0, 0.0)
    games = np.where(played, games + prior_draws, 0.0)
    if not _strongly_connected(played):
        raise ValueError(
            "ratings need every entrant linked to every other by played games (the graph is not connected)"
        )
    if not _strongly_connected(scores > 0):
        raise ValueError(
            "the results have no finite Bradley-Terry fit: some entrants never scored against the others "
            "(use prior_draws > 0)"
        )
    return scores, games


def _mm_log_strengths(
    scores: np.ndarray, games: np.ndarray, tolerance: float, max_iterations: int
) -> tuple[np.ndarray, int]:
    """Hunter's MM iterations to the maximum-likelihood log-strengths (mean 0); and the iterations taken."""
    wins = scores.sum(axis=1)
    log_strength = np.zeros(scores.shape[0])
    iterations = 0
    while True:
        iterations += 1
        strength = np.exp(log_strength)
        denominator = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated = np.log(wins) - np.log(denominator)
        updated -= updated.mean()
        change = float(np.max(np.abs(updated - log_strength)))
        log_strength = updated
        if change < tolerance:
            return log_strength, iterations
        if iterations >= max_iterations:
            raise ValueError(f"Bradley-Terry fit did not converge in {max_iterations} iterations")


def _strongly_connected(edges: np.ndarray) -> bool:
    """Whether the directed graph ``edges[i, j]`` (i -> j) reaches every node from node 0 and back."""
    n = edges.shape[0]

    def reached(adjacency: np.ndarray) -> int:
        """Number of nodes reachable from node 0."""
        seen = {0}
        stack = [0]
        while stack:
            node = stack.pop()
            for other in np.flatnonzero(adjacency[node]):
                if int(other) not in seen:
                    seen.add(int(other))
                    stack.append(int(other))
        return len(seen)

    return reached(edges) == n and reached(edges.T) == n
