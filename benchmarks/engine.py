"""Engine speed: seeded random playouts (legal list + validated step, no observations).

    python benchmarks/engine.py [--games 2000] [--repeats 3] [--seed 0] [--variant standard|planning]

Single process, one core.  Each repeat plays the same seeded games; the
script prints actions/s and games/s of every repeat, then the best and the
median (the best is the least disturbed by other load on the machine).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from kahuna_env.cli import add_rule_arguments
from kahuna_env.engine import KahunaConfig, KahunaGame


def playouts(games: int, seed: int, config: KahunaConfig) -> tuple[int, float]:
    """Play ``games`` uniformly random games; return (actions, seconds)."""
    chooser = random.Random(seed)
    actions = 0
    start = time.perf_counter()
    for game_index in range(games):
        game = KahunaGame(config, seed=seed + game_index)
        while not game.is_over:
            legal = game.legal_actions()
            game.step(legal[int(chooser.random() * len(legal))])
            actions += 1
    return actions, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the rates."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=2000, help="random games per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="how many times to play the same games")
    parser.add_argument("--seed", type=int, default=0, help="base seed (game k uses seed + k)")
    add_rule_arguments(parser)
    args = parser.parse_args(argv)
    if args.games < 1 or args.repeats < 1:
        parser.error(f"--games and --repeats must be at least 1, got {args.games} and {args.repeats}")
    config = KahunaConfig(variant=args.variant, discard_rule=args.discard_rule)
    playouts(max(1, args.games // 20), args.seed + 10**6, config)  # warm-up
    print(f"engine random playouts ({args.variant}, {args.discard_rule}), {args.games} games per repeat")
    rates = []
    for repeat in range(args.repeats):
        actions, seconds = playouts(args.games, args.seed, config)
        rates.append((actions / seconds, args.games / seconds))
        print(f"  repeat {repeat + 1}: {actions / seconds:>10,.0f} actions/s  {args.games / seconds:>8,.1f} games/s")
    print(f"  actions per game: {actions / args.games:.1f}")
    best = max(rates)
    median = statistics.median(rate for rate, _ in rates)
    print(f"best: {best[0]:,.0f} actions/s, {best[1]:,.1f} games/s   median: {median:,.0f} actions/s")


if __name__ == "__main__":
    main()
