"""The batched-engine EnvRunner of the RLlib path (``env_runners.sampler: batched``).

:class:`training.rllib.batched_runner.KahunaBatchedEnvRunner` plays whole
games with the native trainer's batched collection and hands RLlib one
finished ``MultiAgentEpisode`` per learner seat.  These tests hold it to the
env's conventions (seats, opponents, rewards with shaping, final observations
and infos), check that the values it records give the learner the same
advantages as a forward pass would, and sample with a real runner in this
process (counters, callbacks, PFSP odds).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import local_algorithm

from training.rllib.config import ConfigError, load_rllib_config
from training.rllib.errors import INSTALL_HINT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
)

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
SMALL = ["model.architecture=mlp", "model.hidden_sizes=[16]", "pool.max_snapshots=3", "seed=4"]


def kahuna_env(**pool):
    from training.rllib.env import KahunaMultiAgentEnv

    shares = pool or {"latest": 0.2, "past": 0.3, "greedy": 0.4, "random": 0.1}
    return KahunaMultiAgentEnv({"pool": shares, "snapshot_slots": 3, "island_shaping": 0.5, "gamma": 1.0})


def small_nets(count: int):
    import torch

    from kahuna_policy.model import ActorCritic, ModelConfig

    torch.manual_seed(0)
    return [ActorCritic(ModelConfig(hidden_sizes=(16,))).eval() for _ in range(count)]


def play(env, games: int, seed: int):
    from kahuna_env.engine import KahunaConfig
    from training.rllib.batched_runner import draw_games
    from training.selfplay.batched_rollout import play_games_batched

    batch = draw_games(env, games, np.random.default_rng(seed))
    learner, *snapshots = small_nets(1 + env.snapshot_slots)
    played = play_games_batched(
        batch, learner, snapshots, KahunaConfig(**env.rules), env.win, record_potentials=True, record_logits=True
    )
    return batch, played, learner


# ---------------------------------------------------------------------------------------------- config
def test_sampler_is_a_checked_config_key():
    assert load_rllib_config(CONFIG).env_runners.sampler == "batched"
    assert load_rllib_config(CONFIG, ["env_runners.sampler=env"]).env_runners.sampler == "env"
    with pytest.raises(ConfigError, match=r"env_runners\.sampler: must be one of env, batched, got 'fast'"):
        load_rllib_config(CONFIG, ["env_runners.sampler=fast"])
    with pytest.raises(ConfigError, match=r"ppo\.bf16: must be true, false or 'auto'"):
        load_rllib_config(CONFIG, ["ppo.bf16=maybe"])


def test_the_runner_class_follows_the_sampler():
    from training.rllib.batched_runner import KahunaBatchedEnvRunner
    from training.rllib.train import build_ppo_config

    assert build_ppo_config(load_rllib_config(CONFIG, SMALL)).env_runner_cls is KahunaBatchedEnvRunner
    assert build_ppo_config(load_rllib_config(CONFIG, [*SMALL, "env_runners.sampler=env"])).env_runner_cls is None


# ---------------------------------------------------------------------------------------------- games and episodes
def test_games_are_seated_as_the_env_seats_them():
    from training.league.pool import KIND_LATEST, KIND_PAST, KINDS
    from training.rllib.batched_runner import draw_games

    env = kahuna_env()
    env.set_snapshot_probabilities([0.0, 0.25, 0.75])
    batch = draw_games(env, 4000, np.random.default_rng(1))
    kinds = Counter(KINDS[k] for k in batch.kinds)
    for kind, share in {"latest": 0.2, "past": 0.3, "greedy": 0.4, "random": 0.1}.items():
        assert abs(kinds[kind] / 4000 - share) < 0.03, (kind, kinds)
    latest = batch.kinds == KIND_LATEST
    assert batch.learner_seats[latest].all()
    assert (batch.learner_seats[~latest].sum(axis=1) == 1).all()
    assert 0.45 < batch.learner_seats[~latest, 0].mean() < 0.55  # the learner plays first and second
    slots = batch.snapshots[batch.kinds == KIND_PAST]
    assert (slots >= 1).all() and abs((slots == 2).mean() - 0.75) < 0.05
    assert (batch.snapshots[batch.kinds != KIND_PAST] == -1).all()


def test_each_learner_seat_is_one_finished_episode_with_the_envs_rewards_and_infos():
    import torch
    from ray.rllib.core.columns import Columns

    from kahuna_policy.reward import island_potentials
    from training.league.pool import KIND_LATEST, KINDS
    from training.rllib.batched_runner import seat_episodes
    from training.rllib.league import LEARNER, league_mapping

    env = kahuna_env()
    batch, played, learner = play(env, 24, seed=2)
    episodes = seat_episodes(batch, played, env, league_mapping)
    seats = int(batch.learner_seats.sum())
    assert len(episodes) == seats and sum(len(e) for e in episodes) == len(played.actions)
    kinds = Counter()
    for episode in episodes:
        assert episode.is_done and episode.is_terminated
        (agent,) = episode.agent_episodes
        assert agent in ("player_0", "player_1") and episode.module_for(agent) == LEARNER
        steps = episode.agent_episodes[agent]
        observations = steps.get_observations(slice(0, len(steps) + 1))
        masks, vectors = observations["action_mask"], observations["observations"]
        actions = steps.get_actions(slice(0, len(steps)))
        assert (masks[np.arange(len(steps)), actions] == 1).all()  # every action legal under its mask
        assert (masks[-1] == 0).all()  # the final observation: nothing to do
        logits = steps.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, slice(0, len(steps)))
        logp = steps.get_extra_model_outputs(Columns.ACTION_LOGP, slice(0, len(steps)))
        expected = torch.log_softmax(torch.from_numpy(logits), 1).numpy()[np.arange(len(steps)), actions]
        np.testing.assert_allclose(logp, expected, atol=1e-5)
        with torch.no_grad():
            _, values = learner(torch.from_numpy(vectors[:-1]), torch.from_numpy(masks[:-1]))
        np.testing.assert_allclose(
            steps.get_extra_model_outputs(Columns.VF_PREDS, slice(0, len(steps))), values.numpy(), atol=1e-5
        )
        info = steps.get_infos(-1)
        kinds[info["kahuna_opponent"]] += 1
        outcome = 2 * info["kahuna_score"] - 1
        # Terminal reward plus the telescoping shaping: c * (0 - phi(first decision)) in all, with gamma 1.
        first_potential = float(island_potentials(vectors[:1])[0])
        rewards = steps.get_rewards(slice(0, len(steps)))
        assert rewards.sum() == pytest.approx(env.win * outcome - env.island_shaping * first_potential, abs=1e-5)
        assert ("kahuna_snapshot" in info) == (info["kahuna_opponent"] == "past")
    games = Counter(KINDS[k] for k in batch.kinds)
    assert kinds["latest"] == 2 * games["latest"] and kinds["greedy"] == games["greedy"]
    # Episodes come in trajectory order (2 * game + seat): the two seats of a self-play game add up to 1.
    trajectories = np.unique(played.trajectory)
    score = {
        int(t): e.agent_episodes[f"player_{t % 2}"].get_infos(-1)["kahuna_score"]
        for t, e in zip(trajectories, episodes, strict=True)
    }
    selfplay = np.flatnonzero(batch.kinds == KIND_LATEST)
    assert len(selfplay)
    for game in selfplay:
        assert score[2 * game] + score[2 * game + 1] == 1


def test_recorded_values_give_the_advantages_of_a_forward_pass():
    """The native loss's advantage connector uses the sampled values: the same targets as recomputing them."""
    from ray.rllib.core.columns import Columns

    from kahuna_env.engine import KahunaConfig
    from training.rllib.batched_runner import draw_games, seat_episodes
    from training.rllib.env import KahunaMultiAgentEnv, action_space, observation_space
    from training.rllib.league import LEARNER, league_mapping
    from training.rllib.train import build_ppo_config
    from training.selfplay.batched_rollout import play_games_batched

    config = load_rllib_config(CONFIG, [*SMALL, "env_runners.num_env_runners=0"])
    spaces = {m: (observation_space(), action_space()) for m in ("learner", "snapshot_0", "snapshot_1", "snapshot_2")}
    learner = build_ppo_config(config).build_learner(spaces=spaces)
    env = KahunaMultiAgentEnv(config.env_config())
    batch = draw_games(env, 12, np.random.default_rng(3))
    nets = [learner.module[m].unwrapped().net for m in spaces]
    played = play_games_batched(
        batch, nets[0], nets[1:], KahunaConfig(**env.rules), env.win, record_potentials=True, record_logits=True
    )

    def learner_batch(keep_values: bool) -> dict:
        episodes = seat_episodes(batch, played, env, league_mapping)  # fresh: the pipeline extends them
        if not keep_values:
            for episode in episodes:
                for steps in episode.agent_episodes.values():
                    del steps.extra_model_outputs[Columns.VF_PREDS]
        return learner._learner_connector(rl_module=learner.module, batch={}, episodes=episodes, shared_data={})

    recorded, recomputed = learner_batch(True)[LEARNER], learner_batch(False)[LEARNER]
    for key in ("advantages", "value_targets", Columns.VF_PREDS):
        np.testing.assert_allclose(recorded[key].numpy(), recomputed[key].numpy(), atol=1e-5)


# ---------------------------------------------------------------------------------------------- a real runner
def test_a_runner_samples_whole_games_counts_learner_decisions_and_follows_the_pushed_odds():
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED, NUM_EPISODES

    from training.rllib.batched_runner import KahunaBatchedEnvRunner
    from training.rllib.league import slot_results
    from training.rllib.train import build_ppo_config, push_snapshot_probabilities

    config = load_rllib_config(
        CONFIG, [*SMALL, "pool.latest=0.2", "pool.past=0.6", "pool.greedy=0.2", "pool.pfsp=hard"]
    )
    runner = KahunaBatchedEnvRunner(config=build_ppo_config(config))

    try:
        push_snapshot_probabilities(local_algorithm(runner), [0.0, 0.0, 1.0])
        episodes = runner.sample(num_timesteps=600)
        metrics = runner.get_metrics()
        with pytest.raises(ValueError, match="explore=False is not supported"):
            runner.sample(num_timesteps=10, explore=False)
    finally:
        runner.stop()
    values = {key: value.peek() if hasattr(value, "peek") else value for key, value in metrics.items()}
    steps = sum(len(episode) for episode in episodes)
    assert steps >= 600 and all(episode.is_done for episode in episodes)
    assert values[NUM_ENV_STEPS_SAMPLED] == steps and values[NUM_EPISODES] == len(episodes)
    assert values["kahuna_actions_checked"] == steps and values["kahuna_illegal_actions"] == 0
    scores, games = slot_results(values, 3)
    assert games[0] == games[1] == 0 and games[2] >= 1  # every past game played slot 2
    assert ((scores >= 0) & (scores <= games)).all()
    assert 0 <= values["kahuna_learner_score_vs_greedy"] <= 1


def test_bf16_learner_trains_in_bfloat16_and_returns_float32():
    import torch

    from training.rllib.env import action_space, observation_space
    from training.rllib.train import build_ppo_config

    spaces = {m: (observation_space(), action_space()) for m in ("learner", "snapshot_0", "snapshot_1", "snapshot_2")}
    for setting, expected in (("true", True), ("false", False)):
        config = load_rllib_config(CONFIG, [*SMALL, f"ppo.bf16={setting}"])
        learner = build_ppo_config(config).build_learner(spaces=spaces)
        module = learner.module["learner"].unwrapped()
        assert module.train_bf16 is expected
    observations = torch.rand(5, 246)
    masks = torch.ones(5, 179)
    out = module.forward_train({"obs": {"observations": observations, "action_mask": masks}})
    assert out["action_dist_inputs"].dtype == torch.float32
    module.train_bf16 = True
    out16 = module.forward_train({"obs": {"observations": observations, "action_mask": masks}})
    assert out16["action_dist_inputs"].dtype == torch.float32
    np.testing.assert_allclose(out16["action_dist_inputs"].detach(), out["action_dist_inputs"].detach(), atol=0.05)
