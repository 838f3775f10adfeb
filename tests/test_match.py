"""The scalar play loop (``kahuna_env.match.play``): one game, a chooser per seat, and where it stops."""

from __future__ import annotations

import numpy as np
import pytest

from kahuna_env.agents import GreedyAgent, RandomAgent, choose_action
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.match import agent_chooser, play


def _hand_played(seed: int, agents: list, rng_seed: int) -> tuple[list[int], KahunaGame]:
    """The oracle: the game the agents play asked one by one through ``choose_action``."""
    game = KahunaGame(seed=seed)
    rng = np.random.default_rng(rng_seed)
    actions = []
    while not game.is_over:
        action = choose_action(agents[game.current_player], game, rng)
        game.step(action)
        actions.append(action)
    return actions, game


@pytest.mark.parametrize("seed", [0, 7])
def test_agent_choosers_play_the_game_choose_action_plays(seed: int) -> None:
    expected, finished = _hand_played(seed, [GreedyAgent(seed=1), RandomAgent(seed=2)], rng_seed=3)
    game = KahunaGame(seed=seed)
    rng = np.random.default_rng(3)
    actions = play(game, [agent_chooser(GreedyAgent(seed=1), rng), agent_chooser(RandomAgent(seed=2), rng)])
    assert actions == expected and all(type(action) is int for action in actions)
    assert game.is_over and game.scores == finished.scores


def test_a_seat_without_a_chooser_stops_the_loop_at_its_turn() -> None:
    game = KahunaGame(seed=4)
    first = game.current_player
    choosers = [None, None]
    choosers[first] = agent_chooser(RandomAgent(seed=0), np.random.default_rng(0))
    played = play(game, choosers)
    assert played, "the chooser's seat moves first, so it plays its whole turn"
    assert not game.is_over and game.current_player == 1 - first
    assert play(game, choosers) == [], "the caller's seat is to move: nothing is played"


def test_a_chooser_returning_none_leaves_the_game_unfinished() -> None:
    game = KahunaGame(seed=5)
    answers = iter([int(np.flatnonzero(game.action_mask())[0]), None])
    played = play(game, [lambda _game: next(answers)] * 2)
    assert len(played) == 1 and not game.is_over


@pytest.mark.parametrize("limit", [0, 1, 9])
def test_max_actions_caps_the_actions_played(limit: int) -> None:
    expected, _ = _hand_played(6, [RandomAgent(seed=0), RandomAgent(seed=1)], rng_seed=0)
    game = KahunaGame(seed=6)
    rng = np.random.default_rng(0)
    played = play(game, [agent_chooser(RandomAgent(seed=0), rng), agent_chooser(RandomAgent(seed=1), rng)], None, limit)
    assert played == expected[:limit]


def test_on_action_sees_the_player_the_action_and_the_game_after_it() -> None:
    game = KahunaGame(seed=8)
    seen: list[tuple[int, int, dict]] = []

    def on_action(player: int, action: int, after: KahunaGame) -> None:
        assert after is game
        seen.append((player, action, after.to_dict()))

    rng = np.random.default_rng(1)
    played = play(game, [agent_chooser(RandomAgent(seed=3), rng)] * 2, on_action, max_actions=20)
    replay = KahunaGame(seed=8)
    expected = []
    for action in played:
        player = replay.current_player
        replay.step(action)
        expected.append((player, action, replay.to_dict()))
    assert len(seen) == 20 and seen == expected


@pytest.mark.parametrize("bad", [2.0, True, "3"])
def test_an_action_that_is_not_an_integer_is_refused_before_anything_changes(bad: object) -> None:
    game = KahunaGame(seed=9)
    before = game.to_dict()
    with pytest.raises(IllegalActionError, match="action must be an integer"):
        play(game, [lambda _game: bad] * 2)
    assert game.to_dict() == before
