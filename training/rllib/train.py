"""RLlib PPO self-play on Kahuna: :func:`train` and :func:`resume`, the entry ``kahuna-rllib`` calls.

The run, top to bottom, one module per role:

1. :mod:`training.rllib.connect`: :func:`connect_ray` starts a private local Ray
   instance (``ray.address: null``) or joins a cluster (``"auto"``,
   ``"HOST:PORT"``), failing fast with a one-line
   :class:`~training.rllib.errors.RayConnectionError` when the cluster cannot be
   reached (a raw gRPC probe of the head before ``ray.init``).
2. :mod:`training.rllib.config` and :mod:`training.rllib.algorithm`:
   :func:`build_ppo_config` maps the :class:`~training.rllib.config.RLlibConfig`
   onto RLlib's ``PPOConfig`` on the new API stack (RLModule, Learner, EnvRunner
   with connector v2); the ``ppo:`` keys are kahuna-train's, renamed to RLlib's
   by one table, :data:`~training.rllib.config.PPO_TO_RLLIB`.  Env
   :class:`~training.rllib.env.KahunaMultiAgentEnv`, module
   :class:`~training.rllib.module.KahunaRLModule` (masked logits) for every
   policy, one trained module ``"learner"`` and ``pool.max_snapshots`` frozen
   modules ``"snapshot_<k>"`` (when ``pool.past`` > 0).
3. :mod:`training.rllib.callbacks`: the env draws each game's opponent from
   ``pool`` (self-play, a snapshot slot, or a ``greedy``/``random`` baseline
   played inside the env) and names the agents after their modules;
   :func:`~training.rllib.league.league_mapping` reads the module from the agent
   id.  :class:`SnapshotCallback` copies the learner's weights into the next
   snapshot slot every ``pool.snapshot_every`` iterations; every sampled action
   is checked against its mask.  With ``pool.pfsp`` ``hard`` or ``variance`` the
   slot of a ``past`` game is drawn with the native trainer's PFSP odds: the
   driver keeps each slot's decayed results
   (:class:`~training.rllib.league.SlotStats`, from the episodes' metrics) and
   pushes the odds into every env before each iteration.
4. :mod:`training.rllib.progress` and :mod:`training.rllib.loop`: every
   iteration appends a line to ``<run_dir>/metrics.jsonl`` (with the native
   trainer's ``league/*`` PFSP diagnostics); checkpoints go to
   ``<run_dir>/checkpoints/iter_NNNNNN``, the final one to
   ``<run_dir>/checkpoint``, and the learner is exported to
   ``<run_dir>/agent.pt`` (the project's agent format).  ``resume=RUN_DIR``
   continues a run from its newest checkpoint (weights of every module,
   optimizer, iteration and step counters, and the slots' PFSP statistics,
   :data:`~training.rllib.loop.LEAGUE_FILE` in the checkpoint directory).
5. Failed EnvRunners are restarted by Ray (``fault_tolerance``), and
   :class:`~training.rllib.callbacks.RunnerWatch` gives a restarted one the whole
   league back; the number of restarts is in every metrics line
   (``env_runner_restarts``).
"""

from __future__ import annotations

import sys

from training.rllib.algorithm import build_ppo_config

# The entry's names, from the modules that hold them (build_ppo_config and push_snapshot_probabilities
# were defined here before the split; callers that import them from here keep working).
from training.rllib.callbacks import push_snapshot_probabilities
from training.rllib.connect import connect_ray
from training.rllib.loop import RunResult, resume, train

__all__ = ["RunResult", "build_ppo_config", "connect_ray", "push_snapshot_probabilities", "resume", "train"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `kahuna-rllib --config configs/rllib.yaml`")
