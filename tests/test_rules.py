"""One test per rule of docs/RULES.md, on hand-built positions."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from helpers import LINE, drawn_final_turn_position, game_at, position

from kahuna_env import actions as A
from kahuna_env.board import ISLAND_ID, ISLANDS, MAJORITY
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame

I = ISLAND_ID  # noqa: E741 - island name -> id, kept short for readability of positions


def place(line: str, paying: str) -> int:
    return A.place_action(LINE[line], paying)


def remove(line: str, first: str, second: str) -> int:
    return A.remove_action(LINE[line], first, second)


def take(slot: int) -> int:
    return A.TAKE + slot


def discard(island: str) -> int:
    return A.DISCARD + I[island]


def free(line: str) -> int:
    return A.FREE_BRIDGE + LINE[line]


# --- setup -------------------------------------------------------------------------------------


def test_setup_deals_three_cards_each_three_face_up_and_fifteen_in_the_pile():
    game = KahunaGame(seed=3)
    assert game.hand_size(0) == game.hand_size(1) == 3
    assert all(card is not None for card in game.face_up)
    assert game.pile_size == 15
    assert game.current_player == 0 and game.round == 1 and game.scores == [0, 0]


def test_first_player_option_chooses_who_moves_first():
    assert KahunaGame(KahunaConfig(first_player=1), seed=0).current_player == 1


def test_same_seed_deals_the_same_game_and_other_seeds_differ():
    deals = {str(KahunaGame(seed=s).to_dict()) for s in range(20)}
    assert KahunaGame(seed=5).to_dict() == KahunaGame(seed=5).to_dict()
    assert len(deals) == 20


# --- majority thresholds -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("island", "lines"),
    [
        ("ALOA", ["ALOA-BARI", "ALOA-DUDA", "ALOA-HUNA"]),
        ("COCO", ["BARI-COCO", "COCO-FAAA", "COCO-GOLA", "COCO-KAHU"]),
        ("BARI", ["ALOA-BARI", "BARI-COCO", "BARI-DUDA", "BARI-ELAI", "BARI-FAAA"]),
        ("ELAI", ["BARI-ELAI", "DUDA-ELAI", "ELAI-FAAA", "ELAI-HUNA", "ELAI-IFFI", "ELAI-JOJO"]),
    ],
)
def test_majority_threshold_is_strictly_more_than_half_of_the_lines(island, lines):
    degree = len(lines)
    assert MAJORITY[I[island]] == degree // 2 + 1
    below = game_at(bridges={line: 0 for line in lines[: degree // 2]})
    assert below.controller(island) is None
    at = game_at(bridges={line: 0 for line in lines[: degree // 2 + 1]})
    assert at.controller(island) == 0


@pytest.mark.parametrize(
    ("island", "built", "last"),
    [
        ("ALOA", ["ALOA-BARI"], "ALOA-DUDA"),
        ("COCO", ["COCO-FAAA", "COCO-GOLA"], "COCO-KAHU"),
        ("BARI", ["BARI-COCO", "BARI-DUDA"], "BARI-FAAA"),
        ("ELAI", ["DUDA-ELAI", "ELAI-FAAA", "ELAI-IFFI"], "ELAI-JOJO"),
    ],
)
def test_placement_reaching_majority_takes_control(island, built, last):
    game = game_at(bridges={line: 0 for line in built}, hands=([island], []))
    assert game.controller(island) is None
    game.step(place(last, island))
    assert game.controller(island) == 0


def test_placement_gives_majority_on_both_islands_of_its_line():
    # Player 0 has 1 of 2 needed on ALOA and 2 of 3 needed on DUDA; ALOA-DUDA completes both.
    game = game_at(
        bridges={"ALOA-BARI": 0, "DUDA-ELAI": 0, "DUDA-HUNA": 0, "ALOA-HUNA": 1, "BARI-DUDA": 1},
        hands=(["ALOA"], []),
    )
    game.step(place("ALOA-DUDA", "ALOA"))
    assert game.controller("ALOA") == 0
    assert game.controller("DUDA") == 0
    # The opponent bridges on both islands' lines are gone.
    assert game.owner(LINE["ALOA-HUNA"]) is None
    assert game.owner(LINE["BARI-DUDA"]) is None
    assert game.supply(1) == 25


def test_taking_control_removes_every_opponent_bridge_on_that_island():
    game = game_at(
        bridges={"BARI-ELAI": 0, "DUDA-ELAI": 0, "ELAI-FAAA": 0, "ELAI-HUNA": 1, "ELAI-JOJO": 1, "HUNA-IFFI": 1},
        hands=(["ELAI"], []),
    )
    game.step(place("ELAI-IFFI", "ELAI"))
    assert game.controller("ELAI") == 0
    assert game.owner(LINE["ELAI-HUNA"]) is None and game.owner(LINE["ELAI-JOJO"]) is None
    assert game.owner(LINE["HUNA-IFFI"]) == 1, "a bridge not on the taken island stays"


def test_cascade_removes_control_on_the_other_island_and_stops_after_one_level():
    # Player 1 controls HUNA with exactly 3 of 5 (ALOA-HUNA, HUNA-IFFI, HUNA-LALE) and LALE with 2 of 3.
    game = game_at(
        bridges={"ALOA-BARI": 0, "ALOA-HUNA": 1, "HUNA-IFFI": 1, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA"], []),
    )
    assert game.controller("HUNA") == 1 and game.controller("LALE") == 1
    game.step(place("ALOA-DUDA", "ALOA"))
    assert game.controller("ALOA") == 0
    assert game.owner(LINE["ALOA-HUNA"]) is None
    assert game.controller("HUNA") is None, "losing ALOA-HUNA drops player 1 below majority on HUNA"
    # One level only: player 1's other bridges on HUNA stay, and LALE (reached through HUNA) is untouched.
    assert game.owner(LINE["HUNA-IFFI"]) == 1 and game.owner(LINE["HUNA-LALE"]) == 1
    assert game.controller("LALE") == 1


def test_placement_on_an_already_controlled_island_removes_nothing():
    # Player 0 controls ELAI (4 of 6); player 1's ELAI-IFFI was built after that.
    game = game_at(
        bridges={"BARI-ELAI": 0, "DUDA-ELAI": 0, "ELAI-FAAA": 0, "ELAI-HUNA": 0, "ELAI-IFFI": 1},
        hands=(["ELAI"], []),
    )
    game.step(place("ELAI-JOJO", "ELAI"))
    assert game.controller("ELAI") == 0
    assert game.owner(LINE["ELAI-IFFI"]) == 1


def test_removal_never_grants_control_and_costs_the_owner_control_below_majority():
    game = game_at(
        bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1, "ALOA-HUNA": 0, "DUDA-HUNA": 0},
        hands=(["ALOA", "BARI"], []),
    )
    assert game.controller("ALOA") == 1
    before = [game.controller(i) for i in range(12)]
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    assert game.controller("ALOA") is None, "player 1 fell below majority on ALOA"
    after = [game.controller(i) for i in range(12)]
    assert all(a is None or a == b for a, b in zip(after, before, strict=True)), "nobody gains control by a removal"
    assert game.owner(LINE["ALOA-BARI"]) is None
    assert game.supply(1) == 24


# --- removal payments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "legal_payment"),
    [
        (["ELAI", "HUNA"], "ab"),
        (["ELAI", "ELAI"], "aa"),
        (["HUNA", "HUNA"], "bb"),
        (["ELAI", "BARI"], None),
    ],
)
def test_removal_payment_is_legal_only_with_the_matching_cards(hand, legal_payment):
    line = LINE["ELAI-HUNA"]
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(hand, []))
    legal = set(game.legal_actions())
    offered = {
        name for name, first in (("ab", A.REMOVE_AB), ("aa", A.REMOVE_AA), ("bb", A.REMOVE_BB)) if first + line in legal
    }
    assert offered == ({legal_payment} if legal_payment else set())


def test_removal_pays_both_cards_onto_the_discard_pile():
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(["HUNA", "HUNA", "BARI"], []))
    game.step(remove("ELAI-HUNA", "HUNA", "HUNA"))
    assert game.hand(0) == [I["BARI"]]
    assert game.open_discard[I["HUNA"]] == 2
    assert game.played_this_turn == 2


def test_own_bridges_and_free_lines_cannot_be_removed():
    game = game_at(bridges={"ELAI-HUNA": 0}, hands=(["ELAI", "HUNA", "BARI", "ALOA"], []))
    removals = [a for a in game.legal_actions() if A.REMOVE_AB <= a < A.DISCARD]
    assert removals == []


# --- placement ---------------------------------------------------------------------------------


def test_placement_needs_a_card_of_either_island_and_a_free_line():
    game = game_at(bridges={"ALOA-BARI": 1}, hands=(["ALOA"], []))
    places = {a for a in game.legal_actions() if a < A.REMOVE_AB}
    assert places == {place("ALOA-DUDA", "ALOA"), place("ALOA-HUNA", "ALOA")}


def test_several_cards_can_be_played_in_one_turn():
    game = game_at(hands=(["ALOA", "BARI", "COCO"], []))
    game.step(place("ALOA-DUDA", "ALOA"))
    game.step(place("BARI-FAAA", "BARI"))
    game.step(place("COCO-GOLA", "COCO"))
    assert game.current_player == 0 and game.bridges_on_board(0) == 3
    game.step(A.DRAW)
    assert game.current_player == 1


def test_placement_needs_a_bridge_in_supply():
    lines = [name for name in LINE if name not in ("JOJO-KAHU", "KAHU-LALE")]
    game = game_at(bridges={line: 0 for line in lines}, hands=(["KAHU"], []))
    assert game.supply(0) == 0
    assert not [a for a in game.legal_actions() if a < A.REMOVE_AB]


# --- discards ----------------------------------------------------------------------------------


def test_discard_instead_of_play_is_allowed_with_any_hand_and_then_forbids_plays():
    game = game_at(hands=(["ALOA", "BARI"], []))
    assert discard("ALOA") in game.legal_actions()
    game.step(discard("ALOA"))
    legal = game.legal_actions()
    assert not [a for a in legal if a < A.DISCARD], "no plays after a face-down discard"
    assert discard("BARI") in legal and A.PASS in legal and A.DRAW in legal
    assert game.face_down_discards(0)[I["ALOA"]] == 1


def test_a_player_who_played_cannot_discard():
    game = game_at(hands=(["ALOA", "BARI"], []))
    game.step(place("ALOA-DUDA", "ALOA"))
    assert not [a for a in game.legal_actions() if A.DISCARD <= a < A.DRAW]


def test_hand_limit_rule_allows_a_first_discard_only_with_five_cards():
    config = {"discard_rule": "hand_limit"}
    four = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA"], []), config=config)
    assert not [a for a in four.legal_actions() if A.DISCARD <= a < A.DRAW]
    five = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []), config=config)
    assert discard("ALOA") in five.legal_actions()


def test_hand_limit_rule_needs_something_drawable_for_the_first_discard():
    config = {"discard_rule": "hand_limit"}
    game = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=2,
        config=config,
    )
    assert not game.is_over
    assert not [a for a in game.legal_actions() if A.DISCARD <= a < A.DRAW]


def test_hand_limit_rule_after_a_discard_allows_only_discards_and_draws():
    game = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []), config={"discard_rule": "hand_limit"})
    game.step(discard("ALOA"))
    legal = game.legal_actions()
    assert all(A.DISCARD <= a < A.PASS for a in legal), [A.describe_action(a) for a in legal]
    assert A.DRAW in legal and discard("BARI") in legal and A.PASS not in legal


# --- drawing, taking, passing ------------------------------------------------------------------


def test_draw_takes_the_top_of_the_pile_and_ends_the_turn():
    game = game_at(hands=(["ALOA"], []), pile=["LALE", "KAHU"], discard=[])
    game.step(A.DRAW)
    assert sorted(game.hand(0)) == [I["ALOA"], I["LALE"]]
    assert game.pile_size == 1 and game.current_player == 1


def test_taking_a_face_up_card_refills_its_slot_from_the_pile():
    game = game_at(hands=([], []), face_up=["FAAA", "GOLA", "KAHU"], pile=["LALE", "IFFI"])
    game.step(take(1))
    assert game.hand(0) == [I["GOLA"]]
    assert game.face_up == [I["FAAA"], I["LALE"], I["KAHU"]]
    assert game.pile_size == 1
    assert game.known_cards(0)[I["GOLA"]] == 1, "a face-up take is public knowledge"


def test_a_taken_slot_stays_empty_when_the_pile_is_empty():
    game = game_at(hands=([], []), face_up=["FAAA", "GOLA", "KAHU"], pile=[])
    game.step(take(0))
    assert game.face_up == [None, I["GOLA"], I["KAHU"]]
    assert take(0) not in game.legal_actions()


def test_a_hand_of_five_cannot_draw_or_take():
    game = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []))
    legal = game.legal_actions()
    assert A.DRAW not in legal and not {take(0), take(1), take(2)} & set(legal)
    assert A.PASS in legal


def test_after_a_pass_the_next_player_must_draw():
    game = game_at(hands=(["ALOA"], ["BARI"]))
    game.step(A.PASS)
    assert game.must_draw
    assert A.PASS not in game.legal_actions()
    game.step(A.DRAW)
    assert A.PASS in game.legal_actions(), "the obligation ends with the draw"


def test_must_draw_with_a_full_hand_forces_a_play_or_discard_first():
    game = game_at(hands=(["ALOA"], ["BARI", "COCO", "DUDA", "ELAI", "FAAA"]), must_draw=True, current_player=1)
    legal = game.legal_actions()
    assert A.PASS not in legal and A.DRAW not in legal
    assert discard("BARI") in legal and place("BARI-COCO", "BARI") in legal
    game.step(discard("BARI"))
    assert game.legal_actions() and A.DRAW in game.legal_actions() and A.PASS not in game.legal_actions()


def test_passing_is_always_legal_when_nothing_is_drawable():
    game = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA"], ["BARI"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=2,
        must_draw=True,
    )
    assert not game.is_over
    assert A.PASS in game.legal_actions()


# --- rounds and scoring ------------------------------------------------------------------------


def _round_end_position(round_number: int, **extra):
    """Player 0 controls ALOA and BARI, player 1 controls LALE; one face-up card left, pile empty."""
    return game_at(
        bridges={
            "ALOA-BARI": 0,
            "ALOA-DUDA": 0,
            "BARI-COCO": 0,
            "BARI-FAAA": 0,
            "HUNA-LALE": 1,
            "IFFI-LALE": 1,
        },
        hands=(["ALOA", "HUNA"], ["KAHU"]),
        face_up=[None, "GOLA", None],
        pile=[],
        round=round_number,
        **extra,
    )


@pytest.mark.parametrize(("round_number", "points"), [(1, 1), (2, 2)])
def test_round_end_scores_the_player_with_more_islands(round_number, points):
    game = _round_end_position(round_number, seed=4)
    game.step(take(1))
    assert game.round == round_number + 1
    assert game.scores == [points, 0]
    assert game.current_player == 1, "play passes on normally"


def test_round_end_with_equal_islands_scores_nothing():
    game = game_at(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA"], ["KAHU"]),
        face_up=[None, "GOLA", None],
        pile=[],
    )
    game.step(take(1))
    assert game.round == 2 and game.scores == [0, 0]


def test_reshuffle_keeps_hands_and_bridges_and_turns_the_discard_into_a_new_pile():
    game = _round_end_position(1, seed=4)
    game.step(take(1))
    after = game.to_dict()
    assert sorted(after["hands"][0]) == ["ALOA", "GOLA", "HUNA"] and after["hands"][1] == ["KAHU"]
    assert after["bridges"][LINE["ALOA-BARI"]] == 0 and after["bridges"][LINE["HUNA-LALE"]] == 1
    assert after["discard"] == []
    assert all(card is not None for card in after["face_up"])
    assert game.pile_size == 24 - 4 - 3
    assert game.controller("ALOA") == 0 and game.controller("LALE") == 1


def test_reshuffle_is_seeded():
    first = _round_end_position(1, seed=11)
    second = _round_end_position(1, seed=11)
    first.step(take(1))
    second.step(take(1))
    assert first.to_dict() == second.to_dict()


def test_round_three_ends_with_one_extra_turn_each_without_drawing_then_final_scoring():
    game = _round_end_position(3, scores=[1, 2])
    game.step(take(1))
    assert game.in_final_turns and not game.is_over and game.current_player == 1
    legal = game.legal_actions()
    assert A.DRAW not in legal and A.PASS in legal
    game.step(A.PASS)
    assert game.current_player == 0 and not game.is_over
    game.step(place("ALOA-HUNA", "HUNA"))  # still playing cards in the extra turn
    game.step(A.PASS)
    assert game.is_over
    # Player 0 controls ALOA, BARI (and not HUNA); player 1 controls LALE: difference 1.
    assert game.final_points == [1, 0]
    assert game.scores == [2, 2]
    assert game.winner == 0, "equal totals: the final scoring decides"


def test_winner_is_the_higher_total():
    game = _round_end_position(3, scores=[0, 3])
    game.step(take(1))
    game.step(A.PASS)
    game.step(A.PASS)
    assert game.scores == [1, 3] and game.winner == 1


def test_tie_on_totals_and_final_points_goes_to_more_bridges():
    game = game_at(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1, "GOLA-KAHU": 1},
        hands=(["ALOA"], ["KAHU"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=1,
        scores=[0, 0],  # the only tie the interim scorings allow (1 and 2 points)
    )
    game.step(A.PASS)
    assert game.final_points == [0, 0] and game.scores == [0, 0]
    assert game.winner == 1


def test_full_tie_is_a_draw():
    game = KahunaGame.from_dict(drawn_final_turn_position())
    game.step(A.PASS)
    assert game.is_over and game.winner is None


# --- premature end -----------------------------------------------------------------------------


def test_premature_end_when_the_last_bridge_is_removed_mid_turn():
    game = game_at(bridges={"ALOA-BARI": 1, "COCO-GOLA": 0}, hands=(["ALOA", "BARI", "COCO"], []), round=2)
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    assert game.is_over and game.winner == 0
    assert game.legal_actions() == []


def test_no_premature_end_in_round_one():
    game = game_at(bridges={"ALOA-BARI": 1, "COCO-GOLA": 0}, hands=(["ALOA", "BARI", "COCO"], []), round=1)
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    assert not game.is_over


def test_premature_end_by_a_capture_cascade():
    game = game_at(bridges={"ALOA-BARI": 0, "ALOA-HUNA": 1}, hands=(["ALOA"], []), round=3)
    game.step(place("ALOA-DUDA", "ALOA"))
    assert game.is_over and game.winner == 0


def test_premature_end_right_after_the_first_scoring():
    game = game_at(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0}, hands=(["ALOA"], ["KAHU"]), face_up=[None, "GOLA", None], pile=[]
    )
    game.step(take(1))
    assert game.round == 2 and game.scores == [1, 0]
    assert game.is_over and game.winner == 0
    # The turn had passed before the scoring: current_player is the player who would move next.
    assert game.current_player == 1


def test_after_a_premature_end_mid_turn_current_player_is_the_player_who_acted():
    game = game_at(bridges={"ALOA-BARI": 1, "COCO-GOLA": 0}, hands=(["ALOA", "BARI"], []), round=2)
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    assert game.is_over and game.current_player == 0


def test_premature_end_with_no_bridges_on_either_side_is_a_draw():
    game = game_at(hands=(["ALOA"], ["KAHU"]), face_up=[None, "GOLA", None], pile=[])
    game.step(take(1))
    assert game.is_over and game.winner is None


# --- planning variant --------------------------------------------------------------------------

PLANNING = {"variant": "planning"}


def test_planning_forbids_placing_next_to_an_opponent_controlled_island():
    game = game_at(bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1}, hands=(["HUNA", "BARI"], []), config=PLANNING)
    legal = game.legal_actions()
    assert place("ALOA-HUNA", "HUNA") not in legal, "ALOA is controlled by the opponent"
    assert place("DUDA-HUNA", "HUNA") in legal
    standard = game_at(bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1}, hands=(["HUNA", "BARI"], []))
    assert place("ALOA-HUNA", "HUNA") in standard.legal_actions()


def test_planning_offers_a_free_claim_right_after_a_removal():
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(["ELAI", "HUNA"], []), config=PLANNING)
    game.step(remove("ELAI-HUNA", "ELAI", "HUNA"))
    assert game.claim_line == LINE["ELAI-HUNA"]
    assert free("ELAI-HUNA") in game.legal_actions()
    game.step(free("ELAI-HUNA"))
    assert game.owner(LINE["ELAI-HUNA"]) == 0
    assert game.hand(0) == [], "the claim costs no card"


def test_planning_claim_is_forgone_by_any_other_action():
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(["ELAI", "HUNA", "BARI"], []), config=PLANNING)
    game.step(remove("ELAI-HUNA", "ELAI", "HUNA"))
    game.step(place("BARI-COCO", "BARI"))
    assert game.claim_line is None
    assert free("ELAI-HUNA") not in game.legal_actions()


def test_planning_claim_is_not_offered_next_to_an_island_the_opponent_still_controls():
    # Player 1 controls ALOA with ALOA-BARI and ALOA-DUDA (and ALOA-HUNA); removing ALOA-BARI leaves 2 of 3.
    game = game_at(
        bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1, "ALOA-HUNA": 1}, hands=(["ALOA", "BARI"], []), config=PLANNING
    )
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    assert game.controller("ALOA") == 1
    assert game.claim_line is None


def test_claim_is_not_offered_in_the_standard_game():
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(["ELAI", "HUNA"], []))
    game.step(remove("ELAI-HUNA", "ELAI", "HUNA"))
    assert not [a for a in game.legal_actions() if a >= A.FREE_BRIDGE]


# --- handicap ----------------------------------------------------------------------------------


def test_handicap_player_places_free_bridges_before_the_first_turn():
    game = KahunaGame(KahunaConfig(handicap=(1, 3), first_player=0), seed=2)
    hand_before = game.hand(1)
    assert game.current_player == 1 and game.in_setup
    assert game.legal_actions() == [A.FREE_BRIDGE + line for line in range(27)]
    for line in ("ALOA-BARI", "ALOA-DUDA", "KAHU-LALE"):
        game.step(free(line))
    assert not game.in_setup
    assert game.current_player == 0, "then first_player starts"
    assert game.bridges_on_board(1) == 3 and game.hand(1) == hand_before
    assert game.controller("ALOA") == 1, "control rules apply during setup"


def test_handicap_for_the_first_player_also_precedes_the_first_turn():
    game = KahunaGame(KahunaConfig(handicap=(0, 1)), seed=2)
    game.step(free("ALOA-BARI"))
    assert game.current_player == 0 and not game.in_setup
    assert A.DRAW in game.legal_actions()


# --- illegal actions ---------------------------------------------------------------------------


def test_illegal_action_raises_naming_the_action_and_leaves_the_state_unchanged():
    game = game_at(hands=(["ALOA"], []))
    before = game.to_dict()
    with pytest.raises(IllegalActionError, match=r"place BARI-COCO paying BARI.*no BARI card"):
        game.step(place("BARI-COCO", "BARI"))
    assert game.to_dict() == before


@pytest.mark.parametrize(
    "bad",
    [
        -1,
        179,
        3.0,
        "3",
        None,
        True,
        np.bool_(True),
        np.float64(147.0),
        np.array([A.DRAW]),
        Decimal(A.DRAW),
        Fraction(A.DRAW),
        complex(A.DRAW),
    ],
    ids=repr,
)
def test_out_of_range_or_non_integer_actions_raise(bad):
    # DRAW (147) is legal here: values equal to it but not integers must still be refused, by name.
    game = KahunaGame(seed=0)
    before = game.to_dict()
    with pytest.raises(IllegalActionError, match="action must be an integer") as error:
        game.step(bad)
    assert "\n" not in str(error.value) and repr(bad).split("(")[0] in str(error.value)
    assert game.to_dict() == before and game.legal_actions() == KahunaGame(seed=0).legal_actions()


def test_a_failure_in_the_round_end_reshuffle_leaves_the_game_unchanged(monkeypatch):
    # Taking the last face-up card ends round 1: scoring, reshuffle (the generator), next round.  Compiled,
    # the step is one loop that cannot fail halfway; as plain Python (KAHUNA_JIT=0) a failure there (here the
    # shuffle) must leave the game as it was, not half a step.
    from kahuna_env import engine, kernels

    d = position(bridges={"ALOA-BARI": 0, "KAHU-LALE": 1}, hands=(["ALOA"], []), face_up=[None, "GOLA", None], pile=[])
    game = KahunaGame.from_dict(d, seed=3)
    before = game.to_dict()

    def broken_generator(*args):
        raise RuntimeError("generator unavailable")

    monkeypatch.setattr(engine, "_STEP", engine._step_or_roll_back)
    monkeypatch.setattr(kernels.interpreted(), "permutations", broken_generator)
    with pytest.raises(RuntimeError, match="generator unavailable"):
        game.step(A.TAKE + 1)
    assert game.to_dict() == before
    monkeypatch.undo()
    game.step(A.TAKE + 1)
    fresh = KahunaGame.from_dict(d, seed=3)
    fresh.step(A.TAKE + 1)
    assert game.round == 2 and game.to_dict() == fresh.to_dict()


def test_numpy_integer_actions_are_accepted():
    game = KahunaGame(seed=0)
    game.step(np.int64(A.DRAW))
    assert game.current_player == 1


def test_must_draw_pass_error_explains_the_rule():
    game = game_at(hands=(["ALOA"], ["BARI"]), must_draw=True)
    with pytest.raises(IllegalActionError, match="opponent passed"):
        game.step(A.PASS)


def test_stepping_a_finished_game_raises():
    game = game_at(bridges={"ALOA-BARI": 1, "COCO-GOLA": 0}, hands=(["ALOA", "BARI"], []), round=2)
    game.step(remove("ALOA-BARI", "ALOA", "BARI"))
    with pytest.raises(IllegalActionError, match="game is over"):
        game.step(A.PASS)


def test_island_names_are_checked():
    with pytest.raises(ValueError, match="unknown island 'ATLANTIS'"):
        KahunaGame(seed=0).controller("ATLANTIS")
    assert ISLANDS[I["LALE"]] == "LALE"


def test_current_player_after_the_final_scoring_is_the_last_player_to_act():
    game = _round_end_position(3)
    game.step(take(1))
    game.step(A.PASS)
    game.step(A.PASS)
    assert game.is_over and game.current_player == 0


@pytest.mark.parametrize("variant", ["standard", "planning"])
@pytest.mark.parametrize("discard_rule", ["instead_of_play", "hand_limit"])
def test_the_reason_an_action_is_illegal_comes_from_the_check_that_decides_legality(variant, discard_rule):
    """Every action of every position of a few random games: the loops' reason is "legal" exactly for the
    masked actions, and a refused step's error says the reason's words."""
    from kahuna_env import kernels
    from kahuna_env.arrays import TABLE_RECORD
    from kahuna_env.engine import REASON_TEXT

    rng = np.random.default_rng(7)
    loops = kernels.running()
    for seed in range(2):
        config = KahunaConfig(variant=variant, discard_rule=discard_rule, handicap=(1, 2) if seed else None)
        game = KahunaGame(config, seed=seed)
        for _ in range(120):
            if game.is_over:
                break
            mask = game.action_mask()
            for action in range(len(mask)):
                reason = kernels.REASONS[loops.game_illegal_reason(game._state, TABLE_RECORD, action)]
                assert (reason == "legal") == bool(mask[action]), (action, reason)
                if reason != "legal" and action % 7 == 0:
                    words = REASON_TEXT[reason](game, action)
                    with pytest.raises(IllegalActionError, match=re.escape(words)):
                        game.step(action)
            game.step(int(rng.choice(game.legal_actions())))
