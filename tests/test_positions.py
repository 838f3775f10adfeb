"""Position format (docs/RULES.md, "Positions" and "Position validation"): round trips and validation."""

from __future__ import annotations

import copy
import json
import random

import pytest
from helpers import game_at, position

from kahuna_env import actions as A
from kahuna_env.engine import KahunaConfig, KahunaGame


def _played_positions(count: int = 40):
    rng = random.Random(7)
    configs = [
        KahunaConfig(),
        KahunaConfig(variant="planning", handicap=(1, 2)),
        KahunaConfig(discard_rule="hand_limit"),
    ]
    for k in range(count):
        game = KahunaGame(configs[k % 3], seed=k)
        for _ in range(rng.randrange(0, 300)):
            if game.is_over:
                break
            game.step(rng.choice(game.legal_actions()))
        yield game


def test_to_dict_has_the_fixed_keys_of_the_spec():
    d = KahunaGame(seed=0).to_dict()
    for key in ("bridges", "hands", "face_up", "pile", "discard", "current_player", "round", "scores"):
        assert key in d
    assert len(d["bridges"]) == 27 and len(d["face_up"]) == 3 and len(d["pile"]) == 15


def test_to_dict_is_json_serialisable_and_round_trips_exactly():
    for game in _played_positions():
        d = game.to_dict()
        restored = KahunaGame.from_dict(json.loads(json.dumps(d)))
        assert restored.to_dict() == d
        assert restored.legal_actions() == game.legal_actions()
        assert restored.is_over == game.is_over and restored.winner == game.winner


def test_restored_game_plays_on_identically_until_a_reshuffle():
    for game in _played_positions(20):
        copy_ = KahunaGame.from_dict(game.to_dict())
        rng = random.Random(1)
        start_round = game.round
        while not game.is_over and game.round == start_round:
            action = rng.choice(game.legal_actions())
            game.step(action)
            copy_.step(action)
            if game.round == start_round:  # a reshuffle uses each game's own generator
                assert copy_.to_dict() == game.to_dict()


def test_pile_is_listed_top_first():
    game = game_at(hands=([], []), pile=["LALE", "KAHU"], discard=[])
    assert game.to_dict()["pile"][:2] == ["LALE", "KAHU"]
    game.step(A.DRAW)
    assert game.hand(0) == [11]


def test_minimal_position_means_start_of_turn_without_variant_or_handicap():
    game = KahunaGame.from_dict(position(hands=(["ALOA"], [])))
    assert game.config == KahunaConfig()
    assert game.cards_played_this_turn == 0 and not game.must_draw and not game.in_setup
    assert game.claim_line is None


def test_spec_example_face_up_with_an_empty_slot_is_accepted():
    game = game_at(face_up=["BARI", None, "COCO"])
    assert game.face_up == [1, None, 2]


def test_position_in_round_two_without_bridges_loads_as_a_finished_game():
    game = game_at(bridges={"ALOA-BARI": 0}, round=2)
    assert game.is_over and game.winner == 0


def test_from_dict_seed_drives_the_reshuffle():
    d = position(bridges={"ALOA-BARI": 0, "KAHU-LALE": 1}, hands=(["ALOA"], []), face_up=[None, "GOLA", None], pile=[])
    games = [KahunaGame.from_dict(d, seed=s) for s in (1, 1, 2)]
    for game in games:
        game.step(A.TAKE + 1)
    assert games[0].to_dict() == games[1].to_dict()
    assert games[0].to_dict()["pile"] != games[2].to_dict()["pile"]


def _broken(**changes):
    d = position(bridges={"ALOA-BARI": 0}, hands=(["ALOA", "BARI"], ["COCO"]))
    for key, value in changes.items():
        if value is KeyError:
            del d[key]
        else:
            d[key] = value
    return d


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pile": KeyError}, r"missing required key\(s\) \['pile'\]"),
        ({"colour": "red"}, r"unknown key\(s\) \['colour'\]"),
        ({"bridges": [None] * 26}, r"'bridges' must have 27 entries"),
        ({"bridges": [2] + [None] * 26}, r"'bridges'\[0\] \(ALOA-BARI\) must be null, 0 or 1"),
        ({"bridges": [0] * 27}, r"player 0 has 27 bridges, at most 25"),
        ({"hands": [["ALOA"]]}, r"'hands' must have 2 entries"),
        ({"hands": [["ATLANTIS", "BARI"], ["COCO"]]}, r"'hands\[0\]\[0\]': 'ATLANTIS' is not an island name"),
        ({"face_up": ["FAAA", "GOLA"]}, r"'face_up' must have 3 entries"),
        ({"current_player": 2}, r"'current_player' must be 0 or 1"),
        ({"round": 4}, r"'round' must be 1, 2 or 3"),
        ({"scores": [0, -1]}, r"'scores' must be two integers in 0..15"),
        ({"scores": [16, 0]}, r"'scores' must be two integers in 0..15"),
        ({"pile": "DUDA"}, r"'pile' must be a list"),
        ({"config": {"variant": "chaos"}}, r"'config': variant must be one of"),
        ({"config": {"speed": 3}}, r"unknown config option\(s\) \['speed'\]"),
        ({"must_draw": "yes"}, r"'must_draw' must be true or false"),
        ({"played_this_turn": 1, "discarded_this_turn": 1}, r"cannot have both"),
        ({"setup_left": 2}, r"'setup_left' is above 0 but the config has no handicap"),
        ({"claim_line": 5}, r"only possible in the planning variant"),
        ({"final_turns_left": 1}, r"needs round 3 with an empty pile"),
        ({"winner": 0}, r"'winner' is set but 'over' is not true"),
        ({"known": [["COCO"], []]}, r"'known'\[0\] cards must all be in 'hands'\[0\]"),
        ({"face_down": [["ALOA"], []]}, r"'face_down' cards must all be among the 'discard' cards"),
    ],
)
def test_malformed_position_is_rejected_with_a_message_naming_the_problem(changes, message):
    with pytest.raises(ValueError, match=message):
        KahunaGame.from_dict(_broken(**changes))


def test_wrong_card_counts_are_rejected_naming_the_islands():
    d = position(hands=(["ALOA", "BARI"], ["COCO"]))
    d["pile"] = d["pile"][1:]  # lose one card
    with pytest.raises(ValueError, match=r"exactly 2 cards of each island; wrong counts: \w+ x1"):
        KahunaGame.from_dict(d)
    d = position(hands=(["ALOA", "BARI"], ["COCO"]))
    d["discard"] = ["ALOA"]  # a third ALOA
    with pytest.raises(ValueError, match=r"ALOA x3"):
        KahunaGame.from_dict(d)


def test_hand_of_six_is_rejected():
    d = position(hands=(["ALOA", "ALOA", "BARI", "BARI", "COCO", "COCO"], []))
    with pytest.raises(ValueError, match=r"'hands'\[0\] holds 6 cards, at most 5"):
        KahunaGame.from_dict(d)


def test_non_dict_position_is_rejected():
    with pytest.raises(ValueError, match="position must be a dict"):
        KahunaGame.from_dict([1, 2, 3])


def test_from_dict_does_not_modify_its_input():
    d = position(bridges={"ALOA-BARI": 0}, hands=(["ALOA"], []))
    before = copy.deepcopy(d)
    game = KahunaGame.from_dict(d)
    game.step(A.DRAW)
    assert d == before
