"""Batched baselines (kahuna_env.agents.batched) against the scalar greedy, in one run.

    python benchmarks/batched_agents.py [--sizes 1024 4096] [--seconds 1.0] [--seed 0]

Scalar: :class:`GreedyAgent` playing both seats of scalar games, called as
training calls it (``act`` on the real game, no determinization: greedy reads
only public information), and :class:`RandomAgent` on the legal mask; the rate
counts the agent's calls only, not the engine's steps.

Batched, for every N: greedy playing both seats of N games with automatic
reset; each call decides for every game (``act(batch)``), then the batch
steps.  Printed: decisions/s of ``act`` alone, the same when only the games of
one seat are asked (``active = current == 0``, an opponent's share in
training: about half the games), and of the whole loop (``act`` + ``step``);
then ``BatchedRandom`` the same way.  Ratios are to the scalar agent's rate.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from kahuna_env.agents.base import RandomAgent, SeededAgent
from kahuna_env.agents.batched import BatchedGreedy, BatchedRandom, _BatchedAgent
from kahuna_env.agents.greedy import GreedyAgent
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


def batched_rates(make: Callable[[int], _BatchedAgent], n: int, seconds: float, seed: int) -> dict[str, float]:
    """Decisions/s of a batched agent at size ``n``: act (all games), act (one seat's games), act + step."""
    batch = KahunaBatch(n, seed=seed, auto_reset=True)
    agent = make(seed)
    rng = np.random.default_rng(seed)
    for _ in range(10):  # warm-up, and past the all-fresh start
        batch.step(agent.act(batch, rng=rng))
    rates = {}
    for label, one_seat in (("act", False), ("act, one seat", True)):
        decisions = 0
        in_act = 0.0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            active = batch.current == 0 if one_seat else None
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    agents: list[tuple[str, SeededAgent, Callable[[int], _BatchedAgent]]] = [
        ("greedy", GreedyAgent(seed=args.seed), lambda seed: BatchedGreedy(seed=seed)),
        ("random", RandomAgent(seed=args.seed), lambda seed: BatchedRandom(seed=seed)),
    ]
    for name, scalar, make in agents:
        base = scalar_rate(scalar, args.seconds, args.seed)
        print(f"{name}: scalar {base:12,.0f} decisions/s (act on the real game)")
        for n in args.sizes:
            rates = batched_rates(make, n, args.seconds, args.seed)
            cells = "  ".join(f"{label} {rate:12,.0f}/s ({rate / base:6.1f}x)" for label, rate in rates.items())
            print(f"{name}: N={n:<6d} {cells}")


if __name__ == "__main__":
    main()
