"""The ``greedy`` baseline: one-ply look-ahead on the controlled-island difference."""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env.agents.base import SeededAgent
from kahuna_env.board import LINES, LINES_TOUCHING, MAJORITY, NUM_ISLANDS
from kahuna_env.engine import KahunaGame


def _progress(game: KahunaGame, player: int) -> int:
    """Bridges counting towards majorities the player can still take (a tie-break)."""
    opponent_control = game._control[1 - player]
    count = game._count[player]
    return sum(min(count[i], MAJORITY[i]) for i in range(NUM_ISLANDS) if not opponent_control >> i & 1)


def evaluate(game: KahunaGame, player: int) -> tuple[int, int, int]:
    """(controlled-island difference, progress towards majorities, bridges on board difference)."""
    opponent = 1 - player
    difference = game._control[player].bit_count() - game._control[opponent].bit_count()
    bridges = game._line_mask[player].bit_count() - game._line_mask[opponent].bit_count()
    return difference, _progress(game, player), bridges


_LINE_ENDS = LINES
_ISLAND_BIT = tuple(1 << i for i in range(NUM_ISLANDS))


def play_outcome(game: KahunaGame, action: int) -> tuple[int, int, int, int]:
    """The result of the current player's card action (placement, removal or free bridge), without copying.

    Returns ``(terminal, island difference, progress, bridge difference)`` from
    the acting player's side after the action, computed from the engine's
    counts with the control rule applied: ``terminal`` is 1 when the action
    ends the game with a win (the opponent's last bridge gone from round 2
    on), -1 when it ends it otherwise, else 0 (and then the other entries are
    :func:`evaluate` of the resulting position).  Equal to stepping a copy of
    the game (``tests/test_agents.py`` checks it against that), several times
    faster.
    """
    player = game._current
    opponent = 1 - player
    my_count = game._count[player]
    their_count = game._count[opponent]
    my_control = game._control[player]
    their_control = game._control[opponent]
    mine = game._line_mask[player]
    theirs = game._line_mask[opponent]
    lost: dict[int, int] = {}
    raised = ()
    if A.REMOVE_AB <= action < A.DISCARD:
        line = A.ACTION_LINE[action]
        theirs &= ~(1 << line)
        for island in _LINE_ENDS[line]:
            lost[island] = lost.get(island, 0) + 1
    else:
        line = A.ACTION_LINE[action]
        mine |= 1 << line
        raised = _LINE_ENDS[line]
        gained = 0
        for island in raised:
            if my_count[island] + 1 == MAJORITY[island]:
                gained |= _ISLAND_BIT[island]
        if gained:
            my_control |= gained
            victims = theirs & LINES_TOUCHING[gained]
            theirs &= ~victims
            while victims:
                low = victims & -victims
                for island in _LINE_ENDS[low.bit_length() - 1]:
                    lost[island] = lost.get(island, 0) + 1
                victims ^= low
    for island, count in lost.items():
        if their_count[island] - count < MAJORITY[island]:
            their_control &= ~_ISLAND_BIT[island]
    if game._round >= 2 and not theirs:
        return (1 if mine else -1), 0, 0, 0
    progress = 0
    for island in range(NUM_ISLANDS):
        if not their_control >> island & 1:
            count = my_count[island] + (island in raised)
            progress += count if count < MAJORITY[island] else MAJORITY[island]
    return (
        0,
        my_control.bit_count() - their_control.bit_count(),
        progress,
        mine.bit_count() - theirs.bit_count(),
    )


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
        legal = game.legal_actions()
        player = game.current_player
        current = evaluate(game, player)
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
            return best[int(self.rng.integers(len(best)))]
        for end in (A.DRAW, A.TAKE, A.TAKE + 1, A.TAKE + 2, A.PASS):
            if end in legal:
                return end
        if best:
            return best[int(self.rng.integers(len(best)))]
        discards = [a for a in legal if A.DISCARD <= a < A.DRAW]
        return discards[int(self.rng.integers(len(discards)))]
