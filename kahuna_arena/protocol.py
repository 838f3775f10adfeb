"""Benchmark protocols: one command, one comparable score (``kahuna-eval AGENT --protocol kahuna-v1``).

A protocol fixes everything a score depends on besides the agent: the
opponents, the games against each, the rules and the seed.  Its games are
seat-balanced (each deal twice, seats swapped) on the *common deals* of the
protocol's seed (:func:`kahuna_arena.match.schedule`), so every agent meets the same
deals and the same opponent behaviour, and an agent's games depend on what it
is, never on how its path is written (:func:`kahuna_arena.evaluation.deal_label`).
The results are the same for any ``--workers``.

**kahuna-v1** (:data:`KAHUNA_V1`) plays ``random`` (200 games), ``greedy``
(1,068), ``mcts`` (400; the search baseline's 200 simulations) and
``champion`` (1,068): the largest 95% half-width of a score is 0.030 against
``greedy`` and ``champion`` and 0.049 against ``mcts`` (docs/EVALUATION.md
has the table and how to report it).

The fixed ratings are the ladder's (docs/ratings.json; ``greedy`` and
``mcts`` are two of its anchors, :data:`kahuna_arena.stats.ANCHOR_RATINGS`), so the
protocol's Elo is on the ladder's one scale: the agent's rating is the
maximum-likelihood Bradley–Terry rating against those fixed opponents
(:func:`rating_against`, one virtual draw per opponent as the ladder adds),
with its 95% interval.  The half-widths are the Wilson interval's largest
(at a score of 0.5); each observed interval is reported.

How to report a result ("Kahuna-v1 score"): docs/EVALUATION.md.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from kahuna_arena.stats import ANCHOR_RATINGS, ELO_PER_NATURAL_LOG, Z95, expected_score, wilson_interval

PROTOCOL_FORMAT = "kahuna-protocol-result"
"""The ``format`` of a protocol's JSON."""


@dataclasses.dataclass(frozen=True)
class Opponent:
    """One opponent of a protocol: the entrant, the games against it, its fixed rating."""

    entrant: str
    games: int
    rating: float


@dataclasses.dataclass(frozen=True)
class Protocol:
    """Everything a protocol's score depends on besides the agent (see the module docstring)."""

    name: str
    seed: int
    opponents: tuple[Opponent, ...]
    variant: str = "standard"
    discard_rule: str = "instead_of_play"

    @property
    def total_games(self) -> int:
        """Games the protocol plays in all."""
        return sum(opponent.games for opponent in self.opponents)


KAHUNA_V1 = Protocol(
    name="kahuna-v1",
    seed=20_261_207,
    opponents=(
        Opponent("random", 200, 1.0),
        Opponent("greedy", 1_068, ANCHOR_RATINGS["greedy"]),
        Opponent("mcts", 400, ANCHOR_RATINGS["mcts"]),
        Opponent("champion", 1_068, 1_270.0),
    ),
)
"""Kahuna-v1: the table of the module docstring."""
PROTOCOLS: dict[str, Protocol] = {KAHUNA_V1.name: KAHUNA_V1}
"""The protocols by name (``--protocol NAME``)."""


def largest_half_width(games: int) -> float:
    """The largest 95% Wilson half-width of a score over ``games`` games (at a score of 0.5)."""
    low, high = wilson_interval(games / 2, games)
    return (high - low) / 2


def rating_against(
    points: Sequence[float], games: Sequence[int], ratings: Sequence[float], prior_draws: float = 1.0
) -> tuple[float, float]:
    """The Elo rating (and its standard error) of a player who scored ``points`` in ``games`` against
    opponents of fixed ``ratings``: the Bradley–Terry maximum likelihood, ``prior_draws`` virtual draws
    against each (so a clean sweep stays finite, as on the ladder)."""
    scored = np.asarray(points, dtype=float) + prior_draws / 2
    played = np.asarray(games, dtype=float) + prior_draws
    fixed = np.asarray(ratings, dtype=float)
    rating = float(np.average(fixed, weights=played))
    for _ in range(200):  # Newton on the log-likelihood's derivative (concave: converges from anywhere)
        expected = np.array([expected_score(rating, opponent) for opponent in fixed])
        gradient = float(np.sum(scored - played * expected))
        information = float(np.sum(played * expected * (1 - expected))) / ELO_PER_NATURAL_LOG
        step = gradient / information
        rating += max(-400.0, min(400.0, step))
        if abs(step) < 1e-9:
            break
    expected = np.array([expected_score(rating, opponent) for opponent in fixed])
    information = float(np.sum(played * expected * (1 - expected)))
    return rating, ELO_PER_NATURAL_LOG / math.sqrt(information)


def machine() -> dict[str, Any]:
    """The machine a protocol ran on (for the JSON; never part of the result)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.system(), "python": platform.python_version()}


def run_protocol(
    agent: str, protocol: Protocol = KAHUNA_V1, workers: int = 1, progress: bool = False, built: Any = None
) -> dict:
    """Play ``protocol`` for the entrant ``agent`` and return its result (the JSON's content).

    ``result`` (everything but ``run``) depends only on the protocol and what
    the agent is; ``run`` holds how it was run (the spec as given, workers,
    machine, times).  ``built``: the agent as :func:`kahuna_arena.entrants.resolve_entrant`
    built it already (``None``: built here).  Raises what
    :func:`kahuna_arena.evaluation.run_evaluation` raises for a bad entrant or a failed game.
    """
    from kahuna_arena.entrants import resolve_entrant
    from kahuna_arena.evaluation import ResolvedEntrants, deal_label, entrant_identity, run_evaluation
    from kahuna_env.engine import KahunaConfig

    config = KahunaConfig(variant=protocol.variant, discard_rule=protocol.discard_rule)
    started = time.perf_counter()
    identity = entrant_identity(agent)
    if built is None:
        built = resolve_entrant(agent, seed=0)  # the agent, built once: a bad one fails before any game
    rows = []
    for opponent in protocol.opponents:
        pair = ResolvedEntrants((agent, opponent.entrant), (built, resolve_entrant(opponent.entrant, seed=0)), False)
        report = run_evaluation(
            pair,
            opponent.games,
            seed=protocol.seed,
            workers=workers,
            config=config,
            progress=progress,
            common_deals=True,
            source=f"protocol {protocol.name}",
        )
        pairing = report.pairings[0]
        low, high = pairing.interval
        rows.append(
            {
                "opponent": opponent.entrant,
                "games": pairing.games,
                "wins": pairing.wins,
                "draws": pairing.draws,
                "losses": pairing.losses,
                "score": pairing.score,
                "score_ci95": [low, high],
                "mean_margin": pairing.mean_margin,
                "opponent_rating": opponent.rating,
                "seconds_per_move": pairing.seconds_per_move[0],
            }
        )
    points = [row["wins"] + row["draws"] / 2 for row in rows]
    elo, se = rating_against(points, [row["games"] for row in rows], [row["opponent_rating"] for row in rows])
    result = {
        "protocol": protocol.name,
        "seed": protocol.seed,
        "rules": config.to_dict(),
        "agent": {"identity": identity.key, "deals": deal_label(identity)},
        "scores": [{key: value for key, value in row.items() if key != "seconds_per_move"} for row in rows],
        "elo": {"rating": elo, "se": se, "ci95": [elo - Z95 * se, elo + Z95 * se], "scale": "the ladder's"},
    }
    return {
        "format": PROTOCOL_FORMAT,
        "result": result,
        "run": {
            "agent": agent,
            "workers": workers,
            "machine": machine(),
            "seconds": time.perf_counter() - started,
            "seconds_per_move": {row["opponent"]: row["seconds_per_move"] for row in rows},
        },
    }


def table(outcome: dict) -> str:
    """The protocol's one table, as ``kahuna-eval --protocol`` prints it."""
    result, run = outcome["result"], outcome["run"]
    lines = [f"{result['protocol']}: {run['agent']} ({result['agent']['identity'][:23]})"]
    lines.append(f"{'opponent':<10} {'games':>6}  {'W-D-L':>13}  {'score':>6}  {'95% CI':>15}  {'margin':>7}")
    for row in result["scores"]:
        low, high = row["score_ci95"]
        record = f"{row['wins']}-{row['draws']}-{row['losses']}"
        lines.append(
            f"{row['opponent']:<10} {row['games']:>6}  {record:>13}  {row['score']:>6.3f}  "
            f"[{low:.3f}, {high:.3f}]  {row['mean_margin']:>+7.2f}"
        )
    elo = result["elo"]
    low, high = elo["ci95"]
    lines.append(f"{result['protocol']} Elo (the ladder's scale): {elo['rating']:.0f} [{low:.0f}, {high:.0f}]")
    lines.append(
        f"{sum(row['games'] for row in result['scores']):,} games in {run['seconds']:.0f} s, {run['workers']} worker(s)"
    )
    return "\n".join(lines)
