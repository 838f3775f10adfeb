"""A readable reference of Kahuna's rules: one small pure function per rule of docs/RULES.md.

The loops (:mod:`kahuna_env.kernels`, which :class:`kahuna_env.engine.KahunaGame`
and the batch run) decide legality with bitmask arithmetic tuned for speed.  This module states the same rules the
way the rulebook does, one named condition per function, in the style of
pgx: every function is pure, reads the game only through the engine's public
queries (``current_player``, ``hand_counts``, ``owner``, ``controller``,
``pile_size``, ``face_up``, ``must_draw``, ``claim_line`` …, never a private
field) and cites the section of docs/RULES.md it states.  It is slow on
purpose: it is for reading and for testing, not for playing.
``tests/test_rules_reference.py`` holds it equal to
:meth:`KahunaGame.legal_actions` on every position of many random games of
every variant and option, and holds the effect rules at the end of the
module (captures, removals, the planning claim, premature end, winner) to
the outcome of :meth:`KahunaGame.step`.

Reading order: :func:`legal_actions` at the top combines one ``can_*``
function per kind of action (the action ids of :mod:`kahuna_env.actions`); each
``can_*`` is a conjunction of the named conditions below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kahuna_env.actions import (
    ACTION_LINE,
    DISCARD,
    DRAW,
    NUM_ACTIONS,
    PAID_ISLANDS,
    PASS,
    REMOVE_AB,
    TAKE,
)
from kahuna_env.board import (
    HAND_LIMIT,
    ISLAND_LINES,
    LINES,
    MAJORITY,
    NUM_LINES,
)

if TYPE_CHECKING:
    from kahuna_env.engine import KahunaGame

__all__ = [
    "Capture",
    "can_claim_free_bridge",
    "can_discard",
    "can_draw",
    "can_pass",
    "can_place",
    "can_remove",
    "can_take",
    "captures",
    "claim_offered",
    "claim_pending",
    "controller_by_majority",
    "discard_rule_allows_discard",
    "discard_rule_forbids_pass",
    "ends_turn",
    "final_scoring_points",
    "game_over",
    "hand_is_full",
    "has_discarded",
    "has_played",
    "holds_card",
    "holds_cards",
    "holds_opponent_bridge",
    "in_final_turns",
    "in_setup",
    "in_turn",
    "interim_points",
    "is_free",
    "is_legal",
    "island_difference",
    "legal_actions",
    "may_discard",
    "may_draw_a_card",
    "may_play",
    "must_draw",
    "next_player",
    "opponent",
    "owners_after_placement",
    "owners_after_removal",
    "owners_now",
    "planning_blocked",
    "player",
    "premature_end",
    "premature_winner",
    "removal_payments",
    "round_ends",
    "something_to_draw",
    "supply_left",
    "winner_after_final_scoring",
]


# ==================================================================== legal actions


def legal_actions(game: KahunaGame) -> list[int]:
    """Every legal action, ascending; must equal :meth:`KahunaGame.legal_actions`.

    docs/RULES.md "Setup" (handicap), "A turn", "Discard rule option",
    "Planning variant"; none once the game is over ("Rounds and scoring").
    """
    return [action for action in range(NUM_ACTIONS) if is_legal(game, action)]


def is_legal(game: KahunaGame, action: int) -> bool:
    """Whether ``action`` is legal: decode its id (:mod:`kahuna_env.actions`) and ask the rule of its kind."""
    line = ACTION_LINE[action]
    if action < REMOVE_AB:
        return can_place(game, line, pay_island=PAID_ISLANDS[action][0])
    if action < DISCARD:
        return can_remove(game, line, payment=PAID_ISLANDS[action])
    if action < DRAW:
        return can_discard(game, island=action - DISCARD)
    if action == DRAW:
        return can_draw(game)
    if action < PASS:
        return can_take(game, slot=action - TAKE)
    if action == PASS:
        return can_pass(game)
    return can_claim_free_bridge(game, line)


# ==================================================================== one rule per kind of action


def can_place(game: KahunaGame, line: int, pay_island: int) -> bool:
    """Place (docs/RULES.md "A turn", Place; "Planning variant").

    Pay one card naming either island of a free line and put a bridge there;
    needs a bridge in supply; in the planning variant, not next to an island
    the opponent controls.
    """
    # The conditions are in the order cheapest-to-refute first; the meaning is their conjunction.
    return (
        pay_island in LINES[line]
        and holds_card(game, pay_island)
        and is_free(game, line)
        and may_play(game)
        and supply_left(game) > 0
        and not planning_blocked(game, line)
    )


def can_remove(game: KahunaGame, line: int, payment: tuple[int, int]) -> bool:
    """Remove (docs/RULES.md "A turn", Remove).

    Pay two cards, each naming an island of a line that holds an *opponent*
    bridge (``a+b``, ``a+a`` or ``b+b``).
    """
    # The conditions are in the order cheapest-to-refute first; the meaning is their conjunction.
    return (
        holds_opponent_bridge(game, line)
        and tuple(sorted(payment)) in removal_payments(line)
        and holds_cards(game, payment)
        and may_play(game)
    )


def can_discard(game: KahunaGame, island: int) -> bool:
    """Discard face down (docs/RULES.md "A turn", Card phase; Discard rule option).

    One card of the hand, instead of playing; the ``hand_limit`` rule adds
    its own condition (:func:`discard_rule_allows_discard`).
    """
    return may_discard(game) and holds_card(game, island)


def can_draw(game: KahunaGame) -> bool:
    """Draw (docs/RULES.md "A turn", End action): the top card of a non-empty pile."""
    return may_draw_a_card(game) and game.pile_size > 0


def can_take(game: KahunaGame, slot: int) -> bool:
    """Take (docs/RULES.md "A turn", End action): the card of a face-up slot that holds one."""
    return may_draw_a_card(game) and game.face_up[slot] is not None


def can_pass(game: KahunaGame) -> bool:
    """Pass (docs/RULES.md "A turn", End action and Must draw; Discard rule option).

    Ending the turn without a card is legal unless the opponent's previous
    turn ended with a pass and something is drawable (must draw), or a
    ``hand_limit`` discard was made this turn.
    """
    return in_turn(game) and not (must_draw(game) and something_to_draw(game)) and not discard_rule_forbids_pass(game)


def can_claim_free_bridge(game: KahunaGame, line: int) -> bool:
    """A ``FREE_BRIDGE`` (docs/RULES.md "Setup", Handicap; "Planning variant").

    In handicap setup the handicap player puts a bridge from their supply on
    any free line, paying nothing; the planning restriction does not apply
    (nobody controls an island yet).  In a turn of the planning variant, the
    remover may claim the line their removal just freed (``claim_line``),
    with a bridge from their supply, if neither of its islands is controlled
    by the opponent; any other action forgoes the claim.
    """
    if game_over(game):
        return False
    if in_setup(game):
        return is_free(game, line) and supply_left(game) > 0
    return (
        claim_pending(game) == line
        and is_free(game, line)
        and supply_left(game) > 0
        and not planning_blocked(game, line)
    )


# ==================================================================== who acts, and in which phase


def player(game: KahunaGame) -> int:
    """The player to act; the same player acts for every action of a turn (docs/RULES.md "A turn")."""
    return game.current_player


def opponent(game: KahunaGame) -> int:
    """The other player."""
    return 1 - game.current_player


def game_over(game: KahunaGame) -> bool:
    """Once the game has ended (final scoring or premature end), no action is legal.

    docs/RULES.md "Rounds and scoring" (Final round, Premature end).
    """
    return game.is_over


def in_setup(game: KahunaGame) -> bool:
    """Handicap setup: free bridges only, before anyone's first turn (docs/RULES.md "Setup", Handicap)."""
    return game.in_setup


def in_turn(game: KahunaGame) -> bool:
    """A turn is running (card phase or end action): the game is not over and the handicap setup is done.

    docs/RULES.md "A turn"; "Setup" (the handicap bridges come before anyone's first turn).
    """
    return not game_over(game) and not in_setup(game)


def in_final_turns(game: KahunaGame) -> bool:
    """The extra turn each after round 3 ran out of cards, without drawing.

    docs/RULES.md "Rounds and scoring", Final round.  The pile and the
    face-up row are empty then, so "nothing to draw" already forbids drawing;
    the rule is stated anyway because the rulebook states it.
    """
    return game.in_final_turns


def has_played(game: KahunaGame) -> bool:
    """The current player has placed or removed this turn (docs/RULES.md "A turn", Card phase)."""
    return game.played_this_turn > 0


def has_discarded(game: KahunaGame) -> bool:
    """The current player has discarded face down this turn (docs/RULES.md "A turn", Card phase)."""
    return game.discarded_this_turn > 0


def may_play(game: KahunaGame) -> bool:
    """Plays (placements, removals) are open: in a turn, and no face-down discard this turn.

    docs/RULES.md "A turn", Card phase: "one who has discarded may not play".
    """
    return in_turn(game) and not has_discarded(game)


def may_discard(game: KahunaGame) -> bool:
    """Face-down discards are open: in a turn, nothing played this turn, and the discard rule allows it.

    docs/RULES.md "A turn", Card phase: "a player who has played a card this
    turn may not discard"; Discard rule option.
    """
    return in_turn(game) and not has_played(game) and discard_rule_allows_discard(game)


def discard_rule_allows_discard(game: KahunaGame) -> bool:
    """The discard rule option on discarding (docs/RULES.md "A turn", Discard rule option).

    ``instead_of_play``: always (any hand size, drawable or not).
    ``hand_limit``: a *first* discard needs a full hand (5 cards) and
    something drawable; further discards in the same turn are free.
    """
    if game.config.discard_rule == "instead_of_play":
        return True
    return has_discarded(game) or (hand_is_full(game) and something_to_draw(game))


def discard_rule_forbids_pass(game: KahunaGame) -> bool:
    """Under ``hand_limit`` a turn with discards ends with a draw or take, never a pass.

    docs/RULES.md "A turn", Discard rule option.
    """
    return game.config.discard_rule == "hand_limit" and has_discarded(game)


def may_draw_a_card(game: KahunaGame) -> bool:
    """Drawing or taking is open: in a turn, not in the final turns, and the hand holds fewer than 5 cards.

    docs/RULES.md "A turn", End action ("a player holding 5 cards cannot draw
    or take"); "Rounds and scoring", Final round ("without drawing").
    """
    return in_turn(game) and not in_final_turns(game) and not hand_is_full(game)


def must_draw(game: KahunaGame) -> bool:
    """The opponent's previous turn ended with a pass (docs/RULES.md "A turn", Must draw)."""
    return game.must_draw


def claim_pending(game: KahunaGame) -> int | None:
    """The line freed by the removal just made, claimable for free (docs/RULES.md "Planning variant")."""
    return game.claim_line


# ==================================================================== cards


def holds_card(game: KahunaGame, island: int) -> bool:
    """The current player's hand holds a card of ``island`` (docs/RULES.md "A turn")."""
    return game.hand_counts(player(game))[island] > 0


def holds_cards(game: KahunaGame, islands: Sequence[int]) -> bool:
    """The current player's hand holds all these cards, one per entry: ``a+a`` needs two ``a``.

    docs/RULES.md "A turn", Remove.
    """
    hand = game.hand_counts(player(game))
    return all(hand[island] >= islands.count(island) for island in islands)


def hand_is_full(game: KahunaGame) -> bool:
    """The current player holds 5 cards, the hand limit (docs/RULES.md "A turn", End action)."""
    return game.hand_size(player(game)) >= HAND_LIMIT


def something_to_draw(game: KahunaGame) -> bool:
    """The pile or a face-up slot holds a card (docs/RULES.md "A turn", Must draw; Discard rule option)."""
    return game.pile_size > 0 or any(card is not None for card in game.face_up)


def removal_payments(line: int) -> tuple[tuple[int, int], ...]:
    """The card pairs that remove a bridge on ``line``: ``a+b``, ``a+a``, ``b+b`` (docs/RULES.md "A turn", Remove)."""
    a, b = LINES[line]
    return ((a, b), (a, a), (b, b))


# ==================================================================== bridges and islands


def is_free(game: KahunaGame, line: int) -> bool:
    """No bridge on ``line`` (docs/RULES.md "A turn", Place)."""
    return game.owner(line) is None


def holds_opponent_bridge(game: KahunaGame, line: int) -> bool:
    """``line`` holds a bridge of the opponent, not one's own (docs/RULES.md "A turn", Remove)."""
    return game.owner(line) == opponent(game)


def supply_left(game: KahunaGame) -> int:
    """Bridges the current player can still place: 25 minus theirs on the board (docs/RULES.md "Material", Place)."""
    return game.supply(player(game))


def planning_blocked(game: KahunaGame, line: int) -> bool:
    """Planning variant: an island of ``line`` is controlled by the opponent (docs/RULES.md "Planning variant").

    Such a line takes no placement and no free claim.  Always ``False`` in
    the standard game.
    """
    if game.config.variant != "planning":
        return False
    return any(game.controller(island) == opponent(game) for island in LINES[line])


# ==================================================================== effects on the board


def controller_by_majority(owners: Sequence[int | None], island: int) -> int | None:
    """Who controls ``island`` given every line's owner: the holder of a strict majority of its lines.

    docs/RULES.md "Control" and "Material" (majority = degree // 2 + 1);
    after every action control is exactly this.
    """
    for candidate in (0, 1):
        if sum(1 for line in ISLAND_LINES[island] if owners[line] == candidate) >= MAJORITY[island]:
            return candidate
    return None


def owners_now(game: KahunaGame) -> list[int | None]:
    """The owner of every line (``None`` for free), by line id."""
    return [game.owner(line) for line in range(NUM_LINES)]


@dataclass(frozen=True)
class Capture:
    """What a placement takes: islands whose control it gains, and the opponent bridges it removes.

    docs/RULES.md "Control".
    """

    taken: frozenset[int]
    removed: frozenset[int]


def captures(game: KahunaGame, line: int, placer: int) -> Capture:
    """The capture rule for ``placer`` putting a bridge on free ``line`` (docs/RULES.md "Control").

    The placement takes each island of the line where it gives ``placer`` a
    majority they did not have, and removes **every** opponent bridge on the
    lines of a taken island.  Nothing more moves (the opponent may lose
    control on the removed bridges' other islands; see
    :func:`controller_by_majority`).  A placement on an island ``placer``
    already controls removes nothing.
    """
    owners = owners_now(game)
    owners[line] = placer
    taken = frozenset(
        island
        for island in LINES[line]
        if game.controller(island) != placer and controller_by_majority(owners, island) == placer
    )
    removed = frozenset(other for island in taken for other in ISLAND_LINES[island] if owners[other] == 1 - placer)
    return Capture(taken, removed)


def owners_after_placement(game: KahunaGame, line: int, placer: int) -> list[int | None]:
    """Every line's owner after ``placer`` places on ``line`` and the capture rule applies (docs/RULES.md "Control")."""
    owners = owners_now(game)
    owners[line] = placer
    for removed in captures(game, line, placer).removed:
        owners[removed] = None
    return owners


def owners_after_removal(game: KahunaGame, line: int) -> list[int | None]:
    """Every line's owner after the bridge on ``line`` returns to its owner.

    A removal never gives anyone control; the owner loses control where they
    drop below majority (docs/RULES.md "Control").
    """
    owners = owners_now(game)
    owners[line] = None
    return owners


def claim_offered(game: KahunaGame, line: int) -> bool:
    """Whether removing the bridge on ``line`` now offers the free claim (docs/RULES.md "Planning variant").

    Only in the planning variant, only with a bridge in supply, and only if
    neither island of the freed line is *still* controlled by the opponent
    once the bridge is gone.
    """
    if game.config.variant != "planning" or supply_left(game) == 0:
        return False
    owners = owners_after_removal(game, line)
    return all(controller_by_majority(owners, island) != opponent(game) for island in LINES[line])


# ==================================================================== turn order, rounds and scoring


def ends_turn(action: int) -> bool:
    """DRAW, TAKE and PASS end the turn; every other action leaves the same player to act.

    docs/RULES.md "A turn" (a card phase followed by an end action).
    """
    return DRAW <= action <= PASS


def next_player(game: KahunaGame, action: int) -> int:
    """Who acts after ``action`` in a game that goes on (docs/RULES.md "A turn"; "Setup", Handicap).

    The last handicap bridge hands the first turn to ``first_player``; an end
    action hands the turn to the opponent; anything else keeps the player.
    """
    if in_setup(game) and game.setup_left == 1:
        return game.config.first_player
    return opponent(game) if ends_turn(action) else player(game)


def round_ends(game: KahunaGame, action: int) -> bool:
    """Whether ``action`` ends the round: an end action that leaves the pile and the face-up row empty.

    docs/RULES.md "Rounds and scoring".  Drawing the last pile card or taking
    the last face-up card does it; in the final turns (nothing left to draw)
    no action ends a round.  ``action`` must be legal.
    """
    if not ends_turn(action) or in_final_turns(game):
        return False
    pile = game.pile_size
    face_up = sum(card is not None for card in game.face_up)
    if action == DRAW:
        pile -= 1
    elif action != PASS:  # a take: the slot refills from the pile top if there is one
        if pile:
            pile -= 1
        else:
            face_up -= 1
    return pile == 0 and face_up == 0


def island_difference(game: KahunaGame) -> int:
    """Islands player 0 controls minus islands player 1 controls (docs/RULES.md "Rounds and scoring")."""
    return len(game.controlled_islands(0)) - len(game.controlled_islands(1))


def interim_points(game: KahunaGame) -> list[int]:
    """Points each player scores at the end of round 1 (1 point) or 2 (2 points): the player with more islands.

    docs/RULES.md "Rounds and scoring", Interim scoring; equal counts score nothing.
    """
    points = [0, 0]
    difference = island_difference(game)
    if difference:
        points[0 if difference > 0 else 1] = game.round  # 1 point after round 1, 2 after round 2
    return points


def final_scoring_points(game: KahunaGame) -> list[int]:
    """Points of the final scoring: the player with more islands scores the difference.

    docs/RULES.md "Rounds and scoring", Final round.
    """
    difference = island_difference(game)
    return [max(difference, 0), max(-difference, 0)]


def premature_end(game: KahunaGame) -> bool:
    """From the first interim scoring on (round 2 or 3), a player without a bridge on the board ends the game.

    docs/RULES.md "Rounds and scoring", Premature end.
    """
    return game.round >= 2 and (game.bridges_on_board(0) == 0 or game.bridges_on_board(1) == 0)


def premature_winner(game: KahunaGame) -> int | None:
    """After a premature end the player who still has bridges wins; neither has: a draw (``None``).

    docs/RULES.md "Rounds and scoring", Premature end.
    """
    has_bridges = [game.bridges_on_board(p) > 0 for p in (0, 1)]
    if has_bridges[0] == has_bridges[1]:
        return None
    return 0 if has_bridges[0] else 1


def winner_after_final_scoring(game: KahunaGame) -> int | None:
    """Higher total; if tied, more final-scoring points; if tied, more bridges on the board; else a draw.

    docs/RULES.md "Rounds and scoring", Winner.
    """
    for first, second in (
        game.scores,
        game.final_points,
        (game.bridges_on_board(0), game.bridges_on_board(1)),
    ):
        if first != second:
            return 0 if first > second else 1
    return None
