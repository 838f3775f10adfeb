"""``kahuna-train``: run or resume self-play PPO training.

Usage::

    kahuna-train --config configs/default.yaml [--set ppo.lr=1e-4 ...] [--run-dir runs/mine]
    kahuna-train --resume runs/mine [--set total_updates=400 ...]

A new run goes to ``--run-dir`` (default ``runs/<name>-<timestamp>``); a
resumed run continues in its own directory from ``checkpoints/latest.pt``
with the config stored there.  Errors print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from training.config import TrainConfig

PROG = "kahuna-train"


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train a Kahuna agent with self-play PPO (see docs/TRAINING.md).",
    )
    parser.add_argument("--config", type=Path, help="YAML run configuration, e.g. configs/default.yaml")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (repeatable), e.g. --set ppo.lr=1e-4 --set model.hidden_sizes=[128,128]",
    )
    parser.add_argument("--run-dir", type=Path, help="directory of a new run (default: runs/<name>-<timestamp>)")
    parser.add_argument(
        "--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR from its latest checkpoint"
    )
    return parser


class _Fail(Exception):
    pass


def _prepare(args: argparse.Namespace) -> tuple[TrainConfig, Path, bool]:
    """Validate the arguments: (config, run directory, resume?)."""
    from training.checkpoint import checkpoint_dir, latest_checkpoint
    from training.config import load_config
    from training.ppo import resume_config

    if args.resume is not None:
        if args.config is not None:
            raise _Fail("--resume uses the config stored in the checkpoint; drop --config (use --set to change keys)")
        if args.run_dir is not None:
            raise _Fail("--resume continues in RUN_DIR itself; drop --run-dir")
        latest_checkpoint(args.resume)
        config = resume_config(args.resume, args.overrides)
        run_dir = args.resume
        resume = True
    else:
        if args.config is None:
            raise _Fail("give a config file with --config (e.g. configs/default.yaml) or a run to --resume")
        config = load_config(args.config, args.overrides)
        run_dir = args.run_dir or Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        if (checkpoint_dir(run_dir) / "latest.pt").exists():
            raise _Fail(f"{run_dir} already holds a run; continue it with --resume {run_dir} or pick another --run-dir")
        resume = False
    return config, run_dir, resume


def _run(config: TrainConfig, run_dir: Path, resume: bool) -> int:
    from training.ppo import FINAL_AGENT, train

    print(f"{PROG}: run directory {run_dir}", flush=True)
    summary = train(config, run_dir, resume=resume, log=lambda text: print(f"{PROG}: {text}", flush=True))
    print(
        f"{PROG}: {summary.updates} updates, {summary.global_step:,} learner decisions, {summary.actions:,} actions; "
        f"{summary.wall_seconds / 60:.1f} min wall time here; {summary.decisions_per_second:,.0f} decisions/s "
        "(collection + update)"
    )
    for result in summary.final_eval.values():
        print(f"{PROG}: final evaluation {result.summary()}")
    print(f"{PROG}: agent saved to {Path(run_dir) / FINAL_AGENT}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kahuna-train``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        config, run_dir, resume = _prepare(args)
    except (_Fail, FileNotFoundError, ValueError) as error:
        # Configuration and checkpoint problems: one line, no traceback.
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    try:
        return _run(config, run_dir, resume)
    except KeyboardInterrupt:
        print(
            f"{PROG}: interrupted; continue later with --resume {run_dir} (from its last checkpoint)", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
