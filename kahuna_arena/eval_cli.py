"""``kahuna-eval``: seat-balanced matches between checkpoints and baselines, with a ratings table.

Examples::

    kahuna-eval greedy random --games 200
    kahuna-eval runs/ppo/checkpoints/latest.pt greedy mcts --games 100 --workers 2 --json eval.json
    kahuna-eval random greedy mcts:50 mcts:200 --games 100 --record games/
    kahuna-eval runs/a/final_agent.pt greedy --common-deals --json a.json   # then runs/b/...: paired games

Every pairing of the entrants plays ``--games`` games (even: each deal twice,
seats swapped).  The table shows, per pairing, the first entrant's
wins-draws-losses, score with its 95% Wilson interval and mean point margin;
with three or more entrants, a Bradley–Terry ratings table on the Elo scale.
``--common-deals`` draws the deals from ``--seed`` and the game number
alone and each agent's own seeds from its name and the game, never from the
pairing, so two agents evaluated against the same opponent, in one run or
two, meet the same deals and the same opponent, game by game
(:func:`kahuna_arena.match.schedule`).
Bad arguments, unknown entrants, unreadable checkpoints and unwritable
output paths end the program before any game with exit code 2 and a
one-line message.  Outputs never destroy what the tool reads or did not
write (:func:`kahuna_env.cli.check_output_file`): ``--json`` is never one
of the entrants' files nor the ``--db`` store, never a protected file of
another kind (a store, an agent file, a record), and replaces an existing
file only with ``--force``; ``--record`` refuses a directory holding an
earlier evaluation's records (their names would repeat) unless ``--force``.
Agent files that are a FIFO, a device or a directory are refused unopened.
``--games`` and the
games of all pairings together are at most :data:`kahuna_arena.match.MAX_GAMES`,
``--workers`` at most :data:`kahuna_arena.match.MAX_WORKERS`, ``--seed`` below
``2**63``.

Every early end keeps the finished games, the same way: Ctrl-C (exit code
130), SIGTERM (143), and a failure while playing (exit code 1: a worker
that cannot build the entrants, a game that fails, a worker process that
dies, a results store or a record that cannot be written, e.g. on a full
disk).  Each finished game's record and store row are written as it
finishes, the table of the finished games is printed, ``--json`` is
written with ``"partial": true`` (an output that fails itself is named),
and the program ends with one line naming the cause, the games played and
how many each output holds, counted from the outputs (``stopped after 285
of 1000 games: 284 in --db r.sqlite, 285 in --json r.json, 285 records in
games/``: the game whose store row failed is in the others).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kahuna_arena.entrants import ENTRANT_FORMS, one_torch_thread
from kahuna_arena.match import MAX_BASE_SEED, MAX_GAMES, MAX_WORKERS, check_evaluation_size, check_games
from kahuna_arena.protocol import PROTOCOLS
from kahuna_env.cli import (
    REPORT,
    OneLineParser,
    Terminated,
    add_force_argument,
    add_rule_arguments,
    check_output_file,
    check_writable,
    even_games,
    exit_with_error,
    first_line,
    non_negative_int,
    positive_int,
    quiet_on_closed_pipe,
    same_file,
    signals_as_interrupt,
    write_text_atomic,
)
from kahuna_env.engine import KahunaConfig

if TYPE_CHECKING:
    from kahuna_arena.evaluation import WrittenGames
    from kahuna_arena.report import EvaluationReport
    from kahuna_arena.store import ResultsStore

PROGRAM = "kahuna-eval"


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-eval`` argument parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="Seat-balanced matches between Kahuna agents (checkpoints and baselines) with 95% intervals "
        "and, for three or more entrants, a Bradley-Terry ratings table.",
    )
    parser.add_argument("entrants", nargs="+", metavar="ENTRANT", help=ENTRANT_FORMS)
    parser.add_argument(
        "--games",
        type=games_argument,
        default=None,
        help=f"games per pairing, even (default 100; with --sprt the most); at most {MAX_GAMES:,} in all pairings",
    )
    parser.add_argument(
        "--seed", type=seed_argument, default=0, help="base seed of every game, below 2**63 (default 0)"
    )
    parser.add_argument(
        "--common-deals",
        action="store_true",
        help="for paired comparisons: the deals come from --seed and the game number only, each agent's own "
        "seeds from its name and the game, so A vs C and B vs C (in one run or two) play the same deals against "
        "the same C, game by game (default: the deals also depend on the entrants' names)",
    )
    parser.add_argument(
        "--workers", type=workers_argument, default=1, help=f"worker processes (default 1, at most {MAX_WORKERS})"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--record", type=Path, metavar="DIR", help="save every game as a JSON record in DIR")
    add_rule_arguments(parser)
    parser.add_argument(
        "--sampled", action="store_true", help="policy checkpoints sample their moves instead of playing the argmax"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_force_argument(parser)
    parser.add_argument(
        "--db", type=Path, metavar="FILE", help="also write every game, as it finishes, to this results store (SQLite)"
    )
    parser.add_argument(
        "--sprt",
        nargs=2,
        metavar=("elo0=X", "elo1=Y"),
        help="sequential test of two entrants: play seat-swapped pairs until H0 (A is X Elo stronger) or H1 "
        "(Y Elo) is accepted, or --games (default 2000 here) are played",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="--sprt: false-H1 rate (default 0.05)")
    parser.add_argument("--beta", type=float, default=0.05, help="--sprt: false-H0 rate (default 0.05)")
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help="play one agent through a benchmark protocol (fixed opponents, games, rules and seed: a score "
        "comparable with anyone's; docs/EVALUATION.md) and print its table; --json writes its result",
    )
    return parser


PROTOCOL_OPTIONS = ("--json", "--workers", "--no-progress", "--force")
"""The options that apply with ``--protocol``: everything else a score depends on is the protocol's."""


def _checked(check: Callable[[int], None], parse: Callable[[str], int]) -> Callable[[str], int]:
    """An argparse type: ``parse`` the text, then ``check`` the number (its ``ValueError`` is the message)."""

    def argument(text: str) -> int:
        value = parse(text)
        try:
            check(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value

    return argument


def _check_workers(workers: int) -> None:
    if workers > MAX_WORKERS:
        raise ValueError(f"at most {MAX_WORKERS} worker processes, got {workers}")


def _check_seed(seed: int) -> None:
    if seed > MAX_BASE_SEED:
        raise ValueError(f"the base seed must be below 2**63, got {seed}")


games_argument = _checked(check_games, even_games)
"""argparse type of ``--games``: games per pairing, even, at most :data:`kahuna_arena.match.MAX_GAMES`."""
workers_argument = _checked(_check_workers, positive_int)
"""argparse type of ``--workers``: 1 to :data:`kahuna_arena.match.MAX_WORKERS`."""
seed_argument = _checked(_check_seed, non_negative_int)
"""argparse type of ``--seed``: a base seed in ``0 .. 2**63 - 1`` (the results store keeps it)."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error for ``kahuna-eval`` and exit."""
    exit_with_error(PROGRAM, message, code)


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""Signals that stop an evaluation as Ctrl-C does (a scheduler's ``kill``, a closed terminal)."""


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kahuna-eval``; returns the exit code (0 on success)."""
    args = build_parser().parse_args(argv)
    if args.protocol is not None:
        return _main_protocol(args, sys.argv[1:] if argv is None else list(argv))
    if len(args.entrants) < 2:
        fail(f"give at least two entrants, got {len(args.entrants)}")
    if args.games is None:
        args.games = SPRT_MAX_GAMES if args.sprt else 100
    try:
        check_evaluation_size(len(args.entrants), args.games)
    except ValueError as error:
        fail(str(error))
    if args.sprt:
        return _main_sprt(args)
    from kahuna_arena.evaluation import (
        EvaluationError,
        EvaluationInterrupted,
        WrittenGames,
        check_entrants,
        run_evaluation,
    )

    try:
        entrants = check_entrants(args.entrants, sampled=args.sampled)  # the one resolution of the entrants
        check_outputs(args)
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    one_torch_thread(args.entrants)
    config = KahunaConfig(variant=args.variant, discard_rule=args.discard_rule)
    store = _open_store(args)
    planned = args.games * len(args.entrants) * (len(args.entrants) - 1) // 2
    written = WrittenGames()
    try:
        with signals_as_interrupt(*STOP_SIGNALS):
            report = run_evaluation(
                entrants,
                games=args.games,
                seed=args.seed,
                workers=args.workers,
                config=config,
                sampled=args.sampled,
                record_dir=args.record,
                progress=not args.no_progress,
                store=store,
                common_deals=args.common_deals,
                written=written,
            )
    except EvaluationInterrupted as interrupted:
        # Ctrl-C or SIGTERM: the finished games are not thrown away (their records are already written).
        cause = interrupted.__cause__ if isinstance(interrupted.__cause__, Terminated) else None
        what = f"terminated ({cause})" if cause is not None else "interrupted"
        code = 128 + cause.number if cause is not None else 130
        played = f"{what} after {interrupted.report.total_games} of {planned} games"
        _end_early(interrupted.report, args, played, code, store, written)
    except Terminated as terminated:
        fail(f"terminated ({terminated})", code=128 + terminated.number)
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    except EvaluationError as error:
        if error.report is None:
            fail(str(error), code=1)
        played = f"{error}; stopped after {error.report.total_games} of {planned} games"
        _end_early(error.report, args, played, 1, store, written)
    except (FileNotFoundError, ValueError) as error:
        fail(str(error), code=1)
    except OSError as error:
        fail(f"{error.filename or 'output'}: {error.strerror or error}", code=1)
    finally:
        if store is not None:
            store.close()
    print(report.table())
    write_outputs(report, args, written=written)
    return 0


def given_options(argv: Sequence[str]) -> set[str]:
    """The destinations of the options ``argv`` gives explicitly (a default does not count)."""
    parser = build_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def _main_protocol(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``kahuna-eval AGENT --protocol NAME``: the protocol's games for one agent (:mod:`kahuna_arena.protocol`)."""
    from kahuna_arena.entrants import resolve_entrant
    from kahuna_arena.evaluation import EvaluationError, EvaluationInterrupted
    from kahuna_arena.protocol import run_protocol, table

    if len(args.entrants) != 1:
        fail(f"--protocol plays one agent against the protocol's opponents, got {len(args.entrants)} entrants")
    parser = build_parser()
    allowed = {"entrants", "protocol"} | {
        action.dest for action in parser._actions if set(action.option_strings) & set(PROTOCOL_OPTIONS)
    }
    extra = sorted(given_options(argv) - allowed)
    if extra:
        option = next(a for a in parser._actions if a.dest == extra[0]).option_strings[0]
        fail(f"{option} does not apply with --protocol (its opponents, games, seed and rules are fixed)")
    try:
        built = resolve_entrant(args.entrants[0], seed=0)  # a bad agent is one line before any game
        check_outputs(args)
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    one_torch_thread(args.entrants)
    try:
        with signals_as_interrupt(*STOP_SIGNALS):
            protocol = PROTOCOLS[args.protocol]
            outcome = run_protocol(args.entrants[0], protocol, args.workers, not args.no_progress, built)
    except (EvaluationInterrupted, KeyboardInterrupt):
        fail("interrupted: a protocol's result is only reported whole; nothing written", code=130)
    except Terminated as terminated:
        whole = "a protocol's result is only reported whole; nothing written"
        fail(f"terminated ({terminated}): {whole}", 128 + terminated.number)
    except (EvaluationError, FileNotFoundError, ValueError) as error:
        fail(str(error), code=1)
    print(table(outcome))
    if args.json is not None:
        try:
            write_text_atomic(args.json, json.dumps(outcome, indent=2) + "\n")
        except OSError as error:
            fail(f"cannot write --json {args.json}: {error.strerror or first_line(error)}", code=1)
        print(f"results written to {args.json}")
    return 0


def _end_early(
    report: EvaluationReport,
    args: argparse.Namespace,
    message: str,
    code: int,
    store: ResultsStore | None,
    written: WrittenGames,
) -> NoReturn:
    """After an early end: the finished games' table and outputs (``--json`` marked partial), then one line.

    The line ends with how many games each output holds, counted from the
    outputs themselves (:func:`output_counts`): a game whose store row or
    record failed is played, and in ``--json``, but not in that output.
    """
    if report.total_games:
        print(report.table())
    problem = write_outputs(report, args, partial=True, written=written)
    counts = output_counts(args, store, written, json_games=None if problem else report.total_games)
    if problem:
        counts.append(problem)
    fail(f"{message}: {', '.join(counts)}" if counts else message, code=code)


def output_counts(
    args: argparse.Namespace, store: ResultsStore | None, written: WrittenGames, json_games: int | None
) -> list[str]:
    """``N in --db FILE``, ``N in --json FILE``, ``N records in DIR/``: what each output of the run holds.

    The store's rows of this run's session, the games of the ``--json``
    written (``json_games``; None when it could not be written) and the
    record files of this run on disk.
    """
    from kahuna_arena.store import StoreError

    counts = []
    if store is not None and args.db is not None:
        try:
            stored = str(store.game_count(written.session)) if written.session is not None else "0"
        except StoreError:  # the store that failed may fail to be read too
            stored = "an unknown number"
        counts.append(f"{stored} in --db {args.db}")
    if args.json is not None and json_games is not None:
        counts.append(f"{json_games} in --json {args.json}")
    if args.record is not None:
        counts.append(f"{recorded_games(written)} records in {args.record}/")
    return counts


def recorded_games(written: WrittenGames) -> int:
    """How many of the run's game records are on disk (each written whole, or not at all)."""
    return sum(1 for path in written.records if path.is_file())


SPRT_MAX_GAMES = 2000
"""``--games`` with ``--sprt`` when it is not given: the most games the test may play."""


def _open_store(args: argparse.Namespace) -> ResultsStore | None:
    """The results store of ``--db`` (created when missing), or ``None``; a bad file ends the program (one line)."""
    if args.db is None:
        return None
    from kahuna_arena.store import ResultsStore, StoreError, StoreFailure

    try:
        return ResultsStore(args.db)
    except StoreError as error:
        fail(str(error), code=1 if isinstance(error, StoreFailure) else 2)


def _main_sprt(args: argparse.Namespace) -> int:
    """``kahuna-eval A B --sprt elo0=X elo1=Y``: a sequential test (:mod:`kahuna_arena.sprt`)."""
    from kahuna_arena.evaluation import EvaluationError
    from kahuna_arena.sprt import SPRT, parse_hypotheses, run_sprt

    if len(args.entrants) != 2:
        fail(f"--sprt tests two entrants, got {len(args.entrants)}")
    if args.record is not None:
        fail("--record does not apply with --sprt (use --db to keep every game)")
    try:
        elo0, elo1 = parse_hypotheses(args.sprt)
        test = SPRT(elo0=elo0, elo1=elo1, alpha=args.alpha, beta=args.beta)
        from kahuna_arena.evaluation import check_entrants

        entrants = check_entrants(args.entrants, sampled=args.sampled)  # the one resolution of the entrants
        check_outputs(args)
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    one_torch_thread(args.entrants)
    store = _open_store(args)
    try:
        with signals_as_interrupt(*STOP_SIGNALS):
            report = run_sprt(
                args.entrants[0],
                args.entrants[1],
                test,
                max_games=args.games,
                seed=args.seed,
                workers=args.workers,
                config=KahunaConfig(variant=args.variant, discard_rule=args.discard_rule),
                sampled=args.sampled,
                store=store,
                progress=not args.no_progress,
                resolved=entrants,
                common_deals=args.common_deals,
            )
    except Terminated as terminated:
        fail(f"terminated ({terminated}; the games finished so far are in --db, if given)", 128 + terminated.number)
    except KeyboardInterrupt:
        fail("interrupted (the games finished so far are in --db, if given)", code=130)
    except (EvaluationError, FileNotFoundError, ValueError) as error:
        fail(str(error), code=1)
    print(report.text())
    if args.json is not None:
        try:
            write_text_atomic(args.json, json.dumps(report.to_dict(), indent=2) + "\n")
        except OSError as error:
            fail(f"cannot write --json {args.json}: {first_line(error)}", code=1)
        print(f"results written to {args.json}")
    return 0


def entrant_files(entrants: Sequence[str]) -> list[Path]:
    """The files among the entrants (policy files and checkpoints, also behind ``@mcts``): the evaluation's inputs."""
    from kahuna_arena.entrants import parse_entrant

    files = []
    for spec in entrants:
        try:
            entrant = parse_entrant(spec)
        except ValueError:  # reported when the entrants are built
            continue
        if entrant.kind == "file":
            files.append(Path(entrant.source))
    return files


def earlier_records(directory: Path) -> list[Path]:
    """The game records of an earlier evaluation in ``directory`` (the names :func:`run_evaluation` writes)."""
    if not directory.is_dir():
        return []
    return sorted(directory.glob("pairing[0-9][0-9]-game[0-9][0-9][0-9][0-9]-*.json"))


def check_outputs(args: argparse.Namespace) -> None:
    """``ValueError`` (one line) unless ``--json``, ``--db`` and ``--record`` may be written; nothing is created.

    The rule of :func:`kahuna_env.cli.check_output_file`: ``--json`` is
    never one of the entrants' files nor the ``--db`` store (which holds
    earlier games: an input too), never another kind of protected file, and
    replaces an existing report only with ``--force``.  ``--db`` is never an
    entrant's file (an existing store is added to).  ``--record`` must not
    hold an earlier evaluation's records, whose names would repeat (or with
    ``--force``).
    """
    files = entrant_files(args.entrants)
    if args.db is not None:
        for source in files:
            if same_file(args.db, source):
                raise ValueError(f"--db {args.db} is one of the inputs ({source}); give another results store")
    if args.json is not None:
        inputs = [*files, *([("--db", args.db)] if args.db is not None else [])]
        check_output_file("--json", args.json, REPORT, inputs=inputs, force=args.force)
    if args.record is not None:
        check_writable("--record", args.record, directory=True)
        earlier = earlier_records(args.record)
        if earlier and not args.force:
            raise ValueError(
                f"--record {args.record} already holds {len(earlier)} game record(s) of an earlier evaluation "
                f"(e.g. {earlier[0].name}); give another directory, or --force to overwrite them"
            )


def write_outputs(
    report: EvaluationReport, args: argparse.Namespace, partial: bool = False, written: WrittenGames | None = None
) -> str | None:
    """Write ``--json`` (marked ``"partial": true`` after an early end) and say where the records went.

    A ``--json`` that cannot be written ends the program (exit code 1);
    with ``partial``, the message is returned instead, for the line that
    ends the program anyway.
    """
    if args.json is not None:
        data = report.to_dict()
        if partial:
            data["partial"] = True
        try:
            write_text_atomic(args.json, json.dumps(data, indent=2) + "\n")
        except OSError as error:
            problem = f"cannot write --json {args.json}: {error.strerror or first_line(error)}"
            if partial:
                return problem
            fail(problem, code=1)
        print(f"{'partial ' if partial else ''}results written to {args.json}")
    if args.record is not None and written is not None:
        print(f"{recorded_games(written)} game records written to {args.record}/")
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
