"""``kahuna-rllib``: train Kahuna self-play on Ray RLlib, or export an RLlib checkpoint.

Usage::

    kahuna-rllib --config rllib [--set KEY=VALUE ...] [--run-dir DIR]     # configs/rllib.yaml, or a file
    kahuna-rllib --resume RUN_DIR [--set iterations=400 ...]    # continue from its newest checkpoint
    kahuna-rllib --config configs/rllib.yaml --print-config     # resolved config, no Ray
    kahuna-rllib export RLLIB_CHECKPOINT_DIR OUT.pt [--module learner]
    kahuna-rllib --export RLLIB_CHECKPOINT_DIR OUT.pt [--module learner]

An existing ``OUT.pt`` is replaced only with ``--force``, never when it is a
results store, a game record or a report (:func:`kahuna_env.cli.check_output_file`).

Known problems (bad config, ray not installed, unreachable cluster,
incompatible checkpoint) end with a one-line ``kahuna-rllib: error: ...``
and exit status 2 (arguments, config and the environment: a missing
``rllib`` extra) or 1 (a failure while running: the cluster, the
checkpoint, the training): the convention of :mod:`kahuna_env.cli`, shared by
every command-line tool.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from kahuna_env.cli import AGENT, OneLineParser, add_force_argument, check_output_file, exit_with_error
from training.cli import add_override_argument, exit_status
from training.recipes import config_help, resolve_config
from training.rllib.config import ConfigError, config_to_yaml, load_rllib_config
from training.rllib.errors import (
    IncompatibleCheckpointError,
    RayConnectionError,
    RLlibNotInstalledError,
    TrainingError,
    require_ray,
)

PROGRAM = "kahuna-rllib"


def _train_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROGRAM,
        description="Kahuna self-play PPO on Ray RLlib (local or on a cluster); "
        f"`{PROGRAM} export CHECKPOINT OUT.pt` converts a checkpoint to the agent format.",
    )
    parser.add_argument(
        "--config", metavar="RECIPE|FILE", help=f"run config: {config_help(rllib=True)} (default: built-in defaults)"
    )
    add_override_argument(parser, "--set env_runners.num_env_runners=8")
    parser.add_argument("--run-dir", metavar="DIR", help="run directory (default: <output_dir>/<name>-<timestamp>)")
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its newest checkpoint, with its config.yaml (plus any --set)",
    )
    parser.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    parser.add_argument(
        "--export",
        nargs=2,
        metavar=("CHECKPOINT", "OUT"),
        help="instead of training: export an RLlib checkpoint directory to an agent file",
    )
    parser.add_argument("--module", default="learner", help="module id to export (default: learner)")
    add_force_argument(parser)
    return parser


def _export_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=f"{PROGRAM} export",
        description="Convert an RLlib checkpoint of a Kahuna run to the project's agent format "
        "(loadable by training.load_agent, kahuna-eval, kahuna-play).",
    )
    parser.add_argument("checkpoint", help="RLlib checkpoint directory, e.g. runs/<run>/checkpoint")
    parser.add_argument("out", help="agent file to write, e.g. rllib-agent.pt")
    parser.add_argument("--module", default="learner", help="module id to export (default: learner)")
    add_force_argument(parser)
    return parser


def _check_export_output(checkpoint: str, out: str, force: bool) -> None:
    """One line and exit 2 unless ``OUT`` may be written (:func:`kahuna_env.cli.check_output_file`).

    Never the checkpoint itself; an existing ``OUT`` only with ``--force``, and never a protected file
    of another kind than an agent file (a results store, a record, a report).
    """
    try:
        check_output_file("OUT", Path(out), AGENT, inputs=[("CHECKPOINT", checkpoint)], force=force)
    except ValueError as error:
        exit_with_error(PROGRAM, str(error), code=2)


def _export(checkpoint: str, out: str, module_id: str) -> int:
    from training.rllib.export import export_checkpoint

    path = export_checkpoint(checkpoint, out, module_id=module_id)
    print(f"{PROGRAM}: exported module {module_id!r} of {checkpoint} to {path}")
    return 0


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "export":
        arguments = _export_parser().parse_args(argv[1:])
        _check_export_output(arguments.checkpoint, arguments.out, arguments.force)
        require_ray()
        return _export(arguments.checkpoint, arguments.out, arguments.module)
    if argv and argv[0] == "train":
        argv = argv[1:]
    arguments = _train_parser().parse_args(argv)
    if arguments.export:
        _check_export_output(arguments.export[0], arguments.export[1], arguments.force)
        require_ray()
        return _export(arguments.export[0], arguments.export[1], arguments.module)
    if arguments.resume:
        if arguments.config or arguments.run_dir:
            raise ConfigError("--resume takes the config and run directory of the run; drop --config/--run-dir")
        require_ray()
        from training.rllib.train import resume

        resume(arguments.resume, arguments.overrides)
        return 0
    try:
        config_path = resolve_config(arguments.config) if arguments.config else None
    except ValueError as error:
        raise ConfigError(f"--config: {error}") from None
    config = load_rllib_config(config_path, arguments.overrides)
    if arguments.print_config:
        print(config_to_yaml(config), end="")
        return 0
    require_ray()
    from training.rllib.train import train

    train(config, run_dir=arguments.run_dir)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kahuna-rllib``; returns the exit status (the one-line errors are already printed).

    Run as the command (``argv`` None) after Ray was used, the process ends here with that status
    (:func:`_exit_now`) instead of returning into the interpreter's teardown.
    """
    status = exit_status(lambda: _main(list(sys.argv[1:] if argv is None else argv)))
    if argv is None and sys.modules.get("ray") is not None:
        _exit_now(status)
    return status


def _exit_now(status: int) -> NoReturn:
    """End the process with ``status`` once its output is flushed, skipping the interpreter's teardown.

    Ray has been shut down (or disconnected) and every file the run writes is closed by then; what is left
    is the teardown of native threads (Ray's core worker, gRPC, torch), which once crashed a finished
    job's driver with a segmentation fault after its last line, so that Ray reported the job FAILED.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def _main(argv: list[str]) -> int:
    try:
        return _run(argv)
    except (ConfigError, RLlibNotInstalledError) as error:
        exit_with_error(PROGRAM, str(error), code=2)
    except (
        RayConnectionError,
        IncompatibleCheckpointError,
        TrainingError,
        FileNotFoundError,
    ) as error:
        exit_with_error(PROGRAM, str(error), code=1)
    except KeyboardInterrupt:
        print(f"{PROGRAM}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
