"""Vector env speed: the native batched env (KahunaVectorEnv) against ``make_vec`` sync of the scalar wrapper.

    python benchmarks/vector_env.py [--sizes 64 256] [--opponent greedy] [--seconds 2.0] [--repeats 3] [--seed 0]

For every size N, both vector envs of ``Kahuna-v0`` (``observation="flat"``,
``seat="random"``, same-step auto-reset) are stepped with a uniformly random
legal learner action per sub-environment, drawn from ``action_masks()`` by
the same array sampler for both, so the policy costs the same and little.
Prints env steps/s (learner steps of all sub-environments; each includes the
opponent's replies and the auto-resets), best of ``--repeats`` interleaved
runs, and the ratio.  Single process, one core.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from kahuna_env.gym_vector import make_vector_env
from kahuna_env.vector import sample_set_bits


def masked_random(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of a bool ``(N, 179)`` mask."""
    words = np.packbits(masks, axis=1, bitorder="little")
    words = np.concatenate([words, np.zeros((len(words), 24 - words.shape[1]), dtype=np.uint8)], 1).view("<u8")
    return sample_set_bits(words, rng)


def rate(backend: str, n: int, opponent: str, seconds: float, seed: int) -> tuple[float, int]:
    """Env steps/s of ``backend`` at size ``n`` for about ``seconds``; (steps/s, episodes ended)."""
    envs = make_vector_env(n, backend=backend, opponent=opponent, seat="random", observation="flat")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(5):  # warm-up
        envs.step(masked_random(envs.action_masks(), rng))
    steps = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, _, _ = envs.step(masked_random(envs.action_masks(), rng))
        steps += n
        episodes += int(terminated.sum())
    elapsed = time.perf_counter() - start
    envs.close()
    return steps / elapsed, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--opponent", default="greedy", choices=["greedy", "random"])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("error")  # a masked policy never plays an illegal action
    print(f"vector env steps/s against {args.opponent} (seat random, flat observations, same-step auto-reset)")
    for n in args.sizes:
        best = {"batch": 0.0, "scalar": 0.0}
        for repeat in range(args.repeats):
            for backend in best:
                steps_per_second, _ = rate(backend, n, args.opponent, args.seconds, args.seed + repeat)
                best[backend] = max(best[backend], steps_per_second)
        ratio = best["batch"] / best["scalar"]
        print(
            f"N={n:5d}  batched KahunaVectorEnv {best['batch']:10,.0f}/s   "
            f"make_vec sync of the scalar wrapper {best['scalar']:9,.0f}/s   ratio {ratio:5.1f}x"
        )


if __name__ == "__main__":
    main()
