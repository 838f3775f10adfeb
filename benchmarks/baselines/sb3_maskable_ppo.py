"""sb3-contrib MaskablePPO on the native vector env, for a wall-clock budget.

    python benchmarks/baselines/sb3_maskable_ppo.py --out runs/baselines/sb3-s0 --seed 0 --minutes 30 [--max-steps N]

The recipe of docs/ECOSYSTEM.md ("MaskablePPO on the native vector env"):
``MaskablePPO("MlpPolicy", VecMonitor(VecEnv(gymnasium.make_vec("Kahuna-v0",
opponent="greedy", seat="random", observation="flat"))))``: the learner plays
a random seat against ``greedy`` inside ``step``, reward +1 / -1 / 0 at the
end, the masks read from ``action_masks()``.

Tuning, from sb3-contrib's defaults (what a user would change in an hour):
64 games at once, ``n_steps=128`` (a rollout of 8,192 decisions; the default
2048 x 64 games would be 131,072) and ``batch_size=1024`` (the default 64 makes
1,280 gradient steps per rollout on 2 cores), and
``policy_kwargs=dict(net_arch=[256, 128])`` (the default 64-64 for 246
inputs and 179 actions).  Everything else is the library's default: lr 3e-4,
10 epochs, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, value 0.5,
gradient norm 0.5, tanh.

Snapshots (:mod:`baseline_run`): ``snap-05min.zip`` ... ``final.zip``, each
``model.save``: the entrant the arena reads without unpickling, and what a
resumed run loads (``MaskablePPO.load``: the weights, Adam's state and
``num_timesteps``).  A resumed run deals fresh games (``VecEnv.seed(env_seed(seed,
snapshots))``) and reseeds SB3's generators (``set_random_seed``,
global torch and numpy state: SB3's own way), so it is not bit-identical to
an uninterrupted run.  ``decisions`` are ``num_timesteps``, the learner's
decisions.
"""

from __future__ import annotations

import gymnasium
from baseline_run import Run, TrainingClock, env_seed, script_main
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

import kahuna_env  # noqa: F401  (registers Kahuna-v0)
from kahuna_env.cli import replacing
from kahuna_env.sb3 import VecEnv

LIBRARY = "sb3-contrib"
ALGORITHM = "MaskablePPO"
NUM_ENVS = 64
HYPERPARAMETERS = {"n_steps": 128, "batch_size": 1024, "policy_kwargs": {"net_arch": [256, 128]}}
"""The tuning of the module docstring (the rest: the library's defaults)."""
NEVER = 10**15
"""``learn``'s step budget: the budget is the callback's (``--minutes``, ``--max-steps``)."""


class Snapshots(BaseCallback):
    """Takes the run's snapshots at its marks and stops ``learn`` at the budget (training time on ``clock``)."""

    def __init__(self, run: Run, clock: TrainingClock) -> None:
        super().__init__()
        self.run = run
        self.clock = clock

    def _on_step(self) -> bool:
        while (mark := self.run.due(self.clock.seconds(), self.num_timesteps)) is not None:
            with self.clock.paused():
                path = self.run.new_file(mark, ".zip")
                with replacing(path) as temporary:
                    self.model.save(temporary)
                self.run.record(mark, self.clock.seconds(), self.num_timesteps, path)
            if mark.final:
                return False
        return True


def train(run: Run, seed: int) -> None:
    """Train until the run's budget, taking its snapshots; resumes from the newest one."""
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=NUM_ENVS, opponent="greedy", seat="random", observation="flat")
    venv = VecMonitor(VecEnv(envs))
    if run.last is None:
        model = MaskablePPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **HYPERPARAMETERS)
    else:
        model = MaskablePPO.load(run.path / run.last["path"], env=venv, device="cpu")
        model.set_random_seed(env_seed(seed, len(run.snapshots)))
    venv.seed(env_seed(seed, len(run.snapshots)))  # after SB3's set_random_seed, which seeds the games with seed + i
    model.learn(NEVER, callback=Snapshots(run, TrainingClock(run.train_seconds)), reset_num_timesteps=run.last is None)
    venv.close()


if __name__ == "__main__":
    script_main(__doc__, __file__, LIBRARY, ALGORITHM, train, packages=("sb3-contrib", "torch"))
