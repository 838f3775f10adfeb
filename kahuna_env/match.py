"""Scalar play: the one loop that plays a :class:`~kahuna_env.engine.KahunaGame` with a chooser per seat.

Every place that plays one game at a time goes through :func:`play`; they differ
only in their choosers, where they stop and what they do after each action:

* the arena's matches (:mod:`kahuna_arena.match`: ``kahuna-eval``, ``kahuna-play``,
  ``kahuna-replay``, ``kahuna-demo``);
* the opponent of the Gymnasium wrapper (:class:`~kahuna_env.gym_env.KahunaSingleAgentEnv`)
  and the baseline seat of RLlib's env (``training/rllib/env.py``): the learner's seat
  has no chooser, so the loop stops when it is the learner's turn;
* GIF recording (:func:`~kahuna_env.render.record_game_gif`: a frame after each action,
  ``max_actions`` the length of the film);
* ``kahuna-export``'s sampled games (a chooser that records what it sees, and stops the
  game with ``None`` once it has seen enough).

The pieces:

* a **chooser** picks the action of the player to move (:data:`Chooser`, ``game -> action``);
  :func:`agent_chooser` asks an :class:`~kahuna_env.agents.Agent` through
  :func:`~kahuna_env.agents.choose_action`, which shows it only what its seat may see
  (a determinization, never the hidden cards);
* a seat whose chooser is ``None`` is its caller's, as an ``AWAIT`` seat is
  :func:`~kahuna_env.seated.play_seated`'s: the loop stops when that seat is to move;
* a chooser that returns ``None`` abandons the game there.

Games played side by side, a policy in every seat, go through
:func:`kahuna_env.seated.play_seated` on the batched engine instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kahuna_env.agents import Agent, choose_action
from kahuna_env.engine import KahunaGame

__all__ = ["Chooser", "OnAction", "agent_chooser", "play"]

Chooser = Callable[[KahunaGame], "int | None"]
"""Picks the action of the player to move in a game; ``None`` abandons the game."""
OnAction = Callable[[int, int, KahunaGame], None]
"""Called after every action with (player who acted, action, the game after the action)."""


def agent_chooser(agent: Agent, rng: np.random.Generator) -> Chooser:
    """A chooser asking ``agent`` through :func:`kahuna_env.agents.choose_action` (its seat's view only).

    ``rng`` draws the determinizations handed to an agent that uses the game.
    """

    def choose(game: KahunaGame) -> int:
        return choose_action(agent, game, rng)

    return choose


def play(
    game: KahunaGame,
    choosers: Sequence[Chooser | None],
    on_action: OnAction | None = None,
    max_actions: int | None = None,
) -> list[int]:
    """Play ``game`` from its current position with ``choosers[player]`` choosing for each seat.

    Stops when the game is over, when the player to move has no chooser (``None``: the
    caller's seat, the game is left at its turn), when a chooser returns ``None`` (the game
    is left unfinished) or after ``max_actions`` actions (``None``: no limit); returns the
    actions played, as ints.  ``on_action`` is called after every action.  An illegal action
    (or one that is not an integer) raises the engine's ``IllegalActionError`` before
    anything changes.
    """
    actions: list[int] = []
    while not game.is_over and (max_actions is None or len(actions) < max_actions):
        player = game.current_player
        choose = choosers[player]
        if choose is None:
            break
        action = choose(game)
        if action is None:
            break
        game.step(action)
        action = int(action)  # the engine took it, so it is an int or a numpy integer
        actions.append(action)
        if on_action is not None:
            on_action(player, action, game)
    return actions
