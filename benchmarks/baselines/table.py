"""The baselines table and learning-curve plot, from every run folder under a root.

    python benchmarks/baselines/table.py [ROOT] [--plot PATH | --no-plot] [--force]

Reads each folder under ``ROOT`` (default ``runs/baselines``) that holds a
baseline run's ``progress.json``, with its ``curve.json`` and ``protocol.json``
when ``evaluate.py`` wrote them, and prints one markdown table, a row per run:
library, algorithm, seed, budget, the decisions of its final snapshot and
their rate over its training time, the Kahuna-v1 scores with their 95%
intervals and Elo (``protocol.json``; "not evaluated" without one), the time
to reach 0.90 against ``greedy`` on its curve (the first snapshot whose curve
score is at least 0.90, or "not reached") and that time over the native
trainer's of the same seed.  Then it draws the curves (score against
``greedy`` by training minutes and by decisions, one line per run, the 95%
intervals as bars) to ``--plot`` (default ``ROOT/curves.png``; an existing
file only with ``--force``).  Without matplotlib it says so in one line and
draws nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from baseline_run import PROGRESS_FILE, PROTOCOL_FILE, BaselineError, read_curve, read_json, read_progress

from kahuna_arena.protocol import KAHUNA_V1, PROTOCOL_FORMAT
from kahuna_env.cli import PNG, OneLineParser, add_force_argument, check_output_file, exit_with_error, replacing

TARGET = 0.90
"""The score against ``greedy`` whose time the table reports."""
NATIVE = "native"
"""The library whose time to :data:`TARGET` the others are compared with."""


def read_runs(root: Path) -> list[dict[str, Any]]:
    """Each run under ``root``: its folder name and its three files' contents (None where missing)."""
    runs = []
    for folder in sorted(path for path in root.iterdir() if (path / PROGRESS_FILE).is_file()):
        protocol = folder / PROTOCOL_FILE
        runs.append(
            {
                "name": folder.name,
                "progress": read_progress(folder),
                "curve": read_curve(folder),
                "protocol": read_json(protocol, PROTOCOL_FORMAT, "a protocol result") if protocol.exists() else None,
            }
        )
    return runs


def time_to_target(run: dict[str, Any]) -> float | None:
    """Training minutes of the first snapshot whose score against ``greedy`` is at least :data:`TARGET`."""
    points = sorted((run["curve"] or {"points": []})["points"], key=lambda point: point["minutes"])
    return next((point["minutes"] for point in points if point["score"] >= TARGET), None)


def interval(score: float, low: float, high: float) -> str:
    """``0.970 [0.958, 0.979]``."""
    return f"{score:.3f} [{low:.3f}, {high:.3f}]"


def millions(count: int) -> str:
    """``43.96M`` (``382k`` below a million)."""
    return f"{count / 1e6:.2f}M" if count >= 1e6 else f"{count / 1e3:.0f}k"


def row(run: dict[str, Any], opponents: list[str], native_times: dict[int, float | None]) -> list[str]:
    """The table's cells for ``run``."""
    progress = run["progress"]
    final = progress["snapshots"][-1] if progress["snapshots"] else None
    cells = [progress["library"], progress["algorithm"], str(progress["seed"]), f"{progress['minutes']:g}"]
    if final is None:
        cells += ["not yet run", ""]
    else:
        rate = final["decisions"] / max(final["train_seconds"], 1e-9)
        finished = "" if progress["finished"] else f" (at {final['minutes']:.1f} min, unfinished)"
        cells += [millions(final["decisions"]) + finished, f"{rate:,.0f}"]
    protocol = run["protocol"]
    if protocol is None:
        cells += ["not evaluated"] * (len(opponents) + 1)
    else:
        scores = {score["opponent"]: score for score in protocol["result"]["scores"]}
        cells += [interval(scores[o]["score"], *scores[o]["score_ci95"]) if o in scores else "" for o in opponents]
        elo = protocol["result"]["elo"]
        cells.append(f"{elo['rating']:.0f} [{elo['ci95'][0]:.0f}, {elo['ci95'][1]:.0f}]")
    reached = time_to_target(run)
    if run["curve"] is None:
        cells += ["not evaluated", ""]
    elif reached is None:
        cells += ["not reached", ""]
    else:
        native = native_times.get(progress["seed"])
        cells += [f"{reached:.1f} min", f"{reached / native:.2f}" if native else ""]
    return cells


def table(runs: list[dict[str, Any]]) -> str:
    """The markdown table of ``runs`` (see the module docstring)."""
    opponents: list[str] = []
    for run in runs:  # the protocol's opponents as its results list them (Kahuna-v1's before any result)
        for score in run["protocol"]["result"]["scores"] if run["protocol"] else []:
            opponents += [] if score["opponent"] in opponents else [score["opponent"]]
    opponents = opponents or [opponent.entrant for opponent in KAHUNA_V1.opponents]
    native_times = {
        run["progress"]["seed"]: time_to_target(run) for run in runs if run["progress"]["library"] == NATIVE
    }
    header = ["library", "algorithm", "seed", "budget (min)", "decisions", "decisions/s"]
    header += [f"{KAHUNA_V1.name} vs {opponent}" for opponent in opponents]
    header += ["Elo", f"time to {TARGET:.2f} vs greedy", "over native's"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row(run, opponents, native_times)) + " |" for run in runs]
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Draw every run's curve against ``greedy``, by minutes and by decisions, to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    libraries = sorted({run["progress"]["library"] for run in runs})
    colours = {library: f"C{i}" for i, library in enumerate(libraries)}
    for run in runs:
        points = sorted((run["curve"] or {"points": []})["points"], key=lambda point: point["minutes"])
        if not points:
            continue
        scores = [point["score"] for point in points]
        errors = [  # the interval's reach below and above each score (never negative: a Wilson interval holds it)
            [max(score - point["score_ci95"][0], 0.0) for score, point in zip(scores, points, strict=True)],
            [max(point["score_ci95"][1] - score, 0.0) for score, point in zip(scores, points, strict=True)],
        ]
        style = {"color": colours[run["progress"]["library"]], "marker": "o", "capsize": 3, "label": run["name"]}
        style["linestyle"] = "-" if run["progress"]["seed"] % 2 == 0 else "--"
        axes[0].errorbar([point["minutes"] for point in points], scores, yerr=errors, **style)
        axes[1].errorbar([max(point["decisions"], 1) for point in points], scores, yerr=errors, **style)
    for axis, label in zip(axes, ("training minutes", "decisions"), strict=True):
        axis.axhline(TARGET, color="grey", linewidth=0.8, linestyle=":")
        axis.set_xlabel(label)
        axis.grid(alpha=0.3)
    axes[1].set_xscale("log")
    axes[0].set_ylabel("score against greedy (95% interval)")
    axes[0].set_ylim(0, 1)
    axes[0].set_xlim(left=0)
    axes[1].legend(fontsize=8, loc="best")
    figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    """Print the table of the runs under the root and draw their curves."""
    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", type=Path, default=Path("runs/baselines"), help="folder of the run folders")
    parser.add_argument("--plot", type=Path, help="the curves' PNG (default ROOT/curves.png)")
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root} is not a folder")
    path = args.plot or args.root / "curves.png"
    try:
        runs = read_runs(args.root)
        if not args.no_plot:
            check_output_file("--plot", path, PNG, force=args.force)
    except (BaselineError, ValueError) as error:
        exit_with_error(parser.prog, str(error))
    if not runs:
        exit_with_error(parser.prog, f"{args.root} holds no baseline run (no folder with a {PROGRESS_FILE})")
    print(table(runs))
    if args.no_plot:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"{parser.prog}: matplotlib is not installed (pip install matplotlib); no plot drawn")
        return
    plot(runs, path)
    print(f"curves written to {path}")


if __name__ == "__main__":
    sys.exit(main())
