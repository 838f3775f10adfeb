"""Engine speed: seeded random playouts (legal list + validated step, no observations).

    python benchmarks/engine.py [--games N] [--seed S] [--variant standard|planning]

Prints actions/s and games/s on one core (single process).
"""

from __future__ import annotations

import argparse
import random
import time

from kahuna_env.engine import KahunaConfig, KahunaGame


def playouts(games: int, seed: int, config: KahunaConfig) -> tuple[int, float]:
    """Play ``games`` random games; return (actions, seconds)."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=2000, help="number of random games to play")
    parser.add_argument("--seed", type=int, default=0, help="base seed (game k uses seed + k)")
    parser.add_argument("--variant", choices=("standard", "planning"), default="standard")
    parser.add_argument("--discard-rule", choices=("instead_of_play", "hand_limit"), default="instead_of_play")
    args = parser.parse_args()
    if args.games < 1:
        parser.error(f"--games must be at least 1, got {args.games}")
    config = KahunaConfig(variant=args.variant, discard_rule=args.discard_rule)
    playouts(max(1, args.games // 20), args.seed + 10**6, config)  # warm-up
    actions, seconds = playouts(args.games, args.seed, config)
    print(f"engine random playouts ({args.variant}, {args.discard_rule}): {args.games} games, {actions} actions")
    rate = f"{actions / seconds:,.0f} actions/s   {args.games / seconds:,.1f} games/s"
    print(f"  {rate}   {actions / args.games:.1f} actions/game")


if __name__ == "__main__":
    main()
