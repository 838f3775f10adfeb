"""Baseline agents: make_agent names, legality, strength of greedy, and no reading of hidden information."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import LINE, game_at, midgame_positions

from kahuna_env import actions as A
from kahuna_env.agents import BASELINES, GreedyAgent, MCTSAgent, RandomAgent, choose_action, make_agent
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import encode_observation


def _seat_balanced_score(first: str, second: str, games: int, seed: int = 0) -> float:
    """Score of ``first`` over ``games`` games, each deal played twice with the seats swapped."""
    score = 0.0
    for k in range(games):
        players = [make_agent(first, seed=seed + k), make_agent(second, seed=seed + 10_000 + k)]
        seat_of_first = k % 2
        seats = players if seat_of_first == 0 else players[::-1]
        game = KahunaGame(seed=seed + k // 2)
        rng = np.random.default_rng(seed + k)
        while not game.is_over:
            game.step(choose_action(seats[game.current_player], game, rng))
        score += 0.5 if game.winner is None else float(game.winner == seat_of_first)
    return score / games


def test_greedy_beats_random_in_at_least_97_percent_of_200_seat_balanced_games():
    assert _seat_balanced_score("greedy", "random", games=200) >= 0.97


def test_make_agent_builds_every_baseline_by_name():
    assert isinstance(make_agent("random"), RandomAgent)
    assert isinstance(make_agent("greedy"), GreedyAgent)
    assert isinstance(make_agent("mcts"), MCTSAgent)
    assert set(BASELINES) == {"random", "greedy", "mcts"}


def test_make_agent_reads_a_simulation_budget_from_the_name_or_a_keyword():
    assert make_agent("mcts:37").simulations == 37
    assert make_agent("mcts", simulations=12).simulations == 12


@pytest.mark.parametrize("name", ["alphazero", "greedy:3", "mcts-8"])
def test_make_agent_rejects_unknown_names_listing_the_baselines(name):
    with pytest.raises(ValueError, match=r"baseline agents are random, greedy, mcts, mcts:N"):
        make_agent(name)


@pytest.mark.parametrize("budget", ["0", "many", "", "²", "-3", "1.5", " 8", "٣"])
def test_make_agent_says_the_mcts_budget_must_be_a_positive_integer(budget):
    # '²' and '٣' pass str.isdigit() but int() refuses or misreads them: the message names the budget.
    message = f"bad simulation budget in 'mcts:{budget}': mcts budget must be a positive integer, got '{budget}'"
    with pytest.raises(ValueError) as error:
        make_agent(f"mcts:{budget}")
    assert str(error.value) == message


def test_make_agent_rejects_options_for_agents_without_any():
    with pytest.raises(ValueError, match="takes no options"):
        make_agent("greedy", simulations=5)


@pytest.mark.parametrize("name", ["random", "greedy", "mcts:8"])
def test_agents_only_play_legal_actions(name):
    agent = make_agent(name, seed=1)
    game = KahunaGame(seed=2)
    rng = np.random.default_rng(3)
    while not game.is_over:
        action = choose_action(agent, game, rng)
        assert game.is_legal(action)
        game.step(action)


def test_random_agent_spreads_its_choices_over_the_legal_actions():
    game = KahunaGame(seed=4)
    agent = RandomAgent(seed=0)
    rng = np.random.default_rng(0)
    chosen = {choose_action(agent, game, rng) for _ in range(400)}
    assert chosen == set(game.legal_actions())


def test_greedy_draws_when_it_has_no_card_to_play():
    game = game_at(hands=([], ["ALOA"]))
    assert choose_action(GreedyAgent(seed=0), game, np.random.default_rng(0)) == A.DRAW


def test_greedy_takes_control_of_an_island_when_one_card_does_it():
    game = game_at(bridges={"ALOA-BARI": 0}, hands=(["ALOA", "KAHU"], ["LALE"]))
    action = choose_action(GreedyAgent(seed=0), game, np.random.default_rng(0))
    assert action in (A.place_action(LINE["ALOA-DUDA"], "ALOA"), A.place_action(LINE["ALOA-HUNA"], "ALOA"))


@pytest.mark.parametrize("name", ["random", "greedy", "mcts:12"])
def test_agents_never_read_information_their_seat_cannot_see(name):
    """A twin game with the same public history but re-dealt hidden cards gets the same decision."""
    changed = 0
    for k, game in enumerate(midgame_positions(24)):
        player = game.current_player
        twin = game.determinize(player, np.random.default_rng(100 + k))  # a real game, hidden cards re-dealt
        changed += twin.hand(1 - player) != game.hand(1 - player) or twin.to_dict()["pile"] != game.to_dict()["pile"]
        assert np.array_equal(encode_observation(twin, player), encode_observation(game, player))
        decisions = []
        for real in (game, twin):
            agent = make_agent(name, seed=7)
            decisions.append(choose_action(agent, real, np.random.default_rng(11)))
        assert decisions[0] == decisions[1], f"{name} decided differently with different hidden cards"
    assert changed >= 15, "the twins must really differ in hidden cards for the test to mean anything"


def test_greedy_chooses_what_stepping_a_copy_of_the_game_for_each_card_action_gives():
    """Greedy's loop (each card action on a scratch copy of the board) against its definition, stepped in Python."""
    from helpers import greedy_reference

    from kahuna_env.agents.greedy import best_actions
    from kahuna_env.engine import KahunaConfig, KahunaGame

    chooser = random.Random(8)
    checked = 0
    branches: dict[str, int] = {}
    for seed in range(60):
        config = KahunaConfig(
            variant="planning" if seed % 2 else "standard", handicap=(0, 2) if seed % 3 == 0 else None
        )
        game = KahunaGame(config, seed=seed)
        while not game.is_over:
            expected, branch = greedy_reference(game)
            assert best_actions(game) == expected, game.to_dict()
            branches[branch] = branches.get(branch, 0) + 1
            checked += 1
            game.step(chooser.choice(game.legal_actions()))
    assert checked > 5_000
    assert branches.get("improving play", 0) > 500 and branches.get("end of turn", 0) > 500, branches


def test_the_game_after_an_action_is_a_stepped_copy_and_a_scratch_game_is_reused():
    """Greedy asks the rules what a card action would do (``KahunaGame.after``, on a reused scratch copy)."""
    from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame

    chooser = random.Random(8)
    checked = 0
    for seed in range(12):
        config = KahunaConfig(
            variant="planning" if seed % 2 else "standard", handicap=(0, 2) if seed % 3 == 0 else None
        )
        game = KahunaGame(config, seed=seed)
        scratch = game.clone()
        while not game.is_over:
            before = game.to_dict()
            for action in game.legal_actions()[::3]:
                child = game.clone()
                child.step(action)
                after = game.after(action, scratch)
                assert after is scratch and after.to_dict() == child.to_dict()
                assert after.legal_actions() == child.legal_actions() and after.is_over == child.is_over
                assert game.to_dict() == before
                checked += 1
            illegal = next(a for a in range(179) if not game.action_mask()[a])
            with pytest.raises(IllegalActionError):
                game.after(illegal, scratch)
            assert game.to_dict() == before
            game.step(chooser.choice(game.legal_actions()))
    assert checked > 1_000
