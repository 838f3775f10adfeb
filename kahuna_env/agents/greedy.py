"""The ``greedy`` baseline: one-ply look-ahead on the controlled-island difference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kahuna_env import actions as A
from kahuna_env.agents.base import SeededAgent
from kahuna_env.board import ISLAND_BIT, ISLAND_LINE_MASK, LINE_A, LINE_B, LINES, LINES_TOUCHING, MAJORITY, NUM_ISLANDS
from kahuna_env.engine import KahunaGame

TURN_ENDS: tuple[int, ...] = (A.DRAW, A.TAKE, A.TAKE + 1, A.TAKE + 2, A.PASS)
"""The ends of a turn in greedy's order of preference (draw, take slot 0, 1, 2, pass); the batched
greedy reads them as one slice of the mask, so they are consecutive action ids."""


# --- the control rule as set arithmetic: what a placement or a removal does, without stepping a copy --------
def control_taken(count: Sequence[int], line: int) -> int:
    """Islands (bitmask) whose majority a new bridge on ``line`` completes.

    ``count`` is the placer's bridges per island *before* the placement; an
    island is taken when the new bridge brings its count to exactly the
    majority (a player already holding it takes nothing new).
    """
    a = LINE_A[line]
    b = LINE_B[line]
    taken = ISLAND_BIT[a] if count[a] + 1 == MAJORITY[a] else 0
    if count[b] + 1 == MAJORITY[b]:
        taken |= ISLAND_BIT[b]
    return taken


def swept_lines(taken: int, opponent_lines: int) -> int:
    """The opponent's lines (bitmask) the capture rule clears when the ``taken`` islands change hands."""
    return opponent_lines & LINES_TOUCHING[taken] if taken else 0


def control_kept(control: int, count: Sequence[int], removed: int) -> int:
    """A player's control (bitmask) after their bridges on the ``removed`` lines leave the board.

    ``count`` is their bridges per island before the removal; an island stays
    controlled only while its strict majority holds.  Losing bridges never
    moves anything else (one level of the capture rule).
    """
    kept = control
    while control:
        low = control & -control
        island = low.bit_length() - 1
        if count[island] - (removed & ISLAND_LINE_MASK[island]).bit_count() < MAJORITY[island]:
            kept ^= low
        control ^= low
    return kept


def _progress(counts: list[int], opponent_control: int) -> int:
    """Bridges counting towards majorities the player can still take (a tie-break)."""
    return sum(min(counts[i], MAJORITY[i]) for i in range(NUM_ISLANDS) if not opponent_control >> i & 1)


def position_key(game: KahunaGame, player: int) -> tuple[int, int, int]:
    """(controlled-island difference, progress towards majorities, bridges on board difference)."""
    opponent = 1 - player
    difference = game.control_mask(player).bit_count() - game.control_mask(opponent).bit_count()
    bridges = game.bridges_on_board(player) - game.bridges_on_board(opponent)
    return difference, _progress(game.bridge_counts(player), game.control_mask(opponent)), bridges


def play_outcome(game: KahunaGame, action: int) -> tuple[int, int, int, int]:
    """The result of the current player's card action (placement, removal or free bridge), without copying.

    Returns ``(terminal, island difference, progress, bridge difference)`` from
    the acting player's side after the action, computed with the engine's own
    control rule (:func:`control_taken`, :func:`swept_lines`,
    :func:`control_kept`): ``terminal`` is 1 when the
    action ends the game with a win (the opponent's last bridge gone from
    round 2 on), -1 when it ends it otherwise, else 0 (and then the other
    entries are :func:`position_key` of the resulting position).  Equal to
    stepping a copy of the game (``tests/test_agents.py`` checks it against
    that), several times faster.
    """
    player = game.current_player
    opponent = 1 - player
    my_count = game.bridge_counts(player)
    my_control = game.control_mask(player)
    mine = game.bridge_lines(player)
    theirs = game.bridge_lines(opponent)
    line = A.ACTION_LINE[action]
    if A.REMOVE_AB <= action < A.DISCARD:
        removed = 1 << line
    else:
        taken = control_taken(my_count, line)
        my_control |= taken
        removed = swept_lines(taken, theirs)
        mine |= 1 << line
        for island in LINES[line]:
            my_count[island] += 1
    their_control = control_kept(game.control_mask(opponent), game.bridge_counts(opponent), removed)
    theirs &= ~removed
    if game.round >= 2 and not theirs:
        return (1 if mine else -1), 0, 0, 0
    return (
        0,
        my_control.bit_count() - their_control.bit_count(),
        _progress(my_count, their_control),
        mine.bit_count() - theirs.bit_count(),
    )


def best_actions(game: KahunaGame) -> list[int]:
    """The actions :class:`GreedyAgent` chooses among in ``game`` (ascending; it picks one uniformly).

    The card actions (placements, removals, free bridges) with the best key
    ``(*play_outcome, -cards paid)`` when that outcome is a win or improves on
    :func:`position_key` of the position; otherwise the first legal of draw, take
    slot 0, 1, 2, pass; otherwise the best card actions even though they do not
    improve; otherwise every legal discard.  One action when the choice is
    forced (an end of turn, a single best play).
    """
    legal = game.legal_actions()
    current = position_key(game, game.current_player)
    best_key = None
    best: list[int] = []
    for action in legal:
        if A.DISCARD <= action < A.FREE_BRIDGE:
            continue
        key = (*play_outcome(game, action), -len(A.PAID_ISLANDS[action]))
        if best_key is None or key > best_key:
            best_key, best = key, [action]
        elif key == best_key:
            best.append(action)
    if best and best_key is not None and (best_key[0] > 0 or (best_key[0] == 0 and best_key[1:4] > current)):
        return best
    for end in TURN_ENDS:
        if end in legal:
            return [end]
    if best:
        return best
    return [a for a in legal if A.DISCARD <= a < A.DRAW]


class GreedyAgent(SeededAgent):
    """Plays the card action with the best one-ply result while it improves on the position.

    Each placement, removal or free bridge is scored by its result
    (:func:`play_outcome`: a win first, then island difference, progress
    towards majorities, bridge difference), ties broken by paying fewer cards
    and then at random.  When no play improves on the current score the turn
    ends: draw from the pile when possible, else take a face-up card, else
    pass; a player forced to act first (5 cards, must draw) plays its best
    card action or discards.
    """

    name = "greedy"
    uses_game = True
    uses_observation = False

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        if game is None:
            raise ValueError("greedy agent needs the (determinized) game")
        best = best_actions(game)
        return best[int(self.rng.integers(len(best)))] if len(best) > 1 else best[0]
