"""Batched baselines (kahuna_env.agents.batched) against the scalar agents, in one run.

    python benchmarks/batched_agents.py [--sizes 1024 4096] [--seconds 1.0] [--repeats 3] [--seed 0]
    python benchmarks/batched_agents.py --check 300000 [--games 192]

Speed mode (single process).  Scalar: :class:`GreedyAgent` playing both
seats of scalar games, called as training calls it (``act`` on the real game,
no determinization: greedy reads only public information and its own hand),
and :class:`RandomAgent` on the legal mask; the rate counts the agent's calls
only, not the engine's steps.  Batched, for every N: the agent playing both
seats of N games with automatic reset.  Printed: decisions/s of ``act`` alone
(every game decides in each call; the legal masks it reads are computed in
the call, after the previous step), the same when only the games of one seat
are asked (``active = current == 0``, about half the games: an opponent's
share in training), and of the whole loop (``act`` + ``step``).  Ratios are to
the scalar agent's rate.  Every rate is the best of ``--repeats`` interleaved
measurements (the least disturbed by other load on the machine).

Check mode: batched play over every variant and option (mostly greedy, partly
random) until ``--check`` positions; in each, the batched greedy's set must
equal the scalar ``best_actions`` and its pick must lie in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from vector import ALL_CONFIGS as CONFIGS  # benchmarks/vector.py: every variant and option
from vector import speed_parser

from kahuna_env.agents.base import RandomAgent, SeededAgent
from kahuna_env.agents.batched import BatchedAgent, BatchedGreedy, BatchedRandom, greedy_best_masks
from kahuna_env.agents.greedy import GreedyAgent, best_actions
from kahuna_env.engine import KahunaGame
from kahuna_env.vector import KahunaBatch


def scalar_rate(agent: SeededAgent, seconds: float, seed: int) -> float:
    """Decisions/s of a scalar agent playing both seats (time in ``act`` only)."""
    decisions = 0
    in_act = 0.0
    games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        game = KahunaGame(seed=seed + games)
        games += 1
        while not game.is_over:
            mask = game.action_mask()
            t = time.perf_counter()
            action = agent.act(None, mask, game)
            in_act += time.perf_counter() - t
            game.step(action)
            decisions += 1
    return decisions / in_act


def batched_rates(agent: BatchedAgent, n: int, seconds: float, seed: int) -> dict[str, float]:
    """Decisions/s of a batched agent at size ``n``: act (all games), act (one seat's games), act + step."""
    batch = KahunaBatch(n, seed=seed, auto_reset=True)
    rng = np.random.default_rng(seed)
    for _ in range(10):  # warm-up, and past the all-fresh start
        batch.step(agent.act(batch, rng=rng))
    rates = {}
    for label, one_seat in (("act", False), ("act, one seat", True)):
        decisions = 0
        in_act = 0.0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            active = batch.current_player == 0 if one_seat else None
            t = time.perf_counter()
            actions = agent.act(batch, active, rng)
            in_act += time.perf_counter() - t
            decisions += n if active is None else int((active & ~batch.over).sum())
            if active is not None:  # the other seat's games move too (untimed)
                actions = np.where(active, actions, agent.act(batch, ~active, rng))
            batch.step(actions)
        rates[label] = decisions / in_act
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        batch.step(agent.act(batch, rng=rng))
        steps += 1
    rates["act + step"] = n * steps / (time.perf_counter() - start)
    return rates


def speed(sizes: list[int], seconds: float, seed: int, repeats: int) -> None:
    print(f"best of {repeats} interleaved repeats of {seconds:g} s each; decisions/s (x the scalar agent)")
    agents: list[tuple[str, Callable[[], SeededAgent], Callable[[], BatchedAgent]]] = [
        ("greedy", lambda: GreedyAgent(seed=seed), lambda: BatchedGreedy(seed=seed)),
        ("random", lambda: RandomAgent(seed=seed), lambda: BatchedRandom(seed=seed)),
    ]
    for name, scalar, batched in agents:
        for n in sizes:
            scalars, runs = [], []
            for _ in range(repeats):
                scalars.append(scalar_rate(scalar(), seconds / 2, seed))
                runs.append(batched_rates(batched(), n, seconds, seed))
            base = max(scalars)
            rates = {key: max(run[key] for run in runs) for key in runs[0]}
            cells = "  ".join(f"{label} {rate:11,.0f} ({rate / base:5.1f}x)" for label, rate in rates.items())
            print(f"{name:>6} N={n:<6d} scalar {base:9,.0f}  {cells}")


def check(positions: int, games: int, seed: int) -> None:
    """Batched greedy sets against the scalar ``best_actions`` until ``positions`` live positions are checked."""
    configs = [CONFIGS[i % len(CONFIGS)] for i in range(games)]
    batch = KahunaBatch(games, configs, seed=seed, auto_reset=True)
    agent, rng = BatchedGreedy(seed=seed), np.random.default_rng(seed)
    checked = finished = ties = 0
    start = time.perf_counter()
    while checked < positions:
        masks = greedy_best_masks(batch)
        choice = agent.act(batch, rng=rng)
        for i in np.flatnonzero(~batch.over).tolist():
            expected = best_actions(batch.game(i))
            if np.flatnonzero(masks[i]).tolist() != expected or not masks[i, choice[i]]:
                raise AssertionError(f"game {i}: batched {np.flatnonzero(masks[i])}, scalar {expected}")
            checked += 1
            ties += len(expected) > 1
        actions = np.where(rng.random(games) < 0.75, choice, batch.random_actions(rng))
        finished += int(batch.step(actions).terminated.sum())
    print(
        f"greedy check passed: {checked:,} positions ({ties:,} with ties), {finished:,} finished games, "
        f"{len(CONFIGS)} configurations, {time.perf_counter() - start:.0f} s"
    )


def main(argv: list[str] | None = None) -> None:
    parser = speed_parser(__doc__, [1024, 4096])
    parser.add_argument("--check", type=int, metavar="POSITIONS", help="run the greedy check instead")
    parser.add_argument("--games", type=int, default=192, help="batch size of the check")
    args = parser.parse_args(argv)
    if args.check is not None:
        check(args.check, args.games, args.seed)
    else:
        speed(args.sizes, args.seconds, args.seed, max(1, args.repeats))


if __name__ == "__main__":
    main()
