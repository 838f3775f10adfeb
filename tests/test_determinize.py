"""KahunaGame.determinize: one information-set sample that keeps everything the viewer can see."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
from helpers import check_invariants, game_at

from kahuna_env import actions as A
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation


def _random_states(count: int):
    chooser = random.Random(5)
    for seed in range(count):
        game = KahunaGame(KahunaConfig(variant="planning" if seed % 2 else "standard"), seed=seed)
        for _ in range(chooser.randrange(0, 250)):
            if game.is_over:
                break
            game.step(chooser.choice(game.legal_actions()))
        yield game


def test_determinization_keeps_the_viewers_information_and_conserves_cards():
    rng = np.random.default_rng(0)
    for game in _random_states(60):
        for viewer in (0, 1):
            view = game.determinize(viewer, rng)
            check_invariants(view)
            opponent = 1 - viewer
            assert view.hand(viewer) == game.hand(viewer)
            assert view.hand_size(opponent) == game.hand_size(opponent)
            assert view.pile_size == game.pile_size and view.face_up == game.face_up
            assert view.face_down_discards(viewer) == game.face_down_discards(viewer)
            assert sum(view.face_down_discards(opponent)) == sum(game.face_down_discards(opponent))
            known = Counter({i: n for i, n in enumerate(game.known_cards(opponent)) if n})
            assert not known - Counter(view.hand(opponent)), "known face-up takes stay in the hand"
            assert np.array_equal(encode_observation(view, viewer), encode_observation(game, viewer))
            if game.current_player == viewer:
                assert view.legal_actions() == game.legal_actions()


def test_determinization_resamples_the_hidden_cards():
    game = KahunaGame(seed=3)
    rng = np.random.default_rng(1)
    hands = {tuple(game.determinize(0, rng).hand(1)) for _ in range(30)}
    piles = {tuple(game.determinize(0, rng).to_dict()["pile"]) for _ in range(30)}
    assert len(hands) > 5 and len(piles) > 20


def test_determinization_does_not_depend_on_the_true_hidden_cards():
    # Same public history, different opponent hand and pile: the same rng gives the same sample.
    first = game_at(
        hands=(["ALOA", "BARI"], ["COCO", "DUDA"]), pile=["ELAI", "HUNA", "IFFI"], face_up=["FAAA", "GOLA", "KAHU"]
    )
    second = game_at(
        hands=(["ALOA", "BARI"], ["HUNA", "IFFI"]), pile=["DUDA", "COCO", "ELAI"], face_up=["FAAA", "GOLA", "KAHU"]
    )
    a = first.determinize(0, np.random.default_rng(9))
    b = second.determinize(0, np.random.default_rng(9))
    assert a.to_dict() == b.to_dict()


def test_determinization_gets_its_own_generator_for_reshuffles():
    game = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1}, hands=(["ALOA"], []), face_up=[None, "GOLA", None], pile=[], seed=4
    )
    twin = game.clone()
    view = game.determinize(0, np.random.default_rng(123))
    for g in (game, twin, view):
        g.step(A.TAKE + 1)
    assert game.to_dict() == twin.to_dict(), "a clone replays the same reshuffle"
    assert view.to_dict()["pile"] != game.to_dict()["pile"], "a determinization does not see the real reshuffle"
