"""The Gymnasium single-agent wrapper (``KahunaSingleAgentEnv``, ``gymnasium.make("Kahuna-v0")``)."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from helpers import final_turns_position

import kahuna_env
from kahuna_env import actions as A
from kahuna_env.agents import Agent
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.gym_env import IllegalActionWarning, KahunaSingleAgentEnv
from kahuna_env.observation import OBSERVATION_LAYOUT, OBSERVATION_SIZE

MY_TURN = OBSERVATION_LAYOUT["my_turn"].start

# Round 3, two extra turns left, player 0 first: player 0 controls ALOA, LALE and GOLA, player 1 nothing;
# scores 1 : 2.  When both pass, the final scoring gives player 0 three points: 4 : 2.
FINAL_TURNS = final_turns_position(2)


def always_pass(observation: np.ndarray, mask: np.ndarray) -> int:
    """An opponent that passes (legal whenever nothing is left to draw)."""
    return A.PASS


def first_legal(observation: np.ndarray, mask: np.ndarray) -> int:
    """An opponent playing its lowest legal action."""
    return int(np.flatnonzero(mask)[0])


def play_episode(environment: KahunaSingleAgentEnv, seed: int) -> tuple[list[float], list[dict[str, Any]], bool]:
    """Random masked learner actions until the episode ends; returns rewards, infos, terminated."""
    rng = np.random.default_rng(seed)
    environment.reset(seed=seed)
    rewards, infos = [], []
    terminated = truncated = False
    while not (terminated or truncated):
        legal = np.flatnonzero(environment.action_masks())
        _, reward, terminated, truncated, info = environment.step(int(legal[rng.integers(legal.size)]))
        rewards.append(reward)
        infos.append({key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in info.items()})
    return rewards, infos, terminated


# ---------------------------------------------------------------------------------------------- API checks
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_gymnasium_check_env_passes_with_default_arguments(observation: str) -> None:
    # check_env steps with unmasked random actions, almost always illegal: the default "lose" ends the episode.
    environment = gymnasium.make("Kahuna-v0", observation=observation)
    check_env(environment.unwrapped)
    check_env(gymnasium.make("Kahuna-v0").unwrapped)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sb3_check_env_passes_with_default_arguments() -> None:
    env_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    for observation in ("dict", "flat"):
        env_checker.check_env(KahunaSingleAgentEnv(observation=observation))


def test_gymnasium_make_builds_the_wrapper() -> None:
    environment = gymnasium.make("Kahuna-v0", opponent="greedy", seat=1)
    assert isinstance(environment.unwrapped, KahunaSingleAgentEnv)
    assert environment.unwrapped.seat_option == 1
    observation, info = environment.reset(seed=0)
    assert info["seat"] == 1
    assert observation["observation"][MY_TURN] == 1


def test_observation_spaces_of_both_modes() -> None:
    dict_env = KahunaSingleAgentEnv(observation="dict")
    flat_env = KahunaSingleAgentEnv(observation="flat")
    dict_observation, _ = dict_env.reset(seed=1)
    flat_observation, _ = flat_env.reset(seed=1)
    assert dict_env.observation_space.contains(dict_observation)
    assert flat_env.observation_space.contains(flat_observation)
    assert flat_observation.shape == (OBSERVATION_SIZE,)
    assert np.array_equal(flat_observation, dict_observation["observation"])


def test_action_masks_match_the_observed_mask_and_the_engine() -> None:
    environment = KahunaSingleAgentEnv()
    observation, _ = environment.reset(seed=2)
    masks = environment.action_masks()
    assert masks.dtype == bool
    assert np.array_equal(masks, observation["action_mask"].astype(bool))
    assert np.array_equal(masks, environment.game.action_mask())


# ---------------------------------------------------------------------------------------------- episodes
def test_the_learner_is_to_act_after_every_step_until_the_end() -> None:
    environment = KahunaSingleAgentEnv(opponent="random", seat=1)
    observation, _ = environment.reset(seed=3)
    rng = np.random.default_rng(3)
    terminated = False
    while not terminated:
        assert environment.game.current_player == 1
        assert observation["observation"][MY_TURN] == 1
        legal = np.flatnonzero(observation["action_mask"])
        observation, _, terminated, truncated, _ = environment.step(int(legal[rng.integers(legal.size)]))
        assert not truncated
    assert environment.game.is_over
    # The terminal mask is the next episode's first mask (terminal_mask="next_episode"), never empty.
    assert observation["action_mask"].any()
    assert np.array_equal(observation["action_mask"].astype(bool), environment.action_masks())
    next_observation, _ = environment.reset()
    assert np.array_equal(next_observation["action_mask"], observation["action_mask"])


def test_episode_reward_is_the_win_loss_result_of_the_learning_seat() -> None:
    for seat in (0, 1):
        environment = KahunaSingleAgentEnv(opponent="random", seat=seat)
        rewards, infos, terminated = play_episode(environment, seed=10 + seat)
        assert terminated
        assert all(reward == 0 for reward in rewards[:-1])
        winner = infos[-1]["winner"]
        assert rewards[-1] == (0.0 if winner == -1 else 1.0 if winner == seat else -1.0)


def test_score_reward_is_the_point_difference_from_the_learners_side() -> None:
    environment = KahunaSingleAgentEnv(opponent=always_pass, seat=1, reward="score")
    environment.reset(seed=0, options={"position": FINAL_TURNS})  # the opponent (player 0) passes first
    _, reward, terminated, _, info = environment.step(A.PASS)
    assert terminated
    assert info["scores"] == [4, 2] and info["winner"] == 0
    assert reward == -2.0


def test_final_info_carries_scores_winner_and_seat() -> None:
    environment = KahunaSingleAgentEnv(opponent=always_pass, seat=0)
    environment.reset(seed=0, options={"position": FINAL_TURNS})
    _, reward, terminated, _, info = environment.step(A.PASS)  # then the opponent passes: the game ends
    assert terminated and reward == 1.0
    mask = info.pop("action_mask")
    assert info == {"seat": 0, "scores": [4, 2], "final_points": [3, 0], "winner": 0}
    assert mask.dtype == np.int8 and np.array_equal(mask, environment.action_masks())


def test_random_seats_vary_per_episode_and_are_reproducible() -> None:
    seats = []
    for _ in range(2):
        environment = KahunaSingleAgentEnv(seat="random")
        environment.reset(seed=5)
        seats.append([environment.seat] + [environment.reset()[1]["seat"] for _ in range(15)])
    assert seats[0] == seats[1]
    assert set(seats[0]) == {0, 1}


def test_same_seed_gives_the_same_episode() -> None:
    runs = [play_episode(KahunaSingleAgentEnv(opponent="greedy"), seed=6) for _ in range(2)]
    assert runs[0] == runs[1]


# ---------------------------------------------------------------------------------------------- opponents
def test_a_callable_opponent_gets_its_observation_and_int8_mask() -> None:
    calls = []

    def opponent(observation: np.ndarray, mask: np.ndarray) -> int:
        calls.append((observation.shape, observation[MY_TURN], mask.dtype, int(mask.sum())))
        return first_legal(observation, mask)

    environment = KahunaSingleAgentEnv(opponent=opponent, seat=1)
    environment.reset(seed=7)
    assert calls, "player 0 moves first, so the opponent acts during reset"
    for shape, my_turn, mask_dtype, legal_count in calls:
        assert (shape, my_turn, mask_dtype) == ((OBSERVATION_SIZE,), 1.0, np.int8)
        assert legal_count > 0


def test_a_game_using_opponent_sees_a_determinization_not_the_real_game() -> None:
    class Spy(Agent):
        uses_game = True

        def __init__(self) -> None:
            self.views: list[tuple[KahunaGame, list[int], list[int]]] = []

        def act(self, observation: np.ndarray, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
            assert game is not None
            self.views.append((game, game.to_dict()["pile"], real.game.to_dict()["pile"]))
            return first_legal(observation, action_mask)

    spy = Spy()
    real = KahunaSingleAgentEnv(opponent=spy, seat=1)
    real.reset(seed=8)
    for _ in range(20):
        real.step(int(np.flatnonzero(real.action_masks())[-1]))
        if real.game.is_over:
            break
    assert spy.views
    assert all(view is not real.game for view, _, _ in spy.views)
    assert any(view_pile != real_pile for _, view_pile, real_pile in spy.views)


def test_a_baseline_opponent_is_built_by_name() -> None:
    environment = KahunaSingleAgentEnv(opponent="greedy")
    assert environment.opponent.name == "greedy"


# ---------------------------------------------------------------------------------------------- illegal actions
def test_an_illegal_learner_action_raises_and_keeps_the_game() -> None:
    environment = KahunaSingleAgentEnv(illegal_action="raise")
    environment.reset(seed=9)
    before = environment.game.to_dict()
    illegal = int(np.flatnonzero(~environment.action_masks())[0])
    with pytest.raises(IllegalActionError, match=r"KahunaSingleAgentEnv\.step"):
        environment.step(illegal)
    assert environment.game.to_dict() == before


def test_lose_mode_ends_the_episode_with_minus_one() -> None:
    environment = KahunaSingleAgentEnv(illegal_action="lose", terminal_mask="zeros")
    environment.reset(seed=9)
    illegal = int(np.flatnonzero(~environment.action_masks())[0])
    with pytest.warns(IllegalActionWarning):
        observation, reward, terminated, truncated, info = environment.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert not observation["action_mask"].any() and not environment.action_masks().any()


def test_lose_is_the_default_and_warns_once_per_env_naming_the_action() -> None:
    environment = KahunaSingleAgentEnv()
    assert environment.illegal_action == "lose"
    environment.reset(seed=9)
    illegal = int(np.flatnonzero(~environment.action_masks())[0])
    with pytest.warns(IllegalActionWarning, match=rf"{A.describe_action(illegal)}.*illegal_action='raise'"):
        _, reward, terminated, _, _ = environment.step(illegal)
    assert (reward, terminated) == (-1.0, True)
    environment.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning from the same env
        _, reward, terminated, _, _ = environment.step(int(np.flatnonzero(~environment.action_masks())[0]))
    assert (reward, terminated) == (-1.0, True)


def test_the_warning_can_be_made_an_error() -> None:
    environment = KahunaSingleAgentEnv()
    environment.reset(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllegalActionWarning)
        with pytest.raises(IllegalActionWarning):
            environment.step(int(np.flatnonzero(~environment.action_masks())[0]))


def test_stepping_after_the_end_is_an_error() -> None:
    environment = KahunaSingleAgentEnv(illegal_action="lose")
    environment.reset(seed=9)
    environment.step(int(np.flatnonzero(~environment.action_masks())[0]))
    with pytest.raises(RuntimeError, match="reset"):
        environment.step(A.DRAW)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponent": "nobody"}, "nobody"),
        ({"opponent": 42}, "opponent must be"),
        ({"seat": 2}, "seat"),
        ({"seat": 0.0}, "seat"),
        ({"seat": True}, "seat"),
        ({"seat": "1"}, "seat"),
        ({"observation": "pixels"}, "observation"),
        ({"illegal_action": "ignore"}, "illegal_action"),
        ({"terminal_mask": "ones"}, "terminal_mask"),
        ({"reward": "x"}, "reward"),
        ({"variant": "y"}, "variant"),
    ],
    ids=[
        "unknown_baseline",
        "not_an_opponent",
        "seat",
        "float_seat",
        "bool_seat",
        "text_seat",
        "observation",
        "illegal_action",
        "terminal_mask",
        "reward",
        "variant",
    ],
)
def test_a_bad_constructor_value_is_a_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KahunaSingleAgentEnv(**kwargs)


def test_a_malformed_position_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="position"):
        KahunaSingleAgentEnv().reset(options={"position": {**FINAL_TURNS, "round": 0}})


# ---------------------------------------------------------------------------------------------- sb3-contrib
def test_maskable_ppo_trains_without_an_illegal_action() -> None:
    torch = pytest.importorskip("torch")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)
    # illegal_action="raise": a single unmasked action would fail the test.
    environment = Monitor(
        kahuna_env.KahunaSingleAgentEnv(opponent="random", observation="flat", seat="random", illegal_action="raise")
    )
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy",
        environment,
        n_steps=256,
        batch_size=128,
        n_epochs=2,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # no SB3-<date> folder in the temp directory
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    assert len(environment.get_episode_rewards()) >= 5  # whole games were played


# ---------------------------------------------------------------------------------------------- named opponents
def test_a_shipped_agent_is_an_opponent_by_name() -> None:
    pytest.importorskip("torch")
    from kahuna_env.gym_env import plugin_opponent_names

    shipped = {"champion", "champion-v5"}
    assert shipped <= set(plugin_opponent_names())
    environment = gymnasium.make("Kahuna-v0", opponent="champion", seat=1)
    assert type(environment.unwrapped.opponent).__name__ == "PolicyAgent"
    observation, _info = environment.reset(seed=0)
    action = int(np.flatnonzero(observation["action_mask"])[0])
    environment.step(action)  # the champion answers inside step
    vector = gymnasium.make_vec("Kahuna-v0", num_envs=2, opponent="champion", backend="batch")
    observations, _ = vector.reset(seed=0)
    assert observations["action_mask"].any(axis=1).all()


def test_an_unknown_opponent_name_lists_the_baselines_and_the_named_agents() -> None:
    with pytest.raises(ValueError, match=r"opponent unknown entrant 'nobody'.*baseline.*named agent \(champion"):
        gymnasium.make("Kahuna-v0", opponent="nobody")


def test_baseline_opponents_load_neither_torch_nor_training() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gymnasium, kahuna_env, kahuna_env.sb3\n"
        "gymnasium.make('Kahuna-v0', opponent='greedy').reset(seed=0)\n"
        "gymnasium.make_vec('Kahuna-v0', num_envs=2, opponent='mcts:2').reset(seed=0)\n"
        "print(sorted(m for m in ('torch', 'training', 'stable_baselines3') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_native_vector_env_has_gymnasiums_autoreset_mode_attribute() -> None:
    from gymnasium.vector import AutoresetMode

    envs = gymnasium.make_vec("Kahuna-v0", num_envs=2)
    assert type(envs).__name__ == "KahunaVectorEnv"
    assert envs.autoreset_mode == envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
