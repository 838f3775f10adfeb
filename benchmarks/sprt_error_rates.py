"""The sequential test's error rates by simulation: 2,000 tests per hypothesis (docs/EVALUATION.md, "Sequential tests").

    python benchmarks/sprt_error_rates.py [--tests 2000] [--elo0 0] [--elo1 30] [--alpha 0.05] [--beta 0.05] [--seed S]

Each simulated test plays pairs of independent games won with the true
expected score (``elo0`` for the false-H1 rate alpha, ``elo1`` for the
false-H0 rate beta) and stops exactly as ``kahuna-eval --sprt`` does
(:func:`kahuna_arena.sprt.simulate`); tests/test_sprt.py asserts the same figures.
"""

from __future__ import annotations

import argparse

import numpy as np

from kahuna_arena.sprt import SPRT, simulate


def main() -> None:
    """Print the empirical alpha and beta and the mean games used."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=30.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=20261203)
    args = parser.parse_args()
    test = SPRT(args.elo0, args.elo1, args.alpha, args.beta)
    rng = np.random.default_rng(args.seed)
    h0, pairs0 = simulate(test, args.elo0, args.tests, rng)
    h1, pairs1 = simulate(test, args.elo1, args.tests, rng)
    print(
        f"alpha (H1 accepted at elo {args.elo0:g}) = {(h0 == 1).mean():.4f} over {args.tests} tests, "
        f"mean games {2 * pairs0.mean():.0f}"
    )
    print(
        f"beta  (H0 accepted at elo {args.elo1:g}) = {(h1 == 0).mean():.4f} over {args.tests} tests, "
        f"mean games {2 * pairs1.mean():.0f}"
    )


if __name__ == "__main__":
    main()
