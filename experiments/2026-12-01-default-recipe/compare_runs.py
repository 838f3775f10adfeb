"""Compare training runs at equal learner decisions: a metric's learning curve, the final evaluation, the speed.

    python benchmarks/compare_runs.py runs/a runs/b [...] [--metric eval/win_rate_vs_greedy] [--every 2000000]

For every ``--every`` learner decisions (the metrics' ``global_step``), each
run's ``--metric`` is read off its learning curve (linear interpolation
between the two evaluations around that point; blank past a run's end).  Then
each run's final evaluation (``final_eval.json``: games, W-D-L, score and its
95% Wilson interval against the metric's opponent), its learner decisions,
and its overall speed (``charts/SPS`` of the last update: learner decisions
per second of collection and update, evaluation excluded).  Reads only the
run directories; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np


def read_metrics(run_dir: Path) -> list[dict]:
    """The rows of ``run_dir/metrics.jsonl`` (one JSON object per line)."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise SystemExit(f"compare_runs: error: {path} not found (not a training run directory?)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def curve(rows: list[dict], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(decisions, values)`` of the rows that logged ``metric``."""
    points = [(row["global_step"], row[metric]) for row in rows if metric in row]
    if not points:
        return np.zeros(0), np.zeros(0)
    steps, values = zip(*points, strict=True)
    return np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="training run directories")
    parser.add_argument("--metric", default="eval/win_rate_vs_greedy", help="metric to compare (default: %(default)s)")
    parser.add_argument("--every", type=float, default=2e6, help="learner decisions between rows (default: 2e6)")
    args = parser.parse_args(argv)
    if not args.every > 0:
        parser.error(f"--every must be > 0, got {args.every}")
    rows = {run: read_metrics(run) for run in args.runs}
    curves = {run: curve(data, args.metric) for run, data in rows.items()}
    names = [run.name for run in args.runs]
    width = max(12, *(len(name) for name in names))
    print(f"{args.metric} at equal learner decisions (linear interpolation between evaluations)")
    print(f"{'decisions':>12}  " + "  ".join(f"{name:>{width}}" for name in names))
    end = max(float(steps[-1]) for steps, _ in curves.values() if len(steps))
    milestone = args.every
    while milestone <= end:
        cells = []
        for steps, values in curves.values():
            inside = len(steps) and steps[0] <= milestone <= steps[-1]
            cells.append(f"{np.interp(milestone, steps, values):>{width}.3f}" if inside else " " * width)
        print(f"{milestone:>12,.0f}  " + "  ".join(cells))
        milestone += args.every
    opponent = args.metric.rpartition("_vs_")[2]
    print(f"\nfinal evaluation against {opponent}, learner decisions, speed")
    for run, data in rows.items():
        final_path = run / "final_eval.json"
        final = json.loads(final_path.read_text(encoding="utf-8")).get(opponent) if final_path.is_file() else None
        last = data[-1] if data else {}
        sps = last.get("charts/SPS", math.nan)
        decisions = last.get("global_step", 0)
        if final:
            low, high = final["score_ci95"]
            result = (
                f"{final['wins']}-{final['draws']}-{final['losses']} of {final['games']}: "
                f"{final['score']:.3f} [{low:.3f}, {high:.3f}]"
            )
        else:
            result = "no final evaluation"
        print(f"{run.name:>{width}}  {result}  {decisions:,} decisions  {sps:,.0f} decisions/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
