"""Ray RLlib PPO through the project's RLlib path, ``kahuna-rllib --config rllib``, as a baseline run.

    python benchmarks/baselines/rllib_ppo.py --out runs/baselines/rllib-s0 --seed 0 --minutes 30

Runs ``kahuna-rllib --config rllib --run-dir OUT/train --set seed=SEED --set
iterations=800 --set max_minutes=MINUTES``: configs/rllib.yaml as shipped
(RLlib's new API stack, PPO with the native loss, 2 EnvRunners playing whole
games on the batched engine, 80% of the games against ``greedy``, 10%
self-play, 10% against snapshots; docs/RLLIB.md) with the settings of
docs/RLLIB.md's 30-minute measurement (``iterations=800``: the learning rate
anneals over 800 iterations; ``max_minutes`` ends the run).  The trainer
stops when its own clock passes ``max_minutes``, or after 800 iterations:
kahuna-rllib has no time-shaped schedule, so on a machine where 800
iterations take less than the budget the run ends early (its final
snapshot's minutes say when).

Snapshots (:mod:`baseline_run`): ``kahuna-rllib`` keeps a checkpoint every 10
iterations (``checkpoints/iter_NNNNNN``); training time is the sum of its
``metrics.jsonl`` rows' ``iteration_s`` (checkpoint writing excluded).  The
first checkpoint at or past a mark is exported (``kahuna-rllib export``'s
function) as ``snap-05min.pt`` ..., agent files ``kahuna-eval`` plays, with
its row's ``env_steps`` (learner decisions); the final snapshot is the
trainer's own export, ``OUT/train/agent.pt``.  Resuming is the trainer's own:
``kahuna-rllib --resume OUT/train --set max_minutes=LEFT`` from its newest
checkpoint (every module, the optimizer, the league's statistics, the
counters), with the minutes left; the iterations after that checkpoint are
trained again, with new samples (RLlib's EnvRunners are not reseeded to
where they were), so a resumed run is not bit-identical.  A trainer folder
stopped before its first checkpoint cannot be resumed: the run starts again
in ``OUT/train-2`` (and so on), the old folder left as it is.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from baseline_run import BaselineError, Run, run_trainer, script_main, tool

from training.rllib.errors import TrainingError
from training.rllib.loop import latest_checkpoint

LIBRARY = "rllib"
ALGORITHM = "PPO (Ray RLlib, kahuna-rllib --config rllib)"
RECIPE = "rllib"
ITERATIONS = 800
"""docs/RLLIB.md's 30-minute run (``--set max_minutes=30 --set iterations=800``)."""
SMALLEST_MINUTES = 0.01
"""``max_minutes`` of a resume whose budget is spent: one iteration, then the final checkpoint and export."""


def training_seconds(trainer_dir: Path) -> dict[int, tuple[float, int]]:
    """Iteration -> (training seconds up to its end, env steps), from the trainer's ``metrics.jsonl``."""
    path = trainer_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    seconds = itertools.accumulate(float(row["iteration_s"]) for row in rows)
    return {int(row["iteration"]): (total, int(row["env_steps"])) for row, total in zip(rows, seconds, strict=True)}


def checkpoint_iteration(checkpoint: Path) -> int:
    """The iteration of ``checkpoints/iter_NNNNNN``."""
    return int(checkpoint.name.split("_")[1])


def take_snapshots(run: Run, trainer_dir: Path) -> None:
    """Export the first checkpoint at or past each mark the trainer passed (not the final one)."""
    from training.rllib.export import export_checkpoint

    if not (trainer_dir / "metrics.jsonl").is_file():
        return
    progress = training_seconds(trainer_dir)
    checkpoints = sorted(
        (path.parent for path in trainer_dir.glob("checkpoints/iter_*/rllib_checkpoint.json")),
        key=checkpoint_iteration,
    )
    for checkpoint in checkpoints:
        if checkpoint_iteration(checkpoint) not in progress:
            continue
        seconds, decisions = progress[checkpoint_iteration(checkpoint)]
        while (mark := run.due(seconds, decisions)) is not None and not mark.final:
            path = run.new_file(mark, ".pt")
            export_checkpoint(checkpoint, path)
            run.record(mark, seconds, decisions, path, iteration=checkpoint_iteration(checkpoint))


def trainer_command(run: Run, seed: int) -> tuple[list[str], Path]:
    """The ``kahuna-rllib`` command that starts or resumes the run's trainer, and the trainer's folder."""
    trainer_dir = run.path / run.data.setdefault("trainer_dir", "train")
    if trainer_dir.exists():
        try:
            checkpoint = latest_checkpoint(trainer_dir)
        except TrainingError:  # stopped before its first checkpoint: start again beside it
            trainer_dir = next(
                run.path / f"train-{n}" for n in itertools.count(2) if not (run.path / f"train-{n}").exists()
            )
            run.data["trainer_dir"] = trainer_dir.name
            run.save()
        else:
            done = 60 * run.minutes  # the final checkpoint: the whole budget was trained
            if checkpoint.name != "checkpoint":
                done = training_seconds(trainer_dir).get(checkpoint_iteration(checkpoint), (0.0, 0))[0]
            left = max(run.minutes - done / 60, SMALLEST_MINUTES)
            return [tool("kahuna-rllib"), "--resume", str(trainer_dir), "--set", f"max_minutes={left:.6g}"], trainer_dir
    command = [tool("kahuna-rllib"), "--config", RECIPE, "--run-dir", str(trainer_dir), "--set", f"seed={seed}"]
    command += ["--set", f"iterations={ITERATIONS}", "--set", f"max_minutes={run.minutes:.6g}"]
    return command, trainer_dir


def train(run: Run, seed: int) -> None:
    """Run (or resume) the trainer to its end, then take the snapshots and record its final agent."""
    command, trainer_dir = trainer_command(run, seed)
    final = trainer_dir / "agent.pt"
    take_snapshots(run, trainer_dir)  # marks a stopped session passed
    if not final.is_file():
        run_trainer(command, lambda: None)
    take_snapshots(run, trainer_dir)
    progress = training_seconds(trainer_dir)
    if not final.is_file() or not progress:
        raise BaselineError(f"{trainer_dir} has no agent.pt after kahuna-rllib ended; run again to resume")
    seconds, decisions = progress[max(progress)]
    run.record(run.pending_marks()[-1], seconds, decisions, final, iteration=max(progress))


if __name__ == "__main__":
    script_main(__doc__, __file__, LIBRARY, ALGORITHM, train, trainer=True, packages=("ray", "torch"))
