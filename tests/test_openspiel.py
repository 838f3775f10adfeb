"""Kahuna in OpenSpiel (``kahuna_env/openspiel.py``, docs/ECOSYSTEM.md "OpenSpiel").

The binding needs the ``openspiel`` extra; its tests skip without it (``pytest.importorskip``), the
engine's two methods it relies on (``pile_counts``, ``put_on_top``) are tested either way.  The
differential test plays the binding against a :class:`KahunaGame` dealt and drawing the same
cards: every chance outcome the binding is given is the card the real game took.  The ``python``
blocks of the docs' section run as written, only their budgets made smaller (:data:`SMALLER_BUDGETS`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from kahuna_env.actions import DISCARD, DRAW, NUM_ACTIONS, PASS, TAKE, describe_action
from kahuna_env.board import ISLAND_ID, NUM_ISLANDS
from kahuna_env.config import DISCARD_RULES, VARIANTS, KahunaConfig
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.env import AGENTS, final_rewards
from kahuna_env.observation import encode_observation
from tests.helpers import position

ROOT = Path(__file__).resolve().parents[1]
ECOSYSTEM = ROOT / "docs" / "ECOSYSTEM.md"
CONFIGS = [
    KahunaConfig(variant=variant, discard_rule=rule, handicap=handicap, first_player=first)
    for variant, rule, (handicap, first) in itertools.product(VARIANTS, DISCARD_RULES, [(None, 0), ((1, 2), 1)])
]
"""Every rule option: both variants, both discard rules, without and with a handicap (and the other first player)."""


@pytest.fixture(scope="module")
def ko() -> ModuleType:
    """The binding (``import kahuna_env.openspiel`` registers ``python_kahuna``); skipped without the extra."""
    pytest.importorskip("pyspiel", reason='the openspiel extra: pip install -e ".[openspiel]"')
    import kahuna_env.openspiel as module

    return module


# ---------------------------------------------------------------------------------- the engine's chance primitives
def test_pile_counts_are_the_islands_of_the_pile_s_cards():
    game = KahunaGame.from_dict(position(pile=["ALOA", "ALOA", "KAHU"]))
    assert game.pile_counts() == [2] + [0] * 9 + [1, 0]


def test_put_on_top_makes_the_chosen_card_the_next_draw_and_changes_nothing_a_player_sees():
    game = KahunaGame(seed=3)
    seen, pile = [encode_observation(game, player) for player in (0, 1)], game.pile_counts()
    island = next(i for i, count in enumerate(game.pile_counts()) if count and game.hand_counts(0)[i] == 0)
    game.put_on_top(island)
    assert all(np.array_equal(encode_observation(game, player), seen[player]) for player in (0, 1))
    assert game.pile_counts() == pile
    game.step(DRAW)
    assert game.hand_counts(0)[island] == 1


def test_put_on_top_refuses_an_island_the_pile_does_not_hold_and_changes_nothing():
    game = KahunaGame.from_dict(position(pile=["ALOA", "KAHU"]))
    pile = game.to_dict()["pile"]
    with pytest.raises(ValueError, match="the pile holds no BARI card") as error:
        game.put_on_top(ISLAND_ID["BARI"])
    assert "\n" not in str(error.value) and game.to_dict()["pile"] == pile
    with pytest.raises(ValueError, match=r"island id must be in 0\.\.11"):
        game.put_on_top(12)


# ---------------------------------------------------------------------------------- playing both side by side
def _dealt(game: KahunaGame) -> list[int]:
    """The deal's chance outcomes of ``game``: player 0's cards, player 1's, the face-up slots."""
    return game.hand(0) + game.hand(1) + [card for card in game.face_up if card is not None]


def _cards_out(before: KahunaGame, action: int, after: KahunaGame) -> list[int]:
    """The cards one action of a real game took from its pile, or dealt face up from a reshuffle, in order."""
    cards = []
    player = before.current_player
    if action == DRAW:
        gained = np.subtract(after.hand_counts(player), before.hand_counts(player))
        cards.append(int(np.flatnonzero(gained)[0]))
    elif TAKE <= action < PASS and before.pile_size:
        cards.append(after.face_up[action - TAKE])
    if after.round > before.round and not after.is_over:
        cards += [card for card in after.face_up if card is not None]
    return cards


def _apply_cards(state, cards: list[int]) -> None:
    for card in cards:
        assert state.is_chance_node()
        assert card in dict(state.chance_outcomes())
        state.apply_action(card)
    assert not state.is_chance_node()


def _play_both(ko: ModuleType, open_game, seed: int, rng: np.random.Generator, observe: bool) -> int:
    """Play a random game on a ``KahunaGame`` and on the binding with the same cards; returns its length."""
    real = KahunaGame(open_game.config, seed=seed)
    state = open_game.new_initial_state()
    _apply_cards(state, _dealt(real))
    decisions = 0
    while not real.is_over:
        assert state.current_player() == real.current_player
        legal = real.legal_actions()
        assert state.legal_actions() == legal
        if observe:
            for player in (0, 1):
                assert np.array_equal(
                    np.asarray(state.observation_tensor(player), np.float32), encode_observation(real, player)
                )
        action = legal[rng.integers(len(legal))]
        before = real.clone()
        real.step(action)
        state.apply_action(action)
        decisions += 1
        _apply_cards(state, _cards_out(before, action, real))
    assert state.is_terminal() and state.legal_actions() == []
    assert state.returns() == list(final_rewards(real, "win_loss"))
    assert decisions <= ko.MAX_DECISIONS and len(state.history()) - decisions <= ko.MAX_CHANCE_NODES
    return decisions


def test_legal_actions_observations_and_returns_agree_with_the_engine_dealt_the_same_cards(ko):
    """1,000 random games, the rule configurations in turn; observations compared in every tenth game."""
    games = {config: ko.load_game(config) for config in CONFIGS}
    rng = np.random.default_rng(79)
    for index in range(1000):
        config = CONFIGS[index % len(CONFIGS)]
        _play_both(ko, games[config], seed=index, rng=rng, observe=index % 10 == 0)


def test_a_premature_end_right_after_the_interim_scoring_deals_no_face_up_card(ko):
    """The last bridge of player 1 is gone at the first interim scoring: the game ends there, no chance follows."""
    start = position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0},
        hands=(["KAHU"], []),
        face_up=[None, None, None],
        pile=["LALE"],
    )
    game = ko.load_game()
    state = game.state_from_game(KahunaGame.from_dict(start))
    state.apply_action(DRAW)
    state.apply_action(ISLAND_ID["LALE"])
    assert state.is_terminal() and state.returns() == [1.0, -1.0]


# ---------------------------------------------------------------------------------- loading and OpenSpiel's checks
def test_importing_the_binding_registers_python_kahuna_with_the_rule_options_as_parameters(ko):
    import pyspiel

    game = pyspiel.load_game("python_kahuna", {"variant": "planning", "handicap": "1:2", "first_player": 1})
    assert game.config == KahunaConfig(variant="planning", handicap=(1, 2), first_player=1)
    assert ko.load_game(game.config).config == game.config
    kind = game.get_type()
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert (game.num_players(), game.num_distinct_actions(), game.max_chance_outcomes()) == (2, NUM_ACTIONS, 12)
    assert (game.min_utility(), game.max_utility(), game.max_game_length()) == (-1.0, 1.0, ko.MAX_DECISIONS)
    assert game.observation_tensor_size() == 246
    assert game.information_state_tensor_size() == 2 * 246 + ko.MAX_EVENTS


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"variant": "bogus"}, "variant must be one of"),
        ({"handicap": "2:1"}, "handicap player must be 0 or 1, got 2"),
        ({"handicap": "0-1"}, "handicap must be '' or 'PLAYER:BRIDGES'"),
        ({"handicap": "0:4"}, "handicap bridges must be an integer in 1..3"),
        ({"position": "not base64!"}, "not a position written by position_parameter"),
        ({"position": "e30"}, "position: .*required"),  # {}
    ],
)
def test_a_bad_parameter_is_a_one_line_error_naming_it(ko, parameters, message):
    import pyspiel

    with pytest.raises(ValueError, match=message) as error:
        pyspiel.load_game("python_kahuna", parameters)
    assert "\n" not in str(error.value)


def test_an_unknown_parameter_is_refused_by_openspiel(ko):
    import pyspiel

    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'colour'"):
        pyspiel.load_game("python_kahuna", {"colour": "red"})


def test_a_position_whose_rules_differ_from_the_parameters_is_refused(ko):
    import pyspiel

    start = {**position(), "config": {"variant": "planning"}}
    with pytest.raises(ValueError, match="its 'config' differs from the game's rule parameters"):
        pyspiel.load_game("python_kahuna", {"position": ko.position_parameter(start)})


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_openspiel_s_random_simulation_test_passes_with_serialization(ko, config):
    import pyspiel

    pyspiel.random_sim_test(ko.load_game(config), num_sims=2, serialize=True, verbose=False)


def _round_three() -> dict:
    """A position of round 3: two cards in each hand, one face up, three in the pile."""
    return position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA", "BARI"], ["KAHU", "LALE"]),
        face_up=["FAAA", None, None],
        pile=["GOLA", "JOJO", "COCO"],
        round=3,
        scores=[1, 2],
    )


def test_a_game_from_a_position_starts_there_and_passes_openspiel_s_random_simulation_test(ko):
    import pyspiel

    start = _round_three()
    game = pyspiel.load_game("python_kahuna", {"position": ko.position_parameter(start)})
    state = game.new_initial_state()
    assert state.legal_actions() == KahunaGame.from_dict(start).legal_actions()
    assert state.information_state_string(0).splitlines()[:2] == ["player 0", "start: position"]
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_action_to_string_is_the_engine_s_description_and_a_chance_outcome_names_the_card(ko):
    state = ko.load_game().new_initial_state()
    assert state.action_to_string(-1, ISLAND_ID["KAHU"]) == "card KAHU"
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    assert [state.action_to_string(0, action) for action in range(NUM_ACTIONS)] == [
        describe_action(action) for action in range(NUM_ACTIONS)
    ]


def test_the_deal_is_nine_chance_nodes_with_probabilities_proportional_to_the_cards_left(ko):
    state = ko.load_game().new_initial_state()
    assert state.chance_outcomes() == [(island, 2 / 24) for island in range(NUM_ISLANDS)]
    state.apply_action(ISLAND_ID["ALOA"])
    outcomes = dict(state.chance_outcomes())
    assert outcomes[ISLAND_ID["ALOA"]] == pytest.approx(1 / 23) and outcomes[ISLAND_ID["BARI"]] == pytest.approx(2 / 23)
    for island in (0, 1, 1, 2, 2, 3, 4, 3):
        state.apply_action(island)
    assert not state.is_chance_node()
    game = state.kahuna_game()
    assert (game.hand(0), game.hand(1), game.face_up) == ([0, 0, 1], [1, 2, 2], [3, 4, 3])
    assert game.pile_counts() == [0, 0, 0, 0, 1] + [2] * 7


def test_a_draw_is_the_player_s_action_then_a_chance_node_for_the_card(ko):
    state = _dealt_state(ko)
    player = state.current_player()
    counts = state.kahuna_game().pile_counts()
    state.apply_action(DRAW)
    assert state.is_chance_node()
    assert state.chance_outcomes() == [(island, count / 15) for island, count in enumerate(counts) if count]
    card = state.chance_outcomes()[-1][0]
    before = state.kahuna_game().hand_counts(player)[card]
    state.apply_action(card)
    assert state.kahuna_game().hand_counts(player)[card] == before + 1 and state.current_player() == 1 - player


def test_an_illegal_action_or_chance_outcome_is_refused_in_one_line_and_changes_nothing(ko):
    state = _dealt_state(ko)
    seen = str(state), state.information_state_string(0)
    with pytest.raises(IllegalActionError, match="illegal for player 0") as error:
        state.apply_action(DISCARD + next(i for i in range(NUM_ISLANDS) if not state.kahuna_game().hand_counts(0)[i]))
    assert "\n" not in str(error.value) and (str(state), state.information_state_string(0)) == seen
    state.apply_action(DRAW)
    for outcome in (ISLAND_ID["ALOA"], NUM_ISLANDS):  # both ALOA cards are in player 0's hand
        with pytest.raises(ValueError, match=f"chance outcome {outcome} is not the island of a card that can come now"):
            state.apply_action(outcome)
    assert state.is_chance_node() and len(state.history()) == 10


def _dealt_state(ko: ModuleType, config: KahunaConfig | None = None):
    """A state after a fixed deal: player 0 holds ALOA ALOA BARI, player 1 COCO DUDA ELAI, face up FAAA GOLA HUNA."""
    state = ko.load_game(config).new_initial_state()
    for island in (0, 0, 1, 2, 3, 4, 5, 6, 7):
        state.apply_action(island)
    return state


# ---------------------------------------------------------------------------------- information states
def _two_worlds(ko: ModuleType, stop_before_the_draw: bool = False) -> tuple:
    """Two states with the same public history that differ in player 1's cards only: its third dealt card,
    the card it discards face down and the card it draws."""
    states = []
    for hidden_deal, draw in ((ISLAND_ID["ELAI"], ISLAND_ID["KAHU"]), (ISLAND_ID["IFFI"], ISLAND_ID["LALE"])):
        state = ko.load_game().new_initial_state()
        for island in (0, 0, 1, 2, 3, hidden_deal, 5, 6, 7):
            state.apply_action(island)
        state.apply_action(DRAW)  # player 0
        state.apply_action(ISLAND_ID["JOJO"])
        state.apply_action(DISCARD + hidden_deal)  # player 1, face down
        state.apply_action(DRAW)
        if not stop_before_the_draw:
            state.apply_action(draw)
        states.append(state)
    return tuple(states)


def _views(state, player: int) -> tuple:
    return (
        state.information_state_string(player),
        state.information_state_tensor(player),
        state.observation_string(player),
        state.observation_tensor(player),
    )


@pytest.mark.parametrize("at_the_chance_node", [False, True])
def test_states_that_differ_in_what_a_player_cannot_see_look_the_same_to_that_player_only(ko, at_the_chance_node):
    first, second = _two_worlds(ko, at_the_chance_node)
    assert _views(first, 0) == _views(second, 0)
    mine, other = _views(first, 1), _views(second, 1)
    assert mine[0] != other[0] and mine[1] != other[1]  # the information state: player 1 saw its own cards
    assert mine[2] != other[2] and mine[3] != other[3]  # the observation: its hand


def test_the_information_state_is_every_event_in_order_with_the_opponent_s_hidden_cards_as_cards(ko):
    state, _ = _two_worlds(ko)
    assert state.information_state_string(0).splitlines() == [
        "player 0",
        "start: new game",
        "player 0 receives ALOA",
        "player 0 receives ALOA",
        "player 0 receives BARI",
        *["player 1 receives a card"] * 3,
        "face-up slot 0: FAAA",
        "face-up slot 1: GOLA",
        "face-up slot 2: HUNA",
        "player 0: draw",
        "player 0 receives JOJO",
        "player 1: discard a card face down",
        "player 1: draw",
        "player 1 receives a card",
    ]
    lines = state.information_state_string(1).splitlines()
    assert lines[:3] == ["player 1", "start: new game", "player 0 receives a card"]
    assert lines[-4:] == [
        "player 0 receives a card",
        "player 1: discard ELAI face down",
        "player 1: draw",
        "player 1 receives KAHU",
    ]


def test_the_information_state_tensor_holds_the_start_the_observation_and_every_event(ko):
    state, _ = _two_worlds(ko)
    tensor = np.asarray(state.information_state_tensor(0), np.float32)
    start, now, history = np.split(tensor, [246, 492])
    assert not start.any()  # a new game: nothing seen before the deal
    assert np.array_equal(now, np.asarray(state.observation_tensor(0), np.float32))
    assert np.count_nonzero(history) == 14 and not history[14:].any() and history.max() <= 1.0
    # 14 events, 10 codes: player 1's four hidden cards share one, ALOA dealt twice another.
    assert np.unique(history[:14]).size == 10


def test_resampling_keeps_the_player_s_information_state_and_deals_the_hidden_cards_again(ko):
    state, _ = _two_worlds(ko)
    hands = set()
    for seed in range(20):
        sample = state.resample(0, np.random.default_rng(seed))
        assert _views(sample, 0) == _views(state, 0)
        assert sample.legal_actions() == state.legal_actions()
        game = sample.kahuna_game()
        assert game.hand_size(1) == 3 and sum(game.pile_counts()) == state.kahuna_game().pile_size
        hands.add(tuple(game.hand(1)))
        # The opponent's information state starts at the resample: its observation there, no event yet.
        observed = sample.observation_string(1).split("\n", 1)[1]
        assert sample.information_state_string(1) == f"player 1\nstart: position\n{observed}"
    assert len(hands) > 1


def test_openspiel_s_resample_from_infostate_takes_its_sampler(ko):
    import pyspiel

    state, _ = _two_worlds(ko)
    sample = state.resample_from_infostate(0, pyspiel.UniformProbabilitySampler(3, 0.0, 1.0))
    assert sample.information_state_string(0) == state.information_state_string(0)
    with pytest.raises(ValueError, match="the deal is not finished"):
        ko.load_game().new_initial_state().resample(0, np.random.default_rng(0))


def test_a_state_serializes_and_pickles_and_plays_on_the_same(ko):
    import pyspiel

    game = ko.load_game(CONFIGS[5])
    rng = np.random.default_rng(5)
    state = game.new_initial_state()
    for _ in range(80):
        if state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        else:
            state.apply_action(state.legal_actions()[rng.integers(len(state.legal_actions()))])
    samples = [state, state.resample(1, rng), game.state_from_game(KahunaGame(game.config, seed=2))]
    for original in samples:
        _, restored = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, original))
        copies = [restored, pickle.loads(pickle.dumps(original)), original.clone()]
        for copy in copies:
            assert str(copy) == str(original) and copy.history() == original.history()
            assert _views(copy, 0) == _views(original, 0) and _views(copy, 1) == _views(original, 1)
        while not original.is_terminal():
            outcomes = original.chance_outcomes() if original.is_chance_node() else None
            action = outcomes[-1][0] if outcomes else original.legal_actions()[0]
            for state in (original, *copies):
                state.apply_action(action)
        assert all(copy.returns() == original.returns() and str(copy) == str(original) for copy in copies)


# ---------------------------------------------------------------------------------- OpenSpiel's algorithms
def test_openspiel_s_ismcts_bot_plays_legal_moves_on_a_small_budget_and_repeats_itself_with_its_seed(ko):
    game = ko.load_game()

    def moves(seed: int) -> list[int]:
        state = _dealt_state(ko)
        bot = ko.ismcts_bot(game, simulations=6, seed=seed)
        played = []
        while len(played) < 4:
            if state.is_chance_node():
                state.apply_action(state.chance_outcomes()[0][0])
                continue
            action = bot.step(state)
            assert action in state.legal_actions()
            state.apply_action(action)
            played.append(int(action))
        return played

    assert moves(1) == moves(1)


def test_openspiel_s_ismcts_bot_runs_as_is_with_its_own_resampler(ko):
    from open_spiel.python.algorithms import ismcts, mcts

    state = _dealt_state(ko)
    bot = ismcts.ISMCTSBot(
        game=state.get_game(),
        evaluator=mcts.RandomRolloutEvaluator(1, np.random.RandomState(0)),
        uct_c=2.0,
        max_simulations=4,
        random_state=np.random.RandomState(0),
    )
    assert bot.step(state) in state.legal_actions()


def test_outcome_sampling_mccfr_learns_a_policy_over_the_legal_actions(ko):
    import pyspiel

    start = _round_three()
    for parameters, iterations in (({"position": ko.position_parameter(start)}, 100), ({}, 2)):
        game = pyspiel.load_game("python_kahuna", parameters)
        solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 7)
        for _ in range(iterations):
            solver.run_iteration()
        state = game.new_initial_state()
        while state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        policy = dict(solver.average_policy().get_state_policy(state))
        assert sorted(policy) == state.legal_actions() and sum(policy.values()) == pytest.approx(1.0)


def test_the_ismcts_agent_plays_a_whole_game_through_the_project_s_play_loop(ko):
    from kahuna_env.agents import RandomAgent
    from kahuna_env.match import agent_chooser, play

    agent = ko.ISMCTSAgent(simulations=2, seed=3)
    rng = np.random.default_rng(0)
    game = KahunaGame(KahunaConfig(variant="planning"), seed=11)
    play(game, [agent_chooser(agent, rng), agent_chooser(RandomAgent(seed=1), rng)])
    assert game.is_over


def test_the_ismcts_agent_repeats_its_move_after_a_reset_with_the_same_seed(ko):
    agent = ko.ISMCTSAgent(simulations=4)
    game = KahunaGame(seed=4)
    mask = game.action_mask().astype(np.int8)
    moves = []
    for _ in range(2):
        agent.reset(9)
        moves.append(agent.act(None, mask, game.determinize(0, np.random.default_rng(1))))
    assert moves[0] == moves[1] and moves[0] in game.legal_actions()


@pytest.mark.parametrize(
    ("options", "message"),
    [({"simulations": 0}, "simulations must be a positive integer"), ({"rollouts": 1.5}, "rollouts must be")],
)
def test_the_ismcts_agent_refuses_a_bad_budget_in_one_line(ko, options, message):
    with pytest.raises(ValueError, match=message):
        ko.ISMCTSAgent(**options)


def test_the_ismcts_agent_needs_the_game(ko):
    with pytest.raises(ValueError, match="needs the game"):
        ko.ISMCTSAgent().act(None, KahunaGame(seed=0).action_mask().astype(np.int8), None)


# ---------------------------------------------------------------------------------- back to PettingZoo with Shimmy
def test_shimmy_s_pettingzoo_env_over_python_kahuna_passes_the_api_test(ko):
    shimmy = pytest.importorskip("shimmy")
    from pettingzoo.test import api_test

    api_test(shimmy.OpenSpielCompatibilityV0(game_name="python_kahuna"), num_cycles=100)


class _CardsOf:
    """Stands in for Shimmy's generator: its chance outcomes are the cards a kahuna_env game dealt and drew."""

    def __init__(self) -> None:
        self.cards: list[int] = []

    def choice(self, outcomes, p):
        card = self.cards.pop(0)
        assert card in outcomes
        return card


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shimmy_s_masks_agree_with_kahuna_env_s_for_the_same_cards(ko, monkeypatch, seed):
    pytest.importorskip("shimmy")
    from shimmy import openspiel_compatibility

    import kahuna_env

    cards = _CardsOf()
    monkeypatch.setattr(openspiel_compatibility, "seeding", SimpleNamespace(np_random=lambda seed: (cards, seed)))
    ours = kahuna_env.env(variant="planning")
    ours.reset(seed=seed)
    theirs = openspiel_compatibility.OpenSpielCompatibilityV0(game_name="python_kahuna", config={"variant": "planning"})
    cards.cards = _dealt(ours.unwrapped.game)
    theirs.reset()
    rng = np.random.default_rng(seed)
    while not ours.unwrapped.game.is_over:
        assert theirs.agent_selection == ours.agent_selection
        for agent in AGENTS:
            assert np.array_equal(theirs.infos[agent]["action_mask"], ours.action_mask(agent))
        action = int(rng.choice(np.flatnonzero(ours.action_mask(ours.agent_selection))))
        before = ours.unwrapped.game.clone()
        ours.step(action)
        cards.cards = _cards_out(before, action, ours.unwrapped.game)
        theirs.step(action)
        assert cards.cards == []
    assert all(theirs.terminations.values())
    assert [theirs.rewards[agent] for agent in theirs.possible_agents] == [
        ours.rewards[a] for a in ours.possible_agents
    ]


# ---------------------------------------------------------------------------------- the docs and the arena
SMALLER_BUDGETS = {
    "num_sims=10": "num_sims=2",
    "simulations=200": "simulations=3",
    "ITERATIONS = 100_000": "ITERATIONS = 400",
}
"""What the test of docs/ECOSYSTEM.md's OpenSpiel section changes in its code: each budget, nothing else."""


def _section_code() -> str:
    """The ``python`` blocks of docs/ECOSYSTEM.md's "OpenSpiel" section, in order, each budget made smaller."""
    text = ECOSYSTEM.read_text("utf-8")
    section = re.split(r"\n#{2,3} ", text.split("\n### OpenSpiel\n", 1)[1], maxsplit=1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    for budget, smaller in SMALLER_BUDGETS.items():
        assert code.count(budget) == 1, f"docs/ECOSYSTEM.md, OpenSpiel: {budget!r} should appear once"
        code = code.replace(budget, smaller)
    return code


def test_the_docs_openspiel_section_runs_as_written_with_smaller_budgets(ko, tmp_path, monkeypatch):
    """Every block of the section, in one namespace as a reader pastes them: the deal, OpenSpiel's random
    simulation test, an IS-MCTS game, MCCFR on the endgame (its average policy closer to a Nash equilibrium than
    the uniform policy, by NashConv), Shimmy's api_test."""
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_section_code(), "docs/ECOSYSTEM.md (OpenSpiel)", "exec"), {"__name__": "docs_openspiel"})
    lines = printed.getvalue().splitlines()
    assert re.fullmatch(r"[01] \[\d+, \d+, \d+\] .+", lines[0]), lines
    assert lines[1] in ("[1.0, -1.0]", "[-1.0, 1.0]", "[0.0, 0.0]"), lines
    mccfr = r"([\d,]+) information states; NashConv: uniform ([\d.]+), MCCFR after 400 iterations ([\d.]+)"
    found = re.fullmatch(mccfr, lines[2])
    assert found, lines
    assert found[1] == "2,967" and 0 <= float(found[3]) < float(found[2])
    assert lines[3:] == ["Starting API test", "Passed API test"] and list(tmp_path.iterdir()) == []


def test_kahuna_eval_plays_the_ismcts_agent_as_a_python_entrant(ko, tmp_path):
    """``kahuna-eval py:...:ISMCTSAgent mcts`` (docs/ECOSYSTEM.md) with a budget of 2 simulations per move."""
    from kahuna_arena.eval_cli import main as eval_main

    agent = tmp_path / "small_ismcts.py"
    agent.write_text("from kahuna_env.openspiel import ISMCTSAgent\n\nagent = ISMCTSAgent(simulations=2)\n")
    report = tmp_path / "report.json"
    argv = [f"py:{agent}:agent", "mcts:4", "--games", "2", "--seed", "79", "--no-progress", "--json", str(report)]
    assert eval_main(argv) == 0
    (pairing,) = json.loads(report.read_text())["pairings"]
    assert pairing["games"] == 2


# ---------------------------------------------------------------------------------- packaging
def test_the_binding_and_its_algorithms_load_no_torch(ko):
    code = (
        "import sys, kahuna_env.openspiel, open_spiel.python.algorithms.ismcts\n"
        "assert 'torch' not in sys.modules, 'torch loaded'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_nothing_else_in_kahuna_env_imports_the_binding_or_pyspiel():
    """So that ``pip install kahuna-rl`` (no extra) never needs OpenSpiel."""
    importers = []
    for path in (ROOT / "kahuna_env").rglob("*.py"):
        if path.name == "openspiel.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if any(name.split(".")[0] in ("pyspiel", "open_spiel", "shimmy") or "openspiel" in name for name in names):
                importers.append(path.name)
            if module.split(".")[0] in ("pyspiel", "open_spiel", "shimmy") or module.endswith("openspiel"):
                importers.append(path.name)
    assert importers == []
