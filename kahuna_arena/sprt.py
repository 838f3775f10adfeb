"""Sequential tests: play game pairs until the answer is known (the generalized SPRT of fishtest).

``kahuna-eval A B --sprt elo0=0 elo1=30 --alpha 0.05 --beta 0.05 --games MAX``
asks "is A at least ``elo1`` Elo stronger than B, or at most ``elo0``?" and
plays only as many games as that takes.

* **Pairs.** Games ``2m`` and ``2m+1`` of the match share a deal with the
  seats swapped (:func:`kahuna_arena.match.schedule`); their summed score for A,
  0, ½, 1, 1½ or 2, is one *pair score*.  The test counts the five outcomes
  (the *pentanomial*), which removes the luck of the deal and of the seat
  from the variance: it is how fishtest tests Stockfish patches.
* **The statistic.** With ``s0 = L(elo0)`` and ``s1 = L(elo1)`` the expected
  per-game scores of the hypotheses (``L(x) = 1 / (1 + 10^(-x/400))``, the
  logistic Elo of :func:`kahuna_arena.stats.expected_score`), ``mu`` the mean pair
  score per game and ``var`` its variance over the ``N`` pairs, the
  generalized SPRT log-likelihood ratio is approximated as
  ``LLR = N · (s1 - s0) · (2·mu - s0 - s1) / (2·var)``
  (M. Van den Bergh, "A practical introduction to the GSPRT", and fishtest's
  ``LLR_alt2`` in ``server/fishtest/stats/LLRcalc.py``; every count gets
  1e-3 added first, as fishtest's ``results_to_pdf`` does, so that the
  first pairs cannot give a zero variance).
* **Bounds** (Wald): stop and accept H1 when ``LLR >= log((1 - beta) / alpha)``,
  H0 when ``LLR <= log(beta / (1 - alpha))``; otherwise play the next pair, up
  to ``--games`` (then no decision).  ``alpha`` is the chance of accepting H1
  when A is ``elo0`` stronger, ``beta`` of accepting H0 when it is ``elo1``
  stronger; ``tests/test_sprt.py`` measures both by simulation.
* **Estimate.** Elo ``= 400·log10(mu / (1 - mu))`` with a 95% interval from
  ``mu ± 1.96·sqrt(var / N)`` (the pair scores' own spread).

Pairs are counted in deal order whatever the worker count, so the decision
and the games used are the same for ``--workers 1`` and ``--workers 8``
(extra games finished in flight are written to the results store but not
counted).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from kahuna_arena.match import GameResult, schedule
from kahuna_arena.stats import Z95, expected_score

PAIR_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)
"""The five pair scores of the pentanomial (A's points over a deal played in both seats)."""
PRIOR_COUNT = 1e-3
"""Added to every pentanomial count before the LLR (fishtest's regularisation)."""


@dataclasses.dataclass(frozen=True)
class SPRT:
    """The hypotheses and error rates of a sequential test.

    Attributes:
        elo0: H0: A is ``elo0`` Elo stronger than B (logistic Elo).
        elo1: H1: A is ``elo1`` Elo stronger (``elo1 > elo0``).
        alpha: probability of accepting H1 when H0 holds.
        beta: probability of accepting H0 when H1 holds.
    """

    elo0: float = 0.0
    elo1: float = 30.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        for name in ("elo0", "elo1", "alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"sprt {name} must be a finite number, got {value!r}")
        if not self.elo0 < self.elo1:
            raise ValueError(f"sprt needs elo0 < elo1, got elo0={self.elo0:g} elo1={self.elo1:g}")
        if not (-1000 <= self.elo0 and self.elo1 <= 1000):
            raise ValueError(f"sprt elo0 and elo1 must lie in [-1000, 1000], got {self.elo0:g}, {self.elo1:g}")
        for name in ("alpha", "beta"):
            if not 0.0 < getattr(self, name) < 0.5:
                raise ValueError(f"sprt {name} must be in (0, 0.5), got {getattr(self, name):g}")

    @property
    def lower(self) -> float:
        """Accept H0 at or below this LLR: ``log(beta / (1 - alpha))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """Accept H1 at or above this LLR: ``log((1 - beta) / alpha)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def decide(self, llr: float) -> str | None:
        """``"H1"``, ``"H0"`` or ``None`` (play on) for a log-likelihood ratio."""
        if llr >= self.upper:
            return "H1"
        if llr <= self.lower:
            return "H0"
        return None


def parse_hypotheses(words: Sequence[str]) -> tuple[float, float]:
    """``(elo0, elo1)`` from ``["elo0=0", "elo1=30"]``; a one-line ``ValueError`` for anything else."""
    values: dict[str, float] = {}
    for word in words:
        name, equals, text = word.partition("=")
        if not equals or name not in ("elo0", "elo1"):
            raise ValueError(f"--sprt expects elo0=X elo1=Y, got {word!r}")
        if name in values:
            raise ValueError(f"--sprt gives {name} twice")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--sprt {name} must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"--sprt {name} must be finite, got {text!r}")
        values[name] = value
    missing = [name for name in ("elo0", "elo1") if name not in values]
    if missing:
        raise ValueError(f"--sprt expects elo0=X elo1=Y, missing {' and '.join(missing)}")
    return values["elo0"], values["elo1"]


def _pdf_moments(counts: np.ndarray, prior: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pairs, mean, variance)`` of the per-game pair score (pair score / 2) over the last axis of ``counts``."""
    counts = np.asarray(counts, dtype=float) + prior
    values = np.asarray(PAIR_SCORES) / 2.0
    pairs = counts.sum(axis=-1)
    mean = (counts * values).sum(axis=-1) / pairs
    variance = (counts * values**2).sum(axis=-1) / pairs - mean**2
    return pairs, mean, variance


def _mle_lambda(values: np.ndarray, probabilities: np.ndarray, target: float) -> np.ndarray:
    """The Lagrange multiplier of the distribution nearest ``probabilities`` with mean ``target``.

    The maximum-likelihood distribution with mean ``target`` over the same
    outcomes is ``p_i / (1 + lambda (x_i - target))`` where ``lambda`` solves
    ``sum p_i (x_i - target) / (1 + lambda (x_i - target)) = 0``; the sum
    falls as ``lambda`` grows, so bisection on the interval where every
    weight stays positive finds it (vectorised over the leading axes).
    """
    shifted = values - target
    flat = probabilities.reshape(-1, probabilities.shape[-1])
    low = np.full(flat.shape[0], -1.0 / shifted.max())
    high = np.full(flat.shape[0], -1.0 / shifted.min())
    # First-order solution as the start: lambda = (mean - target) / E[(x - target)^2].
    lam = (flat * shifted).sum(axis=-1) / (flat * shifted**2).sum(axis=-1)
    lam = np.clip(lam, low / 2.0, high / 2.0)
    todo = np.arange(flat.shape[0])
    for _ in range(100):  # Newton steps kept inside the bracket [low, high] (bisection where Newton leaves it)
        p, x = flat[todo], lam[todo]
        weights = 1.0 + x[:, None] * shifted
        value = (p * shifted / weights).sum(axis=-1)
        slope = -(p * shifted**2 / weights**2).sum(axis=-1)
        lower = np.where(value > 0, x, low[todo])
        upper = np.where(value > 0, high[todo], x)
        step = x - value / slope
        updated = np.where((step > lower) & (step < upper), step, (lower + upper) / 2.0)
        low[todo], high[todo], lam[todo] = lower, upper, updated
        todo = todo[np.abs(updated - x) >= 1e-9]  # the LLR is stationary in lambda: its error is second order
        if todo.size == 0:
            break
    return lam.reshape(probabilities.shape[:-1])


def pentanomial_llr(counts: np.ndarray | Sequence[float], elo0: float, elo1: float) -> np.ndarray | float:
    """The generalized SPRT log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) for pentanomial ``counts``.

    ``counts[..., k]`` is the number of pairs with pair score ``k / 2``
    (:data:`PAIR_SCORES`); any leading axes are independent tests (the
    simulation in the tests runs thousands at once).  The ratio of the
    likelihoods of the maximum-likelihood pentanomial distributions with
    per-game mean ``s1`` and ``s0``, on counts regularised by
    :data:`PRIOR_COUNT` (fishtest's ``LLR`` of ``LLRcalc.py``, the exact form
    of which ``N (s1 - s0)(2 mu - s0 - s1) / (2 var)`` is the approximation).
    """
    raw = np.asarray(counts, dtype=float)
    s0, s1 = expected_score(elo0, 0.0), expected_score(elo1, 0.0)
    regular = raw + PRIOR_COUNT
    probabilities = regular / regular.sum(axis=-1, keepdims=True)
    values = np.asarray(PAIR_SCORES) / 2.0
    lambda0 = _mle_lambda(values, probabilities, s0)
    lambda1 = _mle_lambda(values, probabilities, s1)
    per_pair = (
        probabilities * (np.log1p(lambda0[..., None] * (values - s0)) - np.log1p(lambda1[..., None] * (values - s1)))
    ).sum(axis=-1)
    llr = raw.sum(axis=-1) * per_pair
    return float(llr) if np.ndim(llr) == 0 else llr


def pentanomial_llr_approximate(counts: np.ndarray | Sequence[float], elo0: float, elo1: float) -> np.ndarray | float:
    """Fishtest's ``LLR_alt2`` approximation ``N (s1 - s0)(2 mu - s0 - s1) / (2 var)`` (for comparison only).

    Close to :func:`pentanomial_llr` once many pairs are counted; with a
    handful of pairs and a near-zero variance it is far too large, which is
    why the test uses the exact ratio.
    """
    raw = np.asarray(counts, dtype=float)
    s0, s1 = expected_score(elo0, 0.0), expected_score(elo1, 0.0)
    _, mean, variance = _pdf_moments(raw, PRIOR_COUNT)
    llr = raw.sum(axis=-1) * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * np.maximum(variance, 1e-12))
    return float(llr) if np.ndim(llr) == 0 else llr


def elo_interval(counts: Sequence[float]) -> tuple[float, float, float]:
    """``(elo, low, high)``: the logistic Elo of the mean pair score and its 95% interval (see the module doc)."""
    pairs, mean, variance = _pdf_moments(np.asarray(counts, dtype=float), 0.0)
    if pairs <= 0:
        return 0.0, -math.inf, math.inf
    half = Z95 * math.sqrt(max(float(variance), 0.0) / float(pairs))

    def elo(score: float) -> float:
        if score <= 0.0:
            return -math.inf
        if score >= 1.0:
            return math.inf
        return 400.0 * math.log10(score / (1.0 - score))

    return elo(float(mean)), elo(float(mean) - half), elo(float(mean) + half)


@dataclasses.dataclass(frozen=True)
class SPRTReport:
    """What a sequential test found.

    Attributes:
        a, b: the entrants (the hypotheses are about A's Elo over B).
        test: the hypotheses and error rates.
        counts: pairs with pair score 0, ½, 1, 1½, 2 (A's points).
        llr: the log-likelihood ratio after the last counted pair.
        decision: ``"H1"``, ``"H0"`` or ``None`` (``max_games`` reached first).
        max_games: the game budget.
        seed: the base seed of the deals.
        games_played: games finished, counted or not (with workers some finish after the decision).
        elapsed: wall time in seconds.
        common_deals: whether the deals were the common deals of the seed (:func:`kahuna_arena.match.schedule`).
    """

    a: str
    b: str
    test: SPRT
    counts: tuple[int, int, int, int, int]
    llr: float
    decision: str | None
    max_games: int
    seed: int
    games_played: int = dataclasses.field(compare=False)
    elapsed: float = dataclasses.field(compare=False)
    common_deals: bool = False

    @property
    def pairs(self) -> int:
        """Pairs counted."""
        return sum(self.counts)

    @property
    def games(self) -> int:
        """Games the test used (two per counted pair)."""
        return 2 * self.pairs

    @property
    def score(self) -> float:
        """A's score per game over the counted games."""
        return sum(c * v for c, v in zip(self.counts, PAIR_SCORES, strict=True)) / max(1, self.games)

    def elo(self) -> tuple[float, float, float]:
        """``(elo, low, high)`` of A over B (:func:`elo_interval`)."""
        return elo_interval(self.counts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``kahuna-eval --sprt ... --json``, format ``kahuna-sprt-v1``)."""
        elo, low, high = self.elo()
        return {
            "format": "kahuna-sprt-v1",
            "a": self.a,
            "b": self.b,
            "elo0": self.test.elo0,
            "elo1": self.test.elo1,
            "alpha": self.test.alpha,
            "beta": self.test.beta,
            "llr": self.llr,
            "bounds": [self.test.lower, self.test.upper],
            "decision": self.decision,
            "pentanomial": list(self.counts),
            "pairs": self.pairs,
            "games": self.games,
            "games_played": self.games_played,
            "max_games": self.max_games,
            "score": self.score,
            "elo": _finite(elo),
            "elo_ci95": [_finite(low), _finite(high)],
            "seed": self.seed,
            "common_deals": self.common_deals,
            "elapsed_seconds": self.elapsed,
            "llr_definition": "fishtest GSPRT LLR_alt2 on the pentanomial of seat-swapped pairs, logistic Elo",
        }

    def text(self) -> str:
        """The result as a few readable lines."""
        elo, low, high = self.elo()
        verdict = {
            "H1": f"H1 accepted: {self.a} is stronger by about {self.test.elo1:g} Elo or more",
            "H0": f"H0 accepted: {self.a} is not stronger than {self.b} by {self.test.elo1:g} Elo "
            f"(at most about {self.test.elo0:g})",
            None: f"no decision within {self.max_games} games",
        }[self.decision]
        return "\n".join(
            [
                f"SPRT {self.a} vs {self.b}: elo0={self.test.elo0:g} elo1={self.test.elo1:g} "
                f"alpha={self.test.alpha:g} beta={self.test.beta:g}",
                f"LLR {self.llr:+.3f}  bounds [{self.test.lower:+.3f}, {self.test.upper:+.3f}]  -> {verdict}",
                f"games used {self.games} ({self.pairs} pairs) of at most {self.max_games}; "
                f"pentanomial {'-'.join(str(c) for c in self.counts)} (pair score 0 .. 2)",
                f"score {self.score:.3f}; Elo {elo:+.1f} [{low:+.1f}, {high:+.1f}] (95%)",
                f"{self.games_played} games played in {self.elapsed:.1f} s"
                + (" on the common deals of the seed (--common-deals)" if self.common_deals else ""),
            ]
        )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def run_sprt(
    a: str,
    b: str,
    test: SPRT,
    max_games: int,
    seed: int = 0,
    workers: int = 1,
    config: Any = None,
    sampled: bool = False,
    store: Any = None,
    progress: bool = False,
    resolved: Any = None,
    common_deals: bool = False,
) -> SPRTReport:
    """Play seat-swapped pairs of ``a`` against ``b`` until ``test`` decides or ``max_games`` are played.

    ``resolved``: what :func:`kahuna_arena.evaluation.check_entrants` returned for
    ``(a, b)``, used as it is (the entrants are then not built again).

    The deals are those of ``kahuna-eval a b --games max_games --seed seed``
    (:func:`kahuna_arena.match.schedule`; with ``common_deals``, of that command
    with ``--common-deals``), in order, so the test's games are the first
    games of that fixed match.  ``store`` (an
    :class:`kahuna_arena.store.ResultsStore`) receives every finished game.  Raises
    what :func:`kahuna_arena.evaluation.run_evaluation` raises for bad entrants or a
    failed game.
    """
    from kahuna_arena.evaluation import _store_writer, check_run, deal_label, entrant_identity, play_tasks, progress_bar
    from kahuna_env.engine import KahunaConfig

    resolved = check_run((a, b) if resolved is None else resolved, max_games, seed, workers, sampled)
    if resolved.specs != (a, b):
        raise ValueError("the resolved entrants are not the ones named")
    entrants = resolved.specs
    config = config or KahunaConfig()
    identities = [entrant_identity(spec, sampled) for spec in entrants]
    tasks = schedule([deal_label(identity) for identity in identities], max_games, seed, common_deals=common_deals)
    save = _store_writer(store, entrants, sampled, config, seed, "kahuna-sprt", common_deals, identities)
    pairs = _PairCounts(test)
    started = time.perf_counter()
    with progress_bar(max_games, progress) as bar:

        def on_result(result: GameResult) -> bool:
            save(result)
            bar.update(1)
            return pairs.add(result)

        play_tasks(tasks, resolved, workers, config, False, on_result)
    return SPRTReport(
        a=a,
        b=b,
        test=test,
        counts=tuple(pairs.counts),
        llr=float(pairs.llr),
        decision=pairs.decision,
        max_games=max_games,
        seed=seed,
        games_played=pairs.played,
        elapsed=time.perf_counter() - started,
        common_deals=common_deals,
    )


class _PairCounts:
    """The pentanomial counts of finished seat-swapped pairs, in deal order, and the test's decision on them."""

    def __init__(self, test: SPRT) -> None:
        self.test = test
        self.counts = [0, 0, 0, 0, 0]
        self.llr = 0.0
        self.decision: str | None = None
        self.played = 0
        self._waiting: dict[int, dict[int, float]] = {}  # pair -> game of the pair -> entrant a's points
        self._next = 0  # the next pair to count: pairs are counted in deal order, whatever order games finish in

    def add(self, result: GameResult) -> bool:
        """Count one finished game; whether the test has decided (no further game is needed)."""
        self.played += 1
        seat = result.task.seats.index(0)
        points = 0.5 if result.winner is None else float(result.winner == seat)
        self._waiting.setdefault(result.task.index // 2, {})[result.task.index % 2] = points
        while len(self._waiting.get(self._next, {})) == 2 and self.decision is None:
            pair = self._waiting.pop(self._next)
            self.counts[round(2 * (pair[0] + pair[1]))] += 1
            self._next += 1
            self.llr = pentanomial_llr(self.counts, self.test.elo0, self.test.elo1)
            self.decision = self.test.decide(self.llr)
        return self.decision is not None


def simulate(
    test: SPRT, elo: float, tests: int, rng: np.random.Generator, max_pairs: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``tests`` simulated sequential tests of a true difference of ``elo`` (independent games, no draws).

    Each pair is two games won with probability ``L(elo)`` each; the test
    stops as :func:`run_sprt` does.  Returns ``(decisions, pairs)``: per test
    1 (H1), 0 (H0) or -1 (no decision within ``max_pairs``), and the pairs it used.
    """
    score = expected_score(elo, 0.0)
    probabilities = np.array([(1 - score) ** 2, 0.0, 2 * score * (1 - score), 0.0, score**2])
    counts = np.zeros((tests, 5))
    decisions = np.full(tests, -1)
    pairs = np.full(tests, max_pairs)
    active = np.arange(tests)
    chunk = 64  # pairs simulated at once per test; the test still stops at the first pair that crosses a bound
    done_pairs = 0
    while active.size and done_pairs < max_pairs:
        size = min(chunk, max_pairs - done_pairs)
        outcomes = rng.choice(5, size=(active.size, size), p=probabilities)
        running = counts[active][:, None, :] + np.cumsum(np.eye(5)[outcomes], axis=1)
        llr = pentanomial_llr(running, test.elo0, test.elo1)
        crossed = (llr >= test.upper) | (llr <= test.lower)
        stopped = crossed.any(axis=1)
        first = crossed.argmax(axis=1)
        rows = active[stopped]
        decisions[rows] = (llr[stopped, first[stopped]] >= test.upper).astype(int)
        pairs[rows] = done_pairs + first[stopped] + 1
        counts[active] = running[:, -1, :]
        active = active[~stopped]
        done_pairs += size
    return decisions, pairs
