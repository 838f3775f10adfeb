"""A batched rules engine: ``N`` games of Kahuna held as numpy arrays and stepped together.

:class:`KahunaBatch` plays the rules of docs/RULES.md for a whole batch at once, as
:class:`kahuna_env.engine.KahunaGame` plays them for one game (the same loops):
legal-action masks, one action per game per :meth:`KahunaBatch.step`, and
observations bit-identical to :func:`kahuna_env.observation.encode_observation`.
The rules run as loops over the games (:mod:`kahuna_env.kernels`, their one implementation):
masks, steps, observations and chance, compiled with numba, or the same functions as plain
Python with ``KAHUNA_JIT=0`` or without numba; all chance goes through
:meth:`KahunaBatch._permutations`.

State layout (``N`` games, ``P = 2`` players; ``int8`` unless noted).  These are the
schema's batch arrays (:data:`kahuna_env.schema.FIELDS` with ``array=True``, by the fields' names): the batch
allocates them, and clears them for a new deal, from the schema's shapes, dtypes and
empty values; ``tests/test_schema.py`` holds this table and every array to it.

=======================  ==========  =========================================================
array                    shape       meaning
=======================  ==========  =========================================================
``owner``                (N, 27)     owner of each line, -1 when free
``lines``                (N, 2) u64  each player's lines as a 27-bit set (kept with ``owner``)
``count``                (N, 2, 12)  each player's bridges on each island's lines
``bridges``              (N, 2)      each player's bridges on the board
``hand``                 (N, 2, 12)  cards in hand per island
``known``                (N, 2, 12)  public knowledge about each hand (cards taken face up)
``face_down``            (N, 2, 12)  each player's face-down discards per island
``open_discard``         (N, 12)     openly played cards in the discard pile per island
``pile``                 (N, 24)     the face-down pile, bottom first: ``pile[:, :pile_size]``
``pile_size``            (N,)        cards in the pile (the top is ``pile[pile_size - 1]``)
``face_up``              (N, 3)      island of each face-up slot, -1 when empty
``current_player``       (N,)        player to act (after the end: the last who acted)
``round``                (N,)        1, 2 or 3
``scores``               (N, 2)      points so far
``final_points``         (N, 2)      points from the final scoring
``played_this_turn``     (N,)        cards played this turn
``discarded_this_turn``  (N,)        cards discarded face down this turn
``must_draw``            (N,) bool   the opponent's previous turn ended with a pass
``claim_line``           (N,)        free claim offered now (planning variant), -1 if none
``setup_left``           (N,)        handicap bridges still to place
``final_turns_left``     (N,)        round-3 extra turns left
``over``                 (N,) bool   the game has ended
``winner``               (N,)        0, 1, or -1 (draw or not over)
=======================  ==========  =========================================================

Legal actions are computed as bit sets (27-bit line sets, 12-bit island sets,
uint64 per game) packed into three 64-bit words per game, unpacked into the
``(N, 179)`` mask in one call; :meth:`KahunaBatch.random_actions` samples from
the words directly.

Control is not stored: a player controls an island exactly when ``count``
reaches its majority (the engine keeps that invariant).  Per-game options
(``planning``, ``hand_limit``, ``first_player``, ``handicap_player``,
``handicap_bridges``: the schema's option fields, read off each config) are
arrays too, so one batch may mix configurations.  The lookup tables are the
board's (:mod:`kahuna_env.board`), converted to arrays; the observation's
block order and scaling are the schema's, as the scalar encoder's.

Chance, the scheme of the PettingZoo env (``kahuna_env.env``): every slot has
a *seeder*, ``numpy.random.default_rng(slot_seed)``; each game dealt into the
slot gets ``game_seed = seeder.integers(2**63)`` and its own generator
``numpy.random.default_rng(game_seed)``, created and called exactly as
:class:`KahunaGame` does (``permutation(24)`` at the deal, ``permutation(k)`` at
each reshuffle).  So every game of a batch *is* ``KahunaGame(config,
seed=game_seeds[i])`` under the same actions, reshuffles included, and a slot
seeded ``s`` deals the games an env reset with ``seed=s`` deals.  All chance
goes through :meth:`KahunaBatch._permutations` and :meth:`KahunaBatch._new_game_seeds`: these
generators are rows of PCG64 state that :mod:`kahuna_env.kernels` seeds and draws exactly as numpy
seeds and draws them (SeedSequence, ``permutation``, ``integers(2**63)``).

API in brief::

    batch = KahunaBatch(n, config=None, seed=None, auto_reset=False)  # or KahunaBatch.from_dicts(positions, seeds)
    batch.legal_masks()          # (N, 179) bool, read-only
    batch.observations(player)   # (N, 246) float32; player None (to act), 0, 1 or an (N,) array
    batch.random_actions(rng)    # (N,) uniform legal actions
    result = batch.step(actions) # StepResult(terminated, winner, scores, final_points, reset, player)
    batch.to_dicts(indices) / batch.set_positions(indices, positions) / batch.reset(indices)
    batch.game(i, seed=None)     # KahunaGame of the position
    batch.take(indices, seeds)   # a new batch of copies of those games (a game may repeat)
    batch.current, .over, .winner, .scores, .final_points, .round, .controllers(), .game_seeds, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from kahuna_env import actions as A
from kahuna_env import kernels
from kahuna_env.arrays import (
    KIND,
    NO_ACTION,
    OPTION_ARRAYS,
    STATE_ARRAYS,
    TABLES,
    load_positions,
    position_values,
    seed_generators,
)
from kahuna_env.board import NUM_CARDS, NUM_ISLANDS
from kahuna_env.config import is_integer, shown
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame, as_config, check_seed
from kahuna_env.observation import BLOCK_STARTS, NO_ROWS, OBSERVATION_SCALE, OBSERVATION_SIZE, state_rows
from kahuna_env.positions import Position, position_json
from kahuna_env.schema import FIELDS, FORMERLY, former_name

__all__ = ["MAX_GAMES", "KahunaBatch", "StepResult", "check_game_count", "sample_set_bits", "unpack_actions"]

MAX_GAMES = 2**20
"""The largest batch, 1,048,576 games: a game's state, mask, observation buffer and generators take about
2.5 KB, so this many hold about 2.5 GB.  A larger ``n`` is a ``ValueError`` before anything is allocated.
It is also the most sub-environments of a vector env (``make_vec(num_envs=...)``), checked by the same
:func:`check_game_count` before any space or sub-environment is built."""


def check_game_count(count: object, name: str = "n") -> int:
    """``count`` as an int if it is an integer in ``1..MAX_GAMES``; else a one-line ``ValueError`` naming ``name``.

    The one bound of a number of games played together: :class:`KahunaBatch`'s ``n`` and the vector
    envs' ``num_envs`` (:class:`~kahuna_env.vector_env.KahunaVectorEnv`,
    :func:`~kahuna_env.gym_vector.make_vector_env`), so ``num_envs=2**40`` is refused in one line before
    anything is allocated, never a ``MemoryError``.
    """
    if not is_integer(count) or not 1 <= count <= MAX_GAMES:  # type: ignore[operator]
        raise ValueError(f"{name} must be an integer in 1..{MAX_GAMES} (MAX_GAMES), got {shown(count)}")
    return int(count)  # type: ignore[call-overload]


# --- the board's tables (kahuna_env.arrays, one set for the batch and the single game) -------------
_SCALE = OBSERVATION_SCALE
_TABLES: dict[str, Any] = {
    **TABLES,
    "scale": _SCALE,
    "starts": BLOCK_STARTS,
}
"""The board's tables and constants the loops take, by their parameter names (:data:`kahuna_env.kernels.PARAMETERS`)."""

# --- the per-game arrays, from the schema (kahuna_env.schema.FIELDS, through kahuna_env.arrays) ------------------
_STATE_ARRAYS = STATE_ARRAYS
_OPTION_ARRAYS = OPTION_ARRAYS
_BATCH_ARRAYS = frozenset(field.batch for field in FIELDS if field.batch is not None)


def _bind(loop: str, leading: int) -> tuple[tuple[bool, Any], ...]:
    """The arguments of a loop after its ``leading`` per-call ones, by name: ``(True, array name)`` for one of
    the schema's batch arrays, ``(False, value)`` for a table.  A name that is neither fails at import."""
    bound = []
    for name in kernels.PARAMETERS[loop][leading:]:
        if name in _BATCH_ARRAYS:
            bound.append((True, name))
        elif name in _TABLES:
            bound.append((False, _TABLES[name]))
        else:
            raise RuntimeError(f"kernels.{loop}: parameter {name!r} is neither a schema batch array nor a table")
    return tuple(bound)


_BOUND = {
    "legal_words": _bind("legal_words", 2),  # rows, words
    "step": _bind("step", 3),  # actions, kinds, interim
    "interim_scoring": _bind("interim_scoring", 2),  # games, orders
    "reshuffle_sizes": _bind("reshuffle_sizes", 2),  # games, sizes
    "observations": _bind("observations", 4),  # rows, seats, out, scaled
    "deal": _bind("deal", 2),  # rows, orders
    "greedy_words": _bind("greedy_words", 3),  # rows, words, out
    "control_masks": _bind("control_masks", 2),  # rows, out
}
"""Each loop the batch calls: its arguments after the per-call ones, bound by name."""


def _loops() -> Any:
    """The loops that run now: compiled (numba), else the same functions as plain Python."""
    return kernels.running()


def sample_set_bits(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random set bit of every row of ``(N, W)`` uint64 bit words: ``(N,)`` bit positions.

    Bit ``b % 64`` of word ``b // 64`` is position ``b`` (the layout of the
    legal words; an ``(N, K)`` bool array packed with ``np.packbits(...,
    bitorder="little")`` and viewed as uint64 has it too).  A row without a set
    bit gives 0.  One ``rng.random(N)`` draw: a random rank among the set bits,
    then a binary search for that bit; exactly uniform.  ``W`` is 1 to 3.
    """
    if not 1 <= words.shape[1] <= 3:
        raise ValueError(f"sample_set_bits takes 1 to 3 words per row, got {words.shape[1]}")
    uniforms = rng.random(len(words))
    out = np.empty(len(words), dtype=np.intp)
    _loops().sample_bits(np.ascontiguousarray(words, dtype=np.uint64), uniforms, out)
    return out


def unpack_actions(words: np.ndarray) -> np.ndarray:
    """``(M, 3)`` uint64 action words (the legal ones, greedy's choice) -> ``(M, 179)`` bool masks."""
    return np.unpackbits(words.view(np.uint8), axis=1, count=A.NUM_ACTIONS, bitorder="little").view(bool)


class StepResult(NamedTuple):
    """What :meth:`KahunaBatch.step` returns, one entry per game.

    ``terminated``: the game ended with this step.  ``winner`` (0, 1, -1 for a
    draw or a running game), ``scores`` and ``final_points`` (``(N, 2)``) are
    those of the game as it stood at the end of the step, before any automatic
    reset, so a finished game's outcome is readable here.  ``reset``: the game
    was replaced by a new deal at the end of this step (``auto_reset``).
    ``player``: who acted (-1 where the game was already over), so a caller can
    credit multi-action turns to the right seat.
    """

    terminated: np.ndarray
    winner: np.ndarray
    scores: np.ndarray
    final_points: np.ndarray
    reset: np.ndarray
    player: np.ndarray


def _is_sequence(value: object) -> bool:
    """A list, tuple, range or numpy array (not a str, bytes or mapping, which iterate as something else)."""
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes, Mapping))


def _games(positions: Sequence[Any]) -> list[KahunaGame]:
    """Every position validated by ``KahunaGame.from_dict``; a bad one is a one-line ``ValueError`` naming it."""
    games = []
    for k, position in enumerate(positions):
        try:
            games.append(KahunaGame.from_dict(position))
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"positions[{k}]: {error}") from None
    return games


def _seed_list(values: object, count: int, name: str, allow_none: bool = False) -> list[int | None]:
    """``values`` as ``count`` seeds, each checked by the engine's :func:`check_seed` (None only if ``allow_none``).

    Checks every entry before the caller changes anything; a bad one is a one-line ``ValueError``
    naming it (``seeds[1]: seed must be None or a non-negative integer, got 2.7``).
    """
    if not _is_sequence(values):
        raise ValueError(f"{name} must be a sequence of {count} seeds, got {shown(values)}")
    seeds = list(values)  # type: ignore[call-overload]
    if len(seeds) != count:
        raise ValueError(f"{name} must be a sequence of {count} seeds (one per game), got {len(seeds)}")
    for k, seed in enumerate(seeds):
        if seed is None and not allow_none:
            raise ValueError(f"{name}[{k}]: seed must be a non-negative integer, got None")
        try:
            check_seed(seed)
        except ValueError as error:
            raise ValueError(f"{name}[{k}]: {error}") from None
    return [None if seed is None else int(seed) for seed in seeds]


class KahunaBatch:
    """``n`` games of Kahuna stepped together (see the module docstring for the layout).

    Args:
        n: number of games, 1 to :data:`MAX_GAMES`.
        config: one :class:`KahunaConfig` (or mapping, or None for the defaults)
            for every game, or a sequence of ``n`` of them.
        seed: the slot seeds: None (fresh entropy), an int ``s`` (slot ``i`` gets
            ``s + i``, as Gymnasium's vector ``reset(seed=s)``), or a sequence of
            ``n`` ints; each checked as ``KahunaGame`` checks its seed (a str, a float,
            a bool or a negative number is a ``ValueError`` with its message).  The
            slot seeds are in :attr:`seeds`, the seed of the game each slot holds in
            :attr:`game_seeds` (``KahunaGame(config, seed=game_seeds[i])`` is that game).
        auto_reset: at the end of every step, deal a new game into each slot
            whose game is over (the step's :class:`StepResult` still reports the
            finished game), so after a step no slot shows an all-False mask.
    """

    def __init__(
        self,
        n: int,
        config: KahunaConfig | Mapping[str, Any] | Sequence[Any] | None = None,
        seed: int | Sequence[int] | None = None,
        auto_reset: bool = False,
    ) -> None:
        self._allocate(n, config, seed, auto_reset)
        self._deal(np.arange(n))

    # ------------------------------------------------------------------ construction

    def _allocate(self, n: int, config: Any, seed: Any, auto_reset: bool) -> None:
        # Every argument is checked before anything is allocated or written.
        n = check_game_count(n)
        if config is None or isinstance(config, (KahunaConfig, Mapping)):
            configs = [as_config(config)] * n
        elif _is_sequence(config) and len(config) == n:
            configs = [as_config(c) for c in config]
        else:
            size = len(config) if _is_sequence(config) else type(config).__name__
            raise ValueError(f"config must be one config or a sequence of {n}, got {size}")
        if seed is None:
            seeds = [int(s) for s in np.random.SeedSequence().generate_state(n, dtype=np.uint64)]
        elif _is_sequence(seed):
            seeds = _seed_list(seed, n, "seed")
        else:
            check_seed(seed)  # KahunaGame's check and message: a str, float, bool or negative number is refused
            seeds = [int(seed) + i for i in range(n)]
        self.n = n
        self.configs: list[KahunaConfig] = configs
        self.seeds: list[int] = seeds  # type: ignore[assignment]
        """The slot seeds: slot ``i`` draws the seed of each game it deals from ``default_rng(seeds[i])``."""
        self.game_seeds: list[int | None] = [None] * n
        """The seed of the game each slot holds: it is ``KahunaGame(config, seed=game_seeds[i])``
        under the same actions (None: a position loaded without a seed)."""
        # The generators are rows of PCG64 state (kahuna_env.kernels), drawn as numpy draws: the games'
        # (seeded on first use) and the slots' seeders.
        self._pcg = np.zeros((n, 6), dtype=np.uint64)
        self._pcg_ready = np.zeros(n, dtype=bool)
        self._seeder_pcg = np.zeros((n, 6), dtype=np.uint64)
        self._seeder_ready = np.zeros(n, dtype=bool)
        self.auto_reset = bool(auto_reset)

        for name, dtype, read in _OPTION_ARRAYS:
            setattr(self, name, np.array([read(c) for c in configs], dtype=dtype))
        self._any_planning = bool(self.planning.any())
        self._any_hand_limit = bool(self.hand_limit.any())
        # The state arrays of the module docstring's table, one per schema field the batch holds.
        for name, shape, dtype, empty in _STATE_ARRAYS:
            setattr(self, name, np.full((n, *shape), empty, dtype=dtype))
        self._rows = np.arange(n)
        self._mask = np.zeros((n, A.NUM_ACTIONS), dtype=bool)
        self._words = np.zeros((n, 3), dtype=np.uint64)
        self._stale = np.ones(n, dtype=bool)  # rows whose legal words must be recomputed
        self._mask_valid = False
        self._raw = np.zeros((n, OBSERVATION_SIZE), dtype=np.uint8)
        self._jit = kernels.enabled()  # the loops of kahuna_env.kernels compiled (else the same as plain Python)

    @property
    def _kernels(self) -> Any:
        """The loops this batch runs: compiled when it was made with numba on, else the same as plain Python."""
        return kernels if self._jit else kernels.interpreted()

    @classmethod
    def from_dicts(
        cls,
        positions: Sequence[Mapping[str, Any]],
        seeds: Sequence[int] | None = None,
        auto_reset: bool = False,
    ) -> KahunaBatch:
        """A batch holding the given positions (docs/RULES.md, "Positions"), validated by ``KahunaGame.from_dict``.

        ``seeds`` (None or ``n`` ints) are the *game* seeds: game ``i`` reshuffles
        exactly as ``KahunaGame.from_dict(positions[i], seed=seeds[i])``; they are
        also the slot seeds of the games dealt after a reset.
        """
        if not _is_sequence(positions):
            raise ValueError(f"positions must be a sequence of position dicts, got {type(positions).__name__}")
        if not 1 <= len(positions) <= MAX_GAMES:
            raise ValueError(f"from_dicts needs 1..{MAX_GAMES} (MAX_GAMES) positions, got {len(positions)}")
        if seeds is not None:
            _seed_list(seeds, len(positions), "seeds")
        games = _games(positions)
        batch = cls.__new__(cls)
        batch._allocate(len(games), [game.config for game in games], seeds, auto_reset)
        batch.game_seeds = list(batch.seeds) if seeds is not None else [None] * len(games)
        batch._load(np.arange(len(games)), [game._position() for game in games])
        return batch

    def take(self, indices: Sequence[int] | np.ndarray, seeds: Sequence[int]) -> KahunaBatch:
        """A new batch of copies of the games ``indices``, in that order (a game may be copied more than once).

        Copy ``k`` is game ``indices[k]`` as it stands (its rule options and every state array; the
        original is not touched), e.g. to try several actions from one position.  A position does not
        carry a generator's state, so copy ``k`` reshuffles from ``seeds[k]``, as
        ``KahunaGame.from_dict(position, seed=seeds[k])`` would; ``seeds`` are also the copies' slot seeds.
        """
        indices = self._indices(indices)
        if not 1 <= len(indices) <= MAX_GAMES:
            raise ValueError(f"take needs 1..{MAX_GAMES} (MAX_GAMES) indices, got {len(indices)}")
        copies = type(self).__new__(type(self))
        copies._allocate(len(indices), [self.configs[i] for i in indices.tolist()], seeds, False)
        copies.game_seeds = list(copies.seeds)
        for name, _, _, _ in _STATE_ARRAYS:
            getattr(copies, name)[:] = getattr(self, name)[indices]
        return copies

    def set_positions(
        self,
        indices: Sequence[int],
        positions: Sequence[Mapping[str, Any]],
        seeds: Sequence[int | None] | None = None,
    ) -> None:
        """Replace the games at ``indices`` by positions (validated), as ``KahunaGame.from_dict(position, seed)``.

        Without ``seeds`` each game's reshuffles draw from a seed taken from its slot's seeder.
        Atomic: the indices (distinct ints in ``0..n-1``), the positions and the seeds are all checked
        before any slot changes, so a refused call (``ValueError``, ``IndexError``) changes nothing.
        """
        indices = self._indices(indices, distinct=True)
        if not _is_sequence(positions):
            raise ValueError(f"positions must be a sequence of position dicts, got {type(positions).__name__}")
        if len(indices) != len(positions):
            raise ValueError(f"{len(indices)} indices but {len(positions)} positions")
        if seeds is not None:
            seeds = _seed_list(seeds, len(indices), "seeds", allow_none=True)
        games = _games(positions)
        if seeds is None:
            seeds = self._new_game_seeds(indices)
        for i, game, seed in zip(indices.tolist(), games, seeds, strict=True):
            self._set_config(i, game.config)
            self.game_seeds[i] = seed
        self._pcg_ready[indices] = False
        self._load(indices, [game._position() for game in games])

    def _set_config(self, i: int, config: KahunaConfig) -> None:
        self.configs[i] = config
        for name, _, read in _OPTION_ARRAYS:
            getattr(self, name)[i] = read(config)
        self._any_planning = bool(self.planning.any())
        self._any_hand_limit = bool(self.hand_limit.any())

    def _load(self, indices: np.ndarray, positions: Sequence[Position]) -> None:
        """Write validated positions into the given slots: each position field into its array, by the schema."""
        self._invalidate(indices)
        load_positions(vars(self).__getitem__, indices, positions)

    # ------------------------------------------------------------------ chance
    def _permutations(self, games: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Chance in games: ``permutation(sizes[k])`` from game ``games[k]``'s generator, one after the other.

        Each game's generator is ``numpy.random.default_rng(game seed)``, seeded on first use, as
        ``KahunaGame`` builds its own: a row of PCG64 state that :mod:`kahuna_env.kernels` seeds
        and draws bit for bit as numpy does.
        """
        fresh = games[~self._pcg_ready[games]]
        if len(fresh):
            seed_generators(self._pcg, fresh, [self.game_seeds[i] for i in fresh.tolist()], self._kernels)
            self._pcg_ready[fresh] = True
        out = np.empty(int(sizes.sum()), dtype=np.int64)
        self._kernels.permutations(games, sizes.astype(np.int64), self._pcg, out)
        return out

    def _new_game_seeds(self, indices: np.ndarray) -> list[int]:
        """Chance between games: the seed of the next game of each slot, ``integers(2**63)`` of the slot's seeder."""
        fresh = indices[~self._seeder_ready[indices]]
        if len(fresh):
            seed_generators(self._seeder_pcg, fresh, [self.seeds[i] for i in fresh.tolist()], self._kernels)
            self._seeder_ready[fresh] = True
        out = np.empty(len(indices), dtype=np.uint64)
        self._kernels.draw_seeds(indices.astype(np.intp), self._seeder_pcg, out)
        return out.tolist()

    def _deal(self, indices: np.ndarray, game_seeds: Sequence[int] | None = None) -> None:
        """Shuffle and deal new games into the slots ``indices`` (as ``KahunaGame(config, seed)``)."""
        self._invalidate(indices)
        k = len(indices)
        if k == 0:
            return
        if game_seeds is None:
            game_seeds = self._new_game_seeds(indices)
        for i, seed in zip(indices.tolist(), game_seeds, strict=True):
            self.game_seeds[i] = seed
        self._pcg_ready[indices] = False
        orders = self._permutations(indices, np.full(k, NUM_CARDS)).reshape(k, NUM_CARDS)
        for name, _, _, empty in _STATE_ARRAYS:
            getattr(self, name)[indices] = empty
        self._kernels.deal(indices, orders, *self._arguments("deal"))

    def reset(self, indices: Sequence[int] | np.ndarray | None = None, game_seeds: Sequence[int] | None = None) -> None:
        """Deal new games into the given slots (all when None).

        Each game is ``KahunaGame(config, seed=game_seeds[k])``; without
        ``game_seeds`` each seed is the next draw of the slot's seeder (a caller
        with its own seeding, e.g. a Gymnasium env drawing a seat and an
        opponent seed per episode too, passes its seeds here).
        Atomic: the indices (distinct ints in ``0..n-1``) and the seeds are checked before any slot changes.
        """
        indices = self._rows if indices is None else self._indices(indices, distinct=True)
        if game_seeds is not None:
            game_seeds = _seed_list(game_seeds, len(indices), "game_seeds")  # type: ignore[assignment]
        self._deal(indices, game_seeds)

    def _indices(self, indices: object, distinct: bool = False) -> np.ndarray:
        """``indices`` as an intp array of game indices, checked: ints (not bools or floats) in ``0..n-1``.

        A bad one is a ``ValueError`` (not an int, or twice when ``distinct``) or an ``IndexError``
        (out of range; a negative index does not count from the end).  Once per call, never per step.
        """
        if isinstance(indices, np.ndarray):
            if indices.ndim != 1 or (indices.size and (indices.dtype == bool or indices.dtype.kind not in "iu")):
                raise ValueError(
                    f"indices must be a 1-D array of integer game indices, got {indices.dtype} {indices.shape}"
                )
            bad = np.flatnonzero((indices < 0) | (indices >= self.n))
            if len(bad):
                raise IndexError(f"game index {indices[bad[0]]} out of range 0..{self.n - 1}")
            rows = indices.astype(np.intp)
        elif _is_sequence(indices):
            for index in indices:  # type: ignore[union-attr]
                if not is_integer(index):
                    raise ValueError(f"a game index must be an integer, got {shown(index)}")
                if not 0 <= index < self.n:
                    raise IndexError(f"game index {index} out of range 0..{self.n - 1}")
            rows = np.array(indices, dtype=np.intp).reshape(-1)
        else:
            raise ValueError(f"indices must be a sequence of game indices, got {shown(indices)}")
        if distinct and len(rows) > 1:
            ordered = np.sort(rows)
            twice = ordered[1:][ordered[1:] == ordered[:-1]]
            if len(twice):
                raise ValueError(f"game index {twice[0]} given twice")
        return rows

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self.n

    @property
    def terminated(self) -> np.ndarray:
        """Whether each game is over (a copy)."""
        return self.over.copy()

    def controllers(self) -> np.ndarray:
        """``(N, 12)`` int8: the player controlling each island, -1 for none."""
        masks = np.zeros((self.n, 2), dtype=np.int64)
        self._kernels.control_masks(np.arange(self.n), masks, *self._arguments("control_masks"))
        bits = (masks[:, :, None] >> np.arange(NUM_ISLANDS)) & 1  # (N, 2, 12): the islands each player controls
        return np.where(bits[:, 0], 0, np.where(bits[:, 1], 1, -1)).astype(np.int8)

    def legal_masks(self, rows: np.ndarray | None = None) -> np.ndarray:
        """``(N, 179)`` bool, True where the action is legal (all False for a finished game).

        The array is the batch's cache (read-only), replaced (never changed in place) after the
        next :meth:`step`.  ``rows`` (game indices): only those games, ``(len(rows), 179)``, a new
        array, at a cost in proportion to their number.
        """
        if rows is not None:
            if self._mask_valid:
                return self._mask[rows]
            return unpack_actions(self._legal_words(rows)[rows])
        if not self._mask_valid:
            self._mask = unpack_actions(self._legal_words())
            self._mask.flags.writeable = False
            self._mask_valid = True
        return self._mask

    def _invalidate(self, rows: np.ndarray) -> None:
        """The games ``rows`` changed: their legal actions are recomputed when next asked."""
        self._stale[rows] = True
        self._mask_valid = False

    def _legal_words(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The legal actions as ``(N, 3)`` uint64 bit words (bit ``a % 64`` of word ``a // 64``), cached.

        ``rows`` (game indices): only those games' words are brought up to date (the others
        may be stale); each game's are recomputed only after it changed.
        """
        stale = self._stale
        if rows is None:
            if stale.all():
                self._compute_words()
                stale[:] = False
            elif stale.any():
                changed = np.flatnonzero(stale)
                self._compute_words(changed)
                stale[changed] = False
        else:
            changed = rows[stale[rows]]
            if len(changed):
                self._compute_words(changed)
                stale[changed] = False
        return self._words

    def greedy_words(self, rows: np.ndarray) -> np.ndarray:
        """``(len(rows), 3)`` uint64: the ``greedy`` baseline's choice set in each of the live games ``rows``, as
        bits (:func:`kahuna_env.kernels.greedy_words`: every legal card action played on a scratch copy of the
        game's board by the rules' loops; :mod:`kahuna_env.agents.batched`)."""
        rows = np.asarray(rows, dtype=np.intp)
        out = np.zeros((len(rows), 3), dtype=np.uint64)
        self._kernels.greedy_words(rows, self._legal_words(rows), out, *self._arguments("greedy_words"))
        return out

    def random_actions(self, rng: np.random.Generator, rows: np.ndarray | None = None) -> np.ndarray:
        """A uniformly random legal action for every game (``(N,)`` intp; 0 for a finished game).

        Works on the packed legal words: a random rank among the legal actions,
        then a binary search for that set bit; exactly uniform, no ``(N, 179)`` array.
        ``rows`` (game indices): only those games draw (one ``rng`` draw each); the others get 0.
        """
        if rows is None:
            return sample_set_bits(self._legal_words(), rng)
        actions = np.zeros(self.n, dtype=np.intp)
        actions[rows] = sample_set_bits(self._legal_words(rows)[rows], rng)
        return actions

    def _compute_words(self, subset: np.ndarray | None = None) -> None:
        """Legal actions as bit sets per game (27-bit line sets, 12-bit island sets) laid into three 64-bit words.

        ``subset`` (game indices): only those games' words (:func:`kahuna_env.kernels.legal_words`).
        """
        rows = self._rows if subset is None else subset
        self._kernels.legal_words(rows, self._words, *self._arguments("legal_words"))

    # ------------------------------------------------------------------ transitions
    def live(self, active: np.ndarray | None = None) -> np.ndarray:
        """``(N,)`` bool: the games not over, among ``active`` (a ``(N,)`` bool array; all when None)."""
        live = ~self.over
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.n,) or active.dtype != bool:
                raise ValueError(f"active must be a bool array of shape ({self.n},), got {active.dtype} {active.shape}")
            live &= active
        return live

    def step(self, actions: Sequence[int] | np.ndarray, active: np.ndarray | None = None) -> StepResult:
        """Apply one action in every game (``actions``: ``N`` integers in 0..178).

        ``active`` (``(N,)`` bool, default all): only these games act; the others
        are left as they are (e.g. the games in which an opponent is to move,
        stepped by another call).  The action of a finished or inactive game is
        ignored (any value).  If any acting game's action is illegal,
        :class:`IllegalActionError` names the first such game, the action and
        why, and no game is changed.
        """
        acting = self.live(active)
        actions = self._check(actions, acting)
        n = self.n
        self._invalidate(acting)
        kind = KIND[actions]
        p = self.current_player.astype(np.intp)
        was_over = self.over.copy()
        interim = np.zeros(n, dtype=bool)
        self._kernels.step(actions, kind, interim, *self._arguments("step"))
        if interim.any():  # the reshuffle draws from each game's generator
            self._interim_scoring(np.flatnonzero(interim))
        terminated = self.over & ~was_over
        result = StepResult(
            terminated=terminated,
            winner=self.winner.copy(),
            scores=self.scores.copy(),
            final_points=self.final_points.copy(),
            reset=np.zeros(n, dtype=bool),
            player=np.where(acting, p, -1).astype(np.int8),
        )
        if self.auto_reset and self.over.any():
            finished = np.flatnonzero(self.over)
            self._deal(finished)
            result.reset[finished] = True
        return result

    def _arguments(self, loop: str) -> tuple[Any, ...]:
        """A loop's arguments after its per-call ones (:data:`_BOUND`), the arrays read afresh on every call (a
        caller, the vector env's refused reset, may swap them)."""
        return tuple(getattr(self, value) if is_array else value for is_array, value in _BOUND[loop])

    def _play_random(
        self,
        rng: np.random.Generator,
        waiting: np.ndarray,
        on_end: Callable[[], None] | None = None,
        draws: int | None = None,
    ) -> int | None:
        """Play uniformly random legal actions until every live game waits on a seat of ``waiting``.

        The games, the draws from ``rng`` and the calls of ``on_end`` are those of
        ``play_seated(batch, [BaselinePolicy(random agent drawing from rng)], seating)`` with
        ``seating`` :data:`~kahuna_env.seated.AWAIT` where ``waiting`` (``(N, 2)`` bool) and the
        random agent elsewhere, and an ``on_step`` that calls ``on_end`` after a step in which a
        game ended (``on_end`` may deal games and change ``waiting`` in place).  Fused into one
        loop (:func:`kahuna_env.kernels.play_random`) that returns here only when a
        game ends: the uniforms come from ``rng.random(draws)`` (default about ``4 N``), and
        ``rng`` is left as if it had drawn only those used.

        Returns the actions played, or None, having played the ticks before it, when a game to
        move has no legal action (never in a valid position): the caller's ``play_seated`` then
        meets that tick, with the same draws, and raises as it does.
        """
        if self.auto_reset:
            raise RuntimeError("_play_random needs a batch without auto_reset")
        n = self.n
        size = max(n, 4 * n + 64 if draws is None else int(draws))
        generator = rng.bit_generator
        start = generator.state
        uniforms = rng.random(size)
        used = moves = 0
        tick = np.empty(n, dtype=np.intp)
        scratch = np.empty(n, dtype=np.intp)
        actions = np.empty(n, dtype=np.intp)
        kinds = np.empty(n, dtype=np.int8)
        interim = np.zeros(n, dtype=bool)
        loops = self._kernels
        try:
            while True:
                why, used, count = loops.play_random(
                    waiting, uniforms, used, tick, scratch, actions, kinds, KIND, NO_ACTION, self._stale, self._words,
                    self.over, self.current_player, self._arguments("legal_words"), self._arguments("step"), interim,
                    self._pcg, self._pcg_ready, self.open_discard, self.face_down, self._arguments("interim_scoring"),
                )  # fmt: skip
                moves += count
                if count:
                    self._mask_valid = False
                if why == loops.PLAYED_OUT:
                    return moves
                if why == loops.NO_LEGAL_ACTION:
                    return None
                if why == loops.NEED_DRAWS:  # the used draws taken for good, a fresh batch of them
                    generator.state = start
                    rng.random(used)
                    start = generator.state
                    uniforms = rng.random(size)
                    used = 0
                    continue
                if why == loops.INTERIM_UNSEEDED:
                    games = np.flatnonzero(interim)
                    self._interim_scoring(games)
                    if not self.over[actions != NO_ACTION].any():  # no game of the tick ended
                        continue
                if on_end is not None:  # GAME_ENDED, or an interim scoring ended one
                    on_end()
        finally:
            generator.state = start
            rng.random(used)

    def _check(self, actions: Sequence[int] | np.ndarray, running: np.ndarray) -> np.ndarray:
        """Validate the actions of the ``running`` games; return all as intp, the others mapped to no action."""
        array = np.asarray(actions)
        if array.shape != (self.n,):
            raise IllegalActionError(f"actions must have shape ({self.n},), got {array.shape}")
        if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
            raise IllegalActionError(f"actions must be integers in 0..{A.NUM_ACTIONS - 1}, got dtype {array.dtype}")
        safe = np.empty(self.n, dtype=np.intp)
        code, i = self._kernels.check(array.astype(np.int64, copy=False), running, self._legal_words(), safe, NO_ACTION)
        if code == 1:
            raise IllegalActionError(
                f"game {i}: action must be an integer in 0..{A.NUM_ACTIONS - 1}, got {int(array[i])}"
            )
        if code == 2:
            raise IllegalActionError(f"game {i}: {self._explain(i, int(safe[i]))}")
        return safe

    def _explain(self, i: int, action: int) -> str:
        try:
            self.game(i).step(action)
        except IllegalActionError as error:
            return str(error)
        return f"action {action} ({A.describe_action(action)}) is illegal"  # pragma: no cover (engines disagree)

    def _interim_scoring(self, games: np.ndarray) -> None:
        """The interim scoring of ``games``: the shuffles here, from each game's generator; the rest in the loop."""
        sizes = np.zeros(len(games), dtype=np.int64)
        self._kernels.reshuffle_sizes(games, sizes, *self._arguments("reshuffle_sizes"))
        orders = self._permutations(games, sizes)
        self._kernels.interim_scoring(games, orders, *self._arguments("interim_scoring"))

    # ------------------------------------------------------------------ observations
    def observations(
        self, player: int | Sequence[int] | np.ndarray | None = None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """``(N, 246)`` float32 observations, bit-identical to ``encode_observation(game, player)``.

        ``player``: None (each game's player to act), 0 or 1 (that seat in every
        game), or an ``(N,)`` array of seats.  ``rows`` (game indices): only those
        games, ``(len(rows), 246)``, at a cost in proportion to their number.
        """
        return self._raw_observations(player, rows, scaled=True)

    def states(self) -> np.ndarray:
        """``(N, STATE_SIZE)`` float32 full states, bit-identical to ``encode_state(game)`` (centralized critics).

        Player 0's observation, then player 1's hand, the pile's cards per
        island and player 1's face-down discards (each / 2), then the player to act.
        """
        return state_rows(
            self._raw_observations(0), self.hand, self.pile, self.pile_size, self.face_down, self.current_player
        )

    def _raw_observations(
        self, player: int | Sequence[int] | np.ndarray | None, subset: np.ndarray | None = None, scaled: bool = False
    ) -> np.ndarray:
        """The observations' raw counts (uint8), or with ``scaled`` the observations (one encoder:
        :func:`kahuna_env.kernels.observations`)."""
        if player is None:
            v = self.current_player.astype(np.intp)
        else:
            v = np.broadcast_to(np.asarray(player, dtype=np.intp), (self.n,))
            if ((v < 0) | (v > 1)).any():
                raise ValueError("player must be 0 or 1")
        rows = self._rows if subset is None else np.asarray(subset, dtype=np.intp)
        if scaled:
            out = np.empty((len(rows), OBSERVATION_SIZE), dtype=np.float32)
            r = np.empty((1, OBSERVATION_SIZE), dtype=np.uint8)  # one scratch row
        else:
            out = NO_ROWS
            r = self._raw if subset is None else np.empty((len(rows), OBSERVATION_SIZE), dtype=np.uint8)
        seats = np.ascontiguousarray(v if subset is None else v[rows])
        self._kernels.observations(rows, seats, r, out, *self._arguments("observations"))
        return out if scaled else r

    # ------------------------------------------------------------------ positions and single games
    def to_dicts(self, indices: Sequence[int] | np.ndarray | None = None) -> list[dict[str, Any]]:
        """The positions of the given games (all when None), each as ``KahunaGame.to_dict`` writes it."""
        indices = self._rows if indices is None else self._indices(indices)
        values = position_values(vars(self).__getitem__, indices)
        for row, i in zip(values, indices.tolist(), strict=True):
            row["config"] = self.configs[i]
        return [position_json(row) for row in values]  # the format's one writer

    def game(self, i: int, seed: int | None = None) -> KahunaGame:
        """Game ``i`` as an independent :class:`KahunaGame`: ``KahunaGame.from_dict(position, seed)``.

        A position does not carry a generator's state (docs/RULES.md), so the
        copy's later reshuffles come from ``seed``, not from the batch.  To
        replay game ``i`` exactly, chance included, play its actions in
        ``KahunaGame(config, seed=game_seeds[i])``.
        """
        return KahunaGame.from_dict(self.to_dicts(self._indices([i]))[0], seed=seed)


for _name, _new in FORMERLY.items():  # each former name of a batch array answers for one release, with a warning
    if _new in _BATCH_ARRAYS:
        setattr(KahunaBatch, _name, former_name(_name, "KahunaBatch array"))
