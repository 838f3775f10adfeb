"""Vector env speed: the native vector env of ``Kahuna-v0`` against the scalar Gymnasium wrapper, one game at a time.

    python benchmarks/vector_env.py [--num-envs 1024] [--opponents random greedy] [--seconds 4] [--repeats 3]
                                    [--seed 0] [--sync 64 256]

For each opponent, two contenders run in the same process, alternated,
``--repeats`` times for about ``--seconds`` each; the median rate counts:

* ``gymnasium.make_vec("Kahuna-v0", num_envs=N, vectorization_mode="vector_entry_point", opponent=...)``
  (the native :class:`~kahuna_env.vector_env.KahunaVectorEnv`, default options: seat 0, dict
  observations, same-step auto-reset), stepped with a uniformly random legal action per
  sub-environment chosen as arrays from ``obs["action_mask"]``;
* ``gymnasium.make("Kahuna-v0", opponent=...)`` (the scalar wrapper, with Gymnasium's
  checker wrappers), stepped one game at a time with a uniformly random legal action from
  ``obs["action_mask"]``, ``reset()`` when a game ends.

Prints learner steps/s for both (each step includes the opponent's replies
and, for the vector env, the auto-resets) and their ratio; the targets are
15x against ``random`` and 10x against ``greedy`` at N=1024.

``--sync N...`` also prints, for those sizes, the native vector env against
``make_vec``'s ``sync`` vectorization of the scalar wrapper (flat
observations, seat random): the figure earlier versions of this benchmark gave.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import warnings
from typing import Any

import gymnasium
import numpy as np

import kahuna_env  # noqa: F401  (registers Kahuna-v0)
from kahuna_env.gym_vector import make_vector_env
from kahuna_env.vector import sample_set_bits

TARGETS = {"random": 15.0, "greedy": 10.0}
"""The ratio native vector env / scalar wrapper each opponent is held to at N=1024 (issue 39)."""


def masked_random(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of an ``(N, 179)`` mask (bool or int8)."""
    words = np.packbits(masks.view(bool), axis=1, bitorder="little")
    words = np.concatenate([words, np.zeros((len(words), 24 - words.shape[1]), dtype=np.uint8)], 1).view("<u8")
    return sample_set_bits(words, rng)


def vector_rate(n: int, opponent: str, seconds: float, seed: int) -> float:
    """Learner steps/s of ``make_vec(..., vectorization_mode="vector_entry_point")`` with ``n`` games."""
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=n, vectorization_mode="vector_entry_point", opponent=opponent)
    observation, _ = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observation, *_ = envs.step(masked_random(observation["action_mask"], rng))  # warm-up
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        observation, *_ = envs.step(masked_random(observation["action_mask"], rng))
        steps += n
    elapsed = time.perf_counter() - start
    envs.close()
    return steps / elapsed


def scalar_rate(opponent: str, seconds: float, seed: int) -> float:
    """Learner steps/s of ``gymnasium.make("Kahuna-v0", ...)`` stepped one game at a time."""
    env = gymnasium.make("Kahuna-v0", opponent=opponent)
    chooser = random.Random(seed)
    observation, _ = env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    while True:
        terminated = False
        while not terminated:
            legal = observation["action_mask"].nonzero()[0]
            observation, _, terminated, _, _ = env.step(int(legal[int(chooser.random() * legal.size)]))
            steps += 1
        if time.perf_counter() - start >= seconds:
            break
        observation, _ = env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def sync_rate(backend: str, n: int, opponent: str, seconds: float, seed: int) -> float:
    """Steps/s of ``make_vector_env(n, backend=...)`` (flat observations, seat random) for ``--sync``."""
    envs: Any = make_vector_env(n, backend=backend, opponent=opponent, seat="random", observation="flat")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    envs.step(masked_random(envs.action_masks(), rng))
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        envs.step(masked_random(envs.action_masks(), rng))
        steps += n
    elapsed = time.perf_counter() - start
    envs.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=1024, help="games of the native vector env")
    parser.add_argument("--opponents", nargs="+", default=["random", "greedy"], choices=["random", "greedy"])
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per timed run and contender")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs per contender (the median counts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sync", type=int, nargs="*", default=[], metavar="N", help="also compare with make_vec sync")
    args = parser.parse_args()
    if args.num_envs < 1 or not args.seconds > 0 or args.repeats < 1 or any(n < 1 for n in args.sync):
        parser.error("--num-envs, --repeats and --sync sizes must be at least 1 and --seconds positive")
    warnings.simplefilter("error")  # a masked policy never plays an illegal action
    n = args.num_envs
    print(
        f"learner steps/s: make_vec vector_entry_point (N={n}) vs gymnasium.make one game at a time, "
        f"median of {args.repeats} alternated run(s) of ~{args.seconds:g} s"
    )
    for opponent in args.opponents:
        vector_rate(n, opponent, min(0.5, args.seconds / 4), args.seed + 1)  # warm-up: imports, caches
        scalar_rate(opponent, min(0.5, args.seconds / 4), args.seed + 1)
        vector, scalar = [], []
        for repeat in range(args.repeats):
            vector.append(vector_rate(n, opponent, args.seconds, args.seed + repeat))
            scalar.append(scalar_rate(opponent, args.seconds, args.seed + repeat))
        vector_median, scalar_median = statistics.median(vector), statistics.median(scalar)
        print(
            f"  opponent={opponent:<7} vector env {vector_median:10,.0f}/s   scalar wrapper {scalar_median:8,.0f}/s   "
            f"ratio {vector_median / scalar_median:5.1f}x (target >= {TARGETS[opponent]:g}x)"
        )
    for size in args.sync:
        for opponent in args.opponents:
            rates: dict[str, list[float]] = {"batch": [], "scalar": []}
            for repeat in range(args.repeats):
                for backend, values in rates.items():
                    values.append(sync_rate(backend, size, opponent, args.seconds, args.seed + repeat))
            batch, sync = statistics.median(rates["batch"]), statistics.median(rates["scalar"])
            print(
                f"  N={size:5d} opponent={opponent:<7} KahunaVectorEnv {batch:10,.0f}/s   "
                f"make_vec sync of the scalar wrapper {sync:9,.0f}/s   ratio {batch / sync:5.1f}x"
            )


if __name__ == "__main__":
    main()
