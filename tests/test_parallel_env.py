"""``kahuna_env.parallel_env``: PettingZoo's parallel API over the turn-based game."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
from helpers import final_turns_position
from pettingzoo.test import parallel_api_test, parallel_seed_test

import kahuna_env
from kahuna_env import actions as A
from kahuna_env.env import AGENTS, CLOSING_ACTION
from kahuna_env.observation import OBSERVATION_LAYOUT
from kahuna_env.parallel import WAITING_MASK, KahunaParallelEnv

MY_TURN = OBSERVATION_LAYOUT["my_turn"].start
FINAL_TURN = final_turns_position(1)  # player 0 passes and wins 4 : 2


def masked_actions(env: KahunaParallelEnv, observations: dict[str, Any], infos: dict[str, Any], rng: Any) -> dict:
    """A masked random action for every live agent (the mask from the observation or, flat, the info)."""
    actions = {}
    for agent in env.agents:
        mask = (
            observations[agent]["action_mask"] if isinstance(observations[agent], dict) else infos[agent]["action_mask"]
        )
        actions[agent] = int(rng.choice(np.flatnonzero(mask)))
    return actions


@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_parallel_api_and_seed_tests_pass(observation: str) -> None:
    parallel_api_test(kahuna_env.parallel_env(observation=observation), num_cycles=1000)
    parallel_seed_test(lambda: kahuna_env.parallel_env(observation=observation), num_cycles=200)


@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_a_masked_game_matches_the_aec_game_step_for_step(observation: str) -> None:
    parallel = kahuna_env.parallel_env(observation=observation)
    aec = kahuna_env.env()
    observations, infos = parallel.reset(seed=3)
    aec.reset(seed=3)
    rng = np.random.default_rng(3)
    steps = 0
    while parallel.agents:
        acting = parallel.acting_agent
        assert acting == aec.agent_selection
        for agent in AGENTS:
            view = observations[agent] if observation == "flat" else observations[agent]["observation"]
            mask = infos[agent]["action_mask"] if observation == "flat" else observations[agent]["action_mask"]
            assert np.array_equal(view, aec.observe(agent)["observation"])
            assert view[MY_TURN] == (agent == acting)
            if agent == acting:
                assert np.array_equal(mask, aec.observe(agent)["action_mask"])
            else:
                assert np.array_equal(mask, WAITING_MASK) and np.flatnonzero(mask).tolist() == [CLOSING_ACTION]
        actions = masked_actions(parallel, observations, infos, rng)
        observations, rewards, terminations, truncations, infos = parallel.step(actions)
        aec.step(actions[acting])
        steps += 1
        assert set(rewards) == set(terminations) == set(truncations) == set(infos) == set(AGENTS)
        if parallel.agents:
            assert rewards == {"player_0": 0.0, "player_1": 0.0} and not any(terminations.values())
    assert all(terminations.values()) and rewards == aec.rewards
    assert sum(rewards.values()) == 0 and infos["player_0"]["winner"] == aec.infos["player_0"]["winner"]
    assert parallel.acting_agent is None and steps > 20


def test_the_waiting_agents_action_is_ignored_and_may_be_missing() -> None:
    env = kahuna_env.parallel_env()
    observations, _ = env.reset(seed=0, options={"position": FINAL_TURN})
    assert env.acting_agent == "player_0"
    observations, rewards, terminations, _, infos = env.step({"player_0": A.PASS})
    assert rewards == {"player_0": 1.0, "player_1": -1.0}
    assert all(terminations.values()) and env.agents == []
    assert infos["player_0"]["scores"] == [4, 2]
    assert not observations["player_1"]["action_mask"].any()  # the game is over: nothing to choose
    env.reset(seed=0, options={"position": FINAL_TURN})
    _, rewards, _, _, _ = env.step({"player_0": A.PASS, "player_1": 12345})  # not even a valid action id
    assert rewards == {"player_0": 1.0, "player_1": -1.0}


def test_a_step_before_reset_says_to_call_reset() -> None:
    with pytest.raises(RuntimeError, match=r"^step\(\): call reset\(\) before the first step$"):
        kahuna_env.parallel_env().step({"player_0": A.PASS})


def test_a_missing_action_of_the_acting_agent_and_a_step_after_the_end_are_clear_errors() -> None:
    env = kahuna_env.parallel_env()
    env.reset(seed=0, options={"position": FINAL_TURN})
    with pytest.raises(KeyError, match="player_0"):
        env.step({"player_1": A.PASS})
    env.step({"player_0": A.PASS})
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"player_0": A.PASS})


def test_an_illegal_action_ends_the_game_with_minus_one_for_the_offender() -> None:
    env = kahuna_env.parallel_env()
    observations, _ = env.reset(seed=1)
    acting = env.acting_agent
    illegal = int(np.flatnonzero(observations[acting]["action_mask"] == 0)[0])
    _, rewards, terminations, _, _ = env.step({acting: illegal})
    assert rewards[acting] == -1 and all(terminations.values()) and env.agents == []


def test_spaces_state_and_options_come_from_the_aec_env() -> None:
    env = kahuna_env.parallel_env(variant="planning", reward="score", observation="flat")
    aec = kahuna_env.env(observation="flat")
    assert env.observation_space("player_1") == aec.observation_space("player_1")
    assert env.action_space("player_0").n == A.NUM_ACTIONS
    env.reset(seed=2)
    assert env.unwrapped.config.variant == "planning" and env.state().shape == env.state_space.shape
    assert env.metadata["name"] == "kahuna_v0" and env.metadata["is_parallelizable"] is True
    with pytest.raises(ValueError, match="closing_step"):
        kahuna_env.parallel_env(closing_step=True)
    with pytest.raises(ValueError, match="variant"):
        kahuna_env.parallel_env(variant="nope")


def test_masks_agree_with_the_aec_env_of_the_same_state() -> None:
    env = kahuna_env.parallel_env()
    aec = kahuna_env.env()
    observations, _ = env.reset(seed=6)
    aec.reset(seed=6)
    rng = np.random.default_rng(6)
    while env.agents:
        acting = env.acting_agent
        for agent in AGENTS:
            aec_mask = aec.observe(agent)["action_mask"]
            if agent == acting:
                assert np.array_equal(observations[agent]["action_mask"], aec_mask)
            else:  # waiting: PASS alone here, all zeros in the AEC env (it is never asked there)
                assert np.array_equal(observations[agent]["action_mask"], WAITING_MASK) and not aec_mask.any()
        action = int(rng.choice(np.flatnonzero(observations[acting]["action_mask"])))
        observations, *_ = env.step({agent: action if agent == acting else CLOSING_ACTION for agent in env.agents})
        aec.step(action)
    for agent in AGENTS:  # the game is over: both masks are all zeros, as in the AEC env
        assert not observations[agent]["action_mask"].any() and not aec.observe(agent)["action_mask"].any()


def test_max_cycles_truncates_the_parallel_env_after_that_many_steps() -> None:
    env = kahuna_env.parallel_env(max_cycles=4)
    observations, _ = env.reset(seed=1)
    steps = 0
    while env.agents:
        actions = {agent: env.action_space(agent).sample(observations[agent]["action_mask"]) for agent in env.agents}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        steps += 1
    assert steps == 4 and all(truncations.values()) and not any(terminations.values())
    assert rewards == {agent: 0.0 for agent in AGENTS} and env.acting_agent is None
    parallel_api_test(kahuna_env.parallel_env(max_cycles=4), num_cycles=50)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_of_a_mid_game_parallel_env_steps_on_identically(how: str) -> None:
    original = kahuna_env.parallel_env()
    observations, infos = original.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(30):
        observations, *_, infos = original.step(masked_actions(original, observations, infos, rng))
    twin = copy.deepcopy(original) if how == "deepcopy" else pickle.loads(pickle.dumps(original))
    assert twin.agents == original.agents and twin.acting_agent == original.acting_agent
    while original.agents:
        actions = masked_actions(original, observations, infos, rng)
        results = original.step(actions)
        np.testing.assert_equal(twin.step(actions), results)
        observations, *_, infos = results
    assert twin.agents == [] and twin.state().tolist() == original.state().tolist()
