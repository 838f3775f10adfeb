"""How long a bot's turn takes on this machine, per simulation budget.

The measurement behind ``kahuna-serve --max-simulations``.

A turn is every action the bot takes before the person is to act again (a
placement or two, then a draw): what the page waits for after a move.  The
bot plays ``random`` (the person's seat) from a few seeds; the script prints
the median and the slowest turn per entrant.

    python benchmarks/web_bot_turn.py mcts:50 mcts:100 mcts:200 champion@mcts:10 champion@mcts:25 --games 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from kahuna_arena.entrants import resolve_entrant
from kahuna_arena.match import Chooser, agent_chooser, play
from kahuna_env.agents import make_agent
from kahuna_env.engine import KahunaGame


def _timed_choosers(person: Chooser, bot: Chooser, times: list[float]) -> list[Chooser]:
    """The two seats' choosers: a bot turn runs from the bot's first action to the person's next one."""
    started: list[float | None] = [None]

    def bot_chooser(game: KahunaGame) -> int:
        if started[0] is None:
            started[0] = time.perf_counter()
        return bot(game)

    def person_chooser(game: KahunaGame) -> int:
        if started[0] is not None:
            times.append(time.perf_counter() - started[0])
            started[0] = None
        return person(game)

    return [person_chooser, bot_chooser]


def turn_times(spec: str, games: int) -> list[float]:
    """Seconds of every bot turn over ``games`` games against random (the bot in seat 1)."""
    times: list[float] = []
    for seed in range(games):
        bot = resolve_entrant(spec, seed=seed)
        rng = np.random.default_rng(seed)
        person = agent_chooser(make_agent("random", seed=seed), rng)
        play(KahunaGame(seed=seed), _timed_choosers(person, agent_chooser(bot, rng), times))
    return times


def main() -> None:
    """Print the median and slowest turn of each entrant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entrants", nargs="+")
    parser.add_argument("--games", type=int, default=3)
    args = parser.parse_args()
    for spec in args.entrants:
        times = turn_times(spec, args.games)
        print(
            f"{spec:>20}: {len(times)} turns, median {statistics.median(times):.3f} s, "
            f"90th percentile {np.percentile(times, 90):.3f} s, slowest {max(times):.3f} s"
        )


if __name__ == "__main__":
    main()
