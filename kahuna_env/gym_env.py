"""Gymnasium single-agent wrapper: one seat of Kahuna against a fixed opponent.

=============  ==================================================================================
Creation       ``gymnasium.make("Kahuna-v0", opponent="random")`` or ``KahunaSingleAgentEnv(...)``
Actions        ``Discrete(179)`` (see :mod:`kahuna_env.actions`)
Observation    ``Dict(observation=Box(0, 1, (246,), float32), action_mask=Box(0, 1, (179,), int8))``;
               with ``observation="flat"`` the ``Box(0, 1, (246,), float32)`` alone
Action mask    ``env.action_masks()`` (bool, 179), as sb3-contrib's ``MaskablePPO`` expects; also
               ``info["action_mask"]`` (int8) after every reset and step, and ``obs["action_mask"]``
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

Illegal actions.  By default (``illegal_action="lose"``) an illegal action by
the learner ends the episode (``terminated=True``, reward -1,
``info["illegal_action"] = True``), like PettingZoo's
``TerminateIllegalWrapper``, and the first one of each env instance issues an
:class:`IllegalActionWarning` naming the action and why (turn it into an error
with ``warnings.simplefilter("error", IllegalActionWarning)``).  So the
checkers (Gymnasium's and SB3's ``check_env``, which step with unmasked random
actions) pass with the default arguments.  With ``illegal_action="raise"`` an
illegal action raises :class:`kahuna_env.engine.IllegalActionError` (a
``ValueError``) naming the action and why, and the game is unchanged: the
setting for a masked policy that must never err.

The mask at the end of an episode.  With ``terminal_mask="next_episode"`` (the
default) the episode-ending step already deals the next episode (from the
env's own generator, exactly as the next ``reset()`` would) and the terminal
observation's mask, ``info["action_mask"]`` and ``action_masks()`` are that
episode's first mask; the next ``reset()`` without a seed plays exactly that
deal (a ``reset(seed=...)`` deals anew, a position option is honoured with the
same seeds).  So a vectorized env in Gymnasium's next-step auto-reset mode,
which hands the policy the terminal observation and then ignores the action,
never hands out an empty mask.  ``terminal_mask="zeros"`` gives the all-zero
mask of a finished game instead.

Seeding.  ``reset(seed=s)`` seeds the env's generator, from which every
episode draws the deal, the seat (when random), the opponent's seed and the
generator of its determinizations: the same seed gives the same episodes for
the same learner actions.  ``reset(options={"position": d})`` starts from a
position (docs/RULES.md, "Positions"), as in the AEC environment.

``info`` holds ``{"seat": s, "action_mask": mask}`` on every reset and step,
plus ``scores``, ``final_points`` and ``winner`` (player indices, -1 for a draw) at the end.
``render()`` draws the spectator's view of :mod:`kahuna_env.render` (both
hands), or with ``render_viewer=p`` player ``p``'s view (nothing it cannot see).

Vector envs.  ``gymnasium.make_vec("Kahuna-v0", num_envs=n, **options)``
builds :func:`kahuna_env.gym_vector.make_vector_env` (same-step auto-reset,
``envs.action_masks()``); docs/ECOSYSTEM.md has each RL library's recipe.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, ClassVar, NamedTuple

import gymnasium
import numpy as np
from gymnasium import spaces

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent, CallableAgent, make_agent
from kahuna_env.agents.external import PLUGINS, load_plugin, plugin_names
from kahuna_env.agents.spec import MAX_SIMULATIONS, parse_baseline
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.env import (
    OBSERVATION_MODES,
    RENDER_MODES,
    check_render_options,
    check_reward_mode,
    final_info,
    final_rewards,
    make_config,
    observation_space,
    start_game,
)
from kahuna_env.match import Chooser, agent_chooser, play
from kahuna_env.observation import encode_observation
from kahuna_env.render import EnvRenderer

ILLEGAL_ACTION_MODES: tuple[str, ...] = ("lose", "raise")
"""Values of the ``illegal_action`` keyword (the default first)."""
TERMINAL_MASK_MODES: tuple[str, ...] = ("next_episode", "zeros")
"""Values of the ``terminal_mask`` keyword (the default first)."""
ILLEGAL_ACTION_REWARD = -1.0
"""Reward of an illegal learner action with ``illegal_action="lose"``."""

_RESET_STATE = ("_np_random", "_np_random_seed", "_next", "game", "seat", "_opponent_rng", "last_action", "_ended")
"""What a ``reset`` of the scalar wrapper may change besides the opponent: saved before it, put back if it fails."""


class IllegalActionWarning(UserWarning):
    """The first illegal learner action of a :class:`KahunaSingleAgentEnv` with ``illegal_action="lose"``."""


class EpisodeSeeds(NamedTuple):
    """What an episode draws from the env's generator, in this order: deal, seat, opponent, opponent's generator."""

    game: int
    seat: int
    opponent: int
    opponent_rng: int


class Episode(NamedTuple):
    """A dealt episode, the opponent played until the learner is to act."""

    seeds: EpisodeSeeds
    game: KahunaGame
    opponent_rng: np.random.Generator
    last_action: int | None


OpponentSpec = str | Agent | Callable[[np.ndarray, np.ndarray], int]
"""An opponent: a baseline name, an :class:`~kahuna_env.agents.Agent`, or ``(observation, mask) -> action``."""


OPPONENT_PLUGINS = PLUGINS
"""Entry-point group of named opponents beyond the baselines (:data:`kahuna_env.agents.external.PLUGINS`)."""
BUILDERS = "kahuna_env.builders"
"""Entry-point group of the builder of every entrant that is not a baseline: kahuna-rl declares
``kahuna-rl = "kahuna_arena.entrants:resolve_entrant"``, the arena's one builder (agent files of every kind, Python
agents, named agents, guided searches), so the environment takes any entrant the arena's tools take while
``kahuna_env`` imports neither the arena nor torch: the group is read only for a name that is not a baseline."""


def plugin_opponent_names() -> list[str]:
    """The names declared in the :data:`OPPONENT_PLUGINS` entry-point group (sorted)."""
    return plugin_names()


def _built_entrant(spec: str, where: str) -> Agent:
    """The agent :data:`BUILDERS`'s builder makes of ``spec``; a one-line ``ValueError`` naming ``where``."""
    found = list(entry_points(group=BUILDERS))
    if not found:  # kahuna_env used without the rest of kahuna-rl: the named agents' own factories
        return load_plugin(spec)
    try:
        agent = found[0].load()(spec)
    except (FileNotFoundError, ValueError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{where}: opponent {message}") from None
    if not isinstance(agent, Agent):
        raise ValueError(f"{where}: opponent {spec!r} ({found[0].value}) did not build an Agent")
    return agent


def make_opponent(opponent: object, where: str = "KahunaSingleAgentEnv") -> Agent:
    """An :class:`~kahuna_env.agents.Agent` from an opponent spec; anything else is a ``ValueError``.

    A string is an entrant, as every tool reads it (:mod:`kahuna_env.agents.spec`): a baseline
    (``"random"``, ``"greedy"``, ``"mcts:200"``), a named agent (``"champion"``, or one a package declares
    in :data:`OPPONENT_PLUGINS`), an agent file of any kind, a Python agent ``py:MODULE:ATTR``, or a
    search guided by one of those; the ones that are not baselines are built by :data:`BUILDERS`.
    """
    if isinstance(opponent, str):
        try:  # the limits every tool applies (a budget of at most MAX_SIMULATIONS)
            baseline = parse_baseline(opponent, MAX_SIMULATIONS)
        except ValueError as error:
            raise ValueError(f"{where}: opponent {error}") from None
        return make_agent(baseline) if baseline is not None else _built_entrant(opponent, where)
    if isinstance(opponent, Agent):
        return opponent
    if callable(opponent):
        return CallableAgent(opponent)
    raise ValueError(
        f"{where}: opponent must be an entrant name such as 'random', 'champion' or 'py:my_agents:act', an Agent, "
        f"or a callable (observation, action_mask) -> action; got {opponent!r}"
    )


class KahunaSingleAgentEnv(gymnasium.Env):
    """One seat of Kahuna against a fixed opponent, as a Gymnasium env (see the module docstring).

    Args:
        opponent: a baseline name (``"random"``, ``"greedy"``), an Agent, or a callable
            ``(observation, action_mask) -> action``.
        seat: the learner's player, 0 or 1, or ``"random"`` for a new draw every episode.
        observation: ``"dict"`` (observation and action mask) or ``"flat"`` (the vector alone).
        illegal_action: ``"lose"`` (the episode ends with -1; a warning the first time) or
            ``"raise"`` (an ``IllegalActionError``).
        terminal_mask: ``"next_episode"`` (the mask at the end is the next episode's first mask)
            or ``"zeros"``.
        reward: ``"win_loss"`` or ``"score"``.
        render_mode: ``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``.
        render_viewer: ``None`` (the spectator's view) or the player, 0 or 1, whose view is rendered.
        **rule_options: the rule options (``variant``, ``handicap``, ``discard_rule``,
            ``first_player``), as :func:`kahuna_env.env` takes them.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(
        self,
        opponent: OpponentSpec = "random",
        *,
        seat: int | str = 0,
        observation: str = "dict",
        illegal_action: str = "lose",
        terminal_mask: str = "next_episode",
        reward: str = "win_loss",
        render_mode: str | None = None,
        render_viewer: int | None = None,
        **rule_options: Any,
    ) -> None:
        where = "KahunaSingleAgentEnv"
        self.config = make_config(rule_options, where)
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
        if terminal_mask not in TERMINAL_MASK_MODES:
            raise ValueError(
                f"{where}: terminal_mask must be one of {list(TERMINAL_MASK_MODES)}, got {terminal_mask!r}"
            )
        viewer = check_render_options(render_mode, render_viewer, where)
        self.seat_option = seat
        self.terminal_mask = terminal_mask
        self.observation_mode = observation
        self.illegal_action = illegal_action
        self.reward_mode = check_reward_mode(reward, where)
        self.render_mode = render_mode
        self.observation_space = observation_space(observation)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.game: KahunaGame | None = None
        """The rules engine of the current episode (``None`` before the first reset)."""
        self.seat: int = 0 if seat == "random" else int(seat)
        """The learner's player in the current episode."""
        self.last_action: int | None = None
        self._opponent_rng = np.random.default_rng(0)
        self._ended = False  # the game is over, or the learner forfeited it with an illegal action
        self._next: Episode | None = None  # the next episode, dealt when this one ended (terminal_mask)
        self._warned_illegal = False
        self._renderer = EnvRenderer(render_mode, self.metadata["render_fps"], viewer)

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray | dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode and play the opponent until the learner is to act; returns ``(observation, info)``.

        Atomic: the options and the position are checked before anything changes, and a reset that
        fails later (the opponent ends the game from the given position, or raises) puts back the
        generators, the pending deal, the game, the seat and the opponent, so a refused reset changes
        nothing.
        """
        if options is not None:
            with warnings.catch_warnings():  # unknown option keys are warned about once, by the deal below
                warnings.simplefilter("ignore")
                start_game(self.config, 0, options)
        saved = self._save_for_reset(copy_opponent=options is not None and options.get("position") is not None)
        try:
            self._start_episode(seed, options)
        except BaseException:
            self._restore_after_reset(saved)
            raise
        if self.render_mode == "human":
            self.render()
        mask = self._mask()
        return self._observation(mask), self._info(mask)

    def step(self, action: int) -> tuple[np.ndarray | dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply the learner's action, then the opponent's until the learner is to act again or the game ends.

        An illegal action ends the episode with -1 (``illegal_action="lose"``, the default; the first one
        warns) or raises :class:`~kahuna_env.engine.IllegalActionError` (``illegal_action="raise"``).
        Stepping after the episode ended is a ``RuntimeError``.
        """
        game = self.game
        if game is None:
            raise RuntimeError("step(): call reset() first")
        if self._ended:
            raise RuntimeError("step(): the episode has ended; call reset()")
        if not game.is_legal(action):
            try:
                game.step(action)  # raises with the engine's explanation
            except IllegalActionError as error:
                if self.illegal_action == "raise":
                    raise IllegalActionError(f"KahunaSingleAgentEnv.step(): {error}") from None
                explanation = str(error)
            else:  # pragma: no cover
                raise AssertionError("unreachable: an action that is not legal was accepted")
            if not self._warned_illegal:
                self._warned_illegal = True
                warnings.warn(
                    f"KahunaSingleAgentEnv.step(): {explanation}; the episode ends with reward "
                    f"{ILLEGAL_ACTION_REWARD} (illegal_action='lose'; mask your policy with action_masks(), "
                    "or pass illegal_action='raise' to make this an error). Warned once per env.",
                    IllegalActionWarning,
                    stacklevel=2,
                )
            self._end()
            mask = self._mask()
            info = self._info(mask)
            info["illegal_action"] = True
            return self._observation(mask), ILLEGAL_ACTION_REWARD, True, False, info
        game.step(action)
        opponent_action = self._play_opponent(game, self.seat, self._opponent_rng)
        self.last_action = int(action) if opponent_action is None else opponent_action
        reward = 0.0
        if game.is_over:
            self._end()
            reward = final_rewards(game, self.reward_mode)[self.seat]
        mask = self._mask()
        info = self._info(mask)
        if game.is_over:
            info.update(final_info(game))
        if self.render_mode == "human":
            self.render()
        return self._observation(mask), reward, game.is_over, False, info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the learner's legal actions.

        Once the episode has ended it is the next episode's first mask (``terminal_mask="next_episode"``,
        the default) or all ``False`` (``terminal_mask="zeros"``).
        """
        game = self.game
        if game is None:
            raise RuntimeError("action_masks(): call reset() first")
        if self._ended:
            pending = self._next
            if pending is None or pending.game.is_over:
                return np.zeros(NUM_ACTIONS, dtype=bool)
            return pending.game.action_mask()
        if game.current_player != self.seat:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return game.action_mask()

    def render(self) -> str | np.ndarray | None:
        """Render as ``render_mode`` says, from ``render_viewer``'s side (see :mod:`kahuna_env.render`)."""
        return self._renderer.render(self.game, self.last_action)

    def close(self) -> None:
        """Close the window of ``render_mode="human"`` if one is open."""
        self._renderer.close()

    # ------------------------------------------------------------------ internals
    def _start_episode(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """The body of :meth:`reset`: deal (or take the pending deal) and play the opponent's first moves."""
        super().reset(seed=seed)
        pending, self._next = self._next, None
        if pending is not None and seed is None and options is None:
            episode = pending  # dealt when the last episode ended: the deal this reset would make
        else:
            seeds = pending.seeds if pending is not None and seed is None else self._draw_seeds()
            episode = self._deal(seeds, options, current=True)
        self.seat = episode.seeds.seat
        self.game = episode.game
        self._opponent_rng = episode.opponent_rng
        self.last_action = episode.last_action
        self._ended = False
        if self.game.is_over:
            raise ValueError(
                "reset(): the game ended before the learning seat could act (the opponent finished it from the "
                "given position); choose a position where the learner moves first"
            )

    def _save_for_reset(self, copy_opponent: bool) -> dict[str, Any]:
        """What :meth:`reset` may change, to put back if it fails (generators kept with their state).

        The opponent is copied only for a reset from a position (the one that can fail by the rules):
        a copy per episode would cost a network opponent its weights every game.
        """
        state = {name: getattr(self, name) for name in _RESET_STATE if hasattr(self, name)}  # older Gymnasium: no seed
        saved: dict[str, Any] = {"state": state}
        saved["generator_states"] = [
            (value, value.bit_generator.state) for value in state.values() if isinstance(value, np.random.Generator)
        ]
        if copy_opponent:
            saved["opponent"] = copy.deepcopy(self.opponent)
        return saved

    def _restore_after_reset(self, saved: dict[str, Any]) -> None:
        """Put back what :meth:`_save_for_reset` saved."""
        for name, value in saved["state"].items():
            setattr(self, name, value)
        for generator, state in saved["generator_states"]:
            generator.bit_generator.state = state
        if "opponent" in saved:
            self.opponent = saved["opponent"]

    def _draw_seeds(self) -> EpisodeSeeds:
        rng = self.np_random
        game_seed = int(rng.integers(2**63))
        seat = int(rng.integers(2)) if self.seat_option == "random" else int(self.seat_option)
        return EpisodeSeeds(game_seed, seat, int(rng.integers(2**63)), int(rng.integers(2**63)))

    def _deal(self, seeds: EpisodeSeeds, options: dict[str, Any] | None, *, current: bool) -> Episode:
        """The episode of ``seeds`` (and ``options``), the opponent played until the learner is to act.

        ``current``: the episode starts now (:attr:`game` and :attr:`seat` are set before the opponent plays).
        """
        self.opponent.reset(seed=seeds.opponent)
        opponent_rng = np.random.default_rng(seeds.opponent_rng)
        game = start_game(self.config, seeds.game, options)
        if current:
            self.game, self.seat = game, seeds.seat
        last_action = self._play_opponent(game, seeds.seat, opponent_rng)
        return Episode(seeds, game, opponent_rng, last_action)

    def _end(self) -> None:
        """The episode has ended: deal the next one now if the terminal mask is to show its first mask."""
        self._ended = True
        if self.terminal_mask == "next_episode":
            self._next = self._deal(self._draw_seeds(), None, current=False)

    def _play_opponent(self, game: KahunaGame, seat: int, rng: np.random.Generator) -> int | None:
        """Play the opponent of ``seat`` until ``seat`` is to act or the game ends; returns its last action."""
        choosers: list[Chooser | None] = [None, None]  # the learner's seat: the loop stops at its turn
        choosers[1 - seat] = agent_chooser(self.opponent, rng)
        try:
            played = play(game, choosers)
        except IllegalActionError as error:
            raise IllegalActionError(f"the opponent {self.opponent!r} chose an illegal action: {error}") from None
        return played[-1] if played else None

    def _mask(self) -> np.ndarray:
        """The learner's mask as int8 (see :meth:`action_masks`)."""
        return self.action_masks().view(np.int8)

    def _info(self, mask: np.ndarray) -> dict[str, Any]:
        return {"seat": self.seat, "action_mask": mask.copy()}

    def _observation(self, mask: np.ndarray) -> np.ndarray | dict[str, np.ndarray]:
        game = self.game
        assert game is not None
        vector = encode_observation(game, self.seat)
        if self.observation_mode == "flat":
            return vector
        return {"observation": vector, "action_mask": mask}
