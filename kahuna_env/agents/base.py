"""The agent protocol and the ``random`` baseline.

An agent maps what one seat may know to an action.  Every agent is called
as ``agent.act(observation, action_mask, game)`` where

* ``observation`` is the seat's flat observation (:mod:`kahuna_env.observation`)
  — or ``None`` for agents that set ``uses_observation = False`` (they read
  the mask or the determinized game instead, and building an observation
  they ignore would cost more than their own decision),
* ``action_mask`` is the legal-action mask (length 179, nonzero where legal),
* ``game`` is ``None`` for agents with ``uses_game = False``; for the others
  it is a *determinization* of the real game for the seat
  (:meth:`KahunaGame.determinize`): public state and the seat's own cards as
  they are, everything hidden resampled.  An agent therefore cannot read the
  opponent's hand or the pile order, by construction.

:func:`choose_action` is the one place that builds these inputs from a real
game, so every harness (evaluation, the Gymnasium wrapper, ``kahuna-play``)
gives agents the same, leak-free view.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kahuna_env.engine import KahunaGame
from kahuna_env.observation import encode_observation


class Agent:
    """Base class: override :meth:`act`; set ``uses_game = True`` to receive a determinized game.

    ``uses_observation = False`` lets the harness pass ``None`` instead of the
    observation vector (for agents that decide from the mask or the game).
    """

    name: str = "agent"
    uses_game: bool = False
    uses_observation: bool = True

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; ``seed`` reseeds the agent's own generator (if it has one)."""

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        """Return a legal action id."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class SeededAgent(Agent):
    """An agent with its own generator ``self.rng``, seeded at construction and by :meth:`reset`."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the agent's generator (when ``seed`` is given)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)


class RandomAgent(SeededAgent):
    """Uniform over the legal actions, with its own seeded generator."""

    name = "random"
    uses_observation = False

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("random agent got an action mask with no legal action")
        return int(legal[self.rng.integers(legal.size)])


class CallableAgent(Agent):
    """Wraps a function ``(observation, action_mask) -> action`` as an agent."""

    def __init__(self, function: Callable[[np.ndarray, np.ndarray], int], name: str | None = None) -> None:
        if not callable(function):
            raise ValueError(f"expected a callable (observation, action_mask) -> action, got {function!r}")
        self.function = function
        self.name = name or getattr(function, "__name__", "callable")

    def act(self, observation: np.ndarray, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        return int(self.function(observation, action_mask))


def choose_action(agent: Agent, game: KahunaGame, rng: np.random.Generator) -> int:
    """Ask ``agent`` for the current player's action in ``game`` (the real game, never shown to the agent).

    ``rng`` drives the determinization handed to game-using agents.
    """
    player = game.current_player
    observation = encode_observation(game, player) if agent.uses_observation else None
    mask = game.action_mask().astype(np.int8)
    view = game.determinize(player, rng) if agent.uses_game else None
    return agent.act(observation, mask, view)
