"""Batched baselines (kahuna_env.agents.batched) against the scalar greedy's choice set and the legal masks.

For every live game of a batch, :func:`greedy_best_masks` must be exactly the
set greedy's definition gives for that game, each card action stepped on a copy
(``helpers.greedy_reference``) and the scalar :func:`kahuna_env.agents.greedy.best_actions`
(the same loop on one game), and :meth:`BatchedGreedy.act` must pick inside it.
Positions come from batched play (mostly greedy, partly random, so the games
look like training games yet reach odd corners) over every variant and option,
plus hand-built positions for the rare decisions.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import greedy_reference, position
from test_vector import ALL_CONFIGS, EDGE_POSITIONS

from kahuna_env import actions as A
from kahuna_env.agents.batched import (
    BatchedGreedy,
    BatchedRandom,
    greedy_best_masks,
    make_batched_agent,
)
from kahuna_env.agents.greedy import best_actions
from kahuna_env.engine import KahunaGame
from kahuna_env.vector import KahunaBatch, sample_set_bits

CONFIGS = ALL_CONFIGS
"""Every variant and option: 2 variants x 2 discard rules x 3 handicaps x 2 first players (tests/test_vector.py)."""


def kind_of_choice(game: KahunaGame, best: list[int]) -> str:
    """Which branch of greedy's decision ``best`` comes from (by the definition, ``helpers.greedy_reference``)."""
    expected, branch = greedy_reference(game)
    assert expected == best
    return branch


def check_batch(batch: KahunaBatch, seen: dict[str, int] | None = None) -> int:
    """Every live game's batched best set equals the scalar one; returns the number of games checked."""
    masks = greedy_best_masks(batch)
    checked = 0
    for i in np.flatnonzero(~batch.over).tolist():
        game = batch.game(i)
        expected, branch = greedy_reference(game)
        got = np.flatnonzero(masks[i]).tolist()
        assert got == expected, f"game {i}: batched {got}, definition {expected}, position {batch.to_dicts([i])[0]}"
        assert best_actions(game) == expected, f"game {i}: the scalar greedy's set differs"
        checked += 1
        if seen is not None:
            for key, hit in (
                (branch, True),
                ("ties", len(expected) > 1),
                ("claim", game.claim_line is not None),
                ("setup", game.in_setup),
                ("final turns", game.final_turns_left > 0),
                ("discarding", game.discarded_this_turn > 0),
                ("must draw", game.must_draw),
                ("round 3", game.round == 3),
            ):
                seen[key] = seen.get(key, 0) + hit
    assert not masks[batch.over].any(), "finished games have no candidates"
    return checked


def test_batched_greedy_best_sets_equal_the_scalar_greedy_over_every_variant_and_option():
    n = 6 * len(CONFIGS)
    batch = KahunaBatch(n, [CONFIGS[i % len(CONFIGS)] for i in range(n)], seed=100, auto_reset=True)
    greedy, rng = BatchedGreedy(seed=1), np.random.default_rng(2)
    seen: dict[str, int] = {}
    checked = finished = captures = 0
    for _ in range(300):
        checked += check_batch(batch, seen)
        choice = greedy.act(batch, rng=rng)
        masks = greedy_best_masks(batch)
        assert masks[np.arange(n), choice].all(), "act picks inside the best set"
        actions = np.where(rng.random(n) < 0.75, choice, batch.random_actions(rng))
        opponent_before = batch.bridges[np.arange(n), 1 - batch.current_player].copy()
        placing = actions < A.REMOVE_AB
        result = batch.step(actions)
        opponent_after = batch.bridges[np.arange(n), 1 - result.player]
        captures += int((placing & ~result.reset & (opponent_after < opponent_before)).sum())
        finished += int(result.terminated.sum())
    assert checked >= 40_000
    assert finished >= 100 and captures >= 50, (finished, captures)
    # Every paid or free bridge improves the bridge difference, so a non-winning, non-improving
    # card play ("forced play") needs a position no game reaches; the other branches all occur.
    for key in ("improving play", "end of turn", "ties", "claim", "setup", "final turns", "discarding", "must draw"):
        assert seen.get(key, 0) >= 100, (key, seen)
    for key in ("winning play", "discard"):
        assert seen.get(key, 0) >= 5, (key, seen)


GREEDY_POSITIONS = {
    **EDGE_POSITIONS,  # the batched engine's edge positions: captures, round ends, final turns, claims, setup
    "removal breaks a majority": position(
        bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1, "BARI-COCO": 0},
        hands=(["ALOA", "BARI", "ALOA"], []),
    ),
    "nothing to play: draw": position(hands=([], ["KAHU"])),
    "no pile: take the first face-up card": position(hands=([], []), face_up=[None, "GOLA", "KAHU"], pile=[]),
    "five unplayable cards, must draw: discard": position(
        bridges={
            name: 0
            for name in (
                *("ALOA-BARI", "ALOA-DUDA", "ALOA-HUNA"),  # every line of ALOA, LALE and BARI: no play
                *("HUNA-LALE", "IFFI-LALE", "KAHU-LALE"),
                *("BARI-COCO", "BARI-DUDA", "BARI-ELAI", "BARI-FAAA"),
            )
        }
        | {"GOLA-JOJO": 1},
        hands=(["ALOA", "ALOA", "BARI", "LALE", "LALE"], []),
        must_draw=True,
    ),
}

EXPECTED_KIND = {
    "capture ends round 2": "winning play",
    "removal ends round 3": "winning play",
    "cascade": "improving play",
    "double capture": "improving play",
    "planning claim that captures": "improving play",
    "nothing to play: draw": "end of turn",
    "no pile: take the first face-up card": "end of turn",
    "five unplayable cards, must draw: discard": "discard",
    "hand limit after a discard": "end of turn",
}


def test_batched_greedy_on_hand_built_positions():
    names = list(GREEDY_POSITIONS)
    batch = KahunaBatch.from_dicts([GREEDY_POSITIONS[name] for name in names], seeds=list(range(len(names))))
    assert check_batch(batch) == len(names)
    masks = greedy_best_masks(batch)
    for i, name in enumerate(names):
        game = batch.game(i)
        if name in EXPECTED_KIND:
            assert kind_of_choice(game, best_actions(game)) == EXPECTED_KIND[name], name
    taking = names.index("no pile: take the first face-up card")
    assert np.flatnonzero(masks[taking]).tolist() == [A.TAKE + 1]


def test_greedy_breaks_ties_uniformly_and_only_active_games_act():
    batch = KahunaBatch.from_dicts([position(hands=(["ALOA", "KAHU"], []))] * 4)
    best = best_actions(batch.game(0))
    assert len(best) > 2
    rng = np.random.default_rng(0)
    picks = np.concatenate([BatchedGreedy().act(batch, rng=rng) for _ in range(300)])
    counts = np.bincount(picks, minlength=A.NUM_ACTIONS)[best]
    assert counts.sum() == len(picks) and counts.min() > 0.5 * len(picks) / len(best)
    active = np.array([True, False, True, False])
    actions = BatchedGreedy(seed=3).act(batch, active)
    assert actions[~active].tolist() == [0, 0] and set(actions[active].tolist()) <= set(best)
    with pytest.raises(ValueError, match="active"):
        BatchedGreedy().act(batch, np.ones(4, dtype=int))


def test_batched_random_is_uniform_over_legal_actions_and_respects_active():
    batch = KahunaBatch(64, [CONFIGS[i % len(CONFIGS)] for i in range(64)], seed=7)
    agent, rng = BatchedRandom(seed=5), np.random.default_rng(9)
    for _ in range(40):
        active = rng.random(64) < 0.5
        actions = agent.act(batch, active, rng)
        legal = batch.legal_masks()
        live = active & ~batch.over
        assert legal[np.flatnonzero(live), actions[live]].all()
        assert (actions[~live] == 0).all()
        batch.step(np.where(live, actions, batch.random_actions(rng)))
    single = KahunaBatch.from_dicts([position(hands=(["ALOA", "KAHU"], []))])
    legal = np.flatnonzero(single.legal_masks()[0])
    picks = np.array([agent.act(single)[0] for _ in range(4000)])
    counts = np.bincount(picks, minlength=A.NUM_ACTIONS)[legal]
    assert counts.sum() == len(picks) and counts.min() > 0.6 * len(picks) / len(legal)


def test_sample_set_bits_picks_set_bits_uniformly():
    rng = np.random.default_rng(0)
    candidates = rng.random((2000, 192)) < 0.02
    candidates[0] = False
    candidates[1] = False
    candidates[1, [3, 70, 150]] = True
    words = np.packbits(candidates, axis=1, bitorder="little").view("<u8")
    picks = sample_set_bits(words, rng)
    assert picks[0] == 0 and candidates[np.arange(1, 2000), picks[1:]][candidates[1:].any(1)].all()
    repeated = np.repeat(words[1:2], 3000, axis=0)
    counts = np.bincount(sample_set_bits(repeated, rng), minlength=192)[[3, 70, 150]]
    assert counts.sum() == 3000 and counts.min() > 800
    with pytest.raises(ValueError, match="words"):
        sample_set_bits(np.zeros((2, 4), dtype=np.uint64), rng)


def test_batched_greedy_beats_batched_random_in_at_least_97_percent_of_200_seat_balanced_games():
    n = 200
    batch = KahunaBatch(n, seed=11)
    greedy, random_agent, rng = BatchedGreedy(seed=1), BatchedRandom(seed=2), np.random.default_rng(3)
    greedy_seat = np.arange(n) % 2
    while not batch.over.all():
        greedy_turn = batch.current_player == greedy_seat
        actions = np.where(greedy_turn, greedy.act(batch, greedy_turn, rng), random_agent.act(batch, ~greedy_turn))
        batch.step(actions)
    score = np.where(batch.winner == greedy_seat, 1.0, np.where(batch.winner < 0, 0.5, 0.0)).mean()
    assert score >= 0.97


def test_make_batched_agent_names_the_baselines_with_a_batched_form():
    assert isinstance(make_batched_agent("greedy", seed=1), BatchedGreedy)
    assert isinstance(make_batched_agent("random"), BatchedRandom)
    with pytest.raises(ValueError, match="batched baseline agents are random, greedy"):
        make_batched_agent("mcts")
