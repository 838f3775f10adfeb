"""Does the update get slower the longer the trainer process runs?  Many updates in one process, timed.

    PYTHONPATH=benchmarks python experiments/2026-12-04-training-speed/update_drift.py \
        [--config configs/default.yaml] [--updates 105] [--window 15] [--decisions 37000 41000] [--no-pad] [--seed 0]

Runs ``training.ppo.trainer.ppo_update`` ``--updates`` times in this process, as the trainer does,
each on a synthetic rollout (``benchmarks/training_speed.py``'s) whose number of decisions is drawn
from ``--decisions`` (a training run's updates hold 37,000-41,000 decisions on the default config,
a different number each update, so the last minibatch of every update has a new length).  Every
``--window`` updates it prints the median seconds per update over the window and the process's
peak resident memory.

``--no-pad`` gives the network the short last minibatch as it is, as the trainer did before it
padded it to a multiple of ``training.ppo.trainer.PAD_ROWS`` rows: on a CPU with native bfloat16
the process then grows and its updates slow down (docs/TRAINING.md, "Speed").
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import statistics
import time

import numpy as np
import torch
from training_speed import synthetic_rollout

from training.ppo import trainer
from training.ppo.config import load_config
from training.ppo.trainer import build_model, ppo_update


def peak_memory_mb() -> float:
    """This process's peak resident memory in MB (Linux reports ``ru_maxrss`` in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    """Run the updates and print the windows' times."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.yaml", help="run configuration (network, ppo, threads)")
    parser.add_argument("--updates", type=int, default=105, help="updates to run in this process")
    parser.add_argument("--window", type=int, default=15, help="updates per printed median")
    parser.add_argument(
        "--decisions", type=int, nargs=2, default=[37000, 41000], metavar=("LOW", "HIGH"), help="decisions per update"
    )
    parser.add_argument("--no-pad", action="store_true", help="no padding of the short last minibatch (the old update)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    low, high = args.decisions
    if args.updates < 1 or args.window < 1 or not 1 <= low <= high:
        parser.error("--updates and --window must be at least 1, and --decisions LOW HIGH with 1 <= LOW <= HIGH")
    if args.no_pad:
        trainer.padded_rows = lambda rows, minibatch_size: rows  # type: ignore[assignment]
    config = load_config(args.config)
    threads = config.threads if isinstance(config.threads, int) else torch.get_num_threads()
    torch.set_num_threads(threads)
    full = synthetic_rollout(high, args.seed)
    arrays = {
        field.name: getattr(full, field.name)
        for field in dataclasses.fields(full)
        if isinstance(getattr(full, field.name), np.ndarray)
    }
    model = build_model(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.ppo.lr, eps=config.ppo.adam_eps)
    generator = torch.Generator().manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    print(
        f"{args.config}: {args.updates} updates of {low:,}-{high:,} decisions, {config.ppo.update_epochs} epochs of "
        f"minibatches of {config.ppo.minibatch_size}, bf16 {config.ppo.bf16}, {threads} thread(s), "
        f"{'no padding' if args.no_pad else f'short minibatch padded to a multiple of {trainer.PAD_ROWS} rows'}"
    )
    seconds: list[float] = []
    for update in range(1, args.updates + 1):
        decisions = int(rng.integers(low, high + 1))
        rollout = dataclasses.replace(full, **{name: array[:decisions] for name, array in arrays.items()})
        start = time.perf_counter()
        ppo_update(model, optimizer, rollout, config.ppo, generator)
        seconds.append(time.perf_counter() - start)
        if update % args.window == 0 or update == args.updates:
            window = seconds[(update - 1) // args.window * args.window :]  # the updates since the last line
            print(
                f"  updates {update - len(window) + 1:4d}-{update:4d}: median {statistics.median(window):.3f} s "
                f"per update, peak memory {peak_memory_mb():,.0f} MB",
                flush=True,
            )


if __name__ == "__main__":
    main()
