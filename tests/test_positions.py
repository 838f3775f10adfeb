"""Position format (docs/RULES.md, "Positions" and "Position validation"): round trips and validation."""

from __future__ import annotations

import copy
import dataclasses
import json
import random

import numpy as np
import pytest
from helpers import LINE, final_turns_position, game_at, position

from kahuna_env import actions as A
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.positions import parse_position


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
    assert game.played_this_turn == 0 and not game.must_draw and not game.in_setup
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
        ({"round": 4}, r"'round' must be 1, 2 or 3, got 4"),
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


# --- positions that cannot arise in play (docs/RULES.md, "Position validation") ----------------------

FIVE = ["ALOA", "BARI", "COCO", "DUDA", "ELAI"]


def _finished(**changes):
    """Round 3 right after the final scoring: player 0's three islands scored 3 (1:2 -> 4:2)."""
    d = final_turns_position(1)
    d.update(over=True, winner=0, final_turns_left=0, scores=[4, 2], final_points=[3, 0])
    d.update(changes)
    return d


def _final_turn(**changes):
    """Round 3, one final turn left for player 0, discard rule 'hand_limit'."""
    d = final_turns_position(1)
    return position(
        bridges={line: owner for line, owner in zip(LINE, d["bridges"], strict=True) if owner is not None},
        face_up=[None, None, None],
        pile=[],
        round=3,
        scores=[1, 2],
        final_turns_left=1,
        config={"discard_rule": "hand_limit"},
        **changes,
    )


def test_a_finished_position_as_the_final_scoring_leaves_it_is_accepted():
    game = KahunaGame.from_dict(_finished())
    assert game.is_over and game.winner == 0 and game.scores == [4, 2] and game.legal_actions() == []


@pytest.mark.parametrize(
    ("d", "message"),
    [
        (_broken(played_this_turn=300), r"'played_this_turn' must be an integer in 0..5, got 300"),
        (_broken(played_this_turn=10), r"'played_this_turn' must be an integer in 0..5, got 10"),
        (_broken(discarded_this_turn=-1), r"'discarded_this_turn' must be an integer in 0..5"),
        (
            position(bridges={"ALOA-BARI": 1}, hands=(FIVE, []), played_this_turn=1, must_draw=True),
            r"'played_this_turn' \(1\) plus the current player's 5 cards exceed the 5 cards a turn can start with",
        ),
        (
            position(hands=(FIVE[:4], []), discard=["ELAI", "FAAA"], face_down=[["ELAI", "FAAA"], []], pile=None)
            | {"discarded_this_turn": 2},
            r"'discarded_this_turn' \(2\) plus the current player's 4 cards exceed",
        ),
        (
            position(
                hands=(FIVE, []),
                discard=["FAAA"],
                face_down=[["FAAA"], []],
                discarded_this_turn=1,
                config={"discard_rule": "hand_limit"},
            ),
            r"'played_this_turn' \(1\)|'discarded_this_turn' \(1\) plus the current player's 5 cards exceed",
        ),
        (
            position(
                hands=(FIVE[:3], []),
                discard=["ELAI"],
                face_down=[["ELAI"], []],
                discarded_this_turn=1,
                config={"discard_rule": "hand_limit"},
            ),
            r"'hand_limit': 1 discard\(s\) this turn need a hand of 4 .*, got 3",
        ),
        (
            # Round 3, one final turn left, a discard made, empty hand, nothing to draw: no action at all.
            _final_turn(hands=([], ["ELAI"]), face_down=[["BARI"], []], discarded_this_turn=1),
            r"'hand_limit': 1 discard\(s\) this turn need a hand of 4 .*, got 0",
        ),
        (
            _final_turn(hands=(FIVE[:4], []), face_down=[["FAAA"], []], discarded_this_turn=1),
            r"'hand_limit': a discard this turn needs a card to draw",
        ),
        (_broken(final_points=[15, 0]), r"'final_points' must be two integers in 0..12"),
        (_broken(final_points=[5, 0]), r"'final_points' \[5, 0\] must be \[0, 0\] while the game is not over"),
        (_finished(final_points=[3, 1], scores=[4, 3]), r"only one player can score at the end"),
        (_broken(scores=[15, 15]), r"'scores' \[15, 15\] .* cannot arise in round 1: .* \[0, 0\]$"),
        (_broken(scores=[5, 5]), r"cannot arise in round 1"),
        (_broken(scores=[1, 0]), r"cannot arise in round 1"),
        (_broken(scores=[1, 1], round=2), r"cannot arise in round 2: .* \[0, 0\], \[0, 1\], \[1, 0\]$"),
        (_broken(scores=[2, 0], round=2), r"cannot arise in round 2"),
        (_broken(scores=[2, 2], round=3), r"cannot arise in round 3"),
        (_broken(scores=[4, 0], round=3), r"cannot arise in round 3"),
        (_finished(scores=[5, 2]), r"'scores' \[5, 2\] \(less 'final_points' \[3, 0\]\) cannot arise in round 3"),
        (_broken(over=True, winner=0), r"'over' is true in round 1"),
        (_broken(over=True, round=2, bridges=[0, 1] + [None] * 25), r"final turns of round 3 are not done"),
        (_finished(winner=1), r"'winner' 1 contradicts the outcome: player 0 \(scores \[4, 2\]"),
        (_finished(winner=None), r"'winner' None contradicts the outcome: player 0"),
        (
            _finished(scores=[1, 2], final_points=[0, 0]),
            r"'final_points' \[0, 0\] must be the final difference .*\[3, 0\]",
        ),
        (
            _finished(bridges=[0] + [None] * 26, final_points=[0, 0], scores=[1, 2]) | {"over": True, "winner": 1},
            r"'winner' 1 contradicts the outcome: player 0",
        ),
        (
            _finished(bridges=[0] + [None] * 26),
            r"'final_points' \[3, 0\]: a game that ended prematurely .* had no final scoring",
        ),
        (
            # Player 0 holds 3 of GOLA's 4 lines: taking GOLA swept player 1's GOLA-KAHU away.
            position(
                bridges={"COCO-GOLA": 0, "FAAA-GOLA": 0, "GOLA-JOJO": 0, "GOLA-KAHU": 1},
                hands=(["ALOA"], []),
                config={"variant": "planning"},
            ),
            r"player 1's bridge on GOLA-KAHU touches an island controlled by player 0, impossible in the planning",
        ),
        (
            position(bridges={"KAHU-LALE": 0}, hands=(["ALOA"], []), config={"handicap": [1, 2]})
            | {"current_player": 1, "setup_left": 2},
            r"handicap setup: player 0 cannot have bridges before the first turn",
        ),
        (
            position(bridges={"KAHU-LALE": 1, "ALOA-BARI": 1}, hands=(["ALOA"], []), config={"handicap": [1, 2]})
            | {"current_player": 1, "setup_left": 1},
            r"handicap setup: player 1 has 2 bridges, more than the 1 free bridge\(s\) placed so far",
        ),
    ],
)
def test_a_position_that_cannot_arise_in_play_is_rejected_with_one_line_naming_the_problem(d, message):
    with pytest.raises(ValueError, match=message) as error:
        KahunaGame.from_dict(d)
    assert "\n" not in str(error.value)


def test_planning_allows_an_opponent_bridge_next_to_an_island_nobody_controls_and_standard_allows_it_anywhere():
    bridges = {"COCO-GOLA": 0, "FAAA-GOLA": 0, "GOLA-JOJO": 0, "GOLA-KAHU": 1}
    assert KahunaGame.from_dict(position(bridges=bridges, hands=(["ALOA"], []))).controller("GOLA") == 0
    del bridges["GOLA-JOJO"]
    game = KahunaGame.from_dict(position(bridges=bridges, hands=(["ALOA"], []), config={"variant": "planning"}))
    assert game.controller("GOLA") is None


def test_the_engine_refuses_a_position_value_whose_player_to_move_has_no_action():
    # parse_position already rules this out (played + hand <= 5); the engine checks again on the value.
    # Player 0: no bridge in supply, no card for player 1's two lines, 5 cards, must draw: after a
    # play this turn nothing is legal.
    bridges = {name: 0 if line < 25 else 1 for name, line in LINE.items()}
    d = position(bridges=bridges, hands=(FIVE, []), must_draw=True)
    valid = parse_position(d, lambda config: KahunaConfig())
    stuck = dataclasses.replace(valid, played_this_turn=1)
    with pytest.raises(ValueError, match=r"player 0 to move has no legal action in a game that is not over"):
        KahunaGame._from_position(stuck, None)


@pytest.mark.parametrize("seed", ["abc", -1, 1.5, True, np.bool_(False), [1]], ids=repr)
def test_a_bad_seed_is_rejected_up_front_by_from_dict_and_the_constructor(seed):
    with pytest.raises(ValueError, match=r"seed must be None or a non-negative integer, got"):
        KahunaGame.from_dict(position(hands=(["ALOA"], [])), seed=seed)
    with pytest.raises(ValueError, match=r"seed must be None or a non-negative integer, got"):
        KahunaGame(seed=seed)


def test_numpy_and_large_integer_seeds_are_accepted():
    d = position(hands=(["ALOA"], []))
    assert KahunaGame.from_dict(d, seed=np.int64(5)).to_dict() == KahunaGame.from_dict(d, seed=5).to_dict()
    assert KahunaGame(seed=np.uint32(7)).to_dict() == KahunaGame(seed=7).to_dict()
    KahunaGame(seed=2**80)


def _nested(depth: int, leaf: object = 0) -> object:
    """``leaf`` inside ``depth`` lists."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_a_position_nested_100000_deep_is_refused_in_one_line_before_anything_reads_it() -> None:
    d = KahunaGame(seed=0).to_dict()
    d["config"]["handicap"] = _nested(100_000)
    with pytest.raises(ValueError, match=r"^position key 'config' nests lists or objects more than 8 levels deep"):
        KahunaGame.from_dict(d)
    d = KahunaGame(seed=0).to_dict()
    d["pile"] = _nested(100_000)
    with pytest.raises(ValueError, match=r"^position key 'pile' nests lists or objects more than 8 levels deep"):
        KahunaGame.from_dict(d)


def test_nesting_up_to_the_limit_reaches_the_ordinary_checks() -> None:
    from kahuna_env.positions import MAX_NESTING

    # The position is depth 1, its config depth 2, the handicap's lists depths 3 and on.
    d = KahunaGame(seed=0).to_dict()
    d["config"]["handicap"] = _nested(MAX_NESTING - 2)
    with pytest.raises(
        ValueError, match=r"handicap must be None or a pair \(player, bridges\), got \[\[\[\[\.\.\.\]\]\]\]"
    ):
        KahunaGame.from_dict(d)
    d["config"]["handicap"] = _nested(MAX_NESTING - 1)
    with pytest.raises(ValueError, match="more than 8 levels deep"):
        KahunaGame.from_dict(d)


def test_a_list_that_holds_itself_is_refused_without_a_hang() -> None:
    loop: list = []
    loop.extend([loop] * 1000)  # each level of the walk visits it once
    d = KahunaGame(seed=0).to_dict()
    d["discard"] = loop
    with pytest.raises(ValueError, match="position key 'discard' nests"):
        KahunaGame.from_dict(d)


def test_a_12000_character_card_name_is_shown_as_a_short_excerpt() -> None:
    d = KahunaGame(seed=0).to_dict()
    d["hands"][0][0] = "X" * 12_000
    with pytest.raises(ValueError, match=r"'hands\[0\]\[0\]': 'XXX+\.\.\.X+' is not an island name") as error:
        KahunaGame.from_dict(d)
    assert len(str(error.value)) < 250


def test_numpy_integers_in_a_position_are_read_as_ints() -> None:
    game = KahunaGame(seed=0)
    d = game.to_dict()
    d.update(current_player=np.int8(d["current_player"]), round=np.int64(1), scores=[np.int16(0), np.uint8(0)])
    d["bridges"] = [None if owner is None else np.int8(owner) for owner in d["bridges"]]
    restored = KahunaGame.from_dict(d).to_dict()
    assert restored == game.to_dict()
    assert json.loads(json.dumps(restored)) == restored  # plain ints, as JSON writes them
