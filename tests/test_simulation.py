"""Random-simulation invariant tests: thousands of seeded games, checked after every action."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import check_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

from kahuna_env import actions as A
from kahuna_env.arrays import STATE_DTYPE
from kahuna_env.board import ISLAND_LINE_MASK, NUM_ISLANDS
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame

CONFIGS = [
    KahunaConfig(),
    KahunaConfig(variant="planning"),
    KahunaConfig(discard_rule="hand_limit", first_player=1),
    KahunaConfig(variant="planning", handicap=(0, 3), discard_rule="hand_limit"),
    KahunaConfig(handicap=(1, 1), first_player=1),
]
MAX_ACTIONS = 5000


def _bridge_masks(game: KahunaGame) -> tuple[int, int]:
    owners = [game.owner(line) for line in range(27)]
    return tuple(sum(1 << line for line, owner in enumerate(owners) if owner == p) for p in (0, 1))


def _controls(game: KahunaGame) -> list[int | None]:
    return [game.controller(i) for i in range(NUM_ISLANDS)]


def play_checked(game: KahunaGame, chooser: random.Random, full_check_every: int = 1) -> list[int]:
    """Play a random game to the end, checking the invariants; return the actions."""
    history = []
    while not game.is_over:
        assert len(history) < MAX_ACTIONS, "game did not terminate"
        before = _controls(game)
        action = chooser.choice(game.legal_actions())
        player = game.current_player
        game.step(action)
        history.append(action)
        after = _controls(game)
        masks = _bridge_masks(game)
        for island in range(NUM_ISLANDS):
            if after[island] is not None and before[island] != after[island]:
                # Control only ever comes from a placement, and the taker's opponent has no bridge there.
                assert action < A.REMOVE_AB or action >= A.FREE_BRIDGE, A.describe_action(action)
                taker = after[island]
                assert taker == player
                assert not masks[1 - taker] & ISLAND_LINE_MASK[island]
        if len(history) % full_check_every == 0:
            check_invariants(game)
    check_invariants(game)
    return history


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.variant}-{c.discard_rule}-{c.handicap}")
def test_random_games_keep_every_invariant(config):
    chooser = random.Random(42)
    for seed in range(80):
        play_checked(KahunaGame(config, seed=seed), chooser)


def test_two_thousand_random_games_terminate_with_cards_and_control_consistent():
    chooser = random.Random(3)
    outcomes = {0: 0, 1: 0, None: 0}
    for seed in range(2000):
        game = KahunaGame(CONFIGS[seed % len(CONFIGS)], seed=seed)
        play_checked(game, chooser, full_check_every=40)
        outcomes[game.winner] += 1
    assert outcomes[0] > 500 and outcomes[1] > 500, outcomes


def test_same_seed_replays_the_same_game():
    first = KahunaGame(CONFIGS[0], seed=99)
    second = KahunaGame(CONFIGS[0], seed=99)
    history_a = play_checked(first, random.Random(5), full_check_every=50)
    history_b = play_checked(second, random.Random(5), full_check_every=50)
    assert history_a == history_b
    assert first.to_dict() == second.to_dict()
    assert first.round == 3 and first.is_over


def test_every_legal_action_applies_and_every_illegal_one_raises_leaving_the_state_unchanged():
    chooser = random.Random(11)
    for seed in range(12):
        game = KahunaGame(CONFIGS[seed % len(CONFIGS)], seed=seed)
        step = 0
        while not game.is_over:
            if step % 9 == 0:
                legal = set(game.legal_actions())
                for action in range(A.NUM_ACTIONS):
                    trial = game.clone()
                    if action in legal:
                        trial.step(action)
                        check_invariants(trial)
                    else:
                        before = trial.to_dict()
                        with pytest.raises(IllegalActionError):
                            trial.step(action)
                        assert trial.to_dict() == before
                        assert trial.legal_actions() == game.legal_actions()
            game.step(chooser.choice(game.legal_actions()))
            step += 1


def test_clone_is_independent_of_the_original():
    game = KahunaGame(seed=1)
    twin = game.clone()
    play_checked(twin, random.Random(0), full_check_every=100)
    assert game.to_dict() == KahunaGame(seed=1).to_dict()


def test_clone_copies_every_state_field_and_shares_no_memory():
    # The game is one record of kahuna_env.arrays.STATE_DTYPE: clone copies all of it, sharing nothing.
    game = KahunaGame(KahunaConfig(variant="planning"), seed=2)
    rng = random.Random(3)
    for _ in range(40):
        game.step(rng.choice(game.legal_actions()))
    twin = game.clone()
    for name in STATE_DTYPE.names:
        assert np.array_equal(game._state[name], twin._state[name]), name
    assert not np.shares_memory(game._state, twin._state)
    twin.step(twin.legal_actions()[0])
    assert game.legal_actions() == KahunaGame.from_dict(game.to_dict()).legal_actions()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    config_index=st.integers(0, len(CONFIGS) - 1),
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=400),
)
def test_hypothesis_action_sequences_keep_the_invariants(seed, config_index, choices):
    game = KahunaGame(CONFIGS[config_index], seed=seed)
    for choice in choices:
        if game.is_over:
            break
        legal = game.legal_actions()
        assert legal == [int(a) for a in game.action_mask().nonzero()[0]]
        before = _controls(game)
        action = legal[choice % len(legal)]
        game.step(action)
        if A.REMOVE_AB <= action < A.FREE_BRIDGE:
            after = _controls(game)
            assert all(a is None or a == b for a, b in zip(after, before, strict=True)), "only placements give control"
        check_invariants(game)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), steps=st.integers(0, 200), action=st.integers(0, A.NUM_ACTIONS - 1))
def test_hypothesis_illegal_actions_raise_and_change_nothing(seed, steps, action):
    game = KahunaGame(seed=seed)
    chooser = random.Random(seed)
    for _ in range(steps):
        if game.is_over:
            break
        game.step(chooser.choice(game.legal_actions()))
    if action in game.legal_actions():
        return
    before = game.to_dict()
    with pytest.raises(IllegalActionError):
        game.step(action)
    assert game.to_dict() == before


def test_a_pickled_game_plays_on_as_the_original_and_a_truncated_state_is_refused():
    import pickle

    game = KahunaGame(KahunaConfig(variant="planning"), seed=4)
    rng = random.Random(5)
    for _ in range(60):
        game.step(rng.choice(game.legal_actions()))
    twin = pickle.loads(pickle.dumps(game))
    assert twin.to_dict() == game.to_dict() and twin.legal_actions() == game.legal_actions()
    while not game.is_over:  # the same chance too: the generator's state travels with the record
        action = rng.choice(game.legal_actions())
        game.step(action)
        twin.step(action)
        assert twin.to_dict() == game.to_dict()
    config, data, code = game.__getstate__()
    with pytest.raises(ValueError, match=r"a pickled KahunaGame holds 10 bytes, expected \d+"):
        KahunaGame.__new__(KahunaGame).__setstate__((config, data[:10], code))
