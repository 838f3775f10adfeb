"""Gymnasium single-agent wrapper: one seat of Kahuna against a fixed opponent.

=============  ==================================================================================
Creation       ``gymnasium.make("Kahuna-v0", opponent="random")`` or ``KahunaSingleAgentEnv(...)``
Actions        ``Discrete(179)`` (see :mod:`kahuna_env.actions`)
Observation    ``Dict(observation=Box(0, 1, (246,), float32), action_mask=Box(0, 1, (179,), int8))``;
               with ``observation="flat"`` the ``Box(0, 1, (246,), float32)`` alone
Action mask    ``env.action_masks()`` (bool, 179), as sb3-contrib's ``MaskablePPO`` expects
Reward         at the end only, from the learning seat's side: +1/-1/0 (``reward="win_loss"``)
               or the final point difference (``reward="score"``)
Episode end    ``terminated=True`` when the game ends; never truncated
=============  ==================================================================================

The learning agent plays seat ``seat`` (0, 1, or ``"random"``: a seat drawn
for every episode); the opponent plays the other seat, and its actions are
applied inside :meth:`KahunaSingleAgentEnv.reset` and
:meth:`KahunaSingleAgentEnv.step` until it is the learner's move again (a turn
is several actions, so one learner step may be followed by zero opponent
actions).  The opponent is a baseline name (``"random"``, ``"greedy"``), a
:class:`kahuna_env.agents.Agent`, or a callable ``(observation, action_mask)
-> action`` receiving its own flat observation and int8 mask.  It is always
asked through :func:`kahuna_env.agents.choose_action`, so an agent that uses
the game only ever sees a determinization, never the real hidden cards.

Illegal actions.  By default (``illegal_action="raise"``) an illegal action by
the learner raises :class:`kahuna_env.engine.IllegalActionError` (a
``ValueError``) naming the action and why, and the game is unchanged: mask
your policy with :meth:`~KahunaSingleAgentEnv.action_masks`.  With
``illegal_action="lose"`` the episode ends instead (``terminated=True``,
reward -1, ``info["illegal_action"] = True``), like PettingZoo's
``TerminateIllegalWrapper``; Gymnasium's ``check_env``, which steps with
unmasked random actions, needs this setting.

Seeding.  ``reset(seed=s)`` seeds the env's generator, from which every
episode draws the deal, the seat (when random), the opponent's seed and the
generator of its determinizations: the same seed gives the same episodes for
the same learner actions.  ``reset(options={"position": d})`` starts from a
position (docs/RULES.md, "Positions"), as in the AEC environment.

``info`` holds ``{"seat": s}`` on every step, plus ``scores``,
``final_points`` and ``winner`` (player indices) at the end.  ``render()``
draws the spectator's view of :mod:`kahuna_env.render` (both hands).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent, CallableAgent, choose_action, make_agent
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.env import RENDER_MODES, check_reward_mode, final_info, final_rewards, make_config, start_game
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation
from kahuna_env.render import EnvRenderer

OBSERVATION_MODES: tuple[str, ...] = ("dict", "flat")
"""Values of the ``observation`` keyword."""
ILLEGAL_ACTION_MODES: tuple[str, ...] = ("raise", "lose")
"""Values of the ``illegal_action`` keyword."""
ILLEGAL_ACTION_REWARD = -1.0
"""Reward of an illegal learner action with ``illegal_action="lose"``."""

OpponentSpec = str | Agent | Callable[[np.ndarray, np.ndarray], int]
"""An opponent: a baseline name, an :class:`~kahuna_env.agents.Agent`, or ``(observation, mask) -> action``."""


def make_opponent(opponent: object, where: str = "KahunaSingleAgentEnv") -> Agent:
    """An :class:`~kahuna_env.agents.Agent` from an opponent spec; anything else is a ``ValueError``."""
    if isinstance(opponent, str):
        try:
            return make_agent(opponent)
        except ValueError as error:
            raise ValueError(f"{where}: opponent {error}") from None
    if isinstance(opponent, Agent):
        return opponent
    if callable(opponent):
        return CallableAgent(opponent)
    raise ValueError(
        f"{where}: opponent must be a baseline name such as 'random', an Agent, "
        f"or a callable (observation, action_mask) -> action; got {opponent!r}"
    )


class KahunaSingleAgentEnv(gymnasium.Env):
    """One seat of Kahuna against a fixed opponent, as a Gymnasium env (see the module docstring).

    Args:
        opponent: a baseline name (``"random"``, ``"greedy"``), an Agent, or a callable
            ``(observation, action_mask) -> action``.
        seat: the learner's player, 0 or 1, or ``"random"`` for a new draw every episode.
        observation: ``"dict"`` (observation and action mask) or ``"flat"`` (the vector alone).
        illegal_action: ``"raise"`` (an ``IllegalActionError``) or ``"lose"`` (the episode ends with -1).
        variant, handicap, discard_rule, first_player: the rule options (as :func:`kahuna_env.env`).
        reward: ``"win_loss"`` or ``"score"``.
        render_mode: ``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(
        self,
        opponent: OpponentSpec = "random",
        *,
        seat: int | str = 0,
        observation: str = "dict",
        illegal_action: str = "raise",
        variant: str = "standard",
        handicap: tuple[int, int] | None = None,
        discard_rule: str = "instead_of_play",
        first_player: int = 0,
        reward: str = "win_loss",
        render_mode: str | None = None,
    ) -> None:
        where = "KahunaSingleAgentEnv"
        self.opponent = make_opponent(opponent, where)
        # An exact int (or numpy integer): 0.0, True or "0" would be silently coerced otherwise.
        if seat != "random" and not (
            isinstance(seat, (int, np.integer)) and not isinstance(seat, bool) and seat in (0, 1)
        ):
            raise ValueError(f"{where}: seat must be 0, 1 or 'random', got {seat!r}")
        if observation not in OBSERVATION_MODES:
            raise ValueError(f"{where}: observation must be one of {list(OBSERVATION_MODES)}, got {observation!r}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"{where}: illegal_action must be one of {list(ILLEGAL_ACTION_MODES)}, got {illegal_action!r}"
            )
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"{where}: render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")
        self.seat_option = seat
        self.observation_mode = observation
        self.illegal_action = illegal_action
        self.reward_mode = check_reward_mode(reward, where)
        self.render_mode = render_mode
        self.config = make_config(variant, handicap, discard_rule, first_player, where)
        vector = spaces.Box(low=0.0, high=1.0, shape=(OBSERVATION_SIZE,), dtype=np.float32)
        if observation == "dict":
            self.observation_space = spaces.Dict(
                {"observation": vector, "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8)}
            )
        else:
            self.observation_space = vector
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.game: KahunaGame | None = None
        """The rules engine of the current episode (``None`` before the first reset)."""
        self.seat: int = 0 if seat == "random" else int(seat)
        """The learner's player in the current episode."""
        self.last_action: int | None = None
        self._opponent_rng = np.random.default_rng(0)
        self._ended = False  # the game is over, or the learner forfeited it with an illegal action
        self._renderer = EnvRenderer(render_mode, self.metadata["render_fps"])

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray | dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode and play the opponent until the learner is to act; returns ``(observation, info)``."""
        super().reset(seed=seed)
        rng = self.np_random
        game_seed = int(rng.integers(2**63))
        self.seat = int(rng.integers(2)) if self.seat_option == "random" else int(self.seat_option)
        self.opponent.reset(seed=int(rng.integers(2**63)))
        self._opponent_rng = np.random.default_rng(int(rng.integers(2**63)))
        self.game = start_game(self.config, game_seed, options)
        self.last_action = None
        self._ended = False
        self._play_opponent()
        if self.game.is_over:
            raise ValueError(
                "reset(): the game ended before the learning seat could act (the opponent finished it from the "
                "given position); choose a position where the learner moves first"
            )
        if self.render_mode == "human":
            self.render()
        return self._observation(), {"seat": self.seat}

    def step(self, action: int) -> tuple[np.ndarray | dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply the learner's action, then the opponent's until the learner is to act again or the game ends.

        Raises :class:`~kahuna_env.engine.IllegalActionError` for an illegal action with
        ``illegal_action="raise"`` (the default), and ``RuntimeError`` after the episode ended.
        """
        game = self.game
        if game is None:
            raise RuntimeError("step(): call reset() first")
        if self._ended:
            raise RuntimeError("step(): the episode has ended; call reset()")
        if not game.is_legal(action):
            if self.illegal_action == "raise":
                try:
                    game.step(action)  # raises with the engine's explanation
                except IllegalActionError as error:
                    raise IllegalActionError(f"KahunaSingleAgentEnv.step(): {error}") from None
                raise AssertionError("unreachable: an action that is not legal was accepted")  # pragma: no cover
            self._ended = True
            return self._observation(), ILLEGAL_ACTION_REWARD, True, False, {"seat": self.seat, "illegal_action": True}
        game.step(action)
        self.last_action = int(action)
        self._play_opponent()
        reward = 0.0
        info: dict[str, Any] = {"seat": self.seat}
        if game.is_over:
            self._ended = True
            reward = final_rewards(game, self.reward_mode)[self.seat]
            info.update(final_info(game))
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, game.is_over, False, info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the learner's legal actions (all ``False`` once the episode has ended)."""
        game = self.game
        if game is None:
            raise RuntimeError("action_masks(): call reset() first")
        if self._ended or game.current_player != self.seat:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return game.action_mask()

    def render(self) -> str | np.ndarray | None:
        """Render as ``render_mode`` says (the spectator's view; see :mod:`kahuna_env.render`)."""
        return self._renderer.render(self.game, self.last_action)

    def close(self) -> None:
        """Close the window of ``render_mode="human"`` if one is open."""
        self._renderer.close()

    # ------------------------------------------------------------------ internals
    def _play_opponent(self) -> None:
        game = self.game
        assert game is not None
        opponent_seat = 1 - self.seat
        while not game.is_over and game.current_player == opponent_seat:
            action = choose_action(self.opponent, game, self._opponent_rng)
            try:
                game.step(action)
            except IllegalActionError as error:
                raise IllegalActionError(f"the opponent {self.opponent!r} chose an illegal action: {error}") from None
            self.last_action = action

    def _observation(self) -> np.ndarray | dict[str, np.ndarray]:
        game = self.game
        assert game is not None
        vector = encode_observation(game, self.seat)
        if self.observation_mode == "flat":
            return vector
        mask = bytearray(NUM_ACTIONS)
        if not self._ended and game.current_player == self.seat:
            for legal in game.legal_actions():
                mask[legal] = 1
        return {"observation": vector, "action_mask": np.frombuffer(mask, dtype=np.int8)}
