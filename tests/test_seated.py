"""The seated-play driver (``kahuna_env.seated``) against the scalar engine, its oracle."""

from __future__ import annotations

import numpy as np
import pytest

from kahuna_env.agents import GreedyAgent, RandomAgent, choose_action
from kahuna_env.agents.batched import BatchedGreedy, BatchedRandom
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_env.seated import AWAIT, BaselinePolicy, BatchPolicy, PerGamePolicy, play_seated, seating_of
from kahuna_env.vector import KahunaBatch

CONFIGS = [
    KahunaConfig(),
    KahunaConfig(variant="planning"),
    KahunaConfig(handicap=(1, 2)),
    KahunaConfig(discard_rule="hand_limit", first_player=1),
]


class Recording:
    """A policy that records, with the driver's tick (counted by ``on_step``), what it answered."""

    def __init__(self, policy: BatchPolicy, clock: list[int]) -> None:
        self.policy = policy
        self.clock = clock
        self.moves: list[tuple[int, np.ndarray, np.ndarray]] = []

    def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
        actions = self.policy.act(batch, rows)
        self.moves.append((self.clock[0], rows.copy(), np.asarray(actions).copy()))
        return actions


def _batch(configs: list[KahunaConfig], seed: int) -> tuple[KahunaBatch, list[int]]:
    game_seeds = [int(s) for s in np.random.default_rng(seed).integers(2**63, size=len(configs))]
    batch = KahunaBatch(len(configs), configs, seed=0)
    batch.reset(game_seeds=game_seeds)
    return batch, game_seeds


def test_seated_games_equal_the_scalar_engines_move_for_move():
    """Greedy against random (both batched) in every rule option: each game, replayed action for
    action in ``KahunaGame(config, seed=game seed)``, has the seats the seating gives, is legal at
    every step and ends as in the batch."""
    configs = CONFIGS * 6
    count = len(configs)
    batch, game_seeds = _batch(configs, seed=1)
    clock = [0]
    greedy = Recording(BaselinePolicy(BatchedGreedy(seed=2)), clock)
    random = Recording(BaselinePolicy(BatchedRandom(seed=3)), clock)
    greedy_seat = np.arange(count) % 2
    seating = seating_of(greedy_seat[:, None] == np.arange(2)[None, :], 0, 1)

    def tick(_) -> None:
        clock[0] += 1

    played = play_seated(batch, [greedy, random], seating, on_step=tick)
    assert batch.over.all()
    moves = {}  # (game, tick) -> (policy, action)
    for index, policy in enumerate((greedy, random)):
        for when, rows, actions in policy.moves:
            for g, action in zip(rows.tolist(), actions.tolist(), strict=True):
                assert (g, when) not in moves  # one action per game per tick
                moves[g, when] = (index, action)
    assert played == len(moves)
    for g, (config, game_seed) in enumerate(zip(configs, game_seeds, strict=True)):
        game = KahunaGame(config, seed=game_seed)
        for when in range(clock[0]):
            if (g, when) not in moves:
                continue
            index, action = moves[g, when]
            assert index == (0 if game.current_player == greedy_seat[g] else 1)
            assert action in game.legal_actions()
            game.step(action)
        assert game.is_over
        assert (-1 if game.winner is None else game.winner) == int(batch.winner[g])
        assert game.scores == batch.scores[g].tolist()


def test_per_game_agents_play_the_games_of_choose_action_in_the_scalar_engine():
    """A scalar agent per game through the driver: the very game it plays alone, determinizations included."""
    configs = CONFIGS * 2
    batch, game_seeds = _batch(configs, seed=4)
    count = len(configs)
    first = [GreedyAgent(seed=10 + g) for g in range(count)]
    second = [RandomAgent(seed=20 + g) for g in range(count)]
    rngs = [np.random.default_rng(30 + g) for g in range(count)]
    seating = np.tile([0, 1], (count, 1))
    play_seated(batch, [PerGamePolicy(first, rngs), PerGamePolicy(second, rngs)], seating)
    for g, (config, game_seed) in enumerate(zip(configs, game_seeds, strict=True)):
        game = KahunaGame(config, seed=game_seed)
        seats = [GreedyAgent(seed=10 + g), RandomAgent(seed=20 + g)]
        rng = np.random.default_rng(30 + g)
        while not game.is_over:
            game.step(choose_action(seats[game.current_player], game, rng))
        assert game.to_dict()["scores"] == batch.scores[g].tolist()
        assert (-1 if game.winner is None else game.winner) == int(batch.winner[g])
        assert batch.to_dicts([g])[0]["bridges"] == game.to_dict()["bridges"]


def test_the_driver_stops_where_the_caller_must_act():
    batch, _ = _batch(CONFIGS * 3, seed=5)
    seating = np.tile([AWAIT, 0], (len(batch), 1))
    played = play_seated(batch, [BaselinePolicy(BatchedRandom(seed=1))], seating)
    assert played > 0
    assert ((batch.current_player == 0) | batch.over).all()
    assert play_seated(batch, [BaselinePolicy(BatchedRandom(seed=1))], seating) == 0  # nothing left to it


def test_on_step_may_deal_again_and_the_seating_is_read_every_tick():
    batch, _ = _batch([KahunaConfig()] * 4, seed=6)
    seating = np.zeros((4, 2), dtype=np.intp)
    dealt = []

    def deal_once(result) -> None:
        ended = np.flatnonzero(result.terminated)
        if len(ended) and not dealt:
            dealt.extend(ended.tolist())
            batch.reset(ended, game_seeds=[99] * len(ended))
            seating[ended] = AWAIT  # the new games wait for the caller

    play_seated(batch, [BaselinePolicy(BatchedRandom(seed=2))], seating, on_step=deal_once)
    assert dealt
    assert not batch.over[dealt].any()  # dealt again and left to the caller
    assert batch.over[[g for g in range(4) if g not in dealt]].all()


def test_an_illegal_action_raises_naming_the_game_and_changes_nothing():
    batch, _ = _batch([KahunaConfig()] * 3, seed=7)
    before = batch.to_dicts()

    class Stubborn:
        def act(self, batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
            return np.full(len(rows), 54)  # remove on line 0: no bridge there at the start of a game

    with pytest.raises(IllegalActionError, match="game 0"):
        play_seated(batch, [Stubborn()], np.zeros((3, 2), dtype=np.intp))
    assert batch.to_dicts() == before


def test_baseline_policies_answer_as_their_agents_do():
    batch, _ = _batch(CONFIGS * 4, seed=8)
    rows = np.flatnonzero(batch.current_player == 1)
    active = np.zeros(len(batch), dtype=bool)
    active[rows] = True
    for agent_type in (BatchedGreedy, BatchedRandom):
        adapted = BaselinePolicy(agent_type(seed=3)).act(batch, rows)
        np.testing.assert_array_equal(adapted, agent_type(seed=3).act(batch, active)[rows])
    assert isinstance(BaselinePolicy(BatchedRandom()), BatchPolicy)
    assert isinstance(PerGamePolicy(RandomAgent(), np.random.default_rng()), BatchPolicy)


def test_seating_of_puts_the_learner_where_its_seats_are():
    learner = np.array([[True, False], [False, True], [True, True]])
    np.testing.assert_array_equal(seating_of(learner, 0, np.array([2, 3, 4])), [[0, 2], [3, 0], [0, 0]])
    np.testing.assert_array_equal(seating_of(learner, AWAIT, 1), [[AWAIT, 1], [1, AWAIT], [AWAIT, AWAIT]])
