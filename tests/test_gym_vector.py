"""Gymnasium vector envs of ``Kahuna-v0``: the vector entry point and Gymnasium's own sync/async modes."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from helpers import final_turns_position

import kahuna_env
from kahuna_env.agents import RandomAgent
from kahuna_env.gym_vector import KahunaAsyncVectorEnv, KahunaSyncVectorEnv, make_vector_env
from kahuna_env.vector_env import KahunaVectorEnv

FINAL_TURNS = final_turns_position(2)


def masked_random_steps(envs: gymnasium.vector.VectorEnv, steps: int, seed: int) -> dict[str, list]:
    """Masked random play; checks every mask on the way and returns what happened."""
    observations, infos = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    record: dict[str, list] = {"rewards": [], "terminated": [], "actions": []}
    for _ in range(steps):
        masks = np.stack(envs.call("action_masks"))
        assert masks.dtype == bool and masks.shape == (envs.num_envs, 179)
        assert masks.any(axis=1).all(), "an all-zero mask was handed out"
        if isinstance(observations, dict):
            assert np.array_equal(observations["action_mask"].astype(bool), masks)
        assert np.array_equal(infos["action_mask"].astype(bool), masks)
        assert envs.observation_space.contains(observations)
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        assert not truncated.any()
        record["rewards"].append(rewards.tolist())
        record["terminated"].append(terminated.tolist())
        record["actions"].append(actions.tolist())
    return record


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, KahunaVectorEnv),  # the default opponent "random": batched
        ({"opponent": "greedy"}, KahunaVectorEnv),
        ({"opponent": RandomAgent()}, KahunaSyncVectorEnv),  # a per-game opponent: the scalar wrapper
        ({"opponent": "greedy", "backend": "scalar"}, KahunaSyncVectorEnv),
        ({"opponent": RandomAgent(), "backend": "batch"}, KahunaVectorEnv),
        ({"render_mode": "ansi"}, KahunaSyncVectorEnv),
    ],
)
def test_make_vec_uses_the_entry_point_with_same_step_autoreset(options: dict, expected: type) -> None:
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=3, seat="random", **options)
    assert isinstance(envs, expected)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    record = masked_random_steps(envs, 400, seed=0)
    assert sum(map(sum, record["terminated"])) >= 3
    assert envs.unwrapped.action_masks().shape == (3, 179)


def test_same_step_autoreset_returns_the_new_episode_and_keeps_the_terminal_one_in_the_info() -> None:
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=2, observation="flat")
    observations, infos = envs.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(1000):
        masks = envs.unwrapped.action_masks()
        observations, rewards, terminated, _, infos = envs.step([rng.choice(np.flatnonzero(m)) for m in masks])
        if terminated.any():
            done = int(np.flatnonzero(terminated)[0])
            assert infos["_final_obs"][done] and infos["_final_info"][done]
            assert rewards[done] in (-1.0, 0.0, 1.0)
            assert "scores" in infos["final_info"]
            assert infos["action_mask"][done].any()  # the new episode's first mask
            assert not np.array_equal(infos["final_obs"][done], observations[done])
            break
    else:
        pytest.fail("no episode ended")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasiums_own_modes_never_hand_out_an_empty_mask(mode: str) -> None:
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=2, vectorization_mode=mode)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    try:
        record = masked_random_steps(envs, 300, seed=2)
    finally:
        envs.close()
    assert sum(map(sum, record["terminated"])) >= 2


def test_sync_and_async_entry_points_play_the_same_seeded_games() -> None:
    sync = make_vector_env(2, seat="random", backend="scalar")
    asynchronous = make_vector_env(2, asynchronous=True, seat="random")
    assert isinstance(asynchronous, KahunaAsyncVectorEnv)
    try:
        assert masked_random_steps(sync, 200, seed=3) == masked_random_steps(asynchronous, 200, seed=3)
        assert np.array_equal(asynchronous.action_masks(), sync.action_masks())
    finally:
        asynchronous.close()
        sync.close()


def test_next_step_terminal_mask_is_the_next_episodes_first_mask() -> None:
    env = kahuna_env.KahunaSingleAgentEnv(seat="random")
    observation, info = env.reset(seed=4)
    rng = np.random.default_rng(4)
    terminated = False
    while not terminated:
        observation, _, terminated, _, info = env.step(rng.choice(np.flatnonzero(env.action_masks())))
    terminal_mask = observation["action_mask"].copy()
    assert terminal_mask.any() and np.array_equal(info["action_mask"], terminal_mask)
    next_observation, _ = env.reset()
    assert np.array_equal(next_observation["action_mask"], terminal_mask)
    # The deal is the one the reset would have made anyway: a fresh env with the same seed sees the same episodes.
    twin = kahuna_env.KahunaSingleAgentEnv(seat="random", terminal_mask="zeros")
    twin.reset(seed=4)
    rng = np.random.default_rng(4)
    terminated = False
    while not terminated:
        twin_observation, _, terminated, _, _ = twin.step(rng.choice(np.flatnonzero(twin.action_masks())))
    assert not twin_observation["action_mask"].any()
    assert np.array_equal(twin.reset()[0]["observation"], next_observation["observation"])
    assert twin.game.to_dict() == env.game.to_dict()


def test_resets_after_a_predealt_episode_draw_exactly_as_without_it() -> None:
    env = kahuna_env.KahunaSingleAgentEnv(seat="random", terminal_mask="next_episode")
    twin = kahuna_env.KahunaSingleAgentEnv(seat="random", terminal_mask="zeros")
    for environment in (env, twin):
        environment.reset(seed=5)
        environment.step(int(np.flatnonzero(~environment.action_masks())[0]))  # an illegal action ends the episode
    # A position reset takes the seeds already drawn for the dealt episode: both envs stay in step.
    for environment in (env, twin):
        environment.reset(options={"position": FINAL_TURNS})
    assert (env.seat, env.game.to_dict()) == (twin.seat, twin.game.to_dict())
    for environment in (env, twin):
        environment.reset()
    assert (env.seat, env.game.to_dict()) == (twin.seat, twin.game.to_dict())
    for environment in (env, twin):
        environment.reset(seed=6)
    assert (env.seat, env.game.to_dict()) == (twin.seat, twin.game.to_dict())


def test_an_agent_opponent_is_not_shared_between_sub_environments() -> None:
    opponent = RandomAgent()
    envs = make_vector_env(2, opponent=opponent)
    first, second = envs.envs
    assert first.opponent is not second.opponent and first.opponent is not opponent
    native = make_vector_env(2, opponent=opponent, backend="batch")
    first, second = native.opponents
    assert first is not second and first is not opponent


@pytest.mark.parametrize("num_envs", [0, -1, 1.5, True])
def test_a_bad_num_envs_or_option_is_a_clear_error(num_envs: object) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        make_vector_env(num_envs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_envs"):
        make_vector_env(num_envs, backend="batch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seat"):
        gymnasium.make_vec("Kahuna-v0", num_envs=2, seat=3)
    with pytest.raises(ValueError, match="seat"):
        gymnasium.make_vec("Kahuna-v0", num_envs=2, seat=3, opponent=RandomAgent())


@pytest.mark.parametrize("backend", ["auto", "scalar"])
@pytest.mark.parametrize("num_envs", [2**40, 2**21])
def test_make_vec_beyond_max_games_is_the_batchs_one_line_refusal(backend: str, num_envs: int) -> None:
    from kahuna_env.vector import MAX_GAMES, KahunaBatch

    with pytest.raises(ValueError, match=r"n must be an integer in 1\.\.1048576 \(MAX_GAMES\)") as batch_error:
        KahunaBatch(num_envs)
    with pytest.raises(ValueError) as error:
        gymnasium.make_vec("Kahuna-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", backend=backend)
    assert (
        str(error.value)
        == f"make_vector_env: num_envs must be an integer in 1..{MAX_GAMES} (MAX_GAMES), got {num_envs}"
    )
    assert str(batch_error.value).partition(" must")[2] == str(error.value).partition(" must")[2]  # one message
