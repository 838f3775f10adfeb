"""The native trainer's recipe on RLlib (issue 16, item 1).

The RLlib config takes the native trainer's ``reward:`` and ``pool:`` sections
(the same dataclasses); the env plays the ``greedy``/``random`` baselines
through ``kahuna_env.agents.choose_action`` and shapes rewards with the native
potential and shaping code; the agent ids name their modules, so the env and
the policy-mapping function agree about every game.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import typing
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kahuna_env.agents import Agent
from training.ppo.config import PoolConfig, RewardConfig
from training.ppo.config import load_config as load_training_config
from training.rllib.config import ConfigError, RLlibConfig, load_rllib_config
from training.rllib.errors import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
)


# ---------------------------------------------------------------------------------------------- config
def test_reward_and_pool_are_the_native_trainers_sections():
    hints = typing.get_type_hints(RLlibConfig)
    assert hints["reward"] is RewardConfig and hints["pool"] is PoolConfig
    keys = ["pool.latest=0.2", "pool.past=0.3", "pool.greedy=0.4", "pool.random=0.1", "reward.island_shaping=0.5"]
    rllib = load_rllib_config(CONFIG, keys)
    native = load_training_config(ROOT / "configs" / "quick.yaml", keys)
    assert rllib.pool.shares() == native.pool.shares()
    assert rllib.reward == native.reward
    env_config = rllib.env_config()
    assert env_config["pool"] == native.pool.shares()
    assert env_config["island_shaping"] == 0.5 and env_config["gamma"] == rllib.ppo.gamma
    assert env_config["snapshot_slots"] == rllib.pool.max_snapshots
    assert load_rllib_config(CONFIG, ["pool.past=0"]).env_config()["snapshot_slots"] == 0
    with pytest.raises(ConfigError, match=r"pool: shares latest\+past\+greedy\+random\+mcts\+entrant must be > 0"):
        load_rllib_config(CONFIG, ["pool.latest=0", "pool.past=0", "pool.greedy=0"])
    assert {field.name for field in dataclasses.fields(RLlibConfig)} >= {"reward", "pool", "fault_tolerance"}


def test_learning_rate_annealing_uses_the_native_keys():
    rllib = load_rllib_config(CONFIG, ["iterations=10"])
    native = load_training_config(ROOT / "configs" / "quick.yaml")
    assert (rllib.ppo.lr, rllib.ppo.anneal_lr, rllib.ppo.min_lr_fraction) == (
        native.ppo.lr,
        native.ppo.anneal_lr,
        native.ppo.min_lr_fraction,
    )
    steps = 10 * rllib.ppo.train_batch_size
    assert rllib.lr_schedule() == [[0, 1e-3], [steps, pytest.approx(2e-4)]]
    assert load_rllib_config(CONFIG, ["ppo.anneal_lr=false"]).lr_schedule() == 1e-3
    with pytest.raises(ConfigError, match=r"ppo\.min_lr_fraction: must be in \[0, 1\]"):
        load_rllib_config(CONFIG, ["ppo.min_lr_fraction=2"])


# ---------------------------------------------------------------------------------------------- env
def _play(env, seed: int, rng: np.random.Generator):
    """Play one game with random learner moves; per agent: decision observations and rewards per decision."""
    observations, _ = env.reset(seed=seed)
    decisions: dict[str, list[np.ndarray]] = {}
    rewards: dict[str, list[float]] = {}
    pending: dict[str, float] = {}
    while True:
        (agent,) = observations
        decisions.setdefault(agent, []).append(observations[agent]["observations"].copy())
        rewards.setdefault(agent, [])
        action = int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
        observations, step_rewards, terminated, truncated, infos = env.step({agent: action})
        for name, value in step_rewards.items():
            pending[name] = pending.get(name, 0.0) + value
        done = terminated["__all__"] or truncated["__all__"]
        # A decision's reward is what its agent received until its next observation.
        for name in list(pending):
            if (done or name in observations) and len(rewards[name]) < len(decisions[name]):
                rewards[name].append(pending.pop(name))
        if done:
            return decisions, rewards, infos


@needs_ray
@pytest.mark.parametrize(("coefficient", "gamma"), [(1.0, 1.0), (0.7, 0.99)])
def test_island_shaping_is_the_native_trainers(coefficient, gamma):
    from kahuna_policy.reward import island_potentials
    from training.rllib.env import KahunaMultiAgentEnv
    from training.selfplay.rollout import shaping_rewards

    env = KahunaMultiAgentEnv({"island_shaping": coefficient, "gamma": gamma, "win": 2.0})
    rng = np.random.default_rng(0)
    shaped_any = False
    for seed in range(4):
        decisions, rewards, infos = _play(env, seed, rng)
        assert set(decisions) == {"player_0", "player_1"}
        for agent, observations in decisions.items():
            stacked = np.stack(observations)
            native = shaping_rewards(np.zeros(len(stacked), np.int64), island_potentials(stacked), gamma, coefficient)
            native[-1] += 2.0 * (2 * infos[agent]["kahuna_score"] - 1)  # reward.win on the last decision
            assert len(rewards[agent]) == len(observations)
            np.testing.assert_allclose(rewards[agent], native, atol=1e-5)
            shaped_any |= bool(np.abs(native[:-1]).max() > 0)
    assert shaped_any


@needs_ray
def test_without_shaping_only_the_result_is_rewarded():
    from training.rllib.env import KahunaMultiAgentEnv

    env = KahunaMultiAgentEnv({"pool": {"greedy": 1.0}})
    _, rewards, infos = _play(env, 1, np.random.default_rng(1))
    ((agent, values),) = rewards.items()
    assert values[:-1] == [0.0] * (len(values) - 1)
    assert values[-1] == 2 * infos[agent]["kahuna_score"] - 1


@needs_ray
def test_games_draw_their_opponent_from_the_pool_shares():
    from training.rllib.env import KahunaMultiAgentEnv
    from training.rllib.league import LEARNER, league_mapping

    shares = {"latest": 0.2, "past": 0.3, "greedy": 0.4, "random": 0.1}
    env = KahunaMultiAgentEnv({"pool": shares, "snapshot_slots": 3})
    kinds, learner_seats, slots = Counter(), Counter(), Counter()
    games = 2000
    for seed in range(games):
        observations, _ = env.reset(seed=seed)
        kinds[env.kind] += 1
        agents = [agent for agent in env.seats if agent is not None]
        assert set(observations) <= set(agents) and set(env.agents) == set(agents)
        modules = [league_mapping(agent) for agent in agents]
        if env.kind == "latest":
            assert agents == ["player_0", "player_1"] and modules == [LEARNER, LEARNER]
            continue
        seat = [module == LEARNER for module in modules].index(True)
        learner_seats[(env.kind, env.seats.index(agents[seat]))] += 1
        if env.kind == "past":
            assert len(agents) == 2 and modules.count(LEARNER) == 1
            slots[modules[1 - seat]] += 1
        else:
            assert len(agents) == 1  # the baseline is no RLlib agent
    for kind, share in shares.items():
        assert abs(kinds[kind] / games - share) < 0.04, kinds
    assert set(slots) == {"snapshot_0", "snapshot_1", "snapshot_2"}
    for kind in ("past", "greedy", "random"):
        assert learner_seats[(kind, 0)] > 0 and learner_seats[(kind, 1)] > 0  # the learner plays both seats


@needs_ray
@pytest.mark.parametrize("baseline", ["greedy", "random"])
def test_every_baseline_move_goes_through_choose_action(monkeypatch, baseline):
    import training.rllib.env as env_module
    from kahuna_env.agents import choose_action

    calls = []

    def spy(agent, game, rng):
        assert isinstance(agent, Agent) and agent.name == baseline
        assert game is env.game
        calls.append(game.current_player)
        return choose_action(agent, game, rng)

    monkeypatch.setattr("kahuna_env.match.choose_action", spy)  # the one scalar loop asks it
    env = env_module.KahunaMultiAgentEnv({"pool": {baseline: 1.0}})
    learner_moves = 0
    for seed in range(3):
        before = len(calls)
        decisions, _, _ = _play(env, seed, np.random.default_rng(seed))
        ((agent, observations),) = decisions.items()
        learner_moves += len(observations)
        baseline_seat = 1 - int(agent[-1])
        assert set(calls[before:]) == {baseline_seat}
        assert env._actions == len(observations) + len(calls) - before
    assert calls and learner_moves
    # No other path: the env never calls an agent's act() itself (choose_action shows it only its seat's view).
    assert ".act(" not in Path(env_module.__file__).read_text(encoding="utf-8")


@needs_ray
def test_env_runner_maps_snapshot_agents_and_logs_the_score_against_each_baseline():
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from training.rllib.algorithm import build_ppo_config
    from training.rllib.callbacks import SCORE_METRIC

    config = load_rllib_config(
        CONFIG,
        [
            "model.architecture=mlp",
            "model.hidden_sizes=[16]",
            "env_runners.num_envs_per_env_runner=4",
            "pool.latest=0",
            "pool.past=1",
            "pool.greedy=1",
            "pool.random=1",
            "pool.max_snapshots=2",
        ],
    )
    runner = MultiAgentEnvRunner(config=build_ppo_config(config))
    try:
        episodes = runner.sample(num_episodes=12)
        metrics = runner.get_metrics()
    finally:
        runner.stop()
    modules = Counter()
    for episode in episodes:
        for agent in episode.agent_episodes:
            module = episode.module_for(agent)
            modules[module] += 1
            assert module == ("learner" if "@" not in agent else agent.split("@")[1])
    assert modules["learner"] == 12 and set(modules) <= {"learner", "snapshot_0", "snapshot_1"}
    for kind in ("past", "greedy", "random"):
        if any(
            episode.agent_episodes[agent].get_infos(-1)["kahuna_opponent"] == kind
            for episode in episodes
            for agent in episode.agent_episodes
        ):
            score = metrics[SCORE_METRIC.format(kind)]
            score = score.peek() if hasattr(score, "peek") else score
            assert 0.0 <= float(score) <= 1.0
