"""The ``greedy`` baseline: one-ply look-ahead on the controlled-island difference."""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env import kernels
from kahuna_env.agents.base import SeededAgent
from kahuna_env.arrays import TABLE_RECORD
from kahuna_env.engine import KahunaGame
from kahuna_env.vector import unpack_actions

TURN_ENDS: tuple[int, ...] = (A.DRAW, A.TAKE, A.TAKE + 1, A.TAKE + 2, A.PASS)
"""The ends of a turn in greedy's order of preference (draw, take slot 0, 1, 2, pass): consecutive action ids,
which the loop reads in ascending order."""
assert tuple(range(A.DRAW, A.PASS + 1)) == TURN_ENDS, "greedy's loop reads the turn ends as ascending ids"


def best_words(game: KahunaGame) -> np.ndarray:
    """:func:`best_actions` as a ``(1, 3)`` uint64 bit set (bit ``a`` of word ``a // 64`` for action ``a``)."""
    out = np.zeros((1, 3), dtype=np.uint64)
    kernels.running().game_greedy(game._state, TABLE_RECORD, out)  # a declared friend: reads it
    return out


def best_actions(game: KahunaGame) -> list[int]:
    """The actions :class:`GreedyAgent` chooses among in ``game`` (ascending; it picks one uniformly).

    The card actions (placements, removals, free bridges) with the best key
    ``(terminal, island difference, progress, bridge difference, -cards paid)``
    after the action when it is a win or improves on the position's own key;
    otherwise the first legal of draw, take slot 0, 1, 2, pass; otherwise the
    best card actions even though they do not improve; otherwise every legal
    discard.  Each card action is played by the rules' loops on a scratch copy
    of the board (:func:`kahuna_env.kernels.greedy_words`, which defines the
    key); a batch asks the same loop (:mod:`kahuna_env.agents.batched`).
    """
    return np.flatnonzero(unpack_actions(best_words(game))[0]).tolist()


class GreedyAgent(SeededAgent):
    """Plays the card action with the best one-ply result while it improves on the position.

    Each placement, removal or free bridge is scored by its result
    (:func:`best_actions`: a win first, then island difference, progress
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
