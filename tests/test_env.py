"""The PettingZoo AEC environment (``kahuna_env.env`` / ``raw_env``): API, observations, turns, rewards, errors."""

from __future__ import annotations

import copy
import itertools
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import LINE, drawn_final_turn_position, final_turns_position, position
from pettingzoo.test import api_test, seed_test
from pettingzoo.utils import wrappers

import kahuna_env
from kahuna_env import actions as A
from kahuna_env.board import DEGREE, ISLAND_ID, NUM_ISLANDS, NUM_LINES
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.env import AGENTS, WAITING_MASK, raw_env
from kahuna_env.observation import OBSERVATION_LAYOUT, OBSERVATION_SIZE, STATE_SIZE, encode_observation, encode_state

API_CYCLES = 1000  # agent_iter runs 2 * API_CYCLES steps: whole games (the longest seen is ~150 actions)

# ---------------------------------------------------------------------------------------------- positions
# A final-turn position: player 0 controls ALOA, LALE and GOLA, player 1 nothing; scores 1 : 2.
# Player 0 passes, the final scoring gives player 0 three points: 4 : 2.
FINAL_TURN = final_turns_position(1)

# A mid-game position with most features non-zero, player 0 to act.
MID_GAME = position(
    bridges={
        "ALOA-BARI": 0,
        "ALOA-DUDA": 0,
        "HUNA-IFFI": 0,
        "BARI-ELAI": 1,
        "COCO-GOLA": 1,
        "COCO-KAHU": 1,
        "COCO-FAAA": 1,
    },
    hands=(["ALOA", "HUNA", "HUNA"], ["ELAI", "BARI"]),
    face_up=["FAAA", None, "KAHU"],
    pile=["DUDA", "GOLA", "LALE"],
    discard=["IFFI", "JOJO", "LALE", "ALOA"],
    face_down=[["IFFI"], ["JOJO", "LALE"]],
    known=[[], ["BARI"]],
    round=2,
    scores=[1, 0],
    must_draw=True,
    played_this_turn=1,
)

# Planning variant, player 1 just removed a bridge on ELAI-IFFI and may claim it.
PLANNING_CLAIM = position(
    bridges={"ALOA-BARI": 0, "DUDA-ELAI": 1, "KAHU-LALE": 1},
    hands=(["ALOA"], ["HUNA"]),
    discard=["ELAI", "IFFI"],
    current_player=1,
    played_this_turn=2,
    claim_line=LINE["ELAI-IFFI"],
    config={"variant": "planning", "handicap": None, "discard_rule": "hand_limit", "first_player": 1},
)

# Handicap setup: player 1 places two free bridges before the first turn.
HANDICAP_SETUP = position(
    hands=(["ALOA", "BARI", "COCO"], ["DUDA", "ELAI", "FAAA"]),
    current_player=1,
    setup_left=2,
    config={"variant": "standard", "handicap": [1, 2], "discard_rule": "instead_of_play", "first_player": 0},
)

# The extra turns of round 3: nothing left to draw.
FINAL_TURNS = {**FINAL_TURN, "final_turns_left": 2, "current_player": 1}

POSITIONS = {
    "mid_game": MID_GAME,
    "planning_claim": PLANNING_CLAIM,
    "handicap_setup": HANDICAP_SETUP,
    "final_turns": FINAL_TURNS,
}


def env_at(position_dict: dict[str, Any], **kwargs: Any) -> raw_env:
    """A raw env reset to ``position_dict``."""
    environment = raw_env(**kwargs)
    environment.reset(seed=0, options={"position": position_dict})
    return environment


def play_random(environment: Any, seed: int) -> list[tuple[str, int | None, float, bool]]:
    """The standard AEC loop with random legal actions; returns (agent, action, reward, done) per iteration."""
    rng = np.random.default_rng(seed)
    log = []
    for agent in environment.agent_iter():
        observation, reward, termination, truncation, _ = environment.last()
        if termination or truncation:
            action = None
        else:
            legal = np.flatnonzero(observation["action_mask"])
            action = int(legal[rng.integers(legal.size)])
        log.append((agent, action, reward, termination or truncation))
        environment.step(action)
    return log


# ---------------------------------------------------------------------------------------------- PettingZoo tests
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "options",
    [{}, {"variant": "planning"}, {"handicap": (1, 3)}, {"discard_rule": "hand_limit", "first_player": 1}],
    ids=["standard", "planning", "handicap", "hand_limit"],
)
def test_pettingzoo_api_test_passes(options: dict[str, Any]) -> None:
    api_test(kahuna_env.env(**options), num_cycles=API_CYCLES)


@pytest.mark.parametrize("variant", ["standard", "planning"])
def test_pettingzoo_seed_test_passes(variant: str) -> None:
    seed_test(lambda: kahuna_env.env(variant=variant), num_cycles=API_CYCLES)


def test_env_stacks_the_standard_wrappers_on_pettingzoos_public_api() -> None:
    """The three standard wrappers, as BaseWrapper subclasses of the env's own (tests/test_fast_paths.py
    holds them equal to PettingZoo's classes): env.py names nothing private of PettingZoo."""
    module = sys.modules["kahuna_env.env"]  # the module (kahuna_env.env is also the function)

    environment = kahuna_env.env()
    layers = []
    while isinstance(environment, wrappers.BaseWrapper):
        layers.append(type(environment))
        environment = environment.env
    assert layers == [module.OrderEnforcingWrapper, module.AssertOutOfBoundsWrapper, module.TerminateIllegalWrapper]
    assert isinstance(environment, raw_env)
    source = Path(module.__file__).read_text(encoding="utf-8")
    names = set(re.findall(r"(?:pettingzoo[\w.]*|wrappers|order_enforcing)\.(\w+)", source))
    assert [name for name in names if name.startswith("_")] == []
    assert "order_enforcing" not in source and "_prev_obs" not in source and "_has_updated" not in source


def test_metadata_follows_the_classic_conventions() -> None:
    environment = kahuna_env.env()
    environment.reset(seed=0)
    assert environment.metadata["name"] == "kahuna_v0"
    assert environment.metadata["is_parallelizable"] is False
    assert set(environment.metadata["render_modes"]) == {"ansi", "rgb_array", "human"}
    assert environment.possible_agents == ["player_0", "player_1"]
    assert environment.action_space("player_0").n == 179
    space = environment.observation_space("player_1")
    assert space["observation"].shape == (OBSERVATION_SIZE,) and space["observation"].dtype == np.float32
    assert space["action_mask"].shape == (179,) and space["action_mask"].dtype == np.int8


def test_wrapped_env_refuses_attributes_before_reset() -> None:
    with pytest.raises(AttributeError, match="before reset"):
        _ = kahuna_env.env().agent_selection


def test_raw_env_step_before_reset_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match=r"call reset\(\) before the first step"):
        raw_env().step(0)


def test_raw_env_step_after_both_agents_are_done_is_a_clear_error() -> None:
    environment = raw_env()
    environment.reset(seed=5)
    while environment.agents:
        observation, _, terminated, truncated, _ = environment.last()
        environment.step(None if terminated or truncated else int(np.flatnonzero(observation["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="game is over and both agents are done"):
        environment.step(0)


def test_unwrapped_env_exposes_the_engine() -> None:
    environment = kahuna_env.env()
    environment.reset(seed=3)
    assert isinstance(environment.unwrapped.game, KahunaGame)
    assert environment.agent_selection == AGENTS[environment.unwrapped.game.current_player]


def test_import_does_not_load_torch() -> None:
    code = "import sys, kahuna_env; assert 'torch' not in sys.modules, 'kahuna_env imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------- observations
def test_observation_of_the_agent_to_act_has_the_engine_mask() -> None:
    environment = env_at(MID_GAME)
    observation = environment.observe("player_0")
    expected = environment.game.action_mask().astype(np.int8)
    assert observation["action_mask"].dtype == np.int8
    assert np.array_equal(observation["action_mask"], expected)
    assert expected.sum() > 0


def test_observation_of_the_waiting_agent_has_an_all_zero_mask_as_in_pettingzoos_classic_games() -> None:
    environment = env_at(MID_GAME)
    mask = environment.observe("player_1")["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == WAITING_MASK.shape
    assert not mask.any()


def test_observe_is_from_each_agents_side() -> None:
    environment = env_at(MID_GAME)
    lines_mine = OBSERVATION_LAYOUT["lines_mine"]
    lines_opponent = OBSERVATION_LAYOUT["lines_opponent"]
    first = environment.observe("player_0")["observation"]
    second = environment.observe("player_1")["observation"]
    assert first[lines_mine][LINE["ALOA-BARI"]] == 1 and second[lines_opponent][LINE["ALOA-BARI"]] == 1
    assert np.array_equal(first[lines_mine], second[lines_opponent])


def _one_hot(size: int, index: int | None) -> list[float]:
    out = [0.0] * size
    if index is not None:
        out[index] = 1.0
    return out


def expected_features(game: KahunaGame, viewer: int) -> dict[str, list[float]]:
    """Every observation slice of ``viewer`` recomputed from the engine's public accessors."""
    me, opponent = viewer, 1 - viewer
    to_act = game.current_player == viewer and not game.is_over
    hand = game.hand_counts(me)
    open_discards = game.open_discard
    my_face_down = game.face_down_discards(me)
    known = game.known_cards(opponent)
    face_up = game.face_up
    unseen = [
        2 - hand[i] - open_discards[i] - my_face_down[i] - known[i] - face_up.count(i) for i in range(NUM_ISLANDS)
    ]
    claim = game.claim_line if to_act else None
    return {
        "lines_mine": [float(game.owner(line) == me) for line in range(NUM_LINES)],
        "lines_opponent": [float(game.owner(line) == opponent) for line in range(NUM_LINES)],
        "control_mine": [float(game.controller(i) == me) for i in range(NUM_ISLANDS)],
        "control_opponent": [float(game.controller(i) == opponent) for i in range(NUM_ISLANDS)],
        "bridges_mine": [game.bridge_count(me, i) / DEGREE[i] for i in range(NUM_ISLANDS)],
        "bridges_opponent": [game.bridge_count(opponent, i) / DEGREE[i] for i in range(NUM_ISLANDS)],
        "hand": [count / 2 for count in hand],
        "face_up": [value for card in face_up for value in _one_hot(NUM_ISLANDS, card)],
        "pile_size": [game.pile_size / 24],
        "open_discard": [count / 2 for count in open_discards],
        "my_face_down": [count / 2 for count in my_face_down],
        "opponent_face_down_count": [sum(game.face_down_discards(opponent)) / 24],
        "opponent_hand_size": [game.hand_size(opponent) / 5],
        "opponent_known": [count / 2 for count in known],
        "unseen": [count / 2 for count in unseen],
        "scores": [game.scores[me] / 15, game.scores[opponent] / 15],
        "round": _one_hot(3, game.round - 1),
        "final_turns_left": [float(game.in_final_turns), game.final_turns_left / 2],
        "supply": [game.supply(me) / 25, game.supply(opponent) / 25],
        "played_this_turn": [game.played_this_turn / 5 if to_act else 0.0],
        "discarded_this_turn": [float(to_act and game.discarded_this_turn > 0)],
        "must_draw": [float(to_act and game.must_draw)],
        "claim": _one_hot(NUM_LINES, claim),
        "setup": [float(game.in_setup), game.setup_left / 3],
        "my_turn": [float(to_act)],
        "first_player": [float(game.config.first_player == me)],
        "rules": [float(game.config.variant == "planning"), float(game.config.discard_rule == "hand_limit")],
    }


def test_expected_features_cover_the_whole_layout() -> None:
    game = KahunaGame.from_dict(MID_GAME)
    assert list(expected_features(game, 0)) == list(OBSERVATION_LAYOUT)


@pytest.mark.parametrize("name", list(OBSERVATION_LAYOUT))
def test_observation_slice_matches_the_engine_state(name: str) -> None:
    for position_name, position_dict in POSITIONS.items():
        environment = env_at(position_dict)
        for viewer, agent in enumerate(AGENTS):
            observed = environment.observe(agent)["observation"][OBSERVATION_LAYOUT[name]]
            expected = expected_features(environment.game, viewer)[name]
            assert np.allclose(observed, expected, atol=1e-6), (position_name, agent, observed, expected)


def test_observation_hand_slice_counts_cards_per_island() -> None:
    observation = env_at(MID_GAME).observe("player_0")["observation"]
    hand = observation[OBSERVATION_LAYOUT["hand"]]
    assert hand[ISLAND_ID["ALOA"]] == 0.5 and hand[ISLAND_ID["HUNA"]] == 1.0
    assert hand.sum() == 1.5


def test_observation_shows_the_opponents_publicly_known_card() -> None:
    observation = env_at(MID_GAME).observe("player_0")["observation"]
    known = observation[OBSERVATION_LAYOUT["opponent_known"]]
    assert known[ISLAND_ID["BARI"]] == 0.5 and known.sum() == 0.5


def test_observation_values_lie_in_the_observation_space() -> None:
    environment = kahuna_env.env(variant="planning", handicap=(0, 2))
    environment.reset(seed=11)
    space = environment.observation_space("player_0")
    for _agent in environment.agent_iter():
        observation, _, termination, truncation, _ = environment.last()
        assert space.contains(observation)
        environment.step(None if termination or truncation else int(np.flatnonzero(observation["action_mask"])[-1]))


# ---------------------------------------------------------------------------------------------- information leaks
def _swap_variants() -> list[dict[str, Any]]:
    """Positions with the same public state for player 0 and different hidden cards."""
    common = {
        "bridges": {"ALOA-BARI": 0, "ELAI-JOJO": 1},
        "face_up": ["FAAA", "GOLA", None],
        "discard": ["KAHU", "LALE", "IFFI", "COCO"],
    }
    base = position(
        **common,
        hands=(["ALOA", "HUNA"], ["ELAI", "DUDA", "BARI"]),
        pile=["BARI", "COCO", "DUDA", "ELAI", "FAAA", "GOLA", "HUNA", "IFFI", "JOJO", "JOJO", "KAHU", "LALE", "ALOA"],
        face_down=[[], ["IFFI", "COCO"]],
    )
    # A card swapped between the opponent's hand and the pile.
    swapped_hand = position(
        **common,
        hands=(["ALOA", "HUNA"], ["ELAI", "JOJO", "BARI"]),
        pile=["BARI", "COCO", "DUDA", "ELAI", "FAAA", "GOLA", "HUNA", "IFFI", "DUDA", "JOJO", "KAHU", "LALE", "ALOA"],
        face_down=[[], ["IFFI", "COCO"]],
    )
    # The same pile in another order below its top three cards (which the history below reveals to player 0).
    reordered_pile = {**base, "pile": base["pile"][:3] + base["pile"][3:][::-1]}
    # Another card discarded face down by the opponent (JOJO instead of COCO, which is in the pile instead).
    other_face_down = {
        **base,
        "discard": ["KAHU", "LALE", "IFFI", "JOJO"],
        "face_down": [[], ["IFFI", "JOJO"]],
        "pile": [card if (card, k) != ("JOJO", 9) else "COCO" for k, card in enumerate(base["pile"])],
    }
    return [base, swapped_hand, reordered_pile, other_face_down]


def test_hidden_cards_do_not_change_the_viewers_observation() -> None:
    observations = [env_at(variant).observe("player_0")["observation"] for variant in _swap_variants()]
    for observation in observations[1:]:
        assert np.array_equal(observation, observations[0])


def test_hidden_cards_do_not_change_the_viewers_observation_after_the_same_public_actions() -> None:
    history = [
        A.place_action(LINE["ALOA-DUDA"], "ALOA"),  # player 0
        A.TAKE + 0,  # player 0 takes FAAA; the slot is refilled from the pile top
        A.place_action(LINE["ELAI-FAAA"], "ELAI"),  # player 1
        A.DRAW,  # player 1 draws a card player 0 cannot see
        A.DRAW,  # player 0 draws
    ]
    observations = []
    for variant in _swap_variants():
        environment = env_at(variant)
        for action in history:
            environment.step(action)
        observations.append(environment.observe("player_0")["observation"])
    for observation in observations[1:]:
        assert np.array_equal(observation, observations[0])


def test_the_viewers_own_hand_does_change_the_observation() -> None:
    base = position(hands=(["ALOA", "HUNA"], ["ELAI"]))
    other = position(hands=(["ALOA", "IFFI"], ["ELAI"]))
    first = env_at(base).observe("player_0")["observation"]
    second = env_at(other).observe("player_0")["observation"]
    assert not np.array_equal(first, second)


def test_state_reveals_both_hands_and_the_pile() -> None:
    base, swapped = _swap_variants()[:2]
    first, second = env_at(base), env_at(swapped)
    assert first.state().shape == (STATE_SIZE,) and first.state().dtype == np.float32
    assert first.state_space.contains(first.state())
    assert np.array_equal(first.state(), encode_state(first.game))
    assert not np.array_equal(first.state(), second.state())


# ---------------------------------------------------------------------------------------------- turns and rewards
def test_the_player_keeps_the_selection_for_every_action_of_its_turn() -> None:
    environment = env_at(position(hands=(["ALOA", "BARI", "COCO"], ["ELAI"])))
    for action in (A.place_action(LINE["ALOA-BARI"], "ALOA"), A.place_action(LINE["BARI-COCO"], "COCO")):
        environment.step(action)
        assert environment.agent_selection == "player_0"
    environment.step(A.DRAW)
    assert environment.agent_selection == "player_1"


def test_the_selection_changes_only_when_a_turn_ends() -> None:
    environment = kahuna_env.env()
    environment.reset(seed=5)
    log = play_random(environment, seed=5)
    moves = [(agent, action) for agent, action, _, done in log if not done]
    assert len(moves) > 50
    for (agent, action), (next_agent, _) in itertools.pairwise(moves):
        ends_turn = A.DRAW <= action <= A.PASS
        assert (next_agent != agent) == ends_turn, (agent, A.describe_action(action), next_agent)


def test_handicap_player_places_all_free_bridges_before_the_first_turn() -> None:
    environment = raw_env(handicap=(1, 3), first_player=0)
    environment.reset(seed=2)
    for _ in range(3):
        assert environment.agent_selection == "player_1"
        mask = environment.observe("player_1")["action_mask"]
        assert np.flatnonzero(mask).min() >= A.FREE_BRIDGE
        environment.step(int(np.flatnonzero(mask)[0]))
    assert environment.agent_selection == "player_0"


def test_rewards_are_zero_until_the_game_ends() -> None:
    environment = kahuna_env.env()
    environment.reset(seed=8)
    log = play_random(environment, seed=8)
    assert all(reward == 0 for _, _, reward, done in log if not done)


def test_win_loss_rewards_are_given_once_and_sum_to_zero() -> None:
    for seed in range(4):
        environment = kahuna_env.env()
        environment.reset(seed=seed)
        game = environment.unwrapped.game
        log = play_random(environment, seed=seed)
        final = {agent: reward for agent, _, reward, done in log if done}
        assert sorted(final) == ["player_0", "player_1"]
        assert [done for *_, done in log].count(True) == 2
        assert sum(final.values()) == 0
        if game.winner is None:
            assert final == {"player_0": 0, "player_1": 0}
        else:
            assert final[AGENTS[game.winner]] == 1 and final[AGENTS[1 - game.winner]] == -1


def test_score_rewards_are_the_final_point_difference() -> None:
    environment = env_at(FINAL_TURN, reward="score")
    environment.step(A.PASS)
    assert environment.game.scores == [4, 2]
    assert environment.rewards == {"player_0": 2.0, "player_1": -2.0}
    assert all(environment.terminations.values())


def test_win_loss_rewards_of_a_decided_final_turn() -> None:
    environment = env_at(FINAL_TURN)
    environment.step(A.PASS)
    assert environment.rewards == {"player_0": 1.0, "player_1": -1.0}


def test_final_infos_carry_scores_and_winner() -> None:
    environment = env_at(FINAL_TURN)
    environment.step(A.PASS)
    for agent in AGENTS:
        assert environment.infos[agent] == {"scores": [4, 2], "final_points": [3, 0], "winner": 0}


def test_a_draw_reports_winner_minus_one_in_the_infos_and_zero_rewards() -> None:
    environment = env_at(drawn_final_turn_position())
    environment.step(A.PASS)
    assert environment.game.is_over and environment.game.winner is None  # the engine's draw is None
    assert environment.rewards == {"player_0": 0.0, "player_1": 0.0}
    for agent in AGENTS:
        assert environment.infos[agent]["winner"] == -1


def test_infos_are_empty_during_the_game() -> None:
    environment = env_at(MID_GAME)
    assert environment.infos == {"player_0": {}, "player_1": {}}


def test_both_agents_leave_with_dead_steps_after_the_end() -> None:
    environment = env_at(FINAL_TURN)
    environment.step(A.PASS)
    seen = []
    for agent in environment.agent_iter():
        _, reward, termination, _, _ = environment.last()
        assert termination
        seen.append((agent, reward))
        environment.step(None)
    assert sorted(seen) == [("player_0", 1.0), ("player_1", -1.0)]
    assert environment.agents == []


# ---------------------------------------------------------------------------------------------- illegal actions
def test_raw_env_raises_on_an_illegal_action_and_keeps_the_state() -> None:
    environment = env_at(MID_GAME)
    before = environment.game.to_dict()
    with pytest.raises(IllegalActionError, match="remove"):
        environment.step(A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI"))  # own bridge
    assert environment.game.to_dict() == before
    assert environment.agent_selection == "player_0"


def test_wrapped_env_ends_the_game_with_minus_one_for_an_illegal_action() -> None:
    environment = kahuna_env.env()
    environment.reset(options={"position": MID_GAME})
    environment.step(A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI"))  # removing one's own bridge
    final = {}
    for agent in environment.agent_iter():
        _, reward, termination, truncation, _ = environment.last()
        assert termination or truncation
        final[agent] = reward
        environment.step(None)
    assert final == {"player_0": -1, "player_1": 0}


def test_wrapped_env_asserts_on_an_out_of_range_action() -> None:
    environment = kahuna_env.env()
    environment.reset(seed=0)
    with pytest.raises(AssertionError, match="action space"):
        environment.step(179)


# ---------------------------------------------------------------------------------------------- reset and options
def test_same_seed_gives_the_same_game() -> None:
    logs = []
    for _ in range(2):
        environment = kahuna_env.env()
        environment.reset(seed=21)
        logs.append((environment.unwrapped.game.to_dict(), play_random(environment, seed=1)))
    assert logs[0] == logs[1]


def test_different_seeds_give_different_deals() -> None:
    deals = []
    for seed in (1, 2):
        environment = raw_env()
        environment.reset(seed=seed)
        deals.append(environment.game.to_dict()["pile"])
    assert deals[0] != deals[1]


def test_unseeded_resets_continue_the_seeded_generator() -> None:
    sequences = []
    for _ in range(2):
        environment = raw_env()
        environment.reset(seed=4)
        sequences.append([environment.game.to_dict() for _ in range(3) if environment.reset() is None])
    assert sequences[0] == sequences[1]
    assert sequences[0][0] != sequences[0][1]


def test_reset_from_a_position_starts_there() -> None:
    environment = env_at(MID_GAME)
    restored = environment.game.to_dict()
    assert restored["hands"] == [["ALOA", "HUNA", "HUNA"], ["BARI", "ELAI"]]
    assert restored["round"] == 2 and restored["scores"] == [1, 0]
    assert environment.agent_selection == "player_0"


def test_a_position_without_config_uses_the_env_options() -> None:
    environment = env_at(MID_GAME, variant="planning")
    assert environment.game.config.variant == "planning"


def test_a_position_with_config_keeps_its_own_rules() -> None:
    environment = env_at(PLANNING_CLAIM)  # env built with the defaults
    assert environment.game.config.variant == "planning"
    assert environment.agent_selection == "player_1"


@pytest.mark.parametrize(
    ("bad_position", "message"),
    [
        ({**MID_GAME, "round": 7}, "round"),
        ({**MID_GAME, "hands": [["ALOA"], ["NOWHERE"]]}, "NOWHERE"),
        ({key: value for key, value in MID_GAME.items() if key != "pile"}, "pile"),
        ("not a dict", "dict"),
    ],
    ids=["bad_round", "unknown_island", "missing_key", "not_a_dict"],
)
def test_a_malformed_position_is_a_clear_error(bad_position: Any, message: str) -> None:
    environment = raw_env()
    with pytest.raises(ValueError, match=message) as error:
        environment.reset(options={"position": bad_position})
    assert "position" in str(error.value)


def test_unknown_reset_options_are_ignored_with_a_warning() -> None:
    environment = raw_env()
    with pytest.warns(UserWarning, match="postion"):
        environment.reset(seed=0, options={"postion": MID_GAME})
    assert environment.game.to_dict()["round"] == 1  # a fresh deal, not the misspelt position


def test_a_finished_position_is_refused() -> None:
    # As the final scoring leaves it: player 0's three islands scored (1:2 -> 4:2).
    finished = {**FINAL_TURN, "over": True, "winner": 0, "final_turns_left": 0}
    finished.update(scores=[4, 2], final_points=[3, 0])
    with pytest.raises(ValueError, match="finished game"):
        raw_env().reset(options={"position": finished})


# ---------------------------------------------------------------------------------------------- constructor
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reward": "x"}, "reward must be one of .*'x'"),
        ({"variant": "y"}, "variant must be one of .*'y'"),
        ({"discard_rule": "z"}, "discard_rule"),
        ({"first_player": 2}, "first_player"),
        ({"handicap": (0, 9)}, "handicap"),
        ({"render_mode": "movie"}, "render_mode"),
    ],
    ids=["reward", "variant", "discard_rule", "first_player", "handicap", "render_mode"],
)
def test_a_bad_constructor_value_is_a_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kahuna_env.env(**kwargs)


def test_an_unknown_constructor_keyword_is_an_error() -> None:
    with pytest.raises(TypeError, match="colour"):
        kahuna_env.env(colour="red")


def test_constructor_options_reach_the_engine() -> None:
    environment = raw_env(variant="planning", discard_rule="hand_limit", first_player=1, handicap=(0, 1))
    environment.reset(seed=0)
    config = environment.game.config
    assert (config.variant, config.discard_rule, config.first_player, config.handicap) == (
        "planning",
        "hand_limit",
        1,
        (0, 1),
    )


def test_the_manual_states_the_real_space_sizes() -> None:
    manual = sys.modules["kahuna_env.env"].__doc__
    assert f"'observation': ({OBSERVATION_SIZE},), 'action_mask': (179,)" in manual
    assert f"`({STATE_SIZE},)` float32" in manual and f"Box(0, 1, ({STATE_SIZE},), float32)" in manual


# ---------------------------------------------------------------------------------------------- observation="flat"
def test_flat_observation_is_the_box_with_the_mask_in_the_infos() -> None:
    flat, dict_env = kahuna_env.env(observation="flat"), kahuna_env.env()
    flat.reset(seed=4)
    dict_env.reset(seed=4)
    space = flat.observation_space("player_0")
    assert space.shape == (OBSERVATION_SIZE,) and space.dtype == np.float32
    rng = np.random.default_rng(4)
    for agent in flat.agent_iter():
        observation, _, termination, truncation, info = flat.last()
        expected = dict_env.observe(agent)
        assert space.contains(observation)
        assert np.array_equal(observation, expected["observation"])
        assert info["action_mask"].dtype == np.int8
        assert np.array_equal(info["action_mask"], expected["action_mask"])
        other = AGENTS[1 - AGENTS.index(agent)]
        if other in flat.infos and not (termination or truncation):
            assert not flat.infos[other]["action_mask"].any()
        action = None if termination or truncation else int(rng.choice(np.flatnonzero(info["action_mask"])))
        flat.step(action)
        dict_env.step(action)
    assert dict_env.rewards == flat.rewards


def test_flat_env_passes_the_pettingzoo_tests() -> None:
    api_test(kahuna_env.env(observation="flat"), num_cycles=API_CYCLES)
    seed_test(lambda: kahuna_env.env(observation="flat"), num_cycles=200)


def test_flat_env_terminates_an_illegal_action_from_the_info_mask() -> None:
    environment = kahuna_env.env(observation="flat")
    environment.reset(seed=5)
    _, _, _, _, info = environment.last()
    offender = environment.agent_selection
    environment.step(int(np.flatnonzero(info["action_mask"] == 0)[0]))
    assert all(environment.terminations.values())
    assert environment.rewards[offender] == -1


# ---------------------------------------------------------------------------------------------- closing_step=True
def finish_with_closing_step(closing_action: int) -> tuple[Any, list[tuple[str, float, bool, np.ndarray]]]:
    """Player 0 ends the FINAL_TURN game (it wins 4 : 2); returns the env and each selected agent's last()."""
    environment = kahuna_env.env(closing_step=True)
    environment.reset(seed=0, options={"position": FINAL_TURN})
    seen = []
    for agent in environment.agent_iter():
        observation, reward, termination, truncation, _ = environment.last()
        seen.append((agent, reward, termination, observation["action_mask"].copy()))
        if termination or truncation:
            environment.step(None)
        elif agent == "player_0":
            environment.step(A.PASS)
        else:
            environment.step(closing_action)
    return environment, seen


@pytest.mark.parametrize("closing_action", [A.PASS, 0], ids=["pass", "ignored_other_action"])
def test_closing_step_gives_each_seat_its_final_reward_on_a_step_of_its_own(closing_action: int) -> None:
    _, seen = finish_with_closing_step(closing_action)
    closing = [A.PASS]
    # player_0 ends the game; player_1 closes (only PASS masked, any action ignored); then both are done.
    assert [(agent, reward, done) for agent, reward, done, _ in seen] == [
        ("player_0", 0.0, False),
        ("player_1", 0.0, False),
        ("player_0", 1.0, True),
        ("player_1", -1.0, True),
    ]
    assert np.flatnonzero(seen[1][3]).tolist() == closing
    assert not seen[2][3].any() and not seen[3][3].any()


def test_closing_step_rewards_of_each_step_go_to_one_seat() -> None:
    environment = kahuna_env.env(closing_step=True)
    environment.reset(seed=0, options={"position": FINAL_TURN})
    environment.step(A.PASS)
    assert environment.rewards == {"player_0": 1.0, "player_1": 0.0}
    assert environment.terminations == {"player_0": True, "player_1": False}
    assert environment.agent_selection == "player_1"
    assert environment.infos["player_1"]["winner"] == 0
    environment.step(A.DRAW)  # the closing action is ignored, even one that is not masked
    assert environment.rewards == {"player_0": 0.0, "player_1": -1.0}
    assert all(environment.terminations.values())


def test_closing_step_envs_pass_the_pettingzoo_tests() -> None:
    api_test(kahuna_env.env(closing_step=True), num_cycles=API_CYCLES)
    api_test(kahuna_env.env(closing_step=True, observation="flat"), num_cycles=300)
    seed_test(lambda: kahuna_env.env(closing_step=True), num_cycles=200)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"observation": "pixels"}, "observation"), ({"closing_step": 1}, "closing_step")],
    ids=["observation", "closing_step"],
)
def test_bad_new_options_are_clear_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kahuna_env.env(**kwargs)


def test_generic_aec_to_parallel_still_refuses_and_parallel_env_is_the_way() -> None:
    from pettingzoo.utils.conversions import aec_to_parallel

    assert kahuna_env.env().metadata["is_parallelizable"] is False
    with pytest.raises(AssertionError):
        aec_to_parallel(kahuna_env.env())
    assert callable(kahuna_env.parallel_env)


# ---------------------------------------------------------------------------------------------- PettingZoo conventions
def test_kahuna_v0_module_holds_the_three_entry_points() -> None:
    from kahuna_env import kahuna_v0

    assert kahuna_v0.env is kahuna_env.env and kahuna_v0.raw_env is raw_env
    assert kahuna_v0.parallel_env is kahuna_env.parallel_env
    assert str(kahuna_v0.env()) == kahuna_v0.raw_env.metadata["name"] == "kahuna_v0"


@pytest.mark.parametrize("name", ["kahuna-v0", "kahuna_v0", "kahuna"])
def test_pettingzoo_make_builds_the_registered_envs(name: str) -> None:
    import pettingzoo

    aec = pettingzoo.make("aec", name, observation="flat")
    assert isinstance(aec.unwrapped, raw_env) and aec.unwrapped.observation_mode == "flat"
    parallel = pettingzoo.make("parallel", name, max_cycles=5)
    assert isinstance(parallel, pettingzoo.ParallelEnv) and parallel.unwrapped.max_cycles == 5
    api_test(pettingzoo.make("aec", name), num_cycles=100)


def test_max_cycles_truncates_both_agents_after_that_many_actions() -> None:
    environment = kahuna_env.env(max_cycles=7)
    environment.reset(seed=3)
    rng = np.random.default_rng(3)
    steps = 0
    for _agent in environment.agent_iter():
        observation, reward, termination, truncation, _ = environment.last()
        if termination or truncation:
            assert truncation and not termination and reward == 0.0 and not observation["action_mask"].any()
            environment.step(None)
            continue
        environment.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
        steps += 1
    assert steps == 7 and environment.unwrapped.num_steps == 7
    assert not environment.unwrapped.game.is_over
    environment.reset(seed=3)  # a new game starts the count again
    assert environment.unwrapped.num_steps == 0 and not any(environment.truncations.values())


def test_max_cycles_envs_pass_the_pettingzoo_tests() -> None:
    api_test(kahuna_env.env(max_cycles=9), num_cycles=200)
    seed_test(lambda: kahuna_env.env(max_cycles=9), num_cycles=100)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "10"])
def test_a_bad_max_cycles_is_a_clear_error(value: object) -> None:
    with pytest.raises(ValueError, match="max_cycles must be None or a positive int"):
        kahuna_env.env(max_cycles=value)


def test_pettingzoo_render_test_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    from pettingzoo.test import render_test

    monkeypatch.delenv("DISPLAY", raising=False)  # "human" prints the text board instead of opening a window
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    render_test(kahuna_env.env)


def test_pettingzoo_state_test_passes() -> None:
    from pettingzoo.test import state_test

    from kahuna_env import kahuna_v0

    state_test(kahuna_v0.env(), kahuna_v0.parallel_env(), num_cycles=200)


# ---------------------------------------------------------------------------------------------- after the end
def ended_by(kind: str) -> Any:
    """A wrapped env whose game ended ``kind`` ("won", "illegal", "max_cycles"), both agents' final step(None) taken."""
    environment = kahuna_env.env(max_cycles=1 if kind == "max_cycles" else None)
    environment.reset(seed=0, options={"position": FINAL_TURN if kind == "won" else MID_GAME})
    environment.step(A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI") if kind == "illegal" else A.PASS)
    while environment.agents:
        environment.step(None)
    return environment


@pytest.mark.filterwarnings("ignore:.*[Ii]llegal move")
@pytest.mark.parametrize("kind", ["won", "illegal", "max_cycles"])
def test_observe_gives_both_agents_the_final_observation_after_the_end(kind: str) -> None:
    environment = ended_by(kind)
    game = environment.unwrapped.game
    for player, agent in enumerate(AGENTS):
        observation = environment.observe(agent)
        np.testing.assert_array_equal(observation["observation"], encode_observation(game, player))
        assert not observation["action_mask"].any()


@pytest.mark.filterwarnings("ignore:.*[Ii]llegal move")
def test_supersuit_sticky_actions_play_on_through_every_kind_of_end() -> None:
    supersuit = pytest.importorskip("supersuit", reason="supersuit comes with the integrations extra")
    # Repeated actions are often illegal (an illegal move ends the game), max_cycles truncates the rest.
    environment = supersuit.sticky_actions_v0(kahuna_env.env(max_cycles=12), repeat_action_probability=0.5)
    # Every reset is seeded: supersuit's wrapper draws a fresh, unseeded generator on reset() without a seed.
    environment.reset(seed=0)
    rng = np.random.default_rng(0)
    ends = []
    for _ in range(400):
        if not environment.agents:
            raw = environment.unwrapped
            ends.append("won" if raw.game.is_over else "truncated" if raw.num_steps >= 12 else "illegal")
            assert all(environment.observe(agent)["observation"].shape == (OBSERVATION_SIZE,) for agent in AGENTS)
            environment.reset(seed=len(ends))
        observation, _, termination, truncation, _ = environment.last()
        done = termination or truncation
        environment.step(None if done else int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    assert {"truncated", "illegal"} <= set(ends), ends


# ---------------------------------------------------------------------------------------------- copies
COPIES = {"deepcopy": copy.deepcopy, "pickle": lambda environment: pickle.loads(pickle.dumps(environment))}


def random_legal(observation: Any, rng: np.random.Generator) -> int:
    """A random legal action of a dict observation."""
    return int(rng.choice(np.flatnonzero(observation["action_mask"])))


@pytest.mark.parametrize("how", list(COPIES))
@pytest.mark.parametrize("make", [kahuna_env.env, raw_env], ids=["env", "raw_env"])
def test_a_copy_of_a_mid_game_env_steps_on_identically(make: Any, how: str) -> None:
    original = make()
    original.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(40):
        original.step(random_legal(original.last()[0], rng))
    twin = COPIES[how](original)
    for _ in range(3):  # the rest of this game, and two more from the copied generator (unseeded resets)
        while original.agents:
            seen, copied = original.last(), twin.last()
            assert twin.agent_selection == original.agent_selection
            for ours, theirs in zip(seen, copied, strict=True):
                np.testing.assert_equal(theirs, ours)
            done = seen[2] or seen[3]
            action = None if done else random_legal(seen[0], rng)
            original.step(action)
            twin.step(action)
        assert twin.agents == [] and twin.unwrapped.game.to_dict() == original.unwrapped.game.to_dict()
        original.reset()
        twin.reset()


@pytest.mark.parametrize("player", [2, -1, True, 0.0, "0", None])
def test_an_observation_for_a_seat_that_is_not_a_player_is_a_one_line_error(player):
    game = KahunaGame(seed=0)
    with pytest.raises(ValueError, match=r"^player must be 0 or 1, got ") as error:
        encode_observation(game, player)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("out", [np.zeros(OBSERVATION_SIZE - 1, np.float32), np.zeros(OBSERVATION_SIZE, np.float64)])
def test_an_observation_into_a_wrong_buffer_is_refused_and_the_buffer_is_untouched(out):
    before = out.copy()
    with pytest.raises(ValueError, match=rf"^out must be a float32 array of shape \({OBSERVATION_SIZE},\), got "):
        encode_observation(KahunaGame(seed=0), 0, out=out)
    assert np.array_equal(out, before)
    rows = np.zeros((2, OBSERVATION_SIZE), np.float32)
    target = rows[1]  # a row of a batch: written in place
    assert encode_observation(KahunaGame(seed=0), 1, out=target) is target
    assert np.array_equal(rows[1], encode_observation(KahunaGame(seed=0), 1)) and rows[1].any() and not rows[0].any()
