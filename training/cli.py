"""``kahuna-train``: run or resume self-play PPO training.

Usage::

    kahuna-train --config default [--set ppo.lr=1e-4 ...] [--run-dir runs/mine]   # a recipe of configs/, or a file
    kahuna-train --resume runs/mine [--set total_updates=400 ...]

A new run goes to ``--run-dir`` (default ``runs/<name>-<timestamp>``), which
must not exist yet or be empty; a resumed run continues in its own directory
from its newest checkpoint with the config stored there (a run stopped before
its first checkpoint starts again from update 0 with its ``config.yaml``).
Errors follow the convention of :mod:`kahuna_env.cli`: one line
``kahuna-train: error: ...`` and status 2 for bad input (nothing written), 1
for a failure while running (a failed write, a diverged run; the last
checkpoint is kept).  Ctrl-C and ``SIGTERM`` print one line saying how the run
goes on and exit 130 and 143.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kahuna_env.cli import OneLineParser, Terminated, exit_with_error, signals_as_interrupt
from training.launch import passive_threads
from training.recipes import config_help, resolve_config

if TYPE_CHECKING:
    from training.ppo.config import TrainConfig

PROGRAM = "kahuna-train"


def add_override_argument(parser: argparse.ArgumentParser, example: str) -> None:
    """``--set KEY=VALUE`` (repeatable), collected in ``args.overrides``."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config key (repeatable), e.g. {example}",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="Train a Kahuna agent with self-play PPO (see docs/TRAINING.md).",
    )
    parser.add_argument("--config", metavar="RECIPE|FILE", help=f"the run's configuration: {config_help()}")
    add_override_argument(parser, "--set ppo.lr=1e-4 --set model.hidden_sizes=[128,128]")
    parser.add_argument(
        "--run-dir", type=Path, help="directory of a new run, missing or empty (default: runs/<name>-<timestamp>)"
    )
    parser.add_argument(
        "--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR from its newest checkpoint"
    )
    return parser


def _prepare(args: argparse.Namespace) -> tuple[TrainConfig, Path, bool]:
    """Validate the arguments without writing anything: (config, run directory, resume?)."""
    from training.ppo.config import load_config
    from training.ppo.rundir import check_new_run_dir
    from training.ppo.trainer import resume_config

    if args.resume is not None:
        if args.config is not None:
            exit_with_error(
                PROGRAM, "--resume uses the config stored in the checkpoint; drop --config (use --set to change keys)"
            )
        if args.run_dir is not None:
            exit_with_error(PROGRAM, "--resume continues in RUN_DIR itself; drop --run-dir")
        return resume_config(args.resume, args.overrides), args.resume, True
    if args.config is None:
        exit_with_error(
            PROGRAM, "give a recipe or a config file with --config (e.g. --config default) or a run to --resume"
        )
    try:
        config_path = resolve_config(args.config)
    except ValueError as error:
        exit_with_error(PROGRAM, f"--config: {error}")
    config = load_config(config_path, args.overrides)
    run_dir = args.run_dir or Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_new_run_dir(run_dir)
    return config, run_dir, False


def _run(config: TrainConfig, run_dir: Path, resume: bool) -> int:
    from training.ppo.trainer import FINAL_AGENT, train

    print(f"{PROGRAM}: run directory {run_dir}", flush=True)
    summary = train(config, run_dir, resume=resume, log=lambda text: print(f"{PROGRAM}: {text}", flush=True))
    print(
        f"{PROGRAM}: {summary.updates} updates, {summary.global_step:,} learner decisions, {summary.actions:,} "
        f"actions; {summary.wall_seconds / 60:.1f} min wall time here; {summary.decisions_per_second:,.0f} "
        "decisions/s (collection + update)"
    )
    for result in summary.final_eval.values():
        print(f"{PROGRAM}: final evaluation {result.summary()}")
    print(f"{PROGRAM}: agent saved to {Path(run_dir) / FINAL_AGENT}")
    return 0


def describe_os_error(error: OSError) -> str:
    """``PATH: problem`` for a failed read or write (the path once, no errno)."""
    message = error.strerror or str(error) or type(error).__name__
    for path in (error.filename, error.filename2):
        if path is not None and str(path) not in message:
            message = f"{path}: {message}"
    return message


def exit_status(body: Callable[[], int]) -> int:
    """Run a command's body: its exit status, or that of the ``SystemExit`` its one-line error raised."""
    try:
        return body()
    except SystemExit as stop:  # from exit_with_error or argparse, after their one line
        return stop.code if isinstance(stop.code, int) else 1


def run_training_command(
    program: str,
    prepare: Callable[[], tuple],
    run: Callable[..., int],
    interrupted: Callable[..., str],
    write_failed: Callable[..., str] = lambda *prepared: "",
) -> int:
    """The two phases of a training command, each failure one line: ``prepare()`` (exit 2), then ``run(*prepared)``.

    Configuration, checkpoint and run-directory problems exit 2; a failed write (with
    ``write_failed(*prepared)`` appended; the results store of ``eval.db`` on a full disk
    included) and a diverged run exit 1; Ctrl-C prints ``interrupted(*prepared)`` and exits
    130, ``SIGTERM`` the same and exits 143 (128 + 15).
    """
    from kahuna_arena.store import StoreFailure
    from training.ppo.trainer import TrainingDiverged

    try:
        prepared = prepare()
    except (FileNotFoundError, ValueError) as error:
        exit_with_error(program, str(error))  # configuration and checkpoint problems
    except OSError as error:
        exit_with_error(program, describe_os_error(error))
    try:
        with signals_as_interrupt(signal.SIGTERM):
            return run(*prepared)
    except StoreFailure as error:  # eval.db could not be written (a full disk): the machine, not the config
        exit_with_error(program, f"{error}{write_failed(*prepared)}", code=1)
    except (FileNotFoundError, ValueError) as error:
        exit_with_error(program, str(error))  # the run directory or checkpoint, found before any write
    except OSError as error:
        exit_with_error(program, f"{describe_os_error(error)}{write_failed(*prepared)}", code=1)
    except TrainingDiverged as error:
        exit_with_error(program, str(error), code=1)
    except KeyboardInterrupt as stop:
        print(f"{program}: {interrupted(*prepared)}", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(stop, Terminated) else 130


def how_to_go_on(run_dir: Path) -> str:
    """What ``--resume RUN_DIR`` does for a run stopped now (for the messages of an interrupted or failed run)."""
    from training.ppo.checkpoint import has_checkpoint
    from training.ppo.trainer import CONFIG_FILE

    if has_checkpoint(run_dir):
        return f"continue later with --resume {run_dir} (from its last checkpoint)"
    if (run_dir / CONFIG_FILE).is_file():
        return f"no checkpoint was written yet: --resume {run_dir} starts it again from update 0 (same config and seed)"
    return f"it stopped before training began: the same command with --run-dir {run_dir} starts it again"


def _interrupted_message(config: TrainConfig, run_dir: Path, resume: bool) -> str:
    return f"interrupted; {how_to_go_on(run_dir)}"


def _write_failed_message(config: TrainConfig, run_dir: Path, resume: bool) -> str:
    from training.ppo.checkpoint import has_checkpoint

    return "; earlier checkpoints are intact" if has_checkpoint(run_dir) else f"; {how_to_go_on(run_dir)}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kahuna-train``; returns the exit status (the one-line errors are already printed)."""
    passive_threads()
    return exit_status(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return run_training_command(
        PROGRAM,
        lambda: _prepare(args),
        _run,
        _interrupted_message,
        _write_failed_message,
    )


if __name__ == "__main__":
    sys.exit(main())
