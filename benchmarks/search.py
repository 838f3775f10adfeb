"""Time one search decision, per entrant, on the same midgame positions.

    python benchmarks/search.py mcts:200 champion@mcts:50 --positions 20 --repeat 3

Each entrant (``mcts:N``, ``SOURCE@mcts:N``; :func:`kahuna_arena.entrants.resolve_entrant`)
decides each position once per repeat with a fresh agent (seed = position number),
through :func:`kahuna_env.agents.choose_action`; the positions are reached by seeded
random play (a spread of rounds and turn states, each with more than one legal
action).  Prints, per entrant, the best-of-repeats total and the milliseconds per
decision and per simulation.  Compare settings or versions back to back: on a
shared machine only ratios of runs taken together mean anything.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from kahuna_arena.entrants import resolve_entrant
from kahuna_env.agents import choose_action
from kahuna_env.engine import KahunaGame


def positions(count: int, seed: int = 0) -> list[KahunaGame]:
    """``count`` positions reached by seeded random play, each with a choice to make."""
    chooser = random.Random(seed)
    found: list[KahunaGame] = []
    game_seed = seed
    while len(found) < count:
        game = KahunaGame(seed=game_seed)
        game_seed += 1
        for _ in range(chooser.randrange(0, 140)):
            if game.is_over:
                break
            game.step(chooser.choice(game.legal_actions()))
        if not game.is_over and len(game.legal_actions()) > 1:
            found.append(game)
    return found


def decide_all(spec: str, games: list[KahunaGame]) -> tuple[float, list[int]]:
    """Seconds to decide every position with a fresh ``spec`` agent each, and the moves."""
    agents = [resolve_entrant(spec, seed=k) for k in range(len(games))]  # built (and loaded) outside the clock
    started = time.perf_counter()
    pairs = enumerate(zip(agents, games, strict=True))
    moves = [choose_action(agent, game, np.random.default_rng(k)) for k, (agent, game) in pairs]
    return time.perf_counter() - started, moves


def main() -> None:
    """Print the best-of-repeats time of each entrant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entrants", nargs="+")
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    games = positions(args.positions)
    for spec in args.entrants:
        best = min(decide_all(spec, games)[0] for _ in range(args.repeat))
        simulations = resolve_entrant(spec, seed=0).simulations * len(games)
        print(
            f"{spec:>20}: {len(games)} decisions in {best:.3f} s (best of {args.repeat}), "
            f"{1000 * best / len(games):.2f} ms per decision, {1e6 * best / simulations:.1f} us per simulation"
        )


if __name__ == "__main__":
    main()
