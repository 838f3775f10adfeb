"""``kahuna-demo``: play one seeded game between two baseline agents and print it.

kahuna-demo [--seed 0] [--player0 random] [--player1 random] [--variant standard] [--quiet]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from kahuna_env.actions import describe_action
from kahuna_env.agents import BASELINES, choose_action, make_agent
from kahuna_env.board import ISLANDS
from kahuna_env.engine import KahunaConfig, KahunaGame


def play(seed: int, names: tuple[str, str], config: KahunaConfig, out=sys.stdout) -> KahunaGame:
    """Play one game between baseline agents ``names``, printing each turn to ``out``; return the finished game."""
    agents = [make_agent(name, seed=seed + seat) for seat, name in enumerate(names)]
    game = KahunaGame(config, seed=seed)
    rng = np.random.default_rng(seed)
    turn: list[str] = []
    while not game.is_over:
        player, round_ = game.current_player, game.round
        action = choose_action(agents[player], game, rng)
        game.step(action)
        turn.append(describe_action(action))
        if game.is_over or game.current_player != player or game.round != round_:
            if out is not None:
                print(f"round {round_}  player {player}: {'; '.join(turn)}", file=out)
            turn = []
    if out is not None:
        islands = [" ".join(ISLANDS[i] for i in game.controlled_islands(p)) or "-" for p in (0, 1)]
        print(f"\nislands: player 0 {islands[0]} | player 1 {islands[1]}", file=out)
        result = "draw" if game.winner is None else f"player {game.winner} ({names[game.winner]}) wins"
        print(f"final score {game.scores[0]}:{game.scores[1]} - {result}", file=out)
    return game


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kahuna-demo``."""
    parser = argparse.ArgumentParser(prog="kahuna-demo", description="Play one seeded game between baseline agents.")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deal, the reshuffles and the agents")
    parser.add_argument("--player0", default="random", choices=sorted(BASELINES), help="agent of player 0")
    parser.add_argument("--player1", default="random", choices=sorted(BASELINES), help="agent of player 1")
    parser.add_argument("--variant", default="standard", choices=("standard", "planning"))
    parser.add_argument("--quiet", action="store_true", help="print only the final score")
    args = parser.parse_args(argv)
    game = play(
        args.seed,
        (args.player0, args.player1),
        KahunaConfig(variant=args.variant),
        out=None if args.quiet else sys.stdout,
    )
    if args.quiet:
        print(f"final score {game.scores[0]}:{game.scores[1]} winner {game.winner}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
