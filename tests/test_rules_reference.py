"""The readable rules of :mod:`kahuna_env.rules` against the engine.

The reference must give exactly :meth:`KahunaGame.legal_actions` on every
position of random games of every variant and option (about 10^5 positions),
and its effect rules (captures, removals, the planning claim, premature end,
winner) must predict what :meth:`KahunaGame.step` does.  Hand-built positions
pin the corner cases; mutation tests show that a wrong rule is caught.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from helpers import LINE, final_turns_position, game_at

from kahuna_env import actions as A
from kahuna_env import rules
from kahuna_env.board import ISLAND_ID, NUM_ISLANDS, NUM_LINES
from kahuna_env.engine import KahunaConfig, KahunaGame

I = ISLAND_ID  # noqa: E741 - island name -> id, kept short for readability of positions

HANDICAPS = (None, (0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3))
CONFIGS = [
    KahunaConfig(variant=variant, discard_rule=discard_rule, handicap=handicap, first_player=first_player)
    for variant, discard_rule, handicap, first_player in itertools.product(
        ("standard", "planning"), ("instead_of_play", "hand_limit"), HANDICAPS, (0, 1)
    )
]
GAMES_PER_CONFIG = 14
"""56 configurations x 14 games x about 135 actions: about 10^5 positions compared."""


def config_id(config: KahunaConfig) -> str:
    handicap = "none" if config.handicap is None else f"{config.handicap[0]}x{config.handicap[1]}"
    return f"{config.variant}-{config.discard_rule}-handicap_{handicap}-first_{config.first_player}"


def random_positions(config: KahunaConfig, games: int, seed: int) -> Iterator[tuple[KahunaGame, int | None]]:
    """Every position of ``games`` random games, with the action random play takes there (``None`` at the end)."""
    rng = np.random.default_rng(seed)
    for _ in range(games):
        game = KahunaGame(config, seed=int(rng.integers(2**32)))
        while True:
            legal = game.legal_actions()
            action = legal[rng.integers(len(legal))] if legal else None
            yield game, action
            if action is None:
                break
            game.step(action)


def line_owners(game: KahunaGame) -> list[int | None]:
    return [game.owner(line) for line in range(NUM_LINES)]


def controllers(game: KahunaGame) -> list[int | None]:
    return [game.controller(island) for island in range(NUM_ISLANDS)]


def expected_owners(game: KahunaGame, action: int) -> list[int | None] | None:
    """The line owners the effect rules predict after ``action`` (``None`` for actions that move no bridge)."""
    line = A.ACTION_LINE[action]
    if action < A.REMOVE_AB or action >= A.FREE_BRIDGE:
        return rules.owners_after_placement(game, line, game.current_player)
    if action < A.DISCARD:
        return rules.owners_after_removal(game, line)
    return None


def effect_disagreement(game: KahunaGame, action: int) -> str | None:
    """Step a clone with ``action`` and compare with the effect rules; a description of the first difference."""
    text = A.describe_action(action)
    owners = expected_owners(game, action)
    claim = rules.claim_offered(game, A.ACTION_LINE[action]) if A.REMOVE_AB <= action < A.DISCARD else False
    after = game.clone()
    after.step(action)
    if owners is not None:
        if line_owners(after) != owners:
            return f"owners after {text}: engine {line_owners(after)}, rules {owners}"
        by_majority = [rules.controller_by_majority(owners, island) for island in range(NUM_ISLANDS)]
        if controllers(after) != by_majority:
            return f"control after {text}: engine {controllers(after)}, rules {by_majority}"
    round_ended = after.round > game.round or (after.in_final_turns and not game.in_final_turns)
    if round_ended != rules.round_ends(game, action):
        return f"round end after {text}: engine {round_ended}, rules {not round_ended}"
    if after.round > game.round:
        expected_scores = [s + p for s, p in zip(game.scores, rules.interim_points(game), strict=True)]
        if after.scores != expected_scores:
            return f"interim scoring after {text}: engine {after.scores}, rules {expected_scores}"
    if after.is_over:
        premature = rules.premature_end(after)
        if not premature:
            if after.final_turns_left:
                return f"the game ended after {text} with final turns left and bridges on both sides"
            if after.final_points != rules.final_scoring_points(game):
                return (
                    f"final scoring after {text}: engine {after.final_points}, rules {rules.final_scoring_points(game)}"
                )
        expected = rules.premature_winner(after) if premature else rules.winner_after_final_scoring(after)
        if after.winner != expected:
            return f"winner after {text}: engine {after.winner}, rules {expected}"
        return None
    if after.current_player != rules.next_player(game, action):
        return f"player after {text}: engine {after.current_player}, rules {rules.next_player(game, action)}"
    if rules.premature_end(after):
        return f"after {text} a player has no bridge in round {after.round} but the game runs"
    if A.REMOVE_AB <= action < A.DISCARD and (after.claim_line is not None) != claim:
        return f"claim after {text}: engine {after.claim_line}, rules {claim}"
    return None


def disagreement(game: KahunaGame, action: int | None, all_effects: bool) -> str | None:
    """Compare the reference with the engine at one position; a description of the first difference."""
    engine = game.legal_actions()
    reference = rules.legal_actions(game)
    if reference != engine:
        extra = [A.describe_action(a) for a in reference if a not in engine]
        missing = [A.describe_action(a) for a in engine if a not in reference]
        return f"legal actions differ: reference adds {extra}, lacks {missing}; position {game.to_dict()}"
    moves = [a for a in engine if not A.DISCARD <= a < A.DRAW] if all_effects else []
    if action is not None and action not in moves:
        moves.append(action)
    for move in moves:
        problem = effect_disagreement(game, move)
        if problem is not None:
            return f"{problem}; position {game.to_dict()}"
    return None


def corner_cases(game: KahunaGame) -> set[str]:
    """The corner cases a position shows, to check that random play reaches each of them."""
    if game.is_over:
        return {"premature end" if rules.premature_end(game) else "final scoring"}
    seen = set()
    if rules.in_setup(game):
        seen.add("handicap setup")
    if rules.in_final_turns(game):
        seen.add("final turns")
    if rules.claim_pending(game) is not None:
        seen.add("claim pending")
    if rules.must_draw(game) and rules.hand_is_full(game) and rules.something_to_draw(game):
        seen.add("must draw with a full hand")
    if game.config.discard_rule == "hand_limit" and rules.has_discarded(game):
        seen.add("hand_limit after a discard")
    if rules.supply_left(game) == 0:
        seen.add("empty supply")
    if game.round == 3:
        seen.add("round 3")
    return seen


# Every eighth position also checks the effects of *all* its legal actions but discards, not only the
# one random play takes.
ALL_EFFECTS_EVERY = 8


def sweep(config: KahunaConfig, games: int, seed: int) -> tuple[int, Counter[str], str | None]:
    """Compare reference and engine on every position of random games: (positions, corner cases seen, problem)."""
    seen: Counter[str] = Counter()
    positions = 0
    for game, action in random_positions(config, games, seed):
        positions += 1
        problem = disagreement(game, action, all_effects=positions % ALL_EFFECTS_EVERY == 0)
        if problem is not None:
            return positions, seen, problem
        seen.update(corner_cases(game))
    return positions, seen, None


def expected_corner_cases(config: KahunaConfig) -> set[str]:
    """The corner cases random play must reach in a sweep of ``config`` (all show up many times)."""
    expected = {"round 3", "final turns", "final scoring", "must draw with a full hand"}
    if config.handicap is not None:
        expected.add("handicap setup")
    if config.discard_rule == "hand_limit":
        expected.add("hand_limit after a discard")
    if config.variant == "planning":
        expected.add("claim pending")
    return expected


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_reference_equals_the_engine_on_every_position_of_random_games(config):
    positions, seen, problem = sweep(config, GAMES_PER_CONFIG, seed=CONFIGS.index(config))
    assert problem is None, problem
    assert positions > 60 * GAMES_PER_CONFIG
    assert expected_corner_cases(config) <= set(seen), f"random play missed {expected_corner_cases(config) - set(seen)}"


# --- a wrong rule is caught ----------------------------------------------------------------------


def _pass_ignoring_must_draw(game):
    return rules.in_turn(game) and not rules.discard_rule_forbids_pass(game)


_captures = rules.captures


def _no_removal_on_capture(game, line, placer):
    return rules.Capture(_captures(game, line, placer).taken, frozenset())


MUTANTS = {
    "pass ignores must draw": ("can_pass", _pass_ignoring_must_draw),
    "hand_limit discards with any hand": ("discard_rule_allows_discard", lambda game: True),
    "hand limit of 6": ("hand_is_full", lambda game: game.hand_size(game.current_player) >= 6),
    "planning allows every line": ("planning_blocked", lambda game, line: False),
    "plays after a discard": ("has_discarded", lambda game: False),
    "captures remove nothing": ("captures", _no_removal_on_capture),
    "claim always offered in planning": ("claim_offered", lambda game, line: game.config.variant == "planning"),
    "no interim scoring": ("interim_points", lambda game: [0, 0]),
    "the turn never passes": ("next_player", lambda game, action: game.current_player),
    "taking the last card never ends the round": (
        "round_ends",
        lambda game, action: action == A.DRAW and game.pile_size == 1,
    ),
    "premature end already in round 1": (
        "premature_end",
        lambda game: not (game.bridges_on_board(0) and game.bridges_on_board(1)),
    ),
}


@pytest.mark.parametrize("mutant", MUTANTS, ids=list(MUTANTS))
def test_a_wrong_rule_is_caught_by_the_comparison(monkeypatch, mutant):
    name, wrong = MUTANTS[mutant]
    monkeypatch.setattr(rules, name, wrong)
    for config in reversed(CONFIGS):  # planning with hand_limit first: every mutant shows there
        if sweep(config, 2, seed=CONFIGS.index(config))[2] is not None:
            return
    pytest.fail(f"the comparison did not notice the wrong rule {mutant!r}")


# --- hand-built corner cases ---------------------------------------------------------------------


def kinds(legal: list[int]) -> set[str]:
    """The kinds of actions in a legal list, by their description's first word (``place``, ``pass`` …)."""
    return {A.describe_action(action).split()[0] for action in legal}


def assert_reference_agrees(game: KahunaGame) -> list[int]:
    legal = game.legal_actions()
    assert rules.legal_actions(game) == legal
    assert all(rules.is_legal(game, action) == (action in legal) for action in range(A.NUM_ACTIONS))
    return legal


def test_final_turns_allow_plays_and_discards_but_no_drawing_and_passing_is_legal_even_after_a_pass():
    game = KahunaGame.from_dict(final_turns_position(2) | {"must_draw": True})
    legal = assert_reference_agrees(game)
    assert rules.in_final_turns(game) and not rules.something_to_draw(game)
    assert not rules.can_draw(game) and rules.can_pass(game)
    assert kinds(legal) == {"place", "discard", "pass"}


def test_hand_limit_final_turns_allow_no_first_discard():
    game = KahunaGame.from_dict(final_turns_position(2) | {"config": {"discard_rule": "hand_limit"}})
    legal = assert_reference_agrees(game)
    assert not rules.discard_rule_allows_discard(game)
    assert kinds(legal) == {"place", "pass"}


def test_hand_limit_first_discard_needs_five_cards_and_then_the_turn_ends_with_a_draw():
    config = {"discard_rule": "hand_limit"}
    four = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA"], []), config=config)
    assert "discard" not in kinds(assert_reference_agrees(four))
    game = game_at(hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []), config=config)
    assert rules.discard_rule_allows_discard(game) and rules.hand_is_full(game)
    game.step(A.DISCARD + I["ALOA"])
    legal = assert_reference_agrees(game)
    assert rules.discard_rule_forbids_pass(game) and not rules.may_play(game)
    assert kinds(legal) == {"discard", "draw", "take"}


def test_claim_pending_offers_the_freed_line_only_and_any_other_action_forgoes_it():
    game = game_at(bridges={"ELAI-HUNA": 1}, hands=(["ELAI", "HUNA", "BARI"], []), config={"variant": "planning"})
    removal = A.remove_action(LINE["ELAI-HUNA"], "ELAI", "HUNA")
    assert rules.claim_offered(game, LINE["ELAI-HUNA"])
    game.step(removal)
    legal = assert_reference_agrees(game)
    assert rules.claim_pending(game) == LINE["ELAI-HUNA"]
    assert [a for a in legal if a >= A.FREE_BRIDGE] == [A.FREE_BRIDGE + LINE["ELAI-HUNA"]]
    game.step(A.place_action(LINE["BARI-COCO"], "BARI"))
    assert not [a for a in assert_reference_agrees(game) if a >= A.FREE_BRIDGE]


def test_claim_pending_loaded_from_a_position():
    game = game_at(
        bridges={"ALOA-BARI": 1},
        hands=(["ELAI"], []),
        config={"variant": "planning"},
        played_this_turn=2,
        claim_line=LINE["ELAI-HUNA"],
        discard=["ELAI", "HUNA"],
        pile=[],
    )
    assert A.FREE_BRIDGE + LINE["ELAI-HUNA"] in assert_reference_agrees(game)


def test_claim_is_not_offered_next_to_an_island_the_opponent_still_controls():
    game = game_at(
        bridges={"ALOA-BARI": 1, "ALOA-DUDA": 1, "ALOA-HUNA": 1},
        hands=(["ALOA", "BARI"], []),
        config={"variant": "planning"},
    )
    assert not rules.claim_offered(game, LINE["ALOA-BARI"])
    game.step(A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI"))
    assert rules.claim_pending(game) is None
    assert_reference_agrees(game)


def test_setup_offers_free_bridges_on_free_lines_only():
    game = game_at(
        bridges={"ALOA-BARI": 1, "KAHU-LALE": 1},
        hands=(["ALOA"], ["BARI"]),
        config={"handicap": [1, 3], "first_player": 0},
        setup_left=1,
        current_player=1,
    )
    legal = assert_reference_agrees(game)
    assert rules.in_setup(game) and not rules.in_turn(game)
    assert legal == [A.FREE_BRIDGE + line for line in range(NUM_LINES) if line not in (0, LINE["KAHU-LALE"])]


def test_must_draw_with_a_full_hand_forces_a_play_or_discard_first():
    game = game_at(hands=(["ALOA"], ["BARI", "COCO", "DUDA", "ELAI", "FAAA"]), must_draw=True, current_player=1)
    legal = assert_reference_agrees(game)
    assert rules.must_draw(game) and rules.hand_is_full(game)
    assert not rules.can_pass(game) and not rules.can_draw(game)
    assert kinds(legal) == {"place", "discard"}
    game.step(A.DISCARD + I["BARI"])
    assert kinds(assert_reference_agrees(game)) == {"discard", "draw", "take"}


@pytest.mark.parametrize("discard_rule", ["instead_of_play", "hand_limit"])
def test_must_draw_with_a_full_hand_under_either_discard_rule(discard_rule):
    game = game_at(
        hands=(["ALOA"], ["BARI", "COCO", "DUDA", "ELAI", "FAAA"]),
        must_draw=True,
        current_player=1,
        config={"discard_rule": discard_rule},
    )
    assert "discard" in kinds(assert_reference_agrees(game))


def test_an_empty_supply_forbids_placing_but_not_removing():
    # Standard game: player 1 built ELAI-HUNA after player 0 took ELAI and HUNA.  (In the planning
    # variant that bridge is impossible, and so is a removal by a player with an empty supply: the
    # supply condition of the claim never binds in play.)
    owners = {name: 0 for name in LINE if name not in ("ELAI-HUNA", "KAHU-LALE")} | {"ELAI-HUNA": 1}
    game = game_at(bridges=owners, hands=(["ELAI", "HUNA", "LALE"], []), round=3, scores=[3, 0])
    assert rules.supply_left(game) == 0
    legal = assert_reference_agrees(game)
    assert "place" not in kinds(legal) and "remove" in kinds(legal)
    game.step(A.remove_action(LINE["ELAI-HUNA"], "ELAI", "HUNA"))
    assert_reference_agrees(game)


def test_a_finished_game_has_no_legal_action():
    game = game_at(bridges={"ALOA-BARI": 1, "COCO-GOLA": 0}, hands=(["ALOA", "BARI", "COCO"], []), round=2)
    problem = effect_disagreement(game, A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI"))
    assert problem is None, problem
    game.step(A.remove_action(LINE["ALOA-BARI"], "ALOA", "BARI"))
    assert rules.game_over(game) and rules.premature_end(game) and rules.premature_winner(game) == 0
    assert assert_reference_agrees(game) == []


def test_captures_state_the_cascade_of_one_level():
    # Player 1 controls HUNA with 3 of 5 and LALE with 2 of 3; ALOA-DUDA gives player 0 ALOA.
    game = game_at(
        bridges={"ALOA-BARI": 0, "ALOA-HUNA": 1, "HUNA-IFFI": 1, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA"], []),
    )
    capture = rules.captures(game, LINE["ALOA-DUDA"], 0)
    assert capture == rules.Capture(taken=frozenset({I["ALOA"]}), removed=frozenset({LINE["ALOA-HUNA"]}))
    problem = effect_disagreement(game, A.place_action(LINE["ALOA-DUDA"], "ALOA"))
    assert problem is None, problem


def test_a_placement_on_an_island_already_controlled_captures_nothing():
    game = game_at(
        bridges={"BARI-ELAI": 0, "DUDA-ELAI": 0, "ELAI-FAAA": 0, "ELAI-HUNA": 0, "ELAI-IFFI": 1},
        hands=(["ELAI"], []),
    )
    assert rules.captures(game, LINE["ELAI-JOJO"], 0) == rules.Capture(frozenset(), frozenset())


@pytest.mark.parametrize(
    ("name", "wrong", "test"),
    [
        ("supply_left", lambda game: 1, test_an_empty_supply_forbids_placing_but_not_removing),
        ("in_setup", lambda game: False, test_setup_offers_free_bridges_on_free_lines_only),
        (
            "something_to_draw",
            lambda game: True,
            test_final_turns_allow_plays_and_discards_but_no_drawing_and_passing_is_legal_even_after_a_pass,
        ),
    ],
    ids=["supply ignored", "no setup phase", "always something to draw"],
)
def test_a_wrong_rule_is_caught_by_a_hand_built_position(monkeypatch, name, wrong, test):
    """Random play never empties a supply; the hand-built positions must catch what it cannot."""
    monkeypatch.setattr(rules, name, wrong)
    with pytest.raises(AssertionError):
        test()


# --- a position play cannot reach -----------------------------------------------------------------


def test_a_setup_bridge_needs_one_in_supply_so_such_a_setup_position_is_rejected_or_offers_none():
    # The engine offers FREE_BRIDGE in setup without looking at the supply (a player with 25 bridges
    # would reach 26); the reference requires one.  Only from_dict's handicap-setup check ("at most
    # the bridges placed so far") keeps the two equal, so hold that here.
    owners = {name: 0 for name in list(LINE)[:25]}
    try:
        game = game_at(bridges=owners, hands=([], []), config={"handicap": [0, 1]}, setup_left=1)
    except ValueError:
        return
    assert rules.supply_left(game) == 0
    assert_reference_agrees(game)
