"""The sampling callback against every episode shape an EnvRunner hands it (issue 16, item 0).

``check_sampled_actions`` (``on_sample_end``) killed EnvRunners with
``KeyError: 'action_mask'``: an ongoing chunk cut one env step after a reset,
whose only action ended the player's turn, holds no complete step of either
agent (the action hangs until that agent observes again), so the EnvRunner
prunes both zero-length agent chunks and the ``MultiAgentEpisode`` has no
``agent_episodes`` at all.  The old code then treated the multi-agent episode
as a single-agent one and looked up ``"action_mask"`` in its per-agent dict.

These tests feed the callback exactly those shapes: hand-built, and sampled
by a real EnvRunner (in this process, no Ray actors) with one- and two-step
fragments, finalized (numpy) and as lists, ongoing chunks and done episodes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from kahuna_env.engine import KahunaGame
from kahuna_env.observation import encode_observation
from training.rllib.config import load_rllib_config
from training.rllib.errors import INSTALL_HINT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
)

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "rllib.yaml"


class Logger:
    """Stands in for RLlib's MetricsLogger: sums what is logged."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def log_value(self, key, value, reduce="mean", **kwargs):
        self.values[key] = self.values.get(key, 0) + value


def observation(game: KahunaGame, player: int) -> dict[str, np.ndarray]:
    return {
        "observations": encode_observation(game, player),
        "action_mask": game.action_mask().astype(np.float32),
    }


def turn_ending_start() -> tuple[KahunaGame, int]:
    """A fresh game and a legal first action after which the other player moves."""
    for seed in range(500):
        game = KahunaGame(seed=seed)
        for action in game.legal_actions():
            probe = KahunaGame(seed=seed)
            probe.step(action)
            if probe.current_player != game.current_player:
                return game, int(action)
    raise AssertionError("no one-action turn found")


def test_a_chunk_whose_only_action_hangs_has_no_agent_chunks_and_is_checked_without_error():
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    from training.rllib.callbacks import check_sampled_actions

    game, action = turn_ending_start()
    first = f"player_{game.current_player}"
    episode = MultiAgentEpisode(agent_module_ids={"player_0": "learner", "player_1": "learner"})
    episode.add_env_reset(observations={first: observation(game, game.current_player)})
    game.step(action)
    second = f"player_{game.current_player}"
    episode.add_env_step(
        observations={second: observation(game, game.current_player)},
        actions={first: action},
        rewards={first: 0.0},
    )
    successor = episode.cut(len_lookback_buffer=1)  # as the EnvRunner does (episode_lookback_horizon)
    MultiAgentEnvRunner._prune_zero_len_sa_episodes(episode)  # what the EnvRunner does before returning it
    assert len(episode) == 1 and not episode.agent_episodes  # the shape that crashed
    logger = Logger()
    check_sampled_actions(samples=[episode], metrics_logger=logger)
    assert logger.values == {"kahuna_actions_checked": 0, "kahuna_illegal_actions": 0}
    # The hanging action is checked with the next chunk, once its agent observes again: play the
    # other player's whole turn into the successor chunk.
    others = 0
    while f"player_{game.current_player}" == second:
        move = int(game.legal_actions()[0])
        game.step(move)
        others += 1
        mover = f"player_{game.current_player}"
        successor.add_env_step(
            observations={mover: observation(game, game.current_player)},
            actions={second: move},
            rewards={second: 0.0},
        )
    check_sampled_actions(samples=[successor], metrics_logger=logger)
    # The other player's last action hangs in turn; the first player's is checked now.
    assert logger.values["kahuna_actions_checked"] == others
    assert len(successor.agent_episodes[first]) == 1


def test_an_illegal_action_is_counted_in_numpy_and_list_chunks():
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    from training.rllib.callbacks import count_illegal

    game = KahunaGame(seed=3)
    player = game.current_player
    legal = game.legal_actions()
    illegal = int(np.flatnonzero(~game.action_mask())[0])
    observations = [observation(game, player)] * 3
    episode = SingleAgentEpisode(
        observations=observations, actions=[int(legal[0]), illegal], rewards=[0.0, 0.0], len_lookback_buffer=0
    )
    assert count_illegal([episode]) == (2, 1)
    assert count_illegal([episode.to_numpy()]) == (2, 1)


@pytest.mark.parametrize(("fragment", "numpy"), [(1, True), (1, False), (2, True)])
def test_every_shape_a_real_env_runner_samples_is_checked(fragment, numpy):
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from training.rllib.algorithm import build_ppo_config
    from training.rllib.callbacks import check_sampled_actions

    envs = 2
    config = load_rllib_config(
        CONFIG,
        [
            "model.architecture=mlp",
            "model.hidden_sizes=[16]",
            "seed=5",
            f"env_runners.num_envs_per_env_runner={envs}",
            f"env_runners.rollout_fragment_length={fragment}",
            "pool.latest=0.6",
            "pool.past=0.2",
            "pool.greedy=0.2",
            "pool.max_snapshots=2",
        ],
    )
    algo = build_ppo_config(config).env_runners(episodes_to_numpy=numpy)
    algo.callbacks_on_sample_end = None  # the test calls the callback itself, on each returned chunk
    runner = MultiAgentEnvRunner(config=algo)
    shapes: set[str] = set()
    env_steps = 0
    logger = Logger()
    try:
        for _ in range(2000):
            samples = runner.sample(num_timesteps=fragment * envs)
            check_sampled_actions(samples=samples, metrics_logger=logger)
            for episode in samples:
                env_steps += len(episode)
                if episode.is_done:
                    shapes.add("done")
                elif not episode.agent_episodes:
                    shapes.add("no agent chunks")
                elif len(episode.agent_episodes) == 1:
                    shapes.add("one agent chunk")
                else:
                    shapes.add("two agent chunks")
                if episode.agent_episodes:
                    shapes.add("numpy" if next(iter(episode.agent_episodes.values())).is_numpy else "lists")
            wanted = {"done", "no agent chunks", "one agent chunk"} | ({"two agent chunks"} if fragment > 1 else set())
            if wanted <= shapes:
                break
    finally:
        runner.stop()
    assert {"done", "no agent chunks", "one agent chunk", "numpy" if numpy else "lists"} <= shapes
    assert logger.values["kahuna_illegal_actions"] == 0
    # Every action is checked once: all but the ones still hanging at the end (at most one per env).
    assert env_steps - envs <= logger.values["kahuna_actions_checked"] <= env_steps


def test_complete_episodes_samples_whole_games_only():
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from training.rllib.algorithm import build_ppo_config
    from training.rllib.callbacks import check_sampled_actions

    envs = 2
    config = load_rllib_config(
        CONFIG,
        [
            "model.architecture=mlp",
            "model.hidden_sizes=[16]",
            "seed=6",
            f"env_runners.num_envs_per_env_runner={envs}",
            "env_runners.rollout_fragment_length=5",
            "env_runners.batch_mode=complete_episodes",
            "pool.max_snapshots=2",
        ],
    )
    algo = build_ppo_config(config)
    assert algo.batch_mode == "complete_episodes"
    algo.callbacks_on_sample_end = None
    runner = MultiAgentEnvRunner(config=algo)
    logger = Logger()
    try:
        calls = [runner.sample() for _ in range(2)]  # what the algorithm asks: no step count
        for samples in calls:
            check_sampled_actions(samples=samples, metrics_logger=logger)
    finally:
        runner.stop()
    # Whole games only, each from its first step (no chunk of a game cut by an earlier call),
    # one per game slot a call.
    for samples in calls:
        assert len(samples) == envs
        assert all(episode.is_done and episode.env_t_started == 0 for episode in samples)
        assert all(len(episode) > 5 for episode in samples)
    assert logger.values["kahuna_illegal_actions"] == 0
