"""Tianshou DQN with masking on the single-agent Gymnasium env, against a random opponent, for a wall-clock budget.

    python benchmarks/baselines/tianshou_dqn.py --out runs/baselines/tianshou-s0 --seed 0 --minutes 30 [--max-steps N]

The single-agent recipe of docs/ECOSYSTEM.md ("Single-agent Tianshou on the
Gymnasium wrapper"): ``gymnasium.make("Kahuna-v0", opponent="random",
seat="random", illegal_action="raise")`` with the recipe's observation
wrapper (Kahuna's ``{observation, action_mask}`` as Tianshou's ``{obs,
mask}``: Tianshou's DQN masks its Q-values and its exploration with
``obs.mask``), a ``DQN`` over a ``Net``; the one loop of Tianshou's
``OffPolicyTrainer`` written out (collect with exploration, ``round(0.1 *
steps collected)`` gradient steps from the replay buffer, both inside
``policy_within_training_step``), so the wall-clock budget and the snapshots
can stop it between steps.  The learner plays a seat drawn for every game.

Why not the multi-agent recipe (``PettingZooEnv`` and
``MultiAgentOffPolicyAlgorithm`` against a masked random ``player_0``): run
for 30 minutes on two seeds with the DQN settings below, it did not learn
(0.250 and 0.015 against ``random``; docs/BASELINES.md, "The Tianshou
runs").  Why is not established (its collector keeps both players' steps in
one buffer, so a transition may bootstrap from a row of the opponent's
turn); the single-agent env, which plays the opponent inside its step,
learns with the same settings.

Tuning, from the recipe (what a user would change in an hour): 8 games at
once, hidden layers 256-128 instead of 64-64, ``n_step_return_horizon=3``
(a game is about 70 of the learner's steps and the reward comes at the end),
a replay buffer of 50,000 rows, batches of 256, the target network every 500
updates, epsilon 0 at inference.  Kept from the recipe: Adam at 1e-3,
``gamma=0.99``, epsilon 0.1 while training, 0.1 gradient steps per collected
step, a first collection of 256 steps per env before any update.

Snapshots (:mod:`baseline_run`): ``snap-05min.onnx`` ... ``final.onnx``, the
Q-network as an ONNX entrant with ``logits`` only (Q-values of the legal
actions; no ``value``: a Q-value is no win probability, so it guides no
search), each with a ``.state.pt`` beside it: the DQN's ``state_dict``
(network, target network, Adam's state), the counters, and torch's and
numpy's global generator states (Tianshou draws its exploration and its
minibatches from numpy's global generator: seeded here, as the recipe does).
A resumed run starts with an empty replay buffer and fresh games
(``seed(env_seed(seed, snapshots) + i)``), so it is not bit-identical to an
uninterrupted run.  ``decisions`` are the learner's env steps (the
opponent's actions happen inside them).
"""

from __future__ import annotations

import gymnasium
import numpy as np
import torch
from baseline_run import Mark, Run, TrainingClock, env_seed, onnx_bytes, script_main
from tianshou.algorithm import DQN
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step
from torch import nn

import kahuna_env
from kahuna_env.cli import write_bytes_atomic

LIBRARY = "tianshou"
ALGORITHM = "DQN (masked, vs random)"
COUNTS = "learner steps (the single-agent env's steps; the opponent moves inside them)"
NUM_ENVS = 8
HIDDEN_SIZES = [256, 128]
BUFFER_SIZE = 50_000
BATCH_SIZE = 256
COLLECT_STEPS = 80
"""Env steps per collection (10 per env), as the recipe's ``collection_step_num_env_steps``."""
GRADIENT_STEPS_PER_STEP = 0.1


class TianshouMask(gymnasium.ObservationWrapper):
    """Kahuna's ``{observation, action_mask}`` as Tianshou's ``{obs, mask}`` (docs/ECOSYSTEM.md's wrapper)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.observation_space = gymnasium.spaces.Dict({"obs": space["observation"], "mask": space["action_mask"]})

    def observation(self, observation: dict) -> dict:
        """Rename the two keys."""
        return {"obs": observation["observation"], "mask": observation["action_mask"]}


def get_env() -> TianshouMask:
    """One learner env: a random opponent, a seat drawn per game, any illegal action an error."""
    return TianshouMask(
        gymnasium.make(kahuna_env.GYMNASIUM_ID, opponent="random", seat="random", illegal_action="raise")
    )


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
    counts = {"gradient_steps": state["counter"]["gradient_steps"]}
    run.record(mark, state["train_seconds"], state["counter"]["decisions"], entrant, state_file=resume.name, **counts)


def numpy_rng_state() -> list:
    """Numpy's global generator state in plain values (``torch.load(weights_only=True)`` reads them back)."""
    kind, keys, *rest = np.random.get_state()
    return [kind, keys.tolist(), *rest]


def train(run: Run, seed: int) -> None:
    """Train until the run's budget, taking its snapshots; resumes from the newest one."""
    counter = {"decisions": 0, "gradient_steps": 0}
    torch.manual_seed(seed)
    np.random.seed(seed)  # Tianshou draws its exploration and its minibatches from numpy's global generator
    env = get_env()
    net = Net(
        state_shape=env.observation_space["obs"].shape, action_shape=env.action_space.n, hidden_sizes=HIDDEN_SIZES
    )
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0)
    learner = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        n_step_return_horizon=3,
        target_update_freq=500,
    )
    if run.last is not None:  # resume: the DQN (network, target, Adam), counters, global generators
        state = torch.load(run.path / run.last["state_file"], weights_only=True)
        learner.load_state_dict(state["learner"])
        counter.update(state["counter"])
        torch.set_rng_state(state["torch_rng"])
        kind, keys, *rest = state["numpy_rng"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), *rest))
    train_envs = DummyVectorEnv([get_env for _ in range(NUM_ENVS)])
    train_envs.seed([env_seed(seed, len(run.snapshots)) + i for i in range(NUM_ENVS)])
    collector = Collector(learner, train_envs, VectorReplayBuffer(BUFFER_SIZE, NUM_ENVS), exploration_noise=True)
    collector.reset()
    clock = TrainingClock(run.train_seconds)
    with policy_within_training_step(learner.policy):
        counter["decisions"] += collector.collect(n_step=BATCH_SIZE * NUM_ENVS).n_collected_steps  # before any update
        while True:
            collected = collector.collect(n_step=COLLECT_STEPS).n_collected_steps
            counter["decisions"] += collected
            for _ in range(round(GRADIENT_STEPS_PER_STEP * collected)):
                learner.update(buffer=collector.buffer, sample_size=BATCH_SIZE)
                counter["gradient_steps"] += 1
            while (mark := run.due(clock.seconds(), counter["decisions"])) is not None:
                with clock.paused():
                    state = {
                        "counter": dict(counter),
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
