"""AEC environment speed: random masked play through ``kahuna_env.env()`` next to PettingZoo's ``connect_four_v3``.

    python benchmarks/env.py [--seconds 4] [--repeats 3] [--seed S] [--variant standard|planning] [--detail]

Both environments run the same loop in the same process (the standard
PettingZoo loop, observations included)::

    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else <uniform random legal action from obs["action_mask"]>
        env.step(action)

with ``reset`` whenever a game ends, for about ``--seconds`` each (``step``
calls counted, dead steps included; the clock is read once per game).  Each
environment is timed ``--repeats`` times, alternating in one process, and
the median rate counts.  Prints steps/s for both and the ratio; the target
is a ratio of at least 3.

``kahuna_env.env()`` stacks PettingZoo's three standard wrappers with direct
attribute forwarding (``kahuna_env.env.DirectAttributes``); ``--detail`` also
times the raw env and the same stack built from PettingZoo's stock wrapper
classes, whose ``__getattr__`` chain costs more than a Kahuna step.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

TARGET_RATIO = 3.0
"""The ratio ``kahuna_v0 / connect_four_v3`` this benchmark is held to (issue 39)."""


def random_play(make_env: Callable[[], Any], seconds: float, seed: int) -> tuple[int, int, float]:
    """Run the PettingZoo loop with random legal actions for about ``seconds``; return (steps, games, seconds)."""
    env = make_env()
    chooser = random.Random(seed)  # a cheap uniform choice keeps the loop's own cost small next to the envs'
    done_steps = 0
    games = 0
    start = time.perf_counter()
    env.reset(seed=seed)
    while True:
        for _agent in env.agent_iter():
            observation, _reward, termination, truncation, _info = env.last()
            if termination or truncation:
                action = None
            else:
                legal = observation["action_mask"].nonzero()[0]
                action = int(legal[int(chooser.random() * legal.size)])
            env.step(action)
            done_steps += 1
        games += 1
        if time.perf_counter() - start >= seconds:
            break
        env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return done_steps, games, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per timed run and environment")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per environment (the median counts)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games and the random actions")
    parser.add_argument("--variant", choices=("standard", "planning"), default="standard")
    parser.add_argument(
        "--detail",
        action="store_true",
        help="also time kahuna's raw_env and kahuna under PettingZoo's stock wrappers (not part of the ratio)",
    )
    args = parser.parse_args()
    if not args.seconds > 0 or args.repeats < 1:
        parser.error(f"--seconds must be positive and --repeats at least 1, got {args.seconds} and {args.repeats}")

    from pettingzoo.classic import connect_four_v3
    from pettingzoo.utils import wrappers

    import kahuna_env

    def make_kahuna() -> Any:
        return kahuna_env.env(variant=args.variant)

    def make_kahuna_stock_wrappers() -> Any:
        environment = kahuna_env.raw_env(variant=args.variant)
        environment = wrappers.TerminateIllegalWrapper(environment, illegal_reward=-1)
        environment = wrappers.AssertOutOfBoundsWrapper(environment)
        return wrappers.OrderEnforcingWrapper(environment)

    def make_kahuna_raw() -> Any:
        return kahuna_env.raw_env(variant=args.variant)

    contenders = {"kahuna_v0": make_kahuna, "connect_four_v3": connect_four_v3.env}
    if args.detail:
        contenders["kahuna_v0, PettingZoo's stock wrappers"] = make_kahuna_stock_wrappers
        contenders["kahuna_v0 raw_env, no wrappers"] = make_kahuna_raw
    for make_env in contenders.values():  # warm-up: imports, caches
        random_play(make_env, min(0.5, args.seconds / 4), args.seed + 1)
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    games: dict[str, tuple[int, int]] = {}
    for repeat in range(args.repeats):
        for name, make_env in contenders.items():
            steps, played, seconds = random_play(make_env, args.seconds, args.seed + repeat)
            rates[name].append(steps / seconds)
            games[name] = (steps, played)
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(
        f"random masked play with observations, median of {args.repeats} alternated run(s) of ~{args.seconds:g} s "
        f"each ({args.variant} variant)"
    )
    width = max(len(name) for name in contenders)
    for name in contenders:
        steps, played = games[name]
        print(f"  {name:<{width}} {median[name]:>10,.0f} steps/s   ({steps / played:.1f} steps/game)")
    ratio = median["kahuna_v0"] / median["connect_four_v3"]
    print(f"  ratio kahuna_v0 / connect_four_v3 (both through env()): {ratio:.2f}x (target >= {TARGET_RATIO:g}x)")


if __name__ == "__main__":
    main()
