"""The project's own trainer, ``kahuna-train --config default``, as a baseline run.

    python benchmarks/baselines/native.py --out runs/baselines/native-s0 --seed 0 --minutes 30

Runs ``kahuna-train --config default --run-dir OUT/train --set seed=SEED`` (the
default recipe, configs/default.yaml, as is: a league of self-play, PFSP
snapshots and ``greedy``, its schedule sized to its ``max_minutes`` of 29.5;
docs/TRAINING.md).  With another ``--minutes`` the recipe's budget is scaled
the way docs/TRAINING.md halves it (``--set max_minutes=29.5 * MINUTES / 30``),
the one change.  The trainer keeps its own clock (``train_seconds`` in its
checkpoints: everything it does, periodic evaluations and checkpoint writing
included) and ends on its own.

Snapshots (:mod:`baseline_run`): while it runs, every checkpoint it writes
(every 25 updates) is read; the first one at or past a mark is written out as
``snap-05min.pt`` ... (the agent file of its network, ``kahuna-eval`` plays
it), with that checkpoint's ``train_seconds`` and ``global_step`` (learner
decisions).  The final snapshot is the trainer's ``OUT/train/final_agent.pt``.
Resuming is the trainer's own: run again with the same ``--out``, and it is
``kahuna-train --resume OUT/train`` from its newest checkpoint (weights,
optimizer, league, counters, schedule, clock; every update's randomness is
seeded by ``(seed, update)``, so the resumed updates are those of an
uninterrupted run, except where the time-shaped schedule plans differently).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baseline_run import Run, run_trainer, script_main, tool

from kahuna_policy.model import model_from_payload
from training.ppo.checkpoint import LATEST_CHECKPOINT, checkpoint_dir, export_agent, load_checkpoint
from training.ppo.config import load_config
from training.recipes import recipe_path

LIBRARY = "native"
ALGORITHM = "PPO league (kahuna-train, configs/default.yaml)"
RECIPE = "default"
RECIPE_MINUTES = 30.0
"""The budget the recipe is written for (its ``max_minutes`` leaves room for its final evaluation)."""


class CheckpointWatch:
    """Reads each new checkpoint of the trainer's run and takes the snapshots it passes."""

    def __init__(self, run: Run, trainer_dir: Path) -> None:
        self.run = run
        self.checkpoints = checkpoint_dir(trainer_dir)
        self.newest = -1

    def __call__(self) -> None:
        """Look at the checkpoints written since the last call."""
        for path in sorted(self.checkpoints.glob("update_*.pt")):
            update = int(path.stem.split("_")[1])
            if update <= self.newest:
                continue
            try:
                payload = load_checkpoint(path)
            except FileNotFoundError:  # pruned (checkpoint.keep_last) since the listing: a newer one follows
                continue
            self.newest = update
            self.take(payload)

    def take(self, payload: dict[str, Any]) -> None:
        """Write this checkpoint's network as the snapshot of every mark it passed."""
        counters = payload["counters"]
        seconds, decisions = float(counters["train_seconds"]), int(counters["global_step"])
        while (mark := self.run.due(seconds, decisions)) is not None and not mark.final:
            path = self.run.new_file(mark, ".pt")
            meta = {**payload.get("meta", {}), "update": counters["update"], "global_step": decisions}
            export_agent(path, model_from_payload(payload, str(path)), meta)
            self.run.record(mark, seconds, decisions, path, update=int(counters["update"]))


def train(run: Run, seed: int) -> None:
    """Run (or resume) the trainer to its end, taking the snapshots; record the final agent."""
    trainer_dir = run.path / "train"
    if trainer_dir.is_dir() and any(trainer_dir.iterdir()):
        command = [tool("kahuna-train"), "--resume", str(trainer_dir)]
    else:
        command = [tool("kahuna-train"), "--config", RECIPE, "--run-dir", str(trainer_dir), "--set", f"seed={seed}"]
        if run.minutes != RECIPE_MINUTES:
            recipe_budget = load_config(recipe_path(RECIPE)).max_minutes
            command += ["--set", f"max_minutes={recipe_budget * run.minutes / RECIPE_MINUTES:.6g}"]
    final = trainer_dir / "final_agent.pt"
    watch = CheckpointWatch(run, trainer_dir)
    if final.is_file():  # the trainer ended, this process did not record it
        watch()
    else:
        run_trainer(command, watch)
    counters = load_checkpoint(checkpoint_dir(trainer_dir) / LATEST_CHECKPOINT)["counters"]
    seconds, decisions = float(counters["train_seconds"]), int(counters["global_step"])
    run.record(run.pending_marks()[-1], seconds, decisions, final, update=int(counters["update"]))


if __name__ == "__main__":
    script_main(__doc__, __file__, LIBRARY, ALGORITHM, train, trainer=True)
