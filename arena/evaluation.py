"""Seat-balanced matches between checkpoints and baselines, with honest statistics (SPEC §8).

:func:`run_evaluation` plays every pairing of the entrants (a round robin)
and returns an :class:`EvaluationReport`: per pairing wins/draws/losses, the
score (wins plus half the draws, per game) with its 95% Wilson interval, the
mean point margin and the speed; for three or more entrants a Bradley–Terry
ratings table on the Elo scale with standard errors (:mod:`arena.stats`).

Entrants are strings (:func:`resolve_entrant`): a baseline name (``random``,
``greedy``, ``mcts``, ``mcts:N`` with a simulation budget N) or the path of a
policy file / training checkpoint (loaded with :func:`training.load_agent`).

Reproducibility and seat balance:

* ``games`` (per pairing) must be even.  Games ``2m`` and ``2m+1`` of a
  pairing share a deal (the same game seed) with the seats swapped, so every
  entrant plays each seat exactly ``games / 2`` times and luck of the deal
  cancels out between the two.
* Every seed of game ``k`` of the pairing ``(A, B)`` (the deal, the agents'
  own generators, the determinizations handed to search agents) is derived
  with :class:`numpy.random.SeedSequence` from ``(seed, A, B, k)``.  A game
  is therefore a pure function of those and the rule config: results are
  identical for any ``workers`` count and whatever other entrants take part.

Games run in worker processes (``spawn``) when ``workers > 1``; each worker
builds every entrant once and resets it with the game's seeds before each
game.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import re
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.stats import Z95, fit_bradley_terry, wilson_interval
from kahuna_env.agents import BASELINE_NAMES, BASELINES, Agent, choose_action, make_agent
from kahuna_env.engine import KahunaConfig, KahunaGame

RECORD_FORMAT = "kahuna-record-v1"
"""``format`` field of game records written by ``--record`` (and ``kahuna-play --record``)."""
PRIOR_DRAWS = 1.0
"""Virtual drawn games per pairing in the ratings fit (keeps ratings finite after a clean sweep)."""


# ---------------------------------------------------------------------------------------------- entrants
def is_checkpoint_spec(spec: str) -> bool:
    """Whether an entrant string names a file, not a baseline (it has a path separator or a suffix, or exists)."""
    return "/" in spec or "\\" in spec or Path(spec).suffix != "" or Path(spec).exists()


def resolve_entrant(spec: str, seed: int | None = None, sampled: bool = False) -> Agent:
    """Build the agent an entrant string names.

    Baselines: ``random``, ``greedy``, ``mcts``, ``mcts:N``.  Anything that
    looks like a path is loaded with :func:`training.load_agent`
    (``sampled=True`` makes the policy sample its moves instead of playing
    the most likely one).  Raises ``FileNotFoundError`` for a missing
    checkpoint and ``ValueError`` for a corrupt one or an unknown name (the
    message lists the accepted forms).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an entrant must be a non-empty string, got {spec!r}")
    if spec.partition(":")[0] in BASELINES:
        return make_agent(spec, seed=seed)
    if is_checkpoint_spec(spec):
        from training.agent import load_agent

        return load_agent(spec, deterministic=not sampled, seed=seed)
    raise ValueError(
        f"unknown entrant {spec!r}: expected a baseline ({', '.join(BASELINE_NAMES)}) "
        "or the path of a checkpoint / policy file"
    )


def entrant_label(spec: str) -> str:
    """A file-name-safe short label for an entrant (the file stem for checkpoints)."""
    text = Path(spec).stem if is_checkpoint_spec(spec) else spec
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "entrant"


# ---------------------------------------------------------------------------------------------- one game
@dataclasses.dataclass(frozen=True)
class GameTask:
    """One game of a pairing: who sits where and every seed it uses.

    Attributes:
        pairing: index of the pairing in the report.
        index: game number within the pairing (0-based).
        seats: entrant indices in seat 0 and seat 1.
        game_seed: seeds the deal and the reshuffles (shared by games ``2m`` and ``2m+1``).
        agent_seeds: seeds the agents in seat 0 and seat 1 are reset with.
        choice_seed: seeds the determinizations handed to search agents.
    """

    pairing: int
    index: int
    seats: tuple[int, int]
    game_seed: int
    agent_seeds: tuple[int, int]
    choice_seed: int


@dataclasses.dataclass(frozen=True)
class GameResult:
    """Outcome of one game.

    Attributes:
        task: the game that was played.
        scores: final points of seats 0 and 1.
        final_points: points of the final scoring, seats 0 and 1.
        winner: winning seat, or ``None`` for a draw.
        actions: every action of the game (empty unless recorded).
        moves: number of actions played.
        decisions: actions chosen by the agents of seat 0 and seat 1.
        seconds: wall time of the game in its worker (not part of the result's identity).
        think_seconds: time the agents of seat 0 and seat 1 spent choosing (not part of the identity).
    """

    task: GameTask
    scores: tuple[int, int]
    final_points: tuple[int, int]
    winner: int | None
    actions: tuple[int, ...]
    moves: int
    decisions: tuple[int, int]
    seconds: float = dataclasses.field(compare=False)
    think_seconds: tuple[float, float] = dataclasses.field(compare=False, default=(0.0, 0.0))


def _stable_id(spec: str) -> int:
    return zlib.crc32(spec.encode("utf-8"))


def schedule(entrants: Sequence[str], games: int, seed: int) -> list[GameTask]:
    """Every game of a round robin over ``entrants`` with ``games`` (even) games per pairing."""
    check_games(games)
    tasks = []
    pairing = 0
    for a in range(len(entrants)):
        for b in range(a + 1, len(entrants)):
            ids = (_stable_id(entrants[a]), _stable_id(entrants[b]))
            for k in range(games):
                deal = np.random.SeedSequence([seed, *ids, k // 2]).generate_state(1, dtype=np.uint64)[0]
                own = np.random.SeedSequence([seed, *ids, k, 1]).generate_state(3, dtype=np.uint64)
                seats = (a, b) if k % 2 == 0 else (b, a)
                tasks.append(
                    GameTask(
                        pairing=pairing,
                        index=k,
                        seats=seats,
                        game_seed=int(deal),
                        agent_seeds=(int(own[0]), int(own[1])),
                        choice_seed=int(own[2]),
                    )
                )
            pairing += 1
    return tasks


def check_games(games: int) -> None:
    """Raise ``ValueError`` unless ``games`` is a positive even integer (seat balance needs pairs of games)."""
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise ValueError(
            "games per pairing must be a positive even number (each deal is played twice, seats swapped), "
            f"got {games!r}"
        )


def play_game(
    agents: Sequence[Agent],
    task: GameTask,
    config: KahunaConfig | None = None,
    record: bool = False,
) -> GameResult:
    """Play the game ``task`` between ``agents`` (the agents of seat 0 and seat 1), resetting them with its seeds."""
    started = time.perf_counter()
    for agent, agent_seed in zip(agents, task.agent_seeds, strict=True):
        agent.reset(agent_seed)
    game = KahunaGame(config, seed=task.game_seed)
    rng = np.random.default_rng(task.choice_seed)
    actions: list[int] = []
    decisions = [0, 0]
    think = [0.0, 0.0]
    clock = time.perf_counter
    while not game.is_over:
        player = game.current_player
        before = clock()
        action = int(choose_action(agents[player], game, rng))
        think[player] += clock() - before
        decisions[player] += 1
        game.step(action)
        actions.append(action)
    scores = game.scores
    final = game.final_points
    return GameResult(
        task=task,
        scores=(scores[0], scores[1]),
        final_points=(final[0], final[1]),
        winner=game.winner,
        actions=tuple(actions) if record else (),
        moves=len(actions),
        decisions=(decisions[0], decisions[1]),
        seconds=time.perf_counter() - started,
        think_seconds=(think[0], think[1]),
    )


# ---------------------------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}


def _build_agents(entrants: Sequence[str], sampled: bool) -> list[Agent]:
    return [resolve_entrant(spec, seed=0, sampled=sampled) for spec in entrants]


def _init_worker(entrants: Sequence[str], sampled: bool, config: dict[str, Any] | None, record: bool) -> None:
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a dependency of training
        pass
    _WORKER["agents"] = _build_agents(entrants, sampled)
    _WORKER["config"] = None if config is None else KahunaConfig.from_dict(config)
    _WORKER["record"] = record


def _run_in_worker(task: GameTask) -> GameResult:
    agents = _WORKER["agents"]
    return play_game((agents[task.seats[0]], agents[task.seats[1]]), task, _WORKER["config"], _WORKER["record"])


# ---------------------------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True)
class PairingResult:
    """Results of one pairing, from entrant ``a``'s side.

    Attributes:
        a: first entrant (as given).
        b: second entrant.
        games: games played.
        wins: games ``a`` won.
        draws: drawn games.
        losses: games ``a`` lost.
        seat_games: games ``a`` played in seat 0 and in seat 1.
        seat_scores: ``a``'s score (wins + draws / 2) in seat 0 and in seat 1.
        mean_margin: mean of ``a``'s final points minus ``b``'s.
        moves: actions played in all games.
        seconds: summed wall time of the games (one core each).
        decisions: actions chosen by ``a`` and by ``b`` in all games.
        seconds_per_move: mean time ``a`` and ``b`` took per action they chose.
    """

    a: str
    b: str
    games: int
    wins: int
    draws: int
    losses: int
    seat_games: tuple[int, int]
    seat_scores: tuple[float, float]
    mean_margin: float
    moves: int
    decisions: tuple[int, int]
    seconds: float = dataclasses.field(compare=False)
    seconds_per_move: tuple[float, float] = dataclasses.field(compare=False, default=(0.0, 0.0))

    @property
    def score(self) -> float:
        """``a``'s score per game: (wins + draws / 2) / games (the win rate when nothing is drawn)."""
        return (self.wins + 0.5 * self.draws) / self.games

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of :attr:`score`."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games, Z95)

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
            "format": "kahuna-eval-v1",
            "entrants": list(self.entrants),
            "games_per_pairing": self.games_per_pairing,
            "seed": self.seed,
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
        """The results as a readable text table (pairings, then ratings)."""
        width = max(len(f"{p.a} vs {p.b}") for p in self.pairings)
        width = max(width, len("pairing"))
        lines = [
            f"{'pairing':<{width}}  {'games':>5}  {'W-D-L':>11}  {'score':>5}  {'95% CI':^14}  {'margin':>7}  "
            f"{'games/s':>8}",
        ]
        for p in self.pairings:
            low, high = p.interval
            wdl = f"{p.wins}-{p.draws}-{p.losses}"
            lines.append(
                f"{p.a + ' vs ' + p.b:<{width}}  {p.games:>5}  {wdl:>11}  {p.score:>5.3f}  "
                f"[{low:.3f}, {high:.3f}]  {p.mean_margin:>+7.2f}  {p.games_per_second:>8.2f}"
            )
        if self.ratings is not None:
            name_width = max(len("entrant"), *(len(r.entrant) for r in self.ratings))
            lines += [
                "",
                f"{'rank':>4}  {'entrant':<{name_width}}  {'Elo':>6}  {'±95%':>5}  {'games':>5}  {'score':>5}",
            ]
            for rank, r in enumerate(self.ratings, 1):
                lines.append(
                    f"{rank:>4}  {r.entrant:<{name_width}}  {r.elo:>6.0f}  {Z95 * r.elo_se:>5.0f}  "
                    f"{r.games:>5}  {r.score:>5.3f}"
                )
            lines.append(
                f"(Bradley-Terry fit, Elo scale with the entrants' mean at 1000, draws half wins, "
                f"{PRIOR_DRAWS:g} virtual draw per pairing)"
            )
        speed = ", ".join(f"{name} {seconds:.4f}" for name, seconds in self.seconds_per_move().items())
        lines.append(f"seconds per move: {speed}")
        lines.append(
            f"{self.total_games} games in {self.elapsed:.1f} s ({self.games_per_second:.2f} games/s, "
            f"{self.workers} worker(s)); score = (wins + draws/2) / games of the first-named entrant"
        )
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
    wins = draws = losses = moves = 0
    seat_games = [0, 0]
    seat_scores = [0.0, 0.0]
    margin = 0.0
    seconds = 0.0
    think = [0.0, 0.0]  # a, b
    decided = [0, 0]
    for result in results:
        seat = result.task.seats.index(a)
        seat_games[seat] += 1
        if result.winner is None:
            draws += 1
            seat_scores[seat] += 0.5
        elif result.winner == seat:
            wins += 1
            seat_scores[seat] += 1.0
        else:
            losses += 1
        margin += result.scores[seat] - result.scores[1 - seat]
        moves += result.moves
        seconds += result.seconds
        think[0] += result.think_seconds[seat]
        think[1] += result.think_seconds[1 - seat]
        decided[0] += result.decisions[seat]
        decided[1] += result.decisions[1 - seat]
    games = len(results)
    return PairingResult(
        a=a_name,
        b=b_name,
        games=games,
        wins=wins,
        draws=draws,
        losses=losses,
        seat_games=(seat_games[0], seat_games[1]),
        seat_scores=(seat_scores[0], seat_scores[1]),
        mean_margin=margin / games if games else 0.0,
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
        points = p.wins + 0.5 * p.draws
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


# ---------------------------------------------------------------------------------------------- driver
def check_entrants(entrants: Sequence[str], sampled: bool = False) -> None:
    """Resolve every entrant once (loading checkpoints) so that bad names or files fail before any game.

    Raises ``ValueError`` for fewer than two entrants, duplicates or an
    unknown name, ``FileNotFoundError`` for a missing checkpoint.
    """
    if len(entrants) < 2:
        raise ValueError(f"an evaluation needs at least two entrants, got {len(entrants)}")
    duplicates = sorted({spec for spec in entrants if list(entrants).count(spec) > 1})
    if duplicates:
        raise ValueError(f"entrant(s) given more than once: {', '.join(duplicates)}")
    for spec in entrants:
        resolve_entrant(spec, seed=0, sampled=sampled)


def run_evaluation(
    entrants: Sequence[str],
    games: int,
    seed: int = 0,
    workers: int = 1,
    config: KahunaConfig | None = None,
    sampled: bool = False,
    record_dir: str | Path | None = None,
    progress: bool = False,
) -> EvaluationReport:
    """Play a seat-balanced round robin and summarize it.

    Args:
        entrants: two or more entrant strings (see :func:`resolve_entrant`).
        games: games per pairing, a positive even number.
        seed: base seed of every game (see the module docstring).
        workers: worker processes (1 plays in this process).
        config: rule options (``None``: the defaults).
        sampled: policy entrants sample their moves instead of the argmax.
        record_dir: write every game as a JSON record there (see :func:`write_record`).
        progress: show a tqdm progress bar on stderr.

    Raises ``ValueError`` for bad arguments and entrants (before any game is
    played), ``FileNotFoundError`` for a missing checkpoint.
    """
    entrants = tuple(entrants)
    check_games(games)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    check_entrants(entrants, sampled)
    config = config or KahunaConfig()
    record = record_dir is not None
    if record:
        Path(record_dir).mkdir(parents=True, exist_ok=True)
    tasks = schedule(entrants, games, seed)
    started = time.perf_counter()
    results: list[GameResult] = []
    from tqdm import tqdm

    with tqdm(total=len(tasks), desc="games", unit="game", disable=not progress, dynamic_ncols=True) as bar:
        if workers == 1:
            agents = _build_agents(entrants, sampled)
            for task in tasks:
                result = play_game((agents[task.seats[0]], agents[task.seats[1]]), task, config, record)
                results.append(result)
                bar.update(1)
        else:
            context = multiprocessing.get_context("spawn")
            with context.Pool(
                processes=min(workers, len(tasks)),
                initializer=_init_worker,
                initargs=(entrants, sampled, config.to_dict(), record),
            ) as pool:
                for result in pool.imap_unordered(_run_in_worker, tasks, chunksize=1):
                    results.append(result)
                    bar.update(1)
    elapsed = time.perf_counter() - started
    results.sort(key=lambda r: (r.task.pairing, r.task.index))
    if record:
        for result in results:
            write_record(Path(record_dir) / _record_name(entrants, result), entrants, result, config)
    pairings, ratings = summarize(entrants, games, results)
    return EvaluationReport(
        entrants=entrants,
        games_per_pairing=games,
        seed=seed,
        config=config.to_dict(),
        sampled=sampled,
        pairings=pairings,
        ratings=ratings,
        elapsed=elapsed,
        workers=workers,
    )


# ---------------------------------------------------------------------------------------------- records
def _record_name(entrants: Sequence[str], result: GameResult) -> str:
    seat0, seat1 = (entrant_label(entrants[i]) for i in result.task.seats)
    return f"pairing{result.task.pairing:02d}-game{result.task.index:04d}-{seat0}-vs-{seat1}.json"


def game_record(
    players: Sequence[str],
    seed: int,
    config: KahunaConfig,
    actions: Sequence[int],
    scores: Sequence[int],
    final_points: Sequence[int],
    winner: int | None,
    **extra: Any,
) -> dict[str, Any]:
    """A JSON game record: the deal's seed, the rules, every action, and the result to check a replay against."""
    return {
        "format": RECORD_FORMAT,
        "players": list(players),
        "seed": int(seed),
        "config": config.to_dict(),
        "actions": [int(a) for a in actions],
        "result": {"scores": list(scores), "final_points": list(final_points), "winner": winner},
        **extra,
    }


def write_record(path: str | Path, entrants: Sequence[str], result: GameResult, config: KahunaConfig) -> Path:
    """Write one evaluation game as a JSON record (see :func:`game_record`) and return its path."""
    path = Path(path)
    record = game_record(
        players=[entrants[i] for i in result.task.seats],
        seed=result.task.game_seed,
        config=config,
        actions=result.actions,
        scores=result.scores,
        final_points=result.final_points,
        winner=result.winner,
        pairing=result.task.pairing,
        game=result.task.index,
    )
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path
