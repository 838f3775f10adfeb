"""The results of an evaluation: per-pairing tallies, the ratings table, and their text and JSON forms.

:func:`summarize` turns the games' results (:class:`kahuna_arena.match.GameResult`)
into one :class:`PairingResult` per pairing — a :class:`kahuna_arena.stats.Tally`
from the first-named entrant's side, overall and per seat — and, for three
or more entrants, a Bradley–Terry ratings table (:func:`kahuna_arena.stats.fit_bradley_terry`)
on the Elo scale.  :class:`EvaluationReport` holds everything
``kahuna-eval`` prints (:meth:`EvaluationReport.table`) and writes with
``--json`` (:meth:`EvaluationReport.to_dict`, format ``kahuna-eval-v1``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from kahuna_arena.match import GameResult
from kahuna_arena.stats import Z95, Tally, fit_bradley_terry
from kahuna_env.cli import terminal_safe

REPORT_FORMAT = "kahuna-eval-v1"
"""The ``format`` of a ``kahuna-eval --json`` report (:meth:`EvaluationReport.to_dict`)."""

PRIOR_DRAWS = 1.0
"""Virtual drawn games per pairing in the ratings fit (keeps ratings finite after a clean sweep)."""


@dataclasses.dataclass(frozen=True)
class PairingResult:
    """Results of one pairing, from entrant ``a``'s side.

    Attributes:
        a: first entrant (as given).
        b: second entrant.
        tally: ``a``'s wins, draws, losses and point margins (:class:`kahuna_arena.stats.Tally`).
        seat_tallies: the same, split by the seat ``a`` played (seat 0, seat 1).
        moves: actions played in all games.
        decisions: actions chosen by ``a`` and by ``b`` in all games.
        seconds: summed wall time of the games (one core each).
        seconds_per_move: mean time ``a`` and ``b`` took per action they chose.
    """

    a: str
    b: str
    tally: Tally
    seat_tallies: tuple[Tally, Tally]
    moves: int
    decisions: tuple[int, int]
    seconds: float = dataclasses.field(compare=False)
    seconds_per_move: tuple[float, float] = dataclasses.field(compare=False, default=(0.0, 0.0))

    @property
    def games(self) -> int:
        """Games played."""
        return self.tally.games

    @property
    def wins(self) -> int:
        """Games ``a`` won."""
        return self.tally.wins

    @property
    def draws(self) -> int:
        """Drawn games."""
        return self.tally.draws

    @property
    def losses(self) -> int:
        """Games ``a`` lost."""
        return self.tally.losses

    @property
    def score(self) -> float:
        """``a``'s score per game: (wins + draws / 2) / games (the win rate when nothing is drawn)."""
        return self.tally.score

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of :attr:`score` (:attr:`kahuna_arena.stats.Tally.interval`)."""
        return self.tally.interval

    @property
    def mean_margin(self) -> float:
        """Mean of ``a``'s final points minus ``b``'s."""
        return self.tally.mean_margin

    @property
    def seat_games(self) -> tuple[int, int]:
        """Games ``a`` played in seat 0 and in seat 1."""
        return (self.seat_tallies[0].games, self.seat_tallies[1].games)

    @property
    def seat_scores(self) -> tuple[float, float]:
        """``a``'s points (wins + draws / 2) in seat 0 and in seat 1."""
        return (self.seat_tallies[0].points, self.seat_tallies[1].points)

    @property
    def games_per_second(self) -> float:
        """Games per second of one core (games / summed game time)."""
        return self.games / self.seconds if self.seconds > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        low, high = self.interval
        return {
            "a": self.a,
            "b": self.b,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score": self.score,
            "score_ci95": [low, high],
            "seat_games": list(self.seat_games),
            "seat_scores": list(self.seat_scores),
            "mean_margin": self.mean_margin,
            "moves": self.moves,
            "seconds": self.seconds,
            "games_per_second": self.games_per_second,
            "seconds_per_move": {"a": self.seconds_per_move[0], "b": self.seconds_per_move[1]},
        }


@dataclasses.dataclass(frozen=True)
class Rating:
    """One row of the ratings table.

    Attributes:
        entrant: the entrant.
        elo: Bradley–Terry rating on the Elo scale (mean of the entrants 1000).
        elo_se: its standard error (Elo points); ``1.96 * elo_se`` is the 95% half-width.
        games: games it played.
        score: its score per game over all its games.
    """

    entrant: str
    elo: float
    elo_se: float
    games: int
    score: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "entrant": self.entrant,
            "elo": self.elo,
            "elo_se": self.elo_se,
            "elo_ci95": [self.elo - Z95 * self.elo_se, self.elo + Z95 * self.elo_se],
            "games": self.games,
            "score": self.score,
        }


@dataclasses.dataclass(frozen=True)
class EvaluationReport:
    """Everything an evaluation produced.

    Attributes:
        entrants: the entrants, in the order given.
        games_per_pairing: games of each pairing.
        seed: the base seed.
        config: the rule options (``KahunaConfig.to_dict()``).
        sampled: whether policy entrants sampled their moves.
        pairings: per-pairing results, in round-robin order.
        ratings: ratings table, best first (``None`` for fewer than three entrants).
        elapsed: wall time of the whole evaluation in seconds.
        workers: worker processes used.
        common_deals: whether every pairing played the same deals (:func:`kahuna_arena.match.schedule`).
        identities: each entrant's results-store key as it was played (``baseline:...``, or the
            ``sha256:`` of the agent file's bytes: :func:`kahuna_arena.evaluation.entrant_identity`), so an
            import of the report later knows which network a name such as ``champion`` stood for.
    """

    entrants: tuple[str, ...]
    games_per_pairing: int
    seed: int
    config: dict[str, Any]
    sampled: bool
    pairings: tuple[PairingResult, ...]
    ratings: tuple[Rating, ...] | None
    elapsed: float = dataclasses.field(compare=False)
    workers: int = dataclasses.field(compare=False, default=1)
    common_deals: bool = False
    identities: dict[str, str] = dataclasses.field(default_factory=dict)

    def seconds_per_move(self) -> dict[str, float]:
        """Mean time each entrant took to choose an action, over all its games."""
        think = dict.fromkeys(self.entrants, 0.0)
        decided = dict.fromkeys(self.entrants, 0)
        for p in self.pairings:
            for name, side in ((p.a, 0), (p.b, 1)):
                think[name] += p.seconds_per_move[side] * p.decisions[side]
                decided[name] += p.decisions[side]
        return {name: think[name] / decided[name] if decided[name] else 0.0 for name in self.entrants}

    @property
    def total_games(self) -> int:
        """Games played in all pairings."""
        return sum(p.games for p in self.pairings)

    @property
    def games_per_second(self) -> float:
        """Games per wall-clock second over the whole evaluation."""
        return self.total_games / self.elapsed if self.elapsed > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``--json`` writes)."""
        return {
            "format": REPORT_FORMAT,
            "entrants": list(self.entrants),
            "games_per_pairing": self.games_per_pairing,
            "seed": self.seed,
            "common_deals": self.common_deals,
            "identities": dict(self.identities),
            "config": self.config,
            "sampled": self.sampled,
            "score_definition": "(wins + draws/2) / games, 95% Wilson interval",
            "rating_definition": (
                f"Bradley-Terry maximum likelihood, draws as half wins, {PRIOR_DRAWS:g} virtual draw per pairing; "
                "Elo = 400*log10(strength), mean of the entrants 1000; se from the Fisher information"
            ),
            "pairings": [p.to_dict() for p in self.pairings],
            "ratings": None if self.ratings is None else [r.to_dict() for r in self.ratings],
            "total_games": self.total_games,
            "elapsed_seconds": self.elapsed,
            "games_per_second": self.games_per_second,
            "workers": self.workers,
            "seconds_per_move": self.seconds_per_move(),
        }

    def table(self) -> str:
        """The results as a readable text table (pairings, then ratings); names with control characters escaped."""
        shown = {name: terminal_safe(name) for name in self.entrants}
        width = max(len(f"{shown[p.a]} vs {shown[p.b]}") for p in self.pairings)
        width = max(width, len("pairing"))
        lines = [
            f"{'pairing':<{width}}  {'games':>5}  {'W-D-L':>11}  {'score':>5}  {'95% CI':^14}  {'margin':>7}  "
            f"{'games/s':>8}",
        ]
        for p in self.pairings:
            low, high = p.interval
            wdl = f"{p.wins}-{p.draws}-{p.losses}"
            lines.append(
                f"{shown[p.a] + ' vs ' + shown[p.b]:<{width}}  {p.games:>5}  {wdl:>11}  {p.score:>5.3f}  "
                f"[{low:.3f}, {high:.3f}]  {p.mean_margin:>+7.2f}  {p.games_per_second:>8.2f}"
            )
        if self.ratings is not None:
            name_width = max(len("entrant"), *(len(shown[r.entrant]) for r in self.ratings))
            lines += [
                "",
                f"{'rank':>4}  {'entrant':<{name_width}}  {'Elo':>6}  {'±95%':>5}  {'games':>5}  {'score':>5}",
            ]
            for rank, r in enumerate(self.ratings, 1):
                lines.append(
                    f"{rank:>4}  {shown[r.entrant]:<{name_width}}  {r.elo:>6.0f}  {Z95 * r.elo_se:>5.0f}  "
                    f"{r.games:>5}  {r.score:>5.3f}"
                )
            lines.append(
                f"(Bradley-Terry fit, Elo scale with the entrants' mean at 1000, draws half wins, "
                f"{PRIOR_DRAWS:g} virtual draw per pairing)"
            )
        speed = ", ".join(f"{shown[name]} {seconds:.4f}" for name, seconds in self.seconds_per_move().items())
        lines.append(f"seconds per move: {speed}")
        lines.append(
            f"{self.total_games} games in {self.elapsed:.1f} s ({self.games_per_second:.2f} games/s, "
            f"{self.workers} worker(s)); score = (wins + draws/2) / games of the first-named entrant"
        )
        if self.common_deals:
            lines.append("common deals (--common-deals): every pairing played the same deals of the seed")
        return "\n".join(lines)


def summarize(
    entrants: Sequence[str], games: int, results: Sequence[GameResult]
) -> tuple[tuple[PairingResult, ...], tuple[Rating, ...] | None]:
    """Per-pairing results and (three or more entrants) the ratings, from the game results."""
    by_pairing: dict[int, list[GameResult]] = {}
    for result in results:
        by_pairing.setdefault(result.task.pairing, []).append(result)
    pairings = []
    index = 0
    for a in range(len(entrants)):
        for b in range(a + 1, len(entrants)):
            pairings.append(_pairing_result(entrants[a], entrants[b], a, by_pairing.get(index, [])))
            index += 1
    ratings = _ratings(entrants, pairings) if len(entrants) >= 3 else None
    return tuple(pairings), ratings


def _pairing_result(a_name: str, b_name: str, a: int, results: list[GameResult]) -> PairingResult:
    tally = Tally()
    seat_tallies = [Tally(), Tally()]
    moves = 0
    seconds = 0.0
    think = [0.0, 0.0]  # a, b
    decided = [0, 0]
    for result in results:
        seat = result.task.seats.index(a)
        outcome = 0.5 if result.winner is None else float(result.winner == seat)
        margin = result.scores[seat] - result.scores[1 - seat]
        tally = tally.add(outcome, margin)
        seat_tallies[seat] = seat_tallies[seat].add(outcome, margin)
        moves += result.moves
        seconds += result.seconds
        think[0] += result.think_seconds[seat]
        think[1] += result.think_seconds[1 - seat]
        decided[0] += result.decisions[seat]
        decided[1] += result.decisions[1 - seat]
    return PairingResult(
        a=a_name,
        b=b_name,
        tally=tally,
        seat_tallies=(seat_tallies[0], seat_tallies[1]),
        moves=moves,
        decisions=(decided[0], decided[1]),
        seconds=seconds,
        seconds_per_move=(think[0] / max(1, decided[0]), think[1] / max(1, decided[1])),
    )


def _ratings(entrants: Sequence[str], pairings: Sequence[PairingResult]) -> tuple[Rating, ...]:
    n = len(entrants)
    position = {name: i for i, name in enumerate(entrants)}
    scores = np.zeros((n, n))
    games = np.zeros((n, n))
    for p in pairings:
        i, j = position[p.a], position[p.b]
        points = p.tally.points
        scores[i, j] += points
        scores[j, i] += p.games - points
        games[i, j] += p.games
        games[j, i] += p.games
    fit = fit_bradley_terry(scores, games, prior_draws=PRIOR_DRAWS)
    rows = [
        Rating(
            entrant=entrants[i],
            elo=float(fit.elo[i]),
            elo_se=float(fit.elo_se[i]),
            games=int(games[i].sum()),
            score=float(scores[i].sum() / games[i].sum()) if games[i].sum() else 0.0,
        )
        for i in range(n)
    ]
    return tuple(sorted(rows, key=lambda r: -r.elo))
