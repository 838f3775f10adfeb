"""Compare settings of the network-guided search on the same deals: one seat-balanced match per setting.

    python benchmarks/guided_sweep.py '{"simulations": 50}' '{"simulations": 50, "prior_temperature": 20}' \
        --agent champion --opponent champion --games 200 --seed 1

Each positional argument is a JSON object of keyword arguments for
:func:`kahuna_policy.search.load_guided_agent` (``simulations`` and any
:class:`kahuna_policy.search.GuidedMCTSAgent` option).  Every setting plays the
same schedule of deals and seeds (``kahuna_arena.match.schedule`` over the fixed
names ``guided`` and the opponent), so differences between settings are not
differences between deals.  ``--opponent`` is any entrant (``champion``: the
raw policy, ``mcts``, ``greedy``, a policy file).  Prints one line per
setting: W-D-L, score with its 95% normal half-width, the guided search's
milliseconds per move and the wall time.  Results are identical for any
``--workers``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor

_WORKER: dict = {}


def _build(agent: str, options: dict, opponent: str) -> tuple:
    """The guided search of ``options`` (``simulations`` default 50) and the opponent."""
    from kahuna_arena.entrants import resolve_entrant
    from kahuna_policy.search import load_guided_agent

    options = dict(options)
    simulations = options.pop("simulations", 50)
    return load_guided_agent(agent, simulations=simulations, seed=0, **options), resolve_entrant(opponent, seed=0)


def _init(agent: str, options: dict, opponent: str) -> None:
    import torch

    torch.set_num_threads(1)
    _WORKER["agents"] = _build(agent, options, opponent)


def _play(task):
    from kahuna_arena.match import play_task

    agents = _WORKER["agents"]
    result = play_task((agents[task.seats[0]], agents[task.seats[1]]), task)
    seat = task.seats.index(0)
    return result.winner, seat, result.think_seconds[seat], result.decisions[seat]


def run(agent: str, options: dict, opponent: str, games: int, seed: int, workers: int) -> str:
    """One setting's line (see the module docstring)."""
    from kahuna_arena.match import schedule

    tasks = schedule(["guided", opponent], games, seed)
    started = time.perf_counter()
    wins = draws = decisions = 0
    think = 0.0
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init, initargs=(agent, options, opponent)
    ) as pool:
        for winner, seat, seconds, count in pool.map(_play, tasks):
            draws += winner is None
            wins += winner == seat
            think += seconds
            decisions += count
    score = (wins + draws / 2) / len(tasks)
    half = 1.96 * math.sqrt(score * (1 - score) / len(tasks))
    return (
        f"{json.dumps(options)} vs {opponent}: {wins}-{draws}-{len(tasks) - wins - draws} score {score:.3f} "
        f"(+-{half:.3f}), guided {1000 * think / max(decisions, 1):.1f} ms/move, {time.perf_counter() - started:.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    from kahuna_env.cli import OneLineParser, even_games, first_line, non_negative_int, positive_int

    parser = OneLineParser(prog="guided_sweep.py", description=__doc__.splitlines()[0])
    parser.add_argument("settings", nargs="+", help="JSON objects of load_guided_agent keyword arguments")
    parser.add_argument("--agent", default="champion", help="the guiding network (default: champion)")
    parser.add_argument("--opponent", default="champion", help="any entrant (default: champion, the raw policy)")
    parser.add_argument("--games", type=even_games, default=200, help="games per setting, even (default 200)")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--workers", type=positive_int, default=2)
    args = parser.parse_args(argv)
    settings = []
    for text in args.settings:
        try:
            options = json.loads(text)
        except json.JSONDecodeError as error:
            parser.error(f"setting {text!r} is not JSON: {error}")
        if not isinstance(options, dict):
            parser.error(f"setting {text!r} must be a JSON object of keyword arguments")
        # Build each agent once here, so that a bad option or file fails before any game.
        try:
            _build(args.agent, options, args.opponent)
        except (TypeError, ValueError, OSError) as error:
            parser.error(f"setting {text}: {first_line(error)}")
        settings.append(options)
    for options in settings:
        print(run(args.agent, options, args.opponent, args.games, args.seed, args.workers), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
