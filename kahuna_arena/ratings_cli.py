"""``kahuna-ratings``: one ladder over every game in a results store, and the games that would refine it most.

Examples::

    kahuna-ratings --db results.sqlite                          # the ladder, with 95% intervals
    kahuna-ratings --db results.sqlite --json ladder.json
    kahuna-ratings --db results.sqlite --import-report docs/ratings.json   # an older kahuna-eval report's results
    kahuna-ratings --db results.sqlite --entrant runs/new/final_agent.pt --schedule 8 --play --games 50
    kahuna-ratings --db results.sqlite --schedule 4 --play --games 100 --common-deals   # the same deals for all four
    kahuna-ratings --db results.sqlite --plot elo.png           # Elo against learner decisions, per training run

The ladder, the scheduling, the import and the plot are :mod:`kahuna_arena.ladder`'s
(its docstring defines them); this module reads the arguments, prints and
sets the exit code.  ``--schedule N`` proposes the N pairings whose next games
are worth most (an entrant without games, ``--entrant SPEC``, first);
``--play`` plays them (``--games`` each, on deals no earlier session of the
store used; with ``--common-deals`` every pairing of the call on the same
deals) and writes the games to the store; the ladder printed afterwards
includes them.  A new checkpoint thus costs its own games, not a replay of
the table.

An import is keyed by the games' identity, not the file's bytes: games the
store holds already are not added again, and the command says so
(:func:`kahuna_arena.ladder.import_report`).  Reading commands open the store
read-only; nothing is written into a file that is not a results store.
Labels are printed with control characters escaped.

Bad arguments (counts beyond :mod:`kahuna_arena.match`'s bounds included), a file
that is not a results store, a malformed or partial report to import (checked
before the store is opened, so none is created), an unplayable entrant: one
line, exit code 2; a failure while playing or a
store that cannot be written (a full disk): exit code 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from kahuna_arena.entrants import ENTRANT_FORMS
from kahuna_arena.eval_cli import entrant_files, games_argument, workers_argument
from kahuna_arena.ladder import (
    DEFAULT_ANCHORS,
    CheckedReport,
    ImportOutcome,
    Ladder,
    Pairing,
    can_play,
    checked_entrant,
    fit_ladder,
    import_report,
    play_pairings,
    playable_spec,
    plot_runs,
    read_report,
    schedule_pairings,
)
from kahuna_arena.match import MAX_GAMES, MAX_WORKERS
from kahuna_arena.store import Entrant, ResultsStore, StoreError, StoreFailure, StoreOutdated
from kahuna_env.cli import (
    PNG,
    REPORT,
    OneLineParser,
    add_force_argument,
    add_rule_arguments,
    check_input_file,
    check_output_file,
    exit_with_error,
    first_line,
    positive_int,
    quiet_on_closed_pipe,
    replacing,
    require_extra,
    terminal_safe,
    write_text_atomic,
)
from kahuna_env.engine import KahunaConfig

PROGRAM = "kahuna-ratings"
MAX_SCHEDULE = 100
"""The most pairings ``--schedule`` proposes at once."""


# ---------------------------------------------------------------------------------------------- command line
def _anchor(text: str) -> tuple[str, float]:
    name, equals, value = text.rpartition("=")
    try:
        rating = float(value)
    except ValueError:
        rating = math.nan
    if not equals or not name or not math.isfinite(rating):
        raise argparse.ArgumentTypeError(f"expected ENTRANT=ELO (e.g. mcts=1146), got {text!r}")
    return name, rating


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-ratings`` argument parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="One Bradley-Terry ladder over every game of a results store (kahuna-eval --db), "
        "the pairings that would refine it most, and Elo across training runs.",
    )
    parser.add_argument("--db", type=Path, required=True, metavar="FILE", help="the results store (SQLite)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the ladder as JSON to PATH")
    parser.add_argument(
        "--anchor",
        type=_anchor,
        action="append",
        metavar="ENTRANT=ELO",
        help="pin the scale: these entrants average these ratings (repeatable; default those of docs/RATINGS.md, "
        + ", ".join(f"{k}={v:g}" for k, v in DEFAULT_ANCHORS.items())
        + ")",
    )
    parser.add_argument("--import-report", type=Path, metavar="FILE", help="add a kahuna-eval --json report's results")
    parser.add_argument(
        "--entrant",
        action="append",
        default=[],
        metavar="SPEC",
        help=f"a new entrant to schedule games for: {ENTRANT_FORMS}",
    )
    parser.add_argument("--schedule", type=positive_int, metavar="N", help="propose the N most informative pairings")
    parser.add_argument("--play", action="store_true", help="play the scheduled pairings and add them to the store")
    parser.add_argument(
        "--games",
        type=games_argument,
        default=50,
        help=f"games per scheduled pairing, even (default 50); --schedule times --games at most {MAX_GAMES:,}",
    )
    parser.add_argument(
        "--workers",
        type=workers_argument,
        default=1,
        help=f"worker processes for --play (default 1, at most {MAX_WORKERS})",
    )
    parser.add_argument(
        "--common-deals",
        action="store_true",
        help="--play every pairing on the same fresh deals, each agent seeded from its own name (as kahuna-eval "
        "--common-deals), so pairings that share an entrant differ by the opponent only",
    )
    parser.add_argument("--plot", type=Path, metavar="PNG", help="draw Elo against learner decisions per training run")
    parser.add_argument("--all-rules", action="store_true", help="rate games under every rule set together")
    add_rule_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar of --play")
    add_force_argument(parser)
    return parser


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error for ``kahuna-ratings`` and exit."""
    exit_with_error(PROGRAM, message, code)


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kahuna-ratings``; returns the exit code (0 on success)."""
    args = build_parser().parse_args(argv)
    if args.play and args.schedule is None:
        fail("--play needs --schedule N")
    if args.common_deals and not args.play:
        fail("--common-deals needs --play")
    if args.schedule is not None and args.schedule > MAX_SCHEDULE:
        fail(f"--schedule proposes at most {MAX_SCHEDULE} pairings at once, got {args.schedule}")
    if args.play and args.schedule * args.games > MAX_GAMES:
        fail(
            f"--schedule {args.schedule} --games {args.games} plays {args.schedule * args.games:,} games; "
            f"one call plays at most {MAX_GAMES:,}"
        )
    if args.plot is not None:  # matplotlib comes with the train extra, not with the environment alone
        require_extra("kahuna-ratings", "train", "matplotlib")
    anchors = dict(args.anchor) if args.anchor else dict(DEFAULT_ANCHORS)
    rules = None if args.all_rules else KahunaConfig(variant=args.variant, discard_rule=args.discard_rule).to_dict()
    try:
        newcomers = _check_arguments(args, anchors)
        # The report is checked whole first: a malformed one creates no store and changes none.
        report = read_report(args.import_report) if args.import_report is not None else None
        store = _open(args.db, writes=report is not None or args.play)
    except (StoreError, FileNotFoundError, ValueError) as error:
        fail(str(error), code=1 if isinstance(error, StoreFailure) else 2)
    try:
        with store:
            _run(store, args, anchors, rules, newcomers, report)
    except StoreFailure as error:  # the disk, not the arguments
        fail(str(error), code=1)
    return 0


def _open(path: Path, writes: bool) -> ResultsStore:
    """The store at ``path``: read-only unless the command writes (an older layout is then migrated).

    A reading command never creates a file nor writes into one; it migrates
    only a store of a layout too old to read as it is (its own kind of file).
    """
    if writes:
        return ResultsStore(path)  # created when missing
    try:
        return ResultsStore(path, readonly=True)
    except StoreOutdated:
        return ResultsStore(path)


def _run(
    store: ResultsStore,
    args: argparse.Namespace,
    anchors: dict[str, float],
    rules: dict[str, Any] | None,
    newcomers: list[Entrant],
    report: CheckedReport | None,
) -> None:
    """The command on the open store: the import, the schedule and its games, the ladder and its outputs."""
    if report is not None:
        try:
            outcome = import_report(store, report)
        except StoreFailure:
            raise
        except ValueError as error:
            fail(str(error))
        print(_import_text(args.import_report, outcome))
    ladder = fit_ladder(store, rules, anchors)
    if args.schedule is not None:
        pairings = schedule_pairings(ladder, newcomers, args.schedule, can_play if args.play else None)
        print("proposed pairings (most informative first):")
        for p in pairings:
            print(f"  {terminal_safe(p.a.label)} vs {terminal_safe(p.b.label)}: {p.reason}")
        if args.play:
            _play(store, pairings, args, rules)
            ladder = fit_ladder(store, rules, anchors)
    print(ladder.table() if ladder.rows else f"{args.db}: no games stored yet")
    _write_outputs(args, ladder)


def _import_text(path: Path, outcome: ImportOutcome) -> str:
    """What an import says: the pairings added, and those whose games the store held already."""
    if not outcome.added:
        return (
            f"nothing imported from {path}: the games of its {outcome.known} pairing(s) are already in the store "
            "(imported before, or stored one by one)"
        )
    text = f"imported {outcome.added} pairing totals from {path} (marked as imported in the store)"
    if outcome.known:
        text += f"; {outcome.known} pairing(s) whose games the store held already were not added again"
    return text


def _check_arguments(args: argparse.Namespace, anchors: dict[str, float]) -> list[Entrant]:
    """Every check before the store is opened (output paths, entrants, the store's existence); the newcomers.

    The outputs follow :func:`kahuna_env.cli.check_output_file`: neither
    ``--json`` nor ``--plot`` may be the store (``--db``, read and written),
    the report to import, an entrant's file or the other output; an
    existing file is replaced only with ``--force``, and never when it is a
    protected file of another kind (a store, an agent file, a record).
    """
    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise ValueError(f"--plot must name a .png file, got {args.plot}")
    for spec in anchors:
        checked_entrant(spec)
    newcomers = [checked_entrant(spec) for spec in args.entrant]
    if args.import_report is not None:
        check_input_file(args.import_report, "a kahuna-eval report")
    inputs: list = [("--db", args.db), *([("--import-report", args.import_report)] if args.import_report else [])]
    inputs += entrant_files([*args.entrant, *anchors])
    if args.json is not None:
        check_output_file("--json", args.json, REPORT, inputs=inputs, force=args.force)
        inputs.append(("--json", args.json))
    if args.plot is not None:
        check_output_file("--plot", args.plot, PNG, inputs=inputs, force=args.force)
    writable = args.import_report is not None or args.play
    if not writable and not args.db.exists():
        raise ValueError(f"{args.db}: no such results store (kahuna-eval --db {args.db} creates one)")
    return newcomers


def _write_outputs(args: argparse.Namespace, ladder: Ladder) -> None:
    """``--json`` (the ladder) and ``--plot`` (Elo per training run); a write failure ends with exit code 1."""
    if args.json is not None:
        try:
            write_text_atomic(args.json, json.dumps(ladder.to_dict(), indent=2) + "\n")
        except OSError as error:
            fail(f"cannot write --json {args.json}: {first_line(error)}", code=1)
        print(f"ladder written to {args.json}")
    if args.plot is not None:
        try:
            with replacing(args.plot) as temporary:
                runs = plot_runs(ladder, temporary)
        except OSError as error:
            fail(f"cannot write --plot {args.plot}: {first_line(error)}", code=1)
        print(f"Elo of {runs} training run(s) drawn in {args.plot}")


def _play(store: ResultsStore, pairings: Sequence[Pairing], args: argparse.Namespace, rules: Any) -> None:
    """Play every proposed pairing into the store (:func:`kahuna_arena.ladder.play_pairings`), printing each result."""
    from kahuna_arena.evaluation import EvaluationError

    try:
        specs = [(playable_spec(p.a), playable_spec(p.b)) for p in pairings]
    except ValueError as error:
        fail(str(error))
    config = KahunaConfig.from_dict(rules) if rules is not None else KahunaConfig()
    total = 0
    played = play_pairings(
        store,
        specs,
        games=args.games,
        workers=args.workers,
        config=config,
        common_deals=args.common_deals,
        progress=not args.no_progress,
        source=PROGRAM,
    )
    try:
        for a, b, report in played:
            total += report.total_games
            pairing = report.pairings[0]
            print(
                f"played {terminal_safe(a)} vs {terminal_safe(b)}: {pairing.wins}-{pairing.draws}-{pairing.losses} "
                f"over {pairing.games} games"
            )
    except KeyboardInterrupt:
        fail("interrupted (the games finished so far are in the store)", code=130)
    except (EvaluationError, FileNotFoundError, ValueError) as error:
        fail(f"{error} (the games finished before it are in the store)", code=1)
    print(f"{total} games played and stored")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
