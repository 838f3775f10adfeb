"""Batched engine speed (kahuna_env.vector.KahunaBatch) against the scalar engine, in one run.

    python benchmarks/vector.py [--sizes 1 64 1024 4096 16384] [--seconds 1.0] [--repeats 3] [--seed 0]
    python benchmarks/vector.py --differential 1000000 [--games 100]

Speed mode (single process, one core): the scalar engine's random playouts
(legal list + validated step, as benchmarks/engine.py), then for every batch
size N seeded random batched play with automatic reset: ``legal_masks()``, a
uniformly random legal action per game (``random_actions``), ``step()``.  It prints actions/s of the whole
loop and of masks + step alone (the random pick is the player's, not the
engine's), observations/s (``observations()``, the player to act; its ratio is
to the scalar engine's actions/s), and the memory of a batch of the largest N
(tracemalloc peak of building it and playing and observing a few steps).

Differential mode: random batched play over every variant and option with
automatic reset; after every step each game's position, legal mask and
observations (both seats) and full state must equal the scalar engine's after
the same actions (pile order included).  Prints the number of actions and games checked.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
import tracemalloc

import numpy as np

from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation, encode_state
from kahuna_env.vector import KahunaBatch


def scalar_rate(seconds: float, seed: int) -> tuple[float, int]:
    """Random playouts of the scalar engine for about ``seconds``; (actions/s, actions)."""
    chooser = random.Random(seed)
    actions = 0
    games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        game = KahunaGame(seed=seed + games)
        games += 1
        while not game.is_over:
            legal = game.legal_actions()
            game.step(legal[int(chooser.random() * len(legal))])
            actions += 1
    return actions / (time.perf_counter() - start), actions


def batch_rates(n: int, seconds: float, seed: int) -> dict[str, float]:
    """Random batched play at size ``n`` for about ``seconds``; rates of the loop, of masks+step, of observations."""
    batch = KahunaBatch(n, seed=seed, auto_reset=True)
    rng = np.random.default_rng(seed)
    for _ in range(10):  # warm-up, and past the all-fresh start
        batch.step(batch.random_actions(rng))
    steps = 0
    engine_time = 0.0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        batch.legal_masks()
        t1 = time.perf_counter()
        actions = batch.random_actions(rng)
        t2 = time.perf_counter()
        batch.step(actions)
        t3 = time.perf_counter()
        engine_time += (t1 - t0) + (t3 - t2)
        steps += 1
        if t3 - start >= seconds and steps >= 3:
            break
    loop = time.perf_counter() - start
    calls = 0
    start = time.perf_counter()
    while True:
        batch.observations()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 2 and calls >= 3:
            break
    return {
        "loop": steps * n / loop,
        "engine": steps * n / engine_time,
        "observations": calls * n / elapsed,
    }


def batch_memory(n: int, seed: int) -> int:
    """Peak bytes traced while building a batch of ``n`` games and playing and observing a few steps."""
    tracemalloc.start()
    batch = KahunaBatch(n, seed=seed, auto_reset=True)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        batch.legal_masks()
        batch.step(batch.random_actions(rng))
    batch.observations()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def speed(sizes: list[int], seconds: float, seed: int, repeats: int) -> None:
    """Per size: ``repeats`` measurements of the scalar engine and of the batch, interleaved (so a
    change of load on the machine hits both), the best of each printed, with their ratio."""
    print(f"best of {repeats} interleaved repeats of {seconds:g} s each (the least disturbed by other load)")
    header = f"{'N':>6} {'scalar/s':>10} {'play actions/s':>15} {'x scalar':>9} {'masks+step/s':>14} {'x scalar':>9}"
    print(f"{header} {'obs/s':>11} {'x scalar':>9}")
    for n in sizes:
        scalars, runs = [], []
        for _ in range(repeats):
            scalars.append(scalar_rate(seconds / 2, seed)[0])
            runs.append(batch_rates(n, seconds, seed))
        scalar = max(scalars)
        rates = {key: max(run[key] for run in runs) for key in runs[0]}
        print(
            f"{n:>6} {scalar:>10,.0f} {rates['loop']:>15,.0f} {rates['loop'] / scalar:>9.2f}"
            f" {rates['engine']:>14,.0f} {rates['engine'] / scalar:>9.2f}"
            f" {rates['observations']:>11,.0f} {rates['observations'] / scalar:>9.2f}"
        )
    largest = max(sizes)
    print(f"memory of a batch of {largest} games (tracemalloc peak): {batch_memory(largest, seed) / 2**20:,.1f} MiB")


ALL_CONFIGS = [
    KahunaConfig(variant=variant, discard_rule=rule, handicap=handicap, first_player=first)
    for variant, rule, handicap, first in itertools.product(
        ("standard", "planning"), ("instead_of_play", "hand_limit"), (None, (0, 1), (0, 3), (1, 2)), (0, 1)
    )
]


def differential(total: int, games: int, seed: int) -> None:
    """Random batched play checked against scalar twins after every step, until ``total`` actions."""
    configs = [ALL_CONFIGS[i % len(ALL_CONFIGS)] for i in range(games)]
    seeds = [seed + i for i in range(games)]
    batch = KahunaBatch(games, configs, seeds, auto_reset=True)
    twins = [KahunaGame(configs[i], seed=batch.game_seeds[i]) for i in range(games)]
    rng = np.random.default_rng(seed)
    actions_done = 0
    finished = 0
    reshuffles = 0
    start = time.perf_counter()
    while actions_done < total:
        masks = batch.legal_masks()
        dicts = batch.to_dicts()
        observations = [batch.observations(seat) for seat in (0, 1)]
        states = batch.states()
        for i, twin in enumerate(twins):
            if dicts[i] != twin.to_dict():
                raise AssertionError(f"after {actions_done} actions, game {i}: positions differ")
            if not np.array_equal(masks[i], twin.action_mask()):
                raise AssertionError(f"after {actions_done} actions, game {i}: legal masks differ")
            for seat in (0, 1):
                if observations[seat][i].tobytes() != encode_observation(twin, seat).tobytes():
                    raise AssertionError(f"after {actions_done} actions, game {i}: observations (seat {seat}) differ")
            if states[i].tobytes() != encode_state(twin).tobytes():
                raise AssertionError(f"after {actions_done} actions, game {i}: states differ")
        actions = batch.random_actions(rng)
        rounds = batch.round.copy()
        result = batch.step(actions)
        reshuffles += int(((batch.round > rounds) & ~result.reset).sum())
        for i, twin in enumerate(twins):
            twin.step(int(actions[i]))
            if twin.is_over != bool(result.terminated[i]):
                raise AssertionError(f"after {actions_done} actions, game {i}: end of game differs")
            if twin.is_over:
                finished += 1
                twins[i] = KahunaGame(configs[i], seed=batch.game_seeds[i])
        actions_done += games
    seconds = time.perf_counter() - start
    print(
        f"differential check passed: {actions_done:,} actions, {finished:,} finished games, "
        f"{reshuffles:,} reshuffles, {len(ALL_CONFIGS)} configurations, {seconds:.0f} s"
    )


def speed_parser(description: str, sizes: list[int]) -> argparse.ArgumentParser:
    """The options every batched benchmark shares: batch sizes, time per measurement, seed, repeats."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=sizes)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="measurements per rate; the best is printed")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = speed_parser(__doc__, [1, 64, 1024, 4096, 16384])
    parser.add_argument("--differential", type=int, metavar="ACTIONS", help="run the differential check instead")
    parser.add_argument("--games", type=int, default=100, help="batch size of the differential check")
    args = parser.parse_args(argv)
    if args.differential is not None:
        differential(args.differential, args.games, args.seed)
    else:
        speed(args.sizes, args.seconds, args.seed, max(1, args.repeats))


if __name__ == "__main__":
    main()
