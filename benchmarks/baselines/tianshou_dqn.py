"""Tianshou DQN with masking on the PettingZoo env, against a random opponent, for a wall-clock budget.

    python benchmarks/baselines/tianshou_dqn.py --out runs/baselines/tianshou-s0 --seed 0 --minutes 30 [--max-steps N]

The multi-agent recipe of docs/ECOSYSTEM.md ("Tianshou"): ``PettingZooEnv(
kahuna_env.env(closing_step=True))``, ``MultiAgentOffPolicyAlgorithm`` with
``MARLRandomDiscreteMaskedOffPolicyAlgorithm`` as ``player_0`` (the pool that
recipe shows: a masked random player) and a ``DQN`` over a ``Net`` as
``player_1``, masked through Tianshou's ``obs.mask``; the one loop of
Tianshou's ``OffPolicyTrainer`` written out (collect with exploration,
``round(0.1 * steps collected)`` gradient steps from the shared replay buffer,
both inside ``policy_within_training_step``), so the wall-clock budget and the
snapshots can stop it between steps.

Tuning, from the recipe (what a user would change in an hour): 8 games at
once, half of them with ``first_player=1`` (the recipe's DQN always moves
second), hidden layers 256-128 instead of 64-64, ``gamma=0.99`` instead of
the tic-tac-toe example's 0.9 (a game is about 70 of the learner's steps and
the reward comes at the end), a replay buffer of 50,000 rows, batches of 256,
the target network every 500 updates.  Kept from the recipe: Adam at 1e-3,
``n_step_return_horizon=3``, epsilon 0.1 while training, 0.1 gradient steps
per collected step.

Snapshots (:mod:`baseline_run`): ``snap-05min.onnx`` ... ``final.onnx``, the
Q-network as an ONNX entrant with ``logits`` only (Q-values of the legal
actions; no ``value``: a Q-value is no win probability, so it guides no
search), each with a ``.state.pt`` beside it: the DQN's ``state_dict``
(network, target network, Adam's state), the counters, and torch's and
numpy's global generator states (Tianshou draws its exploration and its
minibatches from numpy's global generator: seeded here, as the recipe does).
A resumed run starts with an empty replay buffer and fresh games
(``seed(env_seed(seed, snapshots) + i)``), so it is not bit-identical to an
uninterrupted run.  ``decisions`` are the DQN's own steps (``player_1``'s,
its closing steps included); ``env_steps`` (both players) are recorded too.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from baseline_run import Mark, Run, TrainingClock, env_seed, onnx_bytes, script_main
from tianshou.algorithm import DQN
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step
from torch import nn

import kahuna_env
from kahuna_env.cli import write_bytes_atomic

# A multi-agent collection's returns are one column per agent; Tianshou warns of it at every collection.
logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)

LIBRARY = "tianshou"
ALGORITHM = "DQN (masked, vs random)"
COUNTS = "learner steps (player_1's env steps, closing steps included)"
LEARNER = "player_1"
NUM_ENVS = 8
HIDDEN_SIZES = [256, 128]
BUFFER_SIZE = 50_000
BATCH_SIZE = 256
COLLECT_STEPS = 80
"""Env steps per collection (10 per game), as the recipe's ``collection_step_num_env_steps``."""
GRADIENT_STEPS_PER_STEP = 0.1


class LearnerSteps(PettingZooEnv):
    """Tianshou's ``PettingZooEnv``, counting the env steps and the steps of the learner's seat in ``counter``."""

    def __init__(self, env: Any, counter: dict[str, int]) -> None:
        super().__init__(env)
        self.counter = counter

    def step(self, action: Any) -> tuple[dict, list[int], bool, bool, dict]:
        """Count, then step (the acting agent is the one selected before the step)."""
        self.counter["env_steps"] += 1
        self.counter["decisions"] += self.env.agent_selection == LEARNER
        return super().step(action)


class QEntrant(nn.Module):
    """The Q-network as the arena's ONNX entrant: ``(observation, action_mask) -> logits`` (illegal at -1e9)."""

    def __init__(self, net: Net) -> None:
        super().__init__()
        self.model = net.model

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
        """Q-values, the illegal actions' at -1e9."""
        return self.model(observation).masked_fill(action_mask == 0, -1e9)


def save_snapshot(run: Run, mark: Mark, net: Net, learner: DQN, state: dict) -> None:
    """``MARK.onnx`` (the entrant) and ``MARK.state.pt`` (what a resumed run restores), then ``progress.json``."""
    entrant, resume = run.new_file(mark, ".onnx"), run.new_file(mark, ".state.pt")
    training = net.training
    write_bytes_atomic(entrant, onnx_bytes(QEntrant(net), value=False))
    net.train(training)
    torch.save({"learner": learner.state_dict(), **state}, resume)
    counts = {key: state["counter"][key] for key in ("env_steps", "gradient_steps")}
    run.record(mark, state["train_seconds"], state["decisions"], entrant, state_file=resume.name, **counts)


def numpy_rng_state() -> list:
    """Numpy's global generator state in plain values (``torch.load(weights_only=True)`` reads them back)."""
    kind, keys, *rest = np.random.get_state()
    return [kind, keys.tolist(), *rest]


def train(run: Run, seed: int) -> None:
    """Train until the run's budget, taking its snapshots; resumes from the newest one."""
    counter = {"env_steps": 0, "decisions": 0, "gradient_steps": 0}
    torch.manual_seed(seed)
    np.random.seed(seed)  # Tianshou draws its exploration and its minibatches from numpy's global generator

    def get_env(first_player: int = 0) -> LearnerSteps:
        return LearnerSteps(kahuna_env.env(closing_step=True, first_player=first_player), counter)

    env = get_env()
    net = Net(
        state_shape=env.observation_space["observation"].shape,
        action_shape=env.action_space.n,
        hidden_sizes=HIDDEN_SIZES,
    )
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0)
    learner = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        n_step_return_horizon=3,
        target_update_freq=500,
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner], env=env)  # player_0, player_1
    if run.last is not None:  # resume: the DQN (network, target, Adam), counters, global generators
        state = torch.load(run.path / run.last["state_file"], weights_only=True)
        learner.load_state_dict(state["learner"])
        counter.update(state["counter"])
        torch.set_rng_state(state["torch_rng"])
        kind, keys, *rest = state["numpy_rng"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), *rest))
    train_envs = DummyVectorEnv([lambda i=i: get_env(i % 2) for i in range(NUM_ENVS)])
    train_envs.seed([env_seed(seed, len(run.snapshots)) + i for i in range(NUM_ENVS)])
    collector = Collector(algorithm, train_envs, VectorReplayBuffer(BUFFER_SIZE, NUM_ENVS), exploration_noise=True)
    collector.reset()
    clock = TrainingClock(run.train_seconds)
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=BATCH_SIZE * NUM_ENVS)  # the recipe's first collection, before any update
        while True:
            collected = collector.collect(n_step=COLLECT_STEPS).n_collected_steps
            for _ in range(round(GRADIENT_STEPS_PER_STEP * collected)):
                algorithm.update(buffer=collector.buffer, sample_size=BATCH_SIZE)
                counter["gradient_steps"] += 1
            while (mark := run.due(clock.seconds(), counter["decisions"])) is not None:
                with clock.paused():
                    state = {
                        "counter": dict(counter),
                        "decisions": counter["decisions"],
                        "train_seconds": clock.seconds(),
                        "torch_rng": torch.get_rng_state(),
                        "numpy_rng": numpy_rng_state(),
                    }
                    save_snapshot(run, mark, net, learner, state)
                if mark.final:
                    train_envs.close()
                    return


if __name__ == "__main__":
    script_main(__doc__, __file__, LIBRARY, ALGORITHM, train, counts=COUNTS, packages=("tianshou", "torch"))
