"""The learning curve of baseline runs: every snapshot against ``greedy``; with ``--protocol``, the final's Kahuna-v1.

    python benchmarks/baselines/evaluate.py RUN_DIR [RUN_DIR ...] [--games N] [--seed S] [--workers W] [--protocol]

For each run folder of a baseline script (its ``progress.json``), every
snapshot not yet in the folder's ``curve.json`` is played against ``greedy``::

    kahuna-eval SNAPSHOT greedy --games 382 --seed 0 --common-deals --workers W --json TEMP

seat-balanced (each deal twice, seats swapped), every snapshot of every run on
the same deals (``--common-deals``), 382 games by default: the fewest (even)
whose 95% Wilson half-width is at most 0.05 at any score (the widest, at 0.5:
0.0499; :func:`curve_games`).  Its result (score, interval, wins, draws,
losses, the command) is added to ``curve.json`` as soon as it is played, so
an interrupted evaluation goes on where it stopped; a ``curve.json`` made with
another ``--games`` or ``--seed`` is refused in one line.  Results do not
depend on ``--workers``.

``--protocol`` also plays the benchmark protocol with the final snapshot of
every finished run that has none yet::

    kahuna-eval FINAL --protocol kahuna-v1 --json RUN_DIR/protocol.json --workers W

(docs/EVALUATION.md: 2,736 games).  ``table.py`` reads the
three files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from baseline_run import (
    CURVE_FILE,
    CURVE_FORMAT,
    PROGRESS_FILE,
    PROTOCOL_FILE,
    BaselineError,
    read_progress,
    tool,
    write_json,
)
from baseline_run import read_curve as read_curve_file

from kahuna_arena.protocol import KAHUNA_V1, largest_half_width
from kahuna_env.cli import OneLineParser, exit_with_error

OPPONENT = "greedy"
HALF_WIDTH = 0.05
"""The largest 95% half-width of a curve point's score."""
SEED = 0


def curve_games(half_width: float = HALF_WIDTH) -> int:
    """The fewest even number of games whose widest 95% Wilson half-width (at a score of 0.5) is ``half_width``."""
    games = 2
    while largest_half_width(games) > half_width:
        games += 2
    return games


def kahuna_eval(arguments: list[str]) -> None:
    """Run ``kahuna-eval`` with ``arguments``; its last error line as a ``BaselineError`` if it fails."""
    command = [tool("kahuna-eval"), *arguments, "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or [f"status {done.returncode}"]
        raise BaselineError(lines[-1])
    print(done.stdout.strip().splitlines()[1] if done.stdout.count("\n") > 1 else done.stdout.strip(), flush=True)


def read_curve(run_dir: Path, games: int, seed: int) -> dict[str, Any]:
    """The run's ``curve.json``, or a new one; ``BaselineError`` if it was made with other games or seed."""
    curve = read_curve_file(run_dir)
    if curve is None:
        return {"format": CURVE_FORMAT, "opponent": OPPONENT, "games": games, "seed": seed, "points": []}
    if (curve.get("games"), curve.get("seed")) != (games, seed):
        raise BaselineError(
            f"{run_dir / CURVE_FILE} was played with --games {curve.get('games')} --seed {curve.get('seed')}; "
            "give the same, or move it away to start the curve again"
        )
    return curve


def evaluate_snapshot(run_dir: Path, snapshot: dict[str, Any], games: int, seed: int, workers: int) -> dict[str, Any]:
    """Play ``snapshot`` against ``greedy``; its curve point."""
    entrant = str(run_dir / snapshot["path"])
    arguments = [entrant, OPPONENT, "--games", str(games), "--seed", str(seed), "--common-deals"]
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "eval.json"
        kahuna_eval([*arguments, "--workers", str(workers), "--json", str(report)])
        result = json.loads(report.read_text(encoding="utf-8"))
    pairing = result["pairings"][0]
    point = {key: snapshot[key] for key in ("name", "minutes", "decisions", "path")}
    point.update({key: pairing[key] for key in ("games", "wins", "draws", "losses", "score", "score_ci95")})
    point["identity"] = result["identities"][entrant]
    point["command"] = "kahuna-eval " + " ".join(arguments)
    return point


def evaluate_run(run_dir: Path, progress: dict[str, Any], curve: dict[str, Any], workers: int, protocol: bool) -> None:
    """Add the run's missing curve points, and with ``protocol`` its final snapshot's protocol result."""
    games, seed = curve["games"], curve["seed"]
    done = {point["name"] for point in curve["points"]}
    for snapshot in progress["snapshots"]:
        if snapshot["name"] in done:
            continue
        print(f"{run_dir}: {snapshot['name']} ({snapshot['minutes']:.2f} min) against {OPPONENT}", flush=True)
        curve["points"].append(evaluate_snapshot(run_dir, snapshot, games, seed, workers))
        write_json(run_dir / CURVE_FILE, curve)
    if not protocol:
        return
    target = run_dir / PROTOCOL_FILE
    if target.exists():
        print(f"{run_dir}: {PROTOCOL_FILE} is there already")
    elif not progress["finished"]:
        print(f"{run_dir}: not finished; no protocol before its final snapshot")
    else:
        final = str(run_dir / progress["snapshots"][-1]["path"])
        print(f"{run_dir}: {KAHUNA_V1.name} protocol of {final}", flush=True)
        kahuna_eval([final, "--protocol", KAHUNA_V1.name, "--json", str(target), "--workers", str(workers)])


def main(argv: list[str] | None = None) -> None:
    """Evaluate the runs named on the command line."""
    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="folders of baseline runs")
    parser.add_argument("--games", type=int, default=curve_games(), help="games per snapshot (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="kahuna-eval's --seed (default %(default)s)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    parser.add_argument("--protocol", action="store_true", help=f"also play {KAHUNA_V1.name} with each final snapshot")
    args = parser.parse_args(argv)
    if args.games < 2 or args.games % 2:
        parser.error(f"--games must be even and at least 2 (seat-balanced), got {args.games}")
    runs = []
    for run_dir in args.run_dirs:  # every folder checked before any game
        if not (run_dir / PROGRESS_FILE).is_file():
            parser.error(f"{run_dir} is not a baseline run folder (no {PROGRESS_FILE})")
        try:
            progress = read_progress(run_dir)
            runs.append((run_dir, progress, read_curve(run_dir, args.games, args.seed)))
        except BaselineError as error:
            parser.error(str(error))
    try:
        for run_dir, progress, curve in runs:
            evaluate_run(run_dir, progress, curve, args.workers, args.protocol)
    except BaselineError as error:
        exit_with_error(parser.prog, str(error), 1)
    except KeyboardInterrupt:
        exit_with_error(parser.prog, "stopped; run the same command again to go on", 130)


if __name__ == "__main__":
    sys.exit(main())
