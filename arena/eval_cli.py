"""``kahuna-eval``: seat-balanced matches between checkpoints and baselines, with a ratings table.

Examples::

    kahuna-eval greedy random --games 200
    kahuna-eval runs/ppo/checkpoints/latest.pt greedy mcts --games 100 --workers 2 --json eval.json
    kahuna-eval random greedy mcts:50 mcts:200 --games 100 --record games/

Every pairing of the entrants plays ``--games`` games (even: each deal twice,
seats swapped).  The table shows, per pairing, the first entrant's
wins-draws-losses, score with its 95% Wilson interval and mean point margin;
with three or more entrants, a Bradley–Terry ratings table on the Elo scale.
Bad arguments, unknown entrants, unreadable checkpoints and unwritable
output paths end the program before any game with exit code 2 and a
one-line message; a failure while playing (a worker that cannot build the
entrants, a game that fails, a worker process that dies) ends it with exit
code 1 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from arena.cli import (
    OneLineParser,
    add_rule_arguments,
    check_writable,
    even_games,
    exit_with_error,
    first_line,
    non_negative_int,
    positive_int,
)
from kahuna_env.agents import BASELINE_NAMES
from kahuna_env.engine import KahunaConfig

PROGRAM = "kahuna-eval"


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-eval`` argument parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="Seat-balanced matches between Kahuna agents (checkpoints and baselines) with 95% intervals "
        "and, for three or more entrants, a Bradley-Terry ratings table.",
    )
    parser.add_argument(
        "entrants",
        nargs="+",
        metavar="ENTRANT",
        help=f"a baseline ({', '.join(BASELINE_NAMES)}; N = simulations) or a checkpoint / policy file path",
    )
    parser.add_argument("--games", type=even_games, default=100, help="games per pairing, even (default 100)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="base seed of every game (default 0)")
    parser.add_argument("--workers", type=positive_int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--record", type=Path, metavar="DIR", help="save every game as a JSON record in DIR")
    add_rule_arguments(parser)
    parser.add_argument(
        "--sampled", action="store_true", help="policy checkpoints sample their moves instead of playing the argmax"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error for ``kahuna-eval`` and exit."""
    exit_with_error(PROGRAM, message, code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kahuna-eval``; returns the exit code (0 on success)."""
    args = build_parser().parse_args(argv)
    if len(args.entrants) < 2:
        fail(f"give at least two entrants, got {len(args.entrants)}")
    from arena.entrants import is_checkpoint_spec
    from arena.evaluation import EvaluationError, check_entrants, run_evaluation

    try:
        check_entrants(args.entrants, sampled=args.sampled)
        if args.json is not None:
            check_writable("--json", args.json)
        if args.record is not None:
            check_writable("--record", args.record, directory=True)
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    if any(is_checkpoint_spec(spec) for spec in args.entrants):
        import torch

        torch.set_num_threads(1)
    config = KahunaConfig(variant=args.variant, discard_rule=args.discard_rule)
    try:
        report = run_evaluation(
            args.entrants,
            games=args.games,
            seed=args.seed,
            workers=args.workers,
            config=config,
            sampled=args.sampled,
            record_dir=args.record,
            progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    except (EvaluationError, FileNotFoundError, ValueError) as error:
        fail(str(error), code=1)
    except OSError as error:
        fail(f"{error.filename or 'output'}: {error.strerror or error}", code=1)
    print(report.table())
    if args.json is not None:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            fail(f"cannot write --json {args.json}: {first_line(error)}", code=1)
        print(f"results written to {args.json}")
    if args.record is not None:
        print(f"{report.total_games} game records written to {args.record}/")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
