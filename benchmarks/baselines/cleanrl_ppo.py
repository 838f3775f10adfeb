"""A CleanRL-style single-file masked PPO on the native vector env, for a wall-clock budget.

    python benchmarks/baselines/cleanrl_ppo.py --out runs/baselines/cleanrl-s0 --seed 0 --minutes 30 [--max-steps N]

CleanRL's ``ppo.py`` (one ``Args`` dataclass, one loop in named phases: storage,
rollout, GAE, optimisation; the same loss line for line) with invalid-action
masking (Huang & Ontañón 2020: illegal logits at -1e9 when sampling and in
the loss), plain torch, on ``gymnasium.make_vec("Kahuna-v0", opponent="greedy",
seat="random", observation="flat")``, the native vector env: the learner plays
a random seat against ``greedy`` inside ``step``, reward +1 / -1 / 0 at the end.

Tuning, from CleanRL's defaults (what a user would change in an hour): 64 games
at once instead of 4 (a batch of 8,192 decisions per update; the native env is
cheap per game), hidden layers 256-128 instead of 64-64 (the observation has 246
values, the actions 179), and the learning rate annealed over the wall-clock
budget (CleanRL anneals over its step budget; here the fraction of ``--minutes``
or ``--max-steps`` used, whichever is further).  Everything else is CleanRL's:
lr 2.5e-4, gamma 0.99, GAE lambda 0.95, 4 minibatches, 4 epochs, clip 0.2 with
the clipped value loss, entropy 0.01, value 0.5, gradient norm 0.5.

Snapshots (:mod:`baseline_run`): ``snap-05min.onnx`` ... ``final.onnx``, the
network as an ONNX entrant (``logits``, masked, and ``value``), each with a
``.state.pt`` beside it: the weights, Adam's state, the update and decision
counters and both generators (torch's for sampling and initialisation,
numpy's for minibatches).  A resumed run restores that state and deals fresh
games (``reset(seed=env_seed(seed, snapshots))``): the games in progress at the snapshot
are lost, so it is not bit-identical to an uninterrupted run.  ``decisions``
are the learner's decisions (env steps of the vector env).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools

import gymnasium
import numpy as np
import torch
from baseline_run import Mark, Run, TrainingClock, env_seed, onnx_bytes, script_main
from torch import nn

import kahuna_env  # noqa: F401  (registers Kahuna-v0)
from kahuna_env.cli import write_bytes_atomic

LIBRARY = "cleanrl"
ALGORITHM = "PPO (CleanRL-style single file, masked)"


@dataclasses.dataclass(frozen=True)
class Args:
    """The hyperparameters (CleanRL's names; the tuning is in the module docstring)."""

    num_envs: int = 64
    """games stepped together"""
    num_steps: int = 128
    """steps of every game per rollout"""
    opponent: str = "greedy"
    """the vector env's opponent (a batched baseline)"""
    hidden_sizes: tuple[int, ...] = (256, 128)
    """hidden layers of the actor and of the critic"""
    learning_rate: float = 2.5e-4
    """Adam's learning rate"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over the budget"""
    gamma: float = 0.99
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """epochs per update"""
    norm_adv: bool = True
    """normalise the advantages per minibatch"""
    clip_coef: float = 0.2
    """the surrogate's clipping"""
    clip_vloss: bool = True
    """clip the value loss too"""
    ent_coef: float = 0.01
    """entropy coefficient"""
    vf_coef: float = 0.5
    """value coefficient"""
    max_grad_norm: float = 0.5
    """gradient norm clipping"""


def layer_init(layer: nn.Linear, generator: torch.Generator, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """CleanRL's orthogonal initialisation (from the run's generator)."""
    torch.nn.init.orthogonal_(layer.weight, std, generator=generator)
    torch.nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """CleanRL's separate actor and critic MLPs (tanh), the actor's illegal logits at -1e9."""

    def __init__(self, observations: int, actions: int, hidden: tuple[int, ...], generator: torch.Generator) -> None:
        super().__init__()
        sizes = (observations, *hidden)

        def mlp(last: int, std: float) -> nn.Sequential:
            layers: list[nn.Module] = []
            for width_in, width_out in itertools.pairwise(sizes):
                layers += [layer_init(nn.Linear(width_in, width_out), generator), nn.Tanh()]
            return nn.Sequential(*layers, layer_init(nn.Linear(sizes[-1], last), generator, std=std))

        self.critic = mlp(1, 1.0)
        self.actor = mlp(actions, 0.01)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """The critic's value of each observation."""
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None, generator: torch.Generator = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """CleanRL's call: a sampled (or the given) action, its log-probability, the entropy and the value."""
        logits = self.actor(x).masked_fill(~mask, -1e9)
        log_probs = torch.log_softmax(logits, dim=-1)
        if action is None:
            action = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(-1)
        probs = log_probs.exp()
        entropy = -(probs * log_probs.masked_fill(~mask, 0.0)).sum(-1)
        return action, log_probs.gather(-1, action[:, None]).squeeze(-1), entropy, self.critic(x)

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The entrant's forward pass (the ONNX file): masked logits and the value."""
        return self.actor(observation).masked_fill(action_mask == 0, -1e9), self.critic(observation).squeeze(-1)


def save_snapshot(run: Run, mark: Mark, agent: Agent, optimizer: torch.optim.Optimizer, state: dict) -> None:
    """``MARK.onnx`` (the entrant) and ``MARK.state.pt`` (what a resumed run restores), then ``progress.json``."""
    entrant, resume = run.new_file(mark, ".onnx"), run.new_file(mark, ".state.pt")
    write_bytes_atomic(entrant, onnx_bytes(agent, value=True))
    agent.train()
    torch.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), **state}, resume)
    run.record(mark, state["train_seconds"], state["global_step"], entrant, state_file=resume.name)


def train(run: Run, seed: int, args: Args = Args()) -> None:
    """Train until the run's budget, taking its snapshots; resumes from the newest one."""
    envs = gymnasium.make_vec(
        "Kahuna-v0", num_envs=args.num_envs, opponent=args.opponent, seat="random", observation="flat"
    )
    single_observation = envs.single_observation_space.shape[0]
    generator = torch.Generator().manual_seed(seed)
    agent = Agent(single_observation, int(envs.single_action_space.n), args.hidden_sizes, generator)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    rng = np.random.default_rng(seed)
    update, global_step = 0, 0
    if run.last is not None:  # resume: weights, optimizer, counters, generators
        state = torch.load(run.path / run.last["state_file"], weights_only=True)
        agent.load_state_dict(state["agent"])
        optimizer.load_state_dict(state["optimizer"])
        update, global_step = state["update"], state["global_step"]
        generator.set_state(state["torch_generator"])
        rng.bit_generator.state = state["numpy_generator"]
    clock = TrainingClock(run.train_seconds)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches

    # 1. Storage.
    obs = torch.zeros((args.num_steps, args.num_envs, single_observation))
    masks = torch.zeros((args.num_steps, args.num_envs, int(envs.single_action_space.n)), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))
    next_obs = torch.from_numpy(envs.reset(seed=env_seed(seed, len(run.snapshots)))[0])
    next_mask = torch.from_numpy(envs.unwrapped.action_masks())
    next_done = torch.zeros(args.num_envs)
    results: collections.deque[float] = collections.deque(maxlen=1000)  # the latest training games

    while True:
        if args.anneal_lr:
            used = clock.seconds() / (60 * run.minutes)
            if run.max_steps:
                used = max(used, global_step / run.max_steps)
            optimizer.param_groups[0]["lr"] = max(1.0 - used, 0.0) * args.learning_rate

        # 2. Rollout.
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask, generator=generator)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            observation, reward, terminations, truncations, _ = envs.step(action.numpy())
            rewards[step] = torch.from_numpy(np.asarray(reward, dtype=np.float32))
            next_done = torch.from_numpy(np.logical_or(terminations, truncations).astype(np.float32))
            next_obs, next_mask = torch.from_numpy(observation), torch.from_numpy(envs.unwrapped.action_masks())
            results.extend((np.asarray(reward)[terminations] + 1) / 2)

        # 3. GAE.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        # 4. Optimisation.
        b_obs, b_masks = obs.reshape(batch_size, -1), masks.reshape(batch_size, -1)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        for _ in range(args.update_epochs):
            order = rng.permutation(batch_size)
            for start in range(0, batch_size, minibatch_size):
                mb = torch.from_numpy(order[start : start + minibatch_size])
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_masks[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_advantages = b_advantages[mb]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_advantages * ratio, -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        update += 1

        # 5. Snapshots, at the marks and at the budget.
        while (mark := run.due(clock.seconds(), global_step)) is not None:
            with clock.paused():
                score = np.mean(results) if results else float("nan")
                print(f"update {update}: score {score:.3f} in the last {len(results)} games vs {args.opponent}")
                state = {
                    "update": update,
                    "global_step": global_step,
                    "train_seconds": clock.seconds(),
                    "torch_generator": generator.get_state(),
                    "numpy_generator": rng.bit_generator.state,
                    "args": dataclasses.asdict(args),
                }
                save_snapshot(run, mark, agent, optimizer, state)
            if mark.final:
                envs.close()
                return


if __name__ == "__main__":
    script_main(__doc__, __file__, LIBRARY, ALGORITHM, train)
