"""A native Gymnasium vector env on the batched engine: ``N`` single-agent Kahuna games stepped as arrays.

:class:`KahunaVectorEnv` is a ``gymnasium.vector.VectorEnv`` of ``N``
sub-environments, each the game of :class:`~kahuna_env.gym_env.KahunaSingleAgentEnv`
(one seat against an opponent), held in one :class:`~kahuna_env.vector.KahunaBatch`:

=============  ==================================================================================
Creation       ``gymnasium.make_vec("Kahuna-v0", num_envs=n, opponent="greedy")`` (the default
               vector entry point for a batched opponent, see :mod:`kahuna_env.gym_vector`) or
               ``KahunaVectorEnv(n, opponent=...)``
Actions        ``MultiDiscrete([179] * n)``: one action per sub-environment
Observation    the batched single-env space: ``Dict(observation=(n, 246) float32,
               action_mask=(n, 179) int8)``, or the ``(n, 246)`` Box alone (``observation="flat"``)
Action mask    ``envs.action_masks()`` (bool ``(n, 179)``, as sb3-contrib reads it), ``info["action_mask"]``
               and ``obs["action_mask"]`` (int8); ``envs.call("action_masks")`` gives them one by one
Reward         as the scalar wrapper: at the end only, +1/-1/0 (``reward="win_loss"``) or the final
               point difference (``reward="score"``), from the learner's side; float64
Auto-reset     same-step (``metadata["autoreset_mode"]``): a sub-environment whose episode ends is dealt
               its next episode inside that ``step``, which returns the new episode's first observation;
               the terminal observation and info are in ``info["final_obs"]`` (an object array, ``None``
               for the others) and ``info["final_info"]`` (a dict of arrays), with ``info["_final_obs"]``
               / ``info["_final_info"]`` marking the sub-environments that ended
=============  ==================================================================================

The opponent.  A batched baseline name (``"random"``, ``"greedy"``) plays all
games at once with :mod:`kahuna_env.agents.batched` (array work; one generator
for the batch, seeded by ``reset(seed=...)``).  With the compiled loops
(:mod:`kahuna_env.kernels`), ``"random"``'s moves after a learner step run as one
fused loop that returns to Python only when a game ends
(``KahunaBatch._play_random``): the same games and draws as the tick-by-tick
driver, which ``envs.fused_random = False`` selects.  Any other opponent (an
:class:`~kahuna_env.agents.Agent`, a callable ``(observation, mask) -> action``
or another baseline name such as ``"mcts"``) is copied for each
sub-environment and asked game by game through
:func:`kahuna_env.agents.choose_action` on a :class:`~kahuna_env.engine.KahunaGame`
of the batch's position, so it only ever sees a determinization, never the
hidden cards; with it, the env plays exactly the games of Gymnasium's ``sync``
vectorization of the scalar wrapper on the same seeds (the per-episode
seeding below), observations, masks, rewards and terminations alike.

Seeding, as the scalar wrapper and ``SyncVectorEnv``: ``reset(seed=s)`` seeds
sub-environment ``i`` with ``s + i`` (or ``seed`` is a list of ``n``), and each
episode of a sub-environment draws, from that sub-environment's generator, the
game seed, the seat (``seat="random"``), the opponent's seed and the seed of its
determinizations, in that order.  So the deals and seats are those of the
scalar wrapper for any opponent.

Illegal actions, as the scalar wrapper's: ``illegal_action="lose"`` (default)
ends that sub-environment's episode with reward -1 and ``final_info["illegal_action"]``
(the first one of the vector env warns with :class:`~kahuna_env.gym_env.IllegalActionWarning`,
naming the sub-environment); ``illegal_action="raise"`` raises
:class:`~kahuna_env.engine.IllegalActionError` naming the sub-environment
(``game i``), the action and why, and no sub-environment changes.

``info`` holds ``seat`` (``(n,)`` int64) and ``action_mask`` on every reset
and step (each with its ``_key`` flags); ``final_info`` holds ``seat`` and
``action_mask`` (the next episode's first mask with ``terminal_mask="next_episode"``,
the default, else zeros; also in ``final_obs``), plus ``scores`` and
``final_points`` (``(n, 2)`` int64) and ``winner`` (``(n,)`` int64, -1 for a
draw) for the games that ended by the rules, or ``illegal_action`` for a forfeit.
No rendering.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from kahuna_env import kernels
from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent
from kahuna_env.agents.batched import BATCHED_BASELINES, BatchedAgent, BatchedRandom, make_batched_agent
from kahuna_env.engine import IllegalActionError, KahunaGame, check_seed
from kahuna_env.env import start_game
from kahuna_env.gym_env import (
    ILLEGAL_ACTION_REWARD,
    EpisodeSeeds,
    IllegalActionWarning,
    KahunaSingleAgentEnv,
    OpponentSpec,
)
from kahuna_env.seated import AWAIT, BaselinePolicy, BatchPolicy, PerGamePolicy, play_seated, seating_of
from kahuna_env.vector import KahunaBatch, StepResult, _is_sequence, _seed_list, check_game_count

__all__ = ["KahunaVectorEnv", "is_batched_opponent"]

_WHERE = "KahunaVectorEnv"

_RESET_STATE = ("seats", "episode_seeds", "_env_rngs", "_opponent_rngs", "_np_random", "_np_random_seed", "_started")
"""What a ``reset`` may change besides the batch and the opponents: saved before it, put back if it fails."""


class _Saved:
    """Values saved by :func:`_keep`: arrays and lists copied, generators kept by object with their state.

    Saving a generator's state (a small dict) and writing it back is much cheaper than copying the
    generator, which matters for thousands of sub-environments; the objects themselves are put back
    too, so anything holding one sees it restored.
    """

    def __init__(self) -> None:
        self.generators: list[tuple[np.random.Generator, dict[str, Any]]] = []

    def keep(self, value: Any) -> Any:
        """A copy of ``value`` that :meth:`put_back` completes (plain values are immutable or replaced whole)."""
        if isinstance(value, np.random.Generator):
            self.generators.append((value, value.bit_generator.state))
            return value
        if isinstance(value, np.ndarray):
            array = value.copy()
            array.flags.writeable = value.flags.writeable  # the batch's read-only mask cache stays read-only
            return array
        if isinstance(value, list):
            return [self.keep(item) for item in value]
        if isinstance(value, dict):
            return {key: self.keep(item) for key, item in value.items()}
        return value

    def put_back(self) -> None:
        """Give every kept generator its saved state again."""
        for generator, state in self.generators:
            generator.bit_generator.state = state


def is_batched_opponent(opponent: object) -> bool:
    """Whether ``opponent`` is played with array work (a batched baseline name: ``"random"``, ``"greedy"``)."""
    return isinstance(opponent, str) and opponent in BATCHED_BASELINES


SB3_ADAPTER = "kahuna_env.sb3.VecEnv"
"""The adapter Stable-Baselines3 needs around a Gymnasium vector env of Kahuna (:mod:`kahuna_env.sb3`)."""


class VectorEnvType(type):
    """The metaclass of Kahuna's Gymnasium vector envs: the class's repr names the SB3 adapter.

    Stable-Baselines3 takes its own ``VecEnv``, and it refuses a Gymnasium vector env with
    ``The environment is of type {type(env)}, not a Gymnasium environment ...``, which does not
    say what to do.  That message shows the class's repr, so it names :data:`SB3_ADAPTER` here
    (``kahuna_env`` cannot import SB3 to do more: SB3 brings torch).
    """

    def __repr__(cls) -> str:
        return (
            f"<class '{cls.__module__}.{cls.__qualname__}'> (a Gymnasium vector env: "
            f"Stable-Baselines3 takes it wrapped, {SB3_ADAPTER}(envs))"
        )


class KahunaVectorEnv(VectorEnv, metaclass=VectorEnvType):
    """``num_envs`` single-agent Kahuna games on one :class:`KahunaBatch` (see the module docstring).

    Args:
        num_envs: the number of sub-environments, 1 to :data:`~kahuna_env.vector.MAX_GAMES`.
        opponent: ``"random"`` or ``"greedy"`` (batched), or an Agent, a callable or another
            baseline name (asked per game).
        options: the keywords of :class:`~kahuna_env.gym_env.KahunaSingleAgentEnv` (``seat``,
            ``observation``, ``illegal_action``, ``terminal_mask``, ``variant``, ``handicap``,
            ``discard_rule``, ``first_player``, ``reward``), the same for all; no ``render_mode``.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, opponent: OpponentSpec = "random", **options: Any) -> None:
        try:
            n = check_game_count(num_envs, "num_envs")
        except ValueError as error:
            raise ValueError(f"{_WHERE}: {error}") from None
        render_mode = options.get("render_mode")
        if render_mode is not None:
            raise ValueError(
                f"{_WHERE}: no rendering (render_mode must be None, got {render_mode!r}); "
                "use make_vector_env(..., backend='scalar') to render sub-environments"
            )
        # The scalar wrapper validates every option (with its messages) and holds them parsed.
        template = KahunaSingleAgentEnv(opponent, **options)
        self.num_envs = n
        self.render_mode = None
        self.autoreset_mode = AutoresetMode.SAME_STEP
        """Same-step auto-reset, an attribute as on Gymnasium's own vector envs (TorchRL's wrapper reads it)."""
        self.seat_option = template.seat_option
        self.observation_mode = template.observation_mode
        self.illegal_action = template.illegal_action
        self.terminal_mask = template.terminal_mask
        self.reward_mode = template.reward_mode
        self.config = template.config
        self.single_observation_space = template.observation_space
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)

        self.batched_opponent: BatchedAgent | None = None
        """The batched baseline playing every game (None: per-game :attr:`opponents`)."""
        self.opponents: list[Agent] = []
        """The per-game opponents, one copy per sub-environment (empty with a batched opponent)."""
        if is_batched_opponent(opponent):
            self.batched_opponent = make_batched_agent(opponent)  # type: ignore[arg-type]
        else:
            self.opponents = [copy.deepcopy(template.opponent) for _ in range(n)]
        self._opponent_rngs = [np.random.default_rng(0) for _ in self.opponents]
        self._env_rngs: list[np.random.Generator | None] = [None] * n
        self.batch = KahunaBatch(n, self.config, seed=0)
        """The games (slot ``i`` is sub-environment ``i``'s current game)."""
        self.seats = np.zeros(n, dtype=np.intp)
        """The learner's player in each sub-environment's current episode."""
        self.episode_seeds: list[EpisodeSeeds | None] = [None] * n
        """The seeds each sub-environment's current episode drew."""
        self.fused_random = True
        """With the ``random`` opponent and the compiled loops, play its moves in one fused loop
        (``KahunaBatch._play_random``): the same games and draws as the tick-by-tick driver, fewer
        Python round trips.  False: the driver (:func:`~kahuna_env.seated.play_seated`), for comparison."""
        self._started = False
        self._warned_illegal = False
        self._final_info: dict[str, Any] = {}

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray | dict[str, np.ndarray], dict[str, Any]]:
        """Deal an episode in every sub-environment, the opponent played until the learner is to act.

        ``seed``: an int ``s`` (sub-environment ``i`` gets ``s + i``), a list of ``num_envs`` ints or
        None (keep each generator; fresh entropy the first time).  ``options={"position": d}`` starts
        every sub-environment from that position, as the scalar wrapper's ``reset`` does.

        Atomic: the seeds and the position are checked before anything changes, and a reset that
        fails later (the opponent ends the game from the position, an opponent raises) puts back
        every generator, seat, opponent and game, so a refused reset changes nothing.
        """
        n = self.num_envs
        seeds = self._reset_seeds(seed)
        position = self._reset_position(options)
        saved = self._save()
        try:
            if seed is not None and not _is_sequence(seed):
                super().reset(seed=int(seed))
            for i, s in enumerate(seeds):
                if s is not None or self._env_rngs[i] is None:
                    self._env_rngs[i], _ = seeding.np_random(s)
            if self.batched_opponent is not None and seed is not None:
                first = seeds[0] if seeds[0] is not None else 0
                self.batched_opponent.reset(seed=int(np.random.default_rng([int(first), n]).integers(2**63)))
            self._deal(np.arange(n), position)
            self._play_opponents()
            if self.batch.over.any():
                raise ValueError(
                    "reset(): the game ended before the learning seat could act (the opponent finished it from the "
                    "given position); choose a position where the learner moves first"
                )
        except BaseException:
            self._restore(saved)
            raise
        self._started = True
        masks = self.batch.legal_masks().view(np.int8)
        return self._observations(masks), self._info(masks)

    def step(
        self, actions: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray | dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply each sub-environment's learner action, then the opponents' until the learners are to act again.

        Sub-environments whose episode ended (by the rules, or forfeited by an illegal action) are
        dealt their next episode in this step (same-step auto-reset; see the module docstring).
        """
        if not self._started:
            raise RuntimeError(f"{_WHERE}.step(): call reset() first")
        batch = self.batch
        n = self.num_envs
        actions = np.asarray(actions)
        if actions.shape != (n,):
            raise ValueError(f"{_WHERE}.step(): actions must have shape ({n},), got {actions.shape}")
        if actions.dtype == bool or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"{_WHERE}.step(): actions must be integers, got dtype {actions.dtype}")
        actions = actions.astype(np.intp)
        masks = batch.legal_masks()
        in_range = (actions >= 0) & (actions < NUM_ACTIONS)
        legal = in_range & masks[np.arange(n), np.where(in_range, actions, 0)]
        forfeited = ~legal
        if forfeited.any():
            if self.illegal_action == "raise":
                try:
                    batch.step(actions)
                except IllegalActionError as error:
                    raise IllegalActionError(f"{_WHERE}.step(): {error}") from None
                raise AssertionError("unreachable: an illegal action was accepted")  # pragma: no cover
            if not self._warned_illegal:
                self._warned_illegal = True
                i = int(np.flatnonzero(forfeited)[0])
                warnings.warn(
                    f"{_WHERE}.step(): sub-environment {i}: {self._explain(i, int(actions[i]))}; its episode "
                    f"ends with reward {ILLEGAL_ACTION_REWARD} (illegal_action='lose'; mask your policy with "
                    "action_masks(), or pass illegal_action='raise' to make this an error). Warned once per env.",
                    IllegalActionWarning,
                    stacklevel=2,
                )
            batch.step(np.where(legal, actions, 0), active=legal)
        else:
            batch.step(actions)
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=bool)
        finals: list[tuple[np.ndarray, np.ndarray]] = []  # (sub-environments, their terminal vectors)
        ended = batch.over | forfeited
        if ended.any():
            self._end(np.flatnonzero(ended), rewards, terminated, finals)
        self._play_opponents(rewards=rewards, terminated=terminated, finals=finals)
        truncated = np.zeros(n, dtype=bool)
        masks = batch.legal_masks().view(np.int8)
        info = self._info(masks)
        if not finals:
            return self._observations(masks), rewards, terminated, truncated, info
        rewards[forfeited] = ILLEGAL_ACTION_REWARD
        rows = np.concatenate([r for r, _ in finals])
        final_vectors = np.concatenate([v for _, v in finals])
        final_masks = masks[rows] if self.terminal_mask == "next_episode" else np.zeros_like(masks[rows])
        final_obs = np.full(n, None, dtype=object)
        for k, i in enumerate(rows.tolist()):
            if self.observation_mode == "flat":
                final_obs[i] = final_vectors[k]
            else:
                final_obs[i] = {"observation": final_vectors[k], "action_mask": final_masks[k].copy()}
        final_info = self._final_info
        final_info["action_mask"] = _spread(n, rows, final_masks)
        final_info["_action_mask"] = terminated.copy()
        if forfeited.any():
            final_info["illegal_action"] = forfeited.copy()
            final_info["_illegal_action"] = forfeited.copy()
        info.update(final_obs=final_obs, _final_obs=terminated.copy(), final_info=final_info)
        info["_final_info"] = terminated.copy()
        return self._observations(masks), rewards, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Bool ``(num_envs, 179)``: each sub-environment's legal learner actions (never all False)."""
        if not self._started:
            raise RuntimeError(f"{_WHERE}.action_masks(): call reset() first")
        return self.batch.legal_masks().copy()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``call("action_masks")`` (one bool mask per sub-environment), as ``SyncVectorEnv.call`` gives it."""
        if name == "action_masks":
            return tuple(self.action_masks(*args, **kwargs))
        raise AttributeError(f"{_WHERE}.call(): the sub-environments are not objects; only 'action_masks' is known")

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release."""

    def game(self, i: int) -> KahunaGame:
        """Sub-environment ``i``'s current game as a :class:`KahunaGame` (its position; see ``KahunaBatch.game``)."""
        return self.batch.game(i)

    # ------------------------------------------------------------------ internals
    def _reset_seeds(self, seed: object) -> list[int | None]:
        """The per-sub-environment seeds of ``reset(seed=...)``, every one checked before anything changes."""
        n = self.num_envs
        if seed is None:
            return [None] * n
        try:
            if _is_sequence(seed):
                return _seed_list(seed, n, "seed", allow_none=True)
            check_seed(seed)  # KahunaGame's check: a str, a float, a bool or a negative number is refused
        except ValueError as error:
            raise ValueError(f"{_WHERE}.reset(): {error}") from None
        return [int(seed) + i for i in range(n)]  # type: ignore[call-overload]

    def _reset_position(self, options: object) -> dict[str, Any] | None:
        """The position of ``reset(options=...)``, validated once (a one-line ``ValueError``), or None for a deal."""
        if options is None:
            return None
        game = start_game(self.config, 0, options)  # type: ignore[arg-type]  # checks options and the position
        return None if options.get("position") is None else game.to_dict()  # type: ignore[attr-defined]

    def _save(self) -> tuple[_Saved, dict[str, Any], dict[str, Any], Any]:
        """Everything :meth:`reset` may change: the batch, :data:`_RESET_STATE` and the opponents.

        The batch's arrays and lists are copied and its generators kept by state (:class:`_Saved`);
        the opponents, whose insides are their own, are deep-copied.
        """
        saved = _Saved()
        batch = saved.keep(dict(vars(self.batch)))
        mine = saved.keep({name: getattr(self, name) for name in _RESET_STATE})
        opponents = copy.deepcopy((self.opponents, self.batched_opponent))
        return saved, batch, mine, opponents

    def _restore(self, state: tuple[_Saved, dict[str, Any], dict[str, Any], Any]) -> None:
        """Put back what :meth:`_save` saved; the batch keeps its identity (a caller may hold ``env.batch``)."""
        saved, batch, mine, (opponents, batched_opponent) = state
        self.batch.__dict__.clear()
        self.batch.__dict__.update(batch)
        for name, value in mine.items():
            setattr(self, name, value)
        self.opponents = opponents
        self.batched_opponent = batched_opponent
        saved.put_back()

    def _draw_seeds(self, i: int) -> EpisodeSeeds:
        """What an episode of sub-environment ``i`` draws, as ``KahunaSingleAgentEnv._draw_seeds``."""
        rng = self._env_rngs[i]
        assert rng is not None
        if self.seat_option == "random":
            game_seed = int(rng.integers(2**63))
            seat = int(rng.integers(2))
            opponent, opponent_rng = rng.integers(2**63, size=2).tolist()
            return EpisodeSeeds(game_seed, seat, opponent, opponent_rng)
        if type(rng.bit_generator) is np.random.PCG64:
            # integers(2**63) is numpy's Lemire draw: one 64-bit output, halved (test_vector_env holds the two
            # equal); three raw outputs at once skip integers()'s per-call work, a fifth of an episode's dealing.
            game_seed, opponent, opponent_rng = (value >> 1 for value in rng.bit_generator.random_raw(3).tolist())
        else:  # the same draws as three calls of integers(2**63) (each one 64-bit draw), in one call
            game_seed, opponent, opponent_rng = rng.integers(2**63, size=3).tolist()
        return EpisodeSeeds(game_seed, int(self.seat_option), opponent, opponent_rng)

    def _deal(self, rows: np.ndarray, position: dict[str, Any] | None = None) -> None:
        """Deal the next episode of the sub-environments ``rows`` (the opponents play it in :meth:`_play_opponents`).

        ``position``: a position validated by :meth:`_reset_position` to start from instead of a new deal.
        """
        seeds = [self._draw_seeds(i) for i in rows.tolist()]
        for i, s in zip(rows.tolist(), seeds, strict=True):
            self.episode_seeds[i] = s
            self.seats[i] = s.seat
            if self.opponents:
                self.opponents[i].reset(seed=s.opponent)
                self._opponent_rngs[i] = np.random.default_rng(s.opponent_rng)
        if position is None:
            self.batch._deal(rows, [s.game for s in seeds])  # reset() without its checks: both made here
        else:
            self.batch.set_positions(rows, [position] * len(rows), seeds=[s.game for s in seeds])

    def _end(
        self, rows: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, finals: list[tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """The episodes of ``rows`` ended (by the rules or by a forfeit): record them, and deal the next ones."""
        batch = self.batch
        n = self.num_envs
        if not finals:
            self._final_info = {"seat": np.zeros(n, dtype=np.int64), "_seat": np.zeros(n, dtype=bool)}
        final_info = self._final_info
        seat = self.seats[rows]
        final_info["seat"][rows] = seat
        final_info["_seat"][rows] = True
        by_rules = rows[batch.over[rows]]
        if len(by_rules):
            seat = self.seats[by_rules]
            if self.reward_mode == "score":
                scores = batch.scores[by_rules].astype(np.float64)
                k = np.arange(len(by_rules))
                rewards[by_rules] = scores[k, seat] - scores[k, 1 - seat]
            else:
                winner = batch.winner[by_rules]
                rewards[by_rules] = np.where(winner < 0, 0.0, np.where(winner == seat, 1.0, -1.0))
            for key, values, shape in (
                ("scores", batch.scores, (n, 2)),
                ("final_points", batch.final_points, (n, 2)),
                ("winner", batch.winner, (n,)),
            ):
                if key not in final_info:
                    final_info[key] = np.zeros(shape, dtype=np.int64)
                    final_info[f"_{key}"] = np.zeros(n, dtype=bool)
                final_info[key][by_rules] = values[by_rules]
                final_info[f"_{key}"][by_rules] = True
        terminated[rows] = True
        finals.append((rows, batch.observations(self.seats, rows=rows)))
        self._deal(rows)

    def _play_opponents(
        self,
        rewards: np.ndarray | None = None,
        terminated: np.ndarray | None = None,
        finals: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        """Step the opponents of the live games until every learner is to act (:func:`~kahuna_env.seated.play_seated`).

        A game that ends on an opponent's move is recorded (``rewards``, ``terminated``, ``finals``) and
        its next episode dealt at once, its opponent's first moves joining this loop (during a step).
        """
        batch = self.batch
        fused = self.fused_random and isinstance(self.batched_opponent, BatchedRandom) and kernels.enabled()
        waiting = self._waiting()
        seating = None if fused else self._seating()

        def record_ends(_: StepResult | None = None) -> None:
            if finals is not None and batch.over.any():
                assert rewards is not None and terminated is not None
                self._end(np.flatnonzero(batch.over), rewards, terminated, finals)
                waiting[:] = self._waiting()  # the new episodes' seats
                if seating is not None:
                    seating[:] = self._seating()

        if fused:
            # The same games and draws as play_seated below, in one compiled loop (KahunaBatch._play_random).
            assert isinstance(self.batched_opponent, BatchedRandom)
            if batch._play_random(self.batched_opponent.rng, waiting, on_end=record_ends) is not None:
                return
            # A game to move has no legal action: play_seated meets that tick with the same draws and raises.
            seating = self._seating()
        if self.batched_opponent is not None:
            opponent: BatchPolicy = BaselinePolicy(self.batched_opponent)
        else:
            opponent = PerGamePolicy(self.opponents, self._opponent_rngs)
        assert seating is not None
        try:
            play_seated(batch, [opponent], seating, on_step=record_ends)
        except IllegalActionError as error:
            raise IllegalActionError(f"{_WHERE}: an opponent chose an illegal action: {error}") from None

    def _waiting(self) -> np.ndarray:
        """``(N, 2)`` bool: the learner's seat in each game, which waits for ``step``."""
        return self.seats[:, None] == np.arange(2)[None, :]

    def _seating(self) -> np.ndarray:
        """The driver's seating: the opponent (policy 0) in every seat but the learner's, which waits for ``step``."""
        return seating_of(self._waiting(), AWAIT, 0)

    def _explain(self, i: int, action: int) -> str:
        if not 0 <= action < NUM_ACTIONS:
            return f"action must be an integer in 0..{NUM_ACTIONS - 1}, got {action}"
        try:
            self.batch.game(i).step(action)
        except IllegalActionError as error:
            return str(error)
        return f"action {action} is illegal"  # pragma: no cover

    def _observations(self, masks: np.ndarray) -> np.ndarray | dict[str, np.ndarray]:
        vectors = self.batch.observations(self.seats)
        if self.observation_mode == "flat":
            return vectors
        return {"observation": vectors, "action_mask": masks.copy()}

    def _info(self, masks: np.ndarray) -> dict[str, Any]:
        n = self.num_envs
        everywhere = np.ones(n, dtype=bool)
        return {
            "seat": self.seats.astype(np.int64),
            "_seat": everywhere,
            "action_mask": masks.copy(),
            "_action_mask": everywhere.copy(),
        }


def _spread(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An ``(n, ...)`` array holding ``values`` at ``rows`` and zeros elsewhere."""
    out = np.zeros((n, *values.shape[1:]), dtype=values.dtype)
    out[rows] = values
    return out
