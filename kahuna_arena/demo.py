"""``kahuna-demo``: play one seeded game between two baseline agents and print it.

kahuna-demo [--seed 0] [--player0 random] [--player1 random] [--variant standard] [--quiet]

One line per turn (``round R  player P: action; action; ...``), then the
controlled islands and the final score.  The game goes through the arena's
one play loop (:func:`kahuna_arena.match.play`); bad arguments are one line
(``kahuna-demo: error: ...``, exit code 2) as in every arena tool.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO

import numpy as np

from kahuna_arena.match import agent_chooser, play
from kahuna_env.actions import describe_action
from kahuna_env.agents import BASELINE_NAMES, make_agent
from kahuna_env.board import ISLANDS
from kahuna_env.cli import OneLineParser, non_negative_int, quiet_on_closed_pipe
from kahuna_env.engine import VARIANTS, KahunaConfig, KahunaGame

PROGRAM = "kahuna-demo"


def play_demo(seed: int, names: tuple[str, str], config: KahunaConfig, out: IO[str] | None = sys.stdout) -> KahunaGame:
    """Play one game between baseline agents ``names``, printing each turn to ``out``; return the finished game."""
    agents = [make_agent(name, seed=seed + seat) for seat, name in enumerate(names)]
    game = KahunaGame(config, seed=seed)
    rng = np.random.default_rng(seed)
    turn: list[str] = []
    turn_round = [game.round]

    def print_turns(player: int, action: int, game: KahunaGame) -> None:
        turn.append(describe_action(action))
        if game.is_over or game.current_player != player or game.round != turn_round[0]:
            if out is not None:
                print(f"round {turn_round[0]}  player {player}: {'; '.join(turn)}", file=out)
            turn.clear()
        turn_round[0] = game.round

    play(game, [agent_chooser(agent, rng) for agent in agents], print_turns)
    if out is not None:
        islands = [" ".join(ISLANDS[i] for i in game.controlled_islands(p)) or "-" for p in (0, 1)]
        print(f"\nislands: player 0 {islands[0]} | player 1 {islands[1]}", file=out)
        result = "draw" if game.winner is None else f"player {game.winner} ({names[game.winner]}) wins"
        print(f"final score {game.scores[0]}:{game.scores[1]} - {result}", file=out)
    return game


def baseline(text: str) -> str:
    """argparse type: a baseline agent name (``random``, ``greedy``, ``mcts``, ``mcts:N``)."""
    from kahuna_arena.entrants import parse_entrant

    try:
        entrant = parse_entrant(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if entrant.network:
        raise argparse.ArgumentTypeError(
            f"kahuna-demo plays baselines only ({', '.join(BASELINE_NAMES)}), got {text!r}"
        )
    return text


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-demo`` argument parser."""
    parser = OneLineParser(prog=PROGRAM, description="Play one seeded game between baseline agents.")
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the deal, the reshuffles and the agents (default 0)"
    )
    parser.add_argument("--player0", default="random", type=baseline, help="agent of player 0 (default random)")
    parser.add_argument("--player1", default="random", type=baseline, help="agent of player 1 (default random)")
    parser.add_argument("--variant", default="standard", choices=VARIANTS)
    parser.add_argument("--quiet", action="store_true", help="print only the final score")
    return parser


@quiet_on_closed_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kahuna-demo``."""
    args = build_parser().parse_args(argv)
    game = play_demo(
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
