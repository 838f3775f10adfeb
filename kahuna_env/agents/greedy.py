"""The ``greedy`` baseline: one-ply look-ahead on the controlled-island difference."""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env.agents.base import Agent
from kahuna_env.board import MAJORITY, NUM_ISLANDS
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


class GreedyAgent(Agent):
    """Plays the card action with the best one-ply result while it improves on the position.

    Each placement, removal or free bridge is tried on a copy and scored by
    (island difference, progress towards majorities, bridge difference),
    ties broken by paying fewer cards and then at random.  When no play
    improves on the current score the turn ends: draw from the pile when
    possible, else take a face-up card, else pass; a player forced to act
    first (5 cards, must draw) plays its best card action or discards.
    """

    name = "greedy"
    uses_game = True

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
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
            child = game.clone()
            child.step(action)
            if child.is_over:
                won = child.winner == player
                key = (1 if won else -1, 0, 0, 0)
            else:
                value = evaluate(child, player)
                key = (0, *value)
            key = (*key, -len(A.PAID_ISLANDS[action]))
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
