"""Env steps/s of ``kahuna-rllib`` with 1 and with 2 EnvRunners (docs/RLLIB.md, "Performance notes").

    python benchmarks/rllib_scaling.py [--config configs/rllib.yaml] [--iterations 6] [--runners 1 2]
                                       [--set key=value ...]

Runs ``kahuna-rllib`` once per runner count (in that order, one after the other, in a temporary
run directory), reads each run's ``metrics.jsonl`` and prints the env steps per second of iteration
wall time (sampling and learning together) over every iteration but the first (which includes
start-up), the same per second of sampling alone (``sample_s`` of the metrics, the iteration's
time outside the learner update: how the sampling scales, apart from the learner, which the
runners wait for), and each count's ratio to the first.
Needs the ``rllib`` extra and a quiet machine:
other jobs on the same cores change the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(config: Path, runners: int, iterations: int, settings: list[str], run_dir: Path) -> dict:
    """One ``kahuna-rllib`` run with ``runners`` EnvRunners; its steady-state env steps/s."""
    command = [
        sys.executable,
        "-m",
        "training.rllib.cli",
        "--config",
        str(config),
        "--run-dir",
        str(run_dir),
        *(
            arg
            for setting in (
                f"iterations={iterations}",
                f"env_runners.num_env_runners={runners}",
                "checkpoint.every=0",
                "checkpoint.export=false",
                "verbose=false",
                *settings,
            )
            for arg in ("--set", setting)
        ),
    ]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"rllib_scaling: the run with {runners} runner(s) failed:\n{done.stderr[-2000:]}")
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    if len(rows) < 2:
        raise SystemExit(f"rllib_scaling: {len(rows)} iteration(s) logged; use --iterations 2 or more")
    steady = rows[1:]
    steps = steady[-1]["env_steps"] - rows[0]["env_steps"]
    seconds = sum(row["iteration_s"] for row in steady)
    sample_s = sum(row.get("sample_s") or 0.0 for row in steady)
    learn_s = sum(row.get("learn_s") or 0.0 for row in steady)
    return {
        "runners": runners,
        "iterations": len(steady),
        "env_steps": steps,
        "seconds": seconds,
        "env_steps_per_s": steps / seconds,
        "sample_s": sample_s,
        "learn_s": learn_s,
        "sampled_per_s": steps / sample_s if sample_s else float("nan"),
        "wall_s": time.monotonic() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "rllib.yaml")
    parser.add_argument("--iterations", type=int, default=6, help="iterations per run (the first is not counted)")
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2], help="EnvRunner counts, run in order")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.iterations < 2:
        parser.error(f"--iterations must be at least 2 (got {args.iterations})")
    with tempfile.TemporaryDirectory(prefix="kahuna-rllib-scaling-") as workdir:
        results = [
            measure(args.config, r, args.iterations, args.settings, Path(workdir) / f"run-{i}-runners-{r}")
            for i, r in enumerate(args.runners)
        ]
    base = results[0]["env_steps_per_s"]
    base_sampled = results[0]["sampled_per_s"]
    print(
        f"{'runners':>7}  {'iterations':>10}  {'env steps':>10}  {'seconds':>8}  {'env steps/s':>11}  {'ratio':>6}"
        f"  {'sampling s':>10}  {'learning s':>10}  {'sampled/s':>10}  {'ratio':>6}"
    )
    for row in results:
        print(
            f"{row['runners']:>7}  {row['iterations']:>10}  {row['env_steps']:>10,}  {row['seconds']:>8.1f}"
            f"  {row['env_steps_per_s']:>11,.0f}  {row['env_steps_per_s'] / base:>5.2f}x"
            f"  {row['sample_s']:>10.1f}  {row['learn_s']:>10.1f}  {row['sampled_per_s']:>10,.0f}"
            f"  {row['sampled_per_s'] / base_sampled:>5.2f}x"
        )
    print(
        "env steps/s: per second of iteration wall time (sampling + learning); sampled/s: per second of "
        "sampling alone (metrics.jsonl sample_s: an iteration's time outside the learner update)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
