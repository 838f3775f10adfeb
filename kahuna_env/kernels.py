"""The rules' one implementation: the loops that step games, compiled with numba.

:class:`~kahuna_env.vector.KahunaBatch` keeps its state as numpy arrays and runs each hot
operation as one loop over the games it is asked for: the legal-action words and a step's
legality check; a step's transitions (payments, removals, discards, bridges and captures,
draws, takes, passes, the final scoring); the interim scoring and the deal around their
shuffles; the observations (the one encoder); the choice of a random set bit.
:class:`~kahuna_env.engine.KahunaGame` is a batch of one: its state is one record of the same
fields (:data:`kahuna_env.arrays.STATE_DTYPE`), which the ``game_*`` functions at the end of this
module hand to the same loops in one call per action (:func:`game_step`, :func:`game_legal`,
:func:`game_deal`, :func:`game_observation`).  ``tests/test_vector.py`` holds the batch to the
single game, ``tests/test_rules_reference.py`` holds the game to the readable rules
(:mod:`kahuna_env.rules`).

Chance is here too, bit for bit numpy's: each game's ``numpy.random.default_rng(seed)`` is a
row of PCG64 state, seeded as numpy's ``SeedSequence`` seeds it (:func:`seed_generators`) and
drawn as ``Generator.permutation`` (:func:`permutations`) and ``integers(2**63)``
(:func:`draw_seeds`) draw; ``tests/test_kernels.py`` holds them to numpy's own generators.

With numba (a dependency of the project) every loop is compiled on first use (about 11 s for
all of them on a 2-core machine), cached on disk by numba after that.  With the environment
variable ``KAHUNA_JIT=0`` set before the first batch is made, or when numba cannot be
imported, the same functions run as plain Python (numpy scalars, their overflow warnings
silenced as numba wraps silently): slower by orders of magnitude, the same results bit for bit
(``tests/test_kernels.py`` plays the two side by side, :func:`interpreted` giving the plain
ones beside the compiled).  :func:`enabled` says which runs, and imports numba on its first
call, not on import; that first call may come from several threads at once (a lock makes one of them wrap the
loops, the others wait for it).  :data:`PARAMETERS` names each loop's arguments: the batch passes its
arrays by those names (the schema's arrays, :data:`kahuna_env.schema.FIELDS`) and the
board's tables by theirs; a game's record has its fields under the same names, and its calls of
the loops (the ``_on_game_*`` block, written by ``python tools/game_calls.py``) are generated
from those names, since compiled code binds arguments by position.  The tables
are arguments, never globals, so a compiled loop holds no copy of the board that could outlive a
change to it in numba's cache (the globals are numpy's PCG64 and SeedSequence constants, fixed by
their algorithms).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
from types import ModuleType
from typing import Any

import numpy as np

from kahuna_env.schema import OBSERVATION_BLOCKS

__all__ = [
    "BLOCKS",
    "ENABLED",
    "PARAMETERS",
    "REASONS",
    "cache_is_warm",
    "check",
    "deal",
    "draw_seeds",
    "enabled",
    "game_deal",
    "game_end_prematurely",
    "game_final_points",
    "game_final_winner",
    "game_illegal_reason",
    "game_legal",
    "game_observation",
    "game_step",
    "illegal_reason",
    "interim_scoring",
    "interpreted",
    "legal_words",
    "observations",
    "permutations",
    "play_random",
    "reshuffle_sizes",
    "running",
    "sample_bits",
    "seed_generators",
    "step",
]

BLOCKS = tuple(block.name for block in OBSERVATION_BLOCKS)
"""The observation blocks in the layout's order, the order :func:`observations` unpacks its ``starts`` in (a
test holds its unpacking to this)."""


def _load_numba() -> Any:
    if os.environ.get("KAHUNA_JIT", "1").strip() == "0":
        return None
    try:
        import numba  # optional: the loops run as plain Python without it; imported on first use
    except Exception:  # an incompatible numba (e.g. built for another numpy) must not break the env
        return None
    return numba


ENABLED: bool | None = None
"""Whether the loops run compiled (numba importable and ``KAHUNA_JIT`` not ``0``); None until :func:`enabled`."""

_LOOPS: list[str] = []
"""The names of the loops (each marked with :func:`_loop`), compiled or wrapped by :func:`enabled`."""

PARAMETERS: dict[str, tuple[str, ...]] = {}
"""Each public loop's parameter names, in order (the batch binds its arrays and the tables to them by name)."""

_INTERPRETED: ModuleType | None = None

_SETUP_LOCK = threading.RLock()
"""Held while :func:`_setup` wraps the loops and :func:`interpreted` loads them: the first use may come from several
threads at once (a web server's requests, a threaded evaluator), and wrapping a loop twice fails in numba."""


def _interpret(names: dict[str, Any]) -> None:
    """Leave the loops of a module's namespace as Python, the public ones run with numpy's overflow warnings off.

    Compiled, the loops wrap around silently (the PCG64 arithmetic relies on it); as numpy scalars they
    wrap alike but warn.
    """
    for name in PARAMETERS:
        function = names[name]

        @functools.wraps(function)
        def quiet(*args: Any, _function: Any = function) -> Any:
            # A record array (a game's state, the tables) read by field name, as numba reads it.
            args = tuple(_as_records(arg) for arg in args)
            with np.errstate(over="ignore"):
                return _function(*args)

        names[name] = quiet


class _Fields:
    """A structured array's fields as attributes, and its rows as such records: how compiled loops read a game's
    record and the tables (a ``numpy.recarray`` would not do: its ``round`` is ndarray's method)."""

    __slots__ = ("_array",)

    def __init__(self, array: Any) -> None:
        self._array = array

    def __getattr__(self, name: str) -> Any:
        return self._array[name]

    def __getitem__(self, index: int) -> _Fields:
        return _Fields(self._array[index])


def _as_records(value: Any) -> Any:
    """A structured array read by field name, as compiled loops read it; anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        return _Fields(value)
    return value


def _inline_call(expr: Any, caller: Any, callee: Any) -> bool:
    """Numba's inlining choice for a call from one loop to another: inline it (numba's IR), unless its arguments
    come as ``*args`` (which numba cannot inline).  A call between compiled functions passes each array as a
    struct and counts its references: the one-game step spent a fifth of its time so when LLVM stopped inlining
    ``step`` into it.  From Python a loop is called as compiled, inlined nowhere."""
    return expr.vararg is None


def _setup() -> bool:
    """Compile the loops (numba) or leave them as Python, once; return :data:`ENABLED`."""
    global ENABLED
    if ENABLED is not None:  # set last, once every loop is wrapped: a thread that sees it finds them all
        return ENABLED
    with _SETUP_LOCK:
        if ENABLED is None:  # another thread may have wrapped them while this one waited
            numba = _load_numba()
            names = globals()
            if numba is None:
                _interpret(names)
            else:
                for name in _LOOPS:
                    try:
                        names[name] = numba.njit(cache=True, nogil=True, inline=_inline_call)(names[name])
                    except RuntimeError:  # no writable cache folder for this install: compile in every process
                        names[name] = numba.njit(cache=False, nogil=True, inline=_inline_call)(names[name])
            ENABLED = numba is not None
    return ENABLED


WARM_CHECK = ("legal_words", "step", "observations")
"""The loops every game plays, whose disk cache :func:`cache_is_warm` looks for."""


def cache_is_warm() -> bool | None:
    """Whether numba's disk cache already holds this source's compiled loops (so none compiles on first use).

    False means the first batch will compile them (seconds: announce it); None when it cannot
    tell (the array code runs, or this numba keeps its cache otherwise).  Numba keys each entry by
    the CPU it was compiled for (its name and features), so a cache written on another CPU, or with
    another ``NUMBA_CPU_NAME``, is cold here: this machine compiles its own.
    """
    if not enabled():
        return None
    try:
        return all(_cached_for_this_cpu(globals()[name]) for name in WARM_CHECK)
    except Exception:  # numba's cache layout is its own; unknown is not an error
        return None


def _cached_for_this_cpu(dispatcher: Any) -> bool:
    """Whether ``dispatcher``'s disk cache index has an entry compiled for this process's CPU target."""
    machine = dispatcher.targetctx.codegen().magic_tuple()
    return any(key[1] == machine for key in dispatcher._cache._cache_file._load_index())


def enabled() -> bool:
    """Whether the loops run compiled; the first call imports numba (about 0.3 s) and wraps them for it.

    Each loop compiles on its first call (seconds), then comes from numba's cache on disk.
    """
    return _setup()


def running() -> ModuleType:
    """The loops that run now: this module's, compiled (numba), else :func:`interpreted`'s, the same as plain Python."""
    return sys.modules[__name__] if enabled() else interpreted()


def interpreted() -> ModuleType:
    """The loops as plain Python: this module when numba is off, else this module's source loaded once more.

    The second load is never compiled: the reference the tests hold the compiled loops to, and the loops
    of a batch made while :func:`enabled` said False.
    """
    global _INTERPRETED
    if _INTERPRETED is not None:
        return _INTERPRETED
    with _SETUP_LOCK:  # one second load, published only once its loops are wrapped
        if _INTERPRETED is None:
            if not _setup():
                _INTERPRETED = sys.modules[__name__]
            else:
                spec = importlib.util.spec_from_file_location(f"{__name__}_interpreted", __file__)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.ENABLED = False
                module._interpret(vars(module))
                _INTERPRETED = module
    return _INTERPRETED


def _loop(function: Any) -> Any:
    """Mark a loop: :func:`enabled` compiles it (or leaves it as Python); a public one's parameters are recorded."""
    _LOOPS.append(function.__name__)
    if not function.__name__.startswith("_"):
        code = function.__code__
        PARAMETERS[function.__name__] = code.co_varnames[: code.co_argcount]
    return function


U1 = np.uint64(1)


@_loop
def _popcount(x: np.uint64) -> np.int64:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@_loop
def _select_bit(x: np.uint64, rank: np.int64) -> np.int64:
    """The position of the set bit of rank ``rank`` of ``x`` (0 = the lowest set bit; ``rank < popcount(x)``).

    A binary search over halves: 6 popcounts instead of a walk over up to 64 bits.
    """
    position = np.int64(0)
    for width in (32, 16, 8, 4, 2, 1):
        low = x & ((U1 << np.uint64(width)) - U1)
        c = _popcount(low)
        if rank >= c:
            rank -= c
            x >>= np.uint64(width)
            position += width
        else:
            x = low
    return position


@_loop
def _sample_row(words: np.ndarray, k: int, uniform: float) -> np.int64:
    """The set bit of rank ``int(uniform * count)`` of row ``k`` of ``(M, W)`` words; -1 if the row has none."""
    total = np.int64(0)
    for w in range(words.shape[1]):
        total += _popcount(words[k, w])
    if total == 0:
        return np.int64(-1)
    rank = np.int64(uniform * total)
    for w in range(words.shape[1]):
        x = words[k, w]
        c = _popcount(x)
        if rank >= c:
            rank -= c
            continue
        return 64 * w + _select_bit(x, rank)
    return np.int64(-1)  # not reached: rank < total


@_loop
def sample_bits(words: np.ndarray, uniforms: np.ndarray, out: np.ndarray) -> None:
    """``out[k]``: the set bit of rank ``int(uniforms[k] * count)`` of row ``k`` of ``(M, W)`` words; 0 if none.

    Rank ``r`` is the ``r``-th set bit counting from bit 0 of word 0 (as ``sample_set_bits``'s binary search).
    """
    for k in range(words.shape[0]):
        out[k] = max(_sample_row(words, k, uniforms[k]), 0)


@_loop
def _control_mask(i: int, player: int, count: np.ndarray, majority: np.ndarray) -> np.int64:
    """The islands ``player`` controls in game ``i``, as bits: those where they hold a majority of the lines
    (``majority``: more than half; the rule of control, stated once)."""
    mask = 0
    for island in range(count.shape[2]):
        if count[i, player, island] >= majority[island]:
            mask |= 1 << island
    return np.int64(mask)


@_loop
def _control_difference(i: int, count: np.ndarray, majority: np.ndarray) -> np.int64:
    """The islands player 0 controls in game ``i`` minus those player 1 controls (the scorings' comparison)."""
    return _popcount(np.uint64(_control_mask(i, 0, count, majority))) - _popcount(
        np.uint64(_control_mask(i, 1, count, majority))
    )


@_loop
def control_masks(rows: np.ndarray, out: np.ndarray, count: np.ndarray, majority: np.ndarray) -> None:
    """``out[k, player]``: the islands each player controls in game ``rows[k]`` (:func:`_control_mask`)."""
    for k in range(rows.shape[0]):
        out[k, 0] = _control_mask(rows[k], 0, count, majority)
        out[k, 1] = _control_mask(rows[k], 1, count, majority)


@_loop
def legal_words(
    rows: np.ndarray,
    words: np.ndarray,
    current_player: np.ndarray,
    hand: np.ndarray,
    lines: np.ndarray,
    bridges: np.ndarray,
    count: np.ndarray,
    discarded_this_turn: np.ndarray,
    played_this_turn: np.ndarray,
    face_up: np.ndarray,
    pile_size: np.ndarray,
    must_draw: np.ndarray,
    claim_line: np.ndarray,
    setup_left: np.ndarray,
    over: np.ndarray,
    planning: np.ndarray,
    hand_limit: np.ndarray,
    majority: np.ndarray,
    lines_a_in: np.ndarray,
    lines_b_in: np.ndarray,
    lines_touching: np.ndarray,
    all_lines: np.uint64,
    max_bridges: int,
    max_hand: int,
    terms: np.ndarray,
) -> None:
    """The legal words of the games ``rows`` into ``words[rows]`` (``KahunaBatch._compute_words``, game by game).

    Each condition of legality is stated once, here, then combined per kind of action: ``has1``, ``has2``
    (the islands with a card in hand, with two), ``free`` (the free lines), ``theirs`` (the opponent's lines),
    ``planning_free`` (the lines the planning variant allows; all without it), ``plays`` (cards may be played:
    no discard this turn), ``supply`` (a bridge left), ``unplayed`` (no card played this turn),
    ``discard_rule`` (the discard rule allows a face-down discard), ``pile``, ``drawable``, ``full`` (the hand),
    ``no_pass_after_pass`` (passing not ruled out by the opponent's pass), ``pass_rule`` (the discard rule
    allows passing), the free claim offered (a line bit).  ``terms`` (``(1, 15)`` uint64, or ``(0, 15)`` for
    none): its row gets the last game's conditions in that order, which :func:`illegal_reason` reads.
    """
    zero = np.uint64(0)
    for i in rows:
        if over[i]:
            words[i, 0] = zero
            words[i, 1] = zero
            words[i, 2] = zero
            continue
        p = current_player[i]
        o = 1 - p
        has1 = zero
        has2 = zero
        size = 0
        for island in range(hand.shape[2]):
            h = hand[i, p, island]
            size += h
            if h > 0:
                has1 |= U1 << np.uint64(island)
            if h > 1:
                has2 |= U1 << np.uint64(island)
        mine = lines[i, p]
        theirs = lines[i, o]
        free = ~(mine | theirs) & all_lines
        plays = discarded_this_turn[i] == 0
        supply = bridges[i, p] < max_bridges
        planning_free = all_lines
        if planning[i]:
            planning_free = ~lines_touching[_control_mask(i, o, count, majority)] & all_lines
        pile = pile_size[i] > 0
        drawable = pile or face_up[i, 0] >= 0 or face_up[i, 1] >= 0 or face_up[i, 2] >= 0
        unplayed = played_this_turn[i] == 0
        discard_rule = not hand_limit[i] or (not plays) or (size == max_hand and drawable)
        no_pass_after_pass = not (drawable and must_draw[i])
        pass_rule = not (hand_limit[i] and not plays)
        claim = claim_line[i]
        free_bridge = (U1 << np.uint64(claim)) if claim >= 0 else zero
        full = size >= max_hand
        if terms.shape[0]:  # the conditions, in the docstring's order, for illegal_reason
            terms[0, 0] = has1
            terms[0, 1] = has2
            terms[0, 2] = free
            terms[0, 3] = theirs
            terms[0, 4] = planning_free
            terms[0, 5] = plays
            terms[0, 6] = supply
            terms[0, 7] = unplayed
            terms[0, 8] = discard_rule
            terms[0, 9] = pile
            terms[0, 10] = drawable
            terms[0, 11] = full
            terms[0, 12] = no_pass_after_pass
            terms[0, 13] = pass_rule
            terms[0, 14] = free_bridge
        placeable = free & planning_free if (plays and supply) else zero
        a1 = lines_a_in[has1]
        b1 = lines_b_in[has1]
        place_a = placeable & a1
        place_b = placeable & b1
        if not plays:
            theirs = zero
        remove_ab = theirs & a1 & b1
        remove_aa = theirs & lines_a_in[has2]
        remove_bb = theirs & lines_b_in[has2]
        discard = has1 if (unplayed and discard_rule) else zero
        can_draw = drawable and not full
        end = zero
        if can_draw and pile:
            end |= U1
        if can_draw and face_up[i, 0] >= 0:
            end |= np.uint64(2)
        if can_draw and face_up[i, 1] >= 0:
            end |= np.uint64(4)
        if can_draw and face_up[i, 2] >= 0:
            end |= np.uint64(8)
        if no_pass_after_pass and pass_rule:
            end |= np.uint64(16)
        if setup_left[i] > 0:
            place_a = place_b = remove_ab = remove_aa = remove_bb = discard = end = zero
            free_bridge = free
        words[i, 0] = place_a | (place_b << np.uint64(27)) | (remove_ab << np.uint64(54))
        words[i, 1] = (remove_ab >> np.uint64(10)) | (remove_aa << np.uint64(17)) | (remove_bb << np.uint64(44))
        words[i, 2] = (remove_bb >> np.uint64(20)) | (discard << np.uint64(7)) | (end << np.uint64(19))
        words[i, 2] |= free_bridge << np.uint64(24)


REASONS = (
    "legal",
    "game_over",
    "setup_first",
    "setup_line_taken",
    "discarded_no_play",
    "missing_card",
    "line_taken",
    "no_supply",
    "planning_control",
    "no_opponent_bridge",
    "cannot_pay",
    "played_no_discard",
    "discard_rule",
    "hand_full",
    "pile_empty",
    "slot_empty",
    "opponent_passed",
    "pass_rule",
    "no_claim",
    "claim_other_line",
)
"""What :func:`illegal_reason` returns, by index: the condition of :func:`legal_words` an action fails, the first
in the order :func:`legal_words` combines them (0: none, the action is legal).  The words for each are
:data:`kahuna_env.engine.REASON_TEXT`'s."""


@_loop
def illegal_reason(
    action: int,
    terms: np.ndarray,
    setup_left: int,
    over: bool,
    face_up: np.ndarray,
    action_line: np.ndarray,
    pay1: np.ndarray,
    pay2: np.ndarray,
    remove_base: int,
    discard_base: int,
    draw: int,
    pass_action: int,
) -> np.int64:
    """Which condition of legality ``action`` fails (an index of :data:`REASONS`, 0: legal), read off ``terms``,
    a game's conditions as :func:`legal_words` states and writes them, in the order it combines them; ``face_up``
    is the game's face-up row."""
    if over:
        return np.int64(1)
    has1, has2, free, theirs, planning_free = terms[0], terms[1], terms[2], terms[3], terms[4]
    plays, supply, unplayed, discard_rule, pile = terms[5], terms[6], terms[7], terms[8], terms[9]
    full, no_pass_after_pass, pass_rule, claim = terms[11], terms[12], terms[13], terms[14]
    line = action_line[action]
    line_bit = (U1 << np.uint64(line)) if line >= 0 else np.uint64(0)
    if action > pass_action:  # a free bridge
        if setup_left > 0:
            return np.int64(0 if free & line_bit else 3)
        if claim & line_bit:
            return np.int64(0)
        return np.int64(18 if claim == 0 else 19)
    if setup_left > 0:
        return np.int64(2)
    if action < discard_base and not plays:
        return np.int64(4)
    if action < remove_base:  # a placement
        if not has1 >> np.uint64(pay1[action]) & U1:
            return np.int64(5)
        if not free & line_bit:
            return np.int64(6)
        if not supply:
            return np.int64(7)
        return np.int64(0 if planning_free & line_bit else 8)
    if action < discard_base:  # a removal
        if not theirs & line_bit:
            return np.int64(9)
        a, b = pay1[action], pay2[action]
        needed = has2 >> np.uint64(a) if a == b else has1 >> np.uint64(a) & has1 >> np.uint64(b)
        return np.int64(0 if needed & U1 else 10)
    if action < draw:  # a face-down discard
        if not unplayed:
            return np.int64(11)
        if not has1 >> np.uint64(action - discard_base) & U1:
            return np.int64(5)
        return np.int64(0 if discard_rule else 12)
    if action == pass_action:
        if not no_pass_after_pass:
            return np.int64(16)
        return np.int64(0 if pass_rule else 17)
    if full:  # a draw or a take
        return np.int64(13)
    if action == draw:
        return np.int64(0 if pile else 14)
    return np.int64(0 if face_up[action - draw - 1] >= 0 else 15)


@_loop
def _premature(i: int, bridges: np.ndarray, over: np.ndarray, winner: np.ndarray) -> None:
    """The premature end of game ``i``: over; the player who still has bridges wins (neither: a draw)."""
    has0 = bridges[i, 0] > 0
    has1 = bridges[i, 1] > 0
    over[i] = True
    winner[i] = -1 if has0 == has1 else (0 if has0 else 1)


@_loop
def _final_points(i: int, count: np.ndarray, majority: np.ndarray, final_points: np.ndarray) -> None:
    """The final scoring of game ``i``: the difference of controlled islands (a majority of their lines),
    to the player with more."""
    diff = _control_difference(i, count, majority)
    final_points[i, 0] = max(diff, 0)
    final_points[i, 1] = max(-diff, 0)


@_loop
def _final_winner(i: int, scores: np.ndarray, final_points: np.ndarray, bridges: np.ndarray) -> np.int64:
    """The winner of game ``i`` after its final scoring: the higher total; if tied, more final-scoring points;
    if tied, more bridges on the board; else -1, a draw."""
    for first, second in (
        (scores[i, 0], scores[i, 1]),
        (final_points[i, 0], final_points[i, 1]),
        (bridges[i, 0], bridges[i, 1]),
    ):
        if first != second:
            return np.int64(0 if first > second else 1)
    return np.int64(-1)


@_loop
def _bridge(
    i: int,
    line: int,
    player: int,
    built: bool,
    owner: np.ndarray,
    lines: np.ndarray,
    count: np.ndarray,
    bridges: np.ndarray,
    round: np.ndarray,
    over: np.ndarray,
    winner: np.ndarray,
    line_a: np.ndarray,
    line_b: np.ndarray,
    line_bit: np.ndarray,
    majority: np.ndarray,
    touch: np.ndarray,
) -> None:
    """The board's part of a placement or free bridge (``built``: ``player`` builds on the free ``line`` of game
    ``i``) or of a removal (``player``'s bridge on ``line`` leaves the board): :func:`step`'s, and greedy's
    look-ahead.  A built bridge that completes an island's majority takes the island and sweeps away the
    opponent's bridges touching it; from round 2 on, a player left without bridges ends the game
    (:func:`_premature`)."""
    a = line_a[line]
    b = line_b[line]
    if not built:
        owner[i, line] = -1
        lines[i, player] &= ~line_bit[line]
        bridges[i, player] -= 1
        count[i, player, a] -= 1
        count[i, player, b] -= 1
        if round[i] >= 2 and bridges[i, player] == 0:
            _premature(i, bridges, over, winner)
        return
    o = 1 - player
    owner[i, line] = player
    lines[i, player] |= line_bit[line]
    bridges[i, player] += 1
    count[i, player, a] += 1
    count[i, player, b] += 1
    gained_a = count[i, player, a] == majority[a]
    gained_b = count[i, player, b] == majority[b]
    if gained_a or gained_b:
        lost = 0
        for victim in range(owner.shape[1]):
            if owner[i, victim] == o and ((gained_a and touch[a, victim]) or (gained_b and touch[b, victim])):
                owner[i, victim] = -1
                lines[i, o] &= ~line_bit[victim]
                count[i, o, line_a[victim]] -= 1
                count[i, o, line_b[victim]] -= 1
                lost += 1
        if lost:
            bridges[i, o] -= lost
            if round[i] >= 2 and bridges[i, o] == 0:
                _premature(i, bridges, over, winner)


@_loop
def step(
    actions: np.ndarray,
    kinds: np.ndarray,
    interim: np.ndarray,
    owner: np.ndarray,
    lines: np.ndarray,
    count: np.ndarray,
    bridges: np.ndarray,
    hand: np.ndarray,
    known: np.ndarray,
    face_down: np.ndarray,
    open_discard: np.ndarray,
    pile: np.ndarray,
    pile_size: np.ndarray,
    face_up: np.ndarray,
    current_player: np.ndarray,
    round: np.ndarray,
    scores: np.ndarray,
    final_points: np.ndarray,
    played_this_turn: np.ndarray,
    discarded_this_turn: np.ndarray,
    must_draw: np.ndarray,
    claim_line: np.ndarray,
    setup_left: np.ndarray,
    final_turns_left: np.ndarray,
    over: np.ndarray,
    winner: np.ndarray,
    planning: np.ndarray,
    first_player: np.ndarray,
    action_line: np.ndarray,
    pay1: np.ndarray,
    pay2: np.ndarray,
    line_a: np.ndarray,
    line_b: np.ndarray,
    line_bit: np.ndarray,
    majority: np.ndarray,
    touch: np.ndarray,
    max_bridges: int,
    discard_base: int,
    take_base: int,
) -> None:
    """One already-checked action per game (``KahunaBatch.step``'s transitions, game by game).

    ``kinds``: the action kind per game (``vector._KIND``; 0 = no action).  ``interim[i]``
    is set where game ``i`` reached an interim scoring, which the caller then applies (it
    shuffles).  Kinds: 1 place, 2 remove, 3 discard, 4 draw, 5 take, 6 pass, 7 free bridge.
    """
    for i in range(actions.shape[0]):
        kind = kinds[i]
        if kind == 0:
            continue
        action = actions[i]
        p = current_player[i]
        o = 1 - p
        claim_line[i] = -1
        line = action_line[action]
        if kind == 1 or kind == 2:  # open payments
            for payment in range(kind):  # a placement pays one card, a removal two
                paid = pay1[action] if payment == 0 else pay2[action]
                hand[i, p, paid] -= 1
                open_discard[i, paid] += 1
                if known[i, p, paid] > 0:
                    known[i, p, paid] -= 1
                played_this_turn[i] += 1
            if kind == 2:  # lift the opponent's bridge
                _bridge(
                    i, line, o, False, owner, lines, count, bridges, round, over, winner, line_a, line_b, line_bit,
                    majority, touch,
                )  # fmt: skip
                a = line_a[line]
                b = line_b[line]
                if (
                    planning[i]
                    and bridges[i, p] < max_bridges
                    and count[i, o, a] < majority[a]
                    and count[i, o, b] < majority[b]
                ):
                    claim_line[i] = line
        elif kind == 3:  # a face-down discard
            island = action - discard_base
            hand[i, p, island] -= 1
            face_down[i, p, island] += 1
            discarded_this_turn[i] += 1
            for card in range(known.shape[2]):  # a hidden card: every known card may be the one
                if known[i, p, card] > 0:
                    known[i, p, card] -= 1
        if kind == 1 or kind == 7:  # a bridge is built
            in_setup = setup_left[i] > 0
            if in_setup:
                setup_left[i] -= 1
            _bridge(
                i, line, p, True, owner, lines, count, bridges, round, over, winner, line_a, line_b, line_bit,
                majority, touch,
            )  # fmt: skip
            if in_setup and setup_left[i] == 0:
                current_player[i] = first_player[i]
        elif kind >= 4 and kind <= 6:  # the end of the turn
            if kind == 4:
                top = pile_size[i] - 1
                hand[i, p, pile[i, top]] += 1
                pile_size[i] = top
            elif kind == 5:
                slot = action - take_base
                card = face_up[i, slot]
                length = pile_size[i]
                if length > 0:
                    face_up[i, slot] = pile[i, length - 1]
                    pile_size[i] = length - 1
                else:
                    face_up[i, slot] = -1
                hand[i, p, card] += 1
                known[i, p, card] += 1
            played_this_turn[i] = 0
            discarded_this_turn[i] = 0
            must_draw[i] = kind == 6
            left = final_turns_left[i]
            in_final = left > 0
            if in_final:
                left -= 1
                final_turns_left[i] = left
            if in_final and left == 0:  # the final scoring
                _final_points(i, count, majority, final_points)
                scores[i, 0] += final_points[i, 0]
                scores[i, 1] += final_points[i, 1]
                over[i] = True
                winner[i] = _final_winner(i, scores, final_points, bridges)
            else:
                current_player[i] = o
                if not in_final and pile_size[i] == 0 and face_up[i, 0] < 0 and face_up[i, 1] < 0 and face_up[i, 2] < 0:
                    if round[i] >= 3:
                        final_turns_left[i] = 2
                    else:
                        interim[i] = True


@_loop
def _greedy_key(i: int, p: int, count: np.ndarray, bridges: np.ndarray, majority: np.ndarray) -> np.int64:
    """Greedy's key of game ``i`` for player ``p``, packed in one integer in lexicographic order: the islands
    ``p`` controls minus the opponent's, ``p``'s bridges counting towards majorities the opponent does not hold
    (progress), ``p``'s bridges on the board minus the opponent's (:func:`_greedy_pack`, not over)."""
    o = 1 - p
    mine = _control_mask(i, p, count, majority)
    theirs = _control_mask(i, o, count, majority)
    islands = _popcount(np.uint64(mine)) - _popcount(np.uint64(theirs))
    progress = 0
    for island in range(count.shape[2]):
        if not theirs >> island & 1:
            progress += min(count[i, p, island], majority[island])
    return _greedy_pack(0, islands, progress, bridges[i, p] - bridges[i, o])


@_loop
def _greedy_pack(terminal: int, islands: int, progress: int, bridges: int) -> np.int64:
    """``(terminal, islands, progress, bridges)`` as one integer ordered as the tuple (terminal -1..1, islands
    -12..12, progress 0..35, bridges -26..26)."""
    return np.int64((((terminal + 1) * 32 + islands + 16) * 64 + progress) * 64 + bridges + 32)


@_loop
def greedy_words(
    rows: np.ndarray,
    words: np.ndarray,
    out: np.ndarray,
    current_player: np.ndarray,
    round: np.ndarray,
    owner: np.ndarray,
    lines: np.ndarray,
    count: np.ndarray,
    bridges: np.ndarray,
    kind_of: np.ndarray,
    action_line: np.ndarray,
    line_a: np.ndarray,
    line_b: np.ndarray,
    line_bit: np.ndarray,
    majority: np.ndarray,
    touch: np.ndarray,
    discard_base: int,
    draw: int,
    pass_action: int,
) -> None:
    """The ``greedy`` baseline's choice set in game ``rows[k]`` (legal words ``words``) into ``out[k]`` (3 words).

    Each legal card action (placement, removal, free bridge) is played on a scratch copy of the game's board
    by the board's part of :func:`step` (:func:`_bridge`: captures and the premature end
    included) and keyed ``(terminal, islands, progress, bridges, -cards paid)``: ``terminal``
    1 when the action ends the game with the player's win, -1 when it ends it otherwise (then the middle
    entries are 0), else 0 and the middle entries are :func:`_greedy_key` after the action.  The set is the
    card actions of the best key when that key wins or improves on the position's own key; else the first
    legal of draw, take slot 0, 1, 2, pass (consecutive ids, in that order); else the best card actions
    anyway; else every legal face-down discard.
    """
    scratch_owner = np.empty((1, owner.shape[1]), dtype=owner.dtype)
    scratch_lines = np.empty((1, 2), dtype=lines.dtype)
    scratch_count = np.empty((1, 2, count.shape[2]), dtype=count.dtype)
    scratch_bridges = np.empty((1, 2), dtype=bridges.dtype)
    scratch_round = np.empty(1, dtype=round.dtype)
    scratch_over = np.empty(1, dtype=np.bool_)
    scratch_winner = np.empty(1, dtype=np.int8)
    best = np.zeros(3, dtype=np.uint64)  # the card actions of the best key, as words
    discards = np.zeros(3, dtype=np.uint64)  # the legal face-down discards, as words
    zero = np.uint64(0)
    for k in range(rows.shape[0]):
        i = rows[k]
        p = current_player[i]
        position = _greedy_key(i, p, count, bridges, majority)
        best_key = np.int64(-1)
        best[:] = zero
        discards[:] = zero
        first_end = -1
        for w in range(3):
            x = words[i, w]
            while x:
                low = x & (~x + U1)
                x ^= low
                action = 64 * w + _popcount(low - U1)
                kind = kind_of[action]
                if kind != 1 and kind != 2 and kind != 7:
                    if action < draw:
                        discards[w] |= low
                    elif first_end < 0 and action <= pass_action:
                        first_end = action
                    continue
                scratch_owner[0] = owner[i]
                scratch_lines[0] = lines[i]
                scratch_count[0] = count[i]
                scratch_bridges[0] = bridges[i]
                scratch_round[0] = round[i]
                scratch_over[0] = False
                scratch_winner[0] = -1
                line = action_line[action]
                _bridge(
                    0, line, 1 - p if kind == 2 else p, kind != 2, scratch_owner, scratch_lines, scratch_count,
                    scratch_bridges, scratch_round, scratch_over, scratch_winner, line_a, line_b, line_bit, majority,
                    touch,
                )  # fmt: skip
                if scratch_over[0]:
                    key = _greedy_pack(1 if scratch_winner[0] == p else -1, 0, 0, 0)
                else:
                    key = _greedy_key(0, p, scratch_count, scratch_bridges, majority)
                key = 4 * key + (2 if kind == 7 else (1 if kind == 1 else 0))  # then fewer cards paid
                if key > best_key:
                    best_key = key
                    best[:] = zero
                if key == best_key:
                    best[w] |= low
        if best_key >= 0 and best_key >> 2 > position:
            out[k] = best
        elif first_end >= 0:
            out[k] = zero
            out[k, first_end >> 6] = U1 << np.uint64(first_end & 63)
        elif best_key >= 0:
            out[k] = best
        else:
            out[k] = discards


@_loop
def observations(
    rows: np.ndarray,
    seats: np.ndarray,
    out: np.ndarray,
    scaled: np.ndarray,
    scale: np.ndarray,
    starts: np.ndarray,
    owner: np.ndarray,
    count: np.ndarray,
    hand: np.ndarray,
    face_up: np.ndarray,
    pile_size: np.ndarray,
    open_discard: np.ndarray,
    face_down: np.ndarray,
    known: np.ndarray,
    scores: np.ndarray,
    round: np.ndarray,
    final_turns_left: np.ndarray,
    over: np.ndarray,
    bridges: np.ndarray,
    current_player: np.ndarray,
    played_this_turn: np.ndarray,
    discarded_this_turn: np.ndarray,
    must_draw: np.ndarray,
    claim_line: np.ndarray,
    setup_left: np.ndarray,
    first_player: np.ndarray,
    planning: np.ndarray,
    hand_limit: np.ndarray,
    majority: np.ndarray,
    cards_per_island: int,
    max_bridges: int,
) -> None:
    """Row ``k`` of ``out`` (uint8): game ``rows[k]`` seen by seat ``seats[k]`` (``KahunaBatch._raw_observations``).

    ``scaled`` (float32, empty for none): row ``k`` is also written there times ``scale``, the
    observation itself (``out`` may then be one scratch row, reused).  ``starts``: the first
    column of each observation block, in the layout's order (``kahuna_env.observation.OBSERVATION_LAYOUT``).
    """
    (  # one start per observation block, named after it, in the layout's order
        lines_mine_at,
        lines_opponent_at,
        control_mine_at,
        control_opponent_at,
        bridges_mine_at,
        bridges_opponent_at,
        hand_at,
        face_up_at,
        pile_size_at,
        open_discard_at,
        my_face_down_at,
        opponent_face_down_count_at,
        opponent_hand_size_at,
        opponent_known_at,
        unseen_at,
        scores_at,
        round_at,
        final_turns_left_at,
        supply_at,
        played_this_turn_at,
        discarded_this_turn_at,
        must_draw_at,
        claim_at,
        setup_at,
        my_turn_at,
        first_player_at,
        rules_at,
    ) = starts
    islands = hand.shape[2]
    for k in range(rows.shape[0]):
        i = rows[k]
        v = seats[k]
        o = 1 - v
        r = out[k % out.shape[0]]
        r[:] = 0
        for line in range(owner.shape[1]):
            r[lines_mine_at + line] = owner[i, line] == v
            r[lines_opponent_at + line] = owner[i, line] == o
        opp_down = 0
        opp_hand = 0
        control_mine = _control_mask(i, v, count, majority)
        control_opponent = _control_mask(i, o, count, majority)
        for island in range(islands):
            r[control_mine_at + island] = control_mine >> island & 1
            r[control_opponent_at + island] = control_opponent >> island & 1
            r[bridges_mine_at + island] = count[i, v, island]
            r[bridges_opponent_at + island] = count[i, o, island]
            r[hand_at + island] = hand[i, v, island]
            r[open_discard_at + island] = open_discard[i, island]
            r[my_face_down_at + island] = face_down[i, v, island]
            r[opponent_known_at + island] = known[i, o, island]
            opp_down += face_down[i, o, island]
            opp_hand += hand[i, o, island]
            shown = 0
            for slot in range(face_up.shape[1]):
                if face_up[i, slot] == island:
                    shown += 1
            r[unseen_at + island] = (
                cards_per_island
                - hand[i, v, island]
                - open_discard[i, island]
                - face_down[i, v, island]
                - known[i, o, island]
                - shown
            )
        for slot in range(face_up.shape[1]):
            if face_up[i, slot] >= 0:
                r[face_up_at + slot * islands + face_up[i, slot]] = 1
        r[pile_size_at] = pile_size[i]
        r[opponent_face_down_count_at] = opp_down
        r[opponent_hand_size_at] = opp_hand
        r[scores_at] = scores[i, v]
        r[scores_at + 1] = scores[i, o]
        if 1 <= round[i] <= 3:
            r[round_at + round[i] - 1] = 1
        final_left = 0 if over[i] else final_turns_left[i]
        r[final_turns_left_at] = final_left > 0
        r[final_turns_left_at + 1] = final_left
        r[supply_at] = max_bridges - bridges[i, v]
        r[supply_at + 1] = max_bridges - bridges[i, o]
        my_turn = current_player[i] == v and not over[i]
        if my_turn:
            r[played_this_turn_at] = played_this_turn[i]
            r[discarded_this_turn_at] = discarded_this_turn[i] > 0
            r[must_draw_at] = must_draw[i]
            if claim_line[i] >= 0:
                r[claim_at + claim_line[i]] = 1
        r[setup_at] = setup_left[i] > 0
        r[setup_at + 1] = setup_left[i]
        r[my_turn_at] = my_turn
        r[first_player_at] = first_player[i] == v
        r[rules_at] = planning[i]
        r[rules_at + 1] = hand_limit[i]
        if scaled.shape[0]:
            for j in range(r.shape[0]):
                scaled[k, j] = np.float32(r[j]) * scale[j]


@_loop
def check(actions: np.ndarray, running: np.ndarray, words: np.ndarray, safe: np.ndarray, no_action: int) -> tuple:
    """Validate the actions of the ``running`` games against their legal words (``KahunaBatch._check``).

    Fills ``safe`` (the action of each running game, ``no_action`` elsewhere) and returns
    ``(0, -1)`` when all are legal, ``(1, i)`` when game ``i`` is the first whose action is out
    of ``0..no_action - 1``, else ``(2, i)`` for the first game whose action is illegal.
    """
    for i in range(actions.shape[0]):
        if running[i] and (actions[i] < 0 or actions[i] >= no_action):
            return 1, i
    for i in range(actions.shape[0]):
        if not running[i]:
            safe[i] = no_action
            continue
        action = actions[i]
        safe[i] = action
        if not (words[i, action >> 6] >> np.uint64(action & 63)) & U1:
            return 2, i
    return 0, -1


@_loop
def interim_scoring(
    games: np.ndarray,
    orders: np.ndarray,
    count: np.ndarray,
    bridges: np.ndarray,
    scores: np.ndarray,
    round: np.ndarray,
    open_discard: np.ndarray,
    face_down: np.ndarray,
    face_up: np.ndarray,
    pile: np.ndarray,
    pile_size: np.ndarray,
    over: np.ndarray,
    winner: np.ndarray,
    majority: np.ndarray,
) -> None:
    """The interim scoring of the games ``games`` (``KahunaBatch._interim_scoring``), their shuffles given.

    ``orders``: every game's permutation of its discard pile, one after the other (game
    ``games[k]``'s has as many entries as its pile has cards); the pile is laid out as the
    scalar engine lays it: open cards by island, then player 0's face-down cards, then
    player 1's, and shuffled card ``t`` is ``cards[order[t]]``.
    """
    islands = count.shape[2]
    start = 0
    cards = np.empty(orders.shape[0] + 1, dtype=np.int8)
    for i in games:
        ahead = _control_difference(i, count, majority)
        points = round[i]
        if ahead > 0:
            scores[i, 0] += points
        elif ahead < 0:
            scores[i, 1] += points
        round[i] += 1
        size = 0
        for island in range(islands):
            for _ in range(open_discard[i, island]):
                cards[size] = island
                size += 1
        for player in range(2):
            for island in range(islands):
                for _ in range(face_down[i, player, island]):
                    cards[size] = island
                    size += 1
        for slot in range(face_up.shape[1]):
            face_up[i, slot] = cards[orders[start + slot]] if slot < size else -1
        pile[i, :] = 0
        for t in range(face_up.shape[1], size):
            pile[i, size - 1 - t] = cards[orders[start + t]]
        pile_size[i] = max(size - face_up.shape[1], 0)
        start += size
        open_discard[i, :] = 0
        face_down[i, :, :] = 0
        if bridges[i, 0] == 0 or bridges[i, 1] == 0:
            _premature(i, bridges, over, winner)


# --- chance: numpy's default_rng (SeedSequence -> PCG64 -> Generator.permutation), bit for bit ---------------
# Each game's generator is a row of a (N, 6) uint64 array: the 128-bit state (high, low), the 128-bit
# increment (high, low), and the buffered half of a 64-bit draw (a flag and the 32 bits), as numpy's
# pcg64_state holds them.  tests/test_kernels.py holds every function here to numpy's own generators.

_M32 = np.uint64(0xFFFFFFFF)
_PCG_MULT_HI = np.uint64(2549297995355413924)
_PCG_MULT_LO = np.uint64(4865540595714422341)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_MULT_L = np.uint64(0xCA01F9DD)
_MIX_MULT_R = np.uint64(0x4973F715)
_POOL_SIZE = 4


@_loop
def _mul64(a: np.uint64, b: np.uint64) -> tuple:
    """The 128-bit product of two uint64: ``(high, low)``."""
    a_lo = a & _M32
    a_hi = a >> np.uint64(32)
    b_lo = b & _M32
    b_hi = b >> np.uint64(32)
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> np.uint64(32)) + (p1 & _M32) + (p2 & _M32)
    low = (p0 & _M32) | (mid << np.uint64(32))
    high = p3 + (p1 >> np.uint64(32)) + (p2 >> np.uint64(32)) + (mid >> np.uint64(32))
    return high, low


@_loop
def _pcg_step(pcg: np.ndarray, g: int) -> None:
    """``state = state * multiplier + increment`` (mod 2**128)."""
    s_hi = pcg[g, 0]
    s_lo = pcg[g, 1]
    high, low = _mul64(s_lo, _PCG_MULT_LO)
    high += s_lo * _PCG_MULT_HI + s_hi * _PCG_MULT_LO
    new_low = low + pcg[g, 3]
    if new_low < low:
        high += U1
    pcg[g, 0] = high + pcg[g, 2]
    pcg[g, 1] = new_low


@_loop
def _next64(pcg: np.ndarray, g: int) -> np.uint64:
    """PCG64's XSL-RR output of the stepped state (numpy's ``next_uint64``)."""
    _pcg_step(pcg, g)
    high = pcg[g, 0]
    value = high ^ pcg[g, 1]
    rot = high >> np.uint64(58)
    return (value >> rot) | (value << ((np.uint64(64) - rot) & np.uint64(63)))


@_loop
def _next32(pcg: np.ndarray, g: int) -> np.uint64:
    """numpy's ``next_uint32`` for PCG64: the low half of a 64-bit draw, its high half kept for the next call."""
    if pcg[g, 4]:
        pcg[g, 4] = 0
        return pcg[g, 5]
    value = _next64(pcg, g)
    pcg[g, 4] = 1
    pcg[g, 5] = value >> np.uint64(32)
    return value & _M32


@_loop
def _interval(pcg: np.ndarray, g: int, top: np.uint64) -> np.uint64:
    """numpy's ``random_interval``: uniform in ``0..top`` by masked rejection (32-bit draws below 2**32)."""
    if top == 0:
        return np.uint64(0)
    mask = top
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(shift)
    if top <= _M32:
        while True:
            value = _next32(pcg, g) & mask
            if value <= top:
                return value
    while True:
        value = _next64(pcg, g) & mask
        if value <= top:
            return value


@_loop
def _hashmix(value: np.uint64, hash_const: np.uint64) -> tuple:
    """SeedSequence's ``hashmix`` on 32-bit words: ``(mixed value, next hash constant)``."""
    value = (value ^ hash_const) & _M32
    hash_const = (hash_const * _MULT_A) & _M32
    value = (value * hash_const) & _M32
    value ^= value >> np.uint64(16)
    return value, hash_const


@_loop
def _mix(x: np.uint64, y: np.uint64) -> np.uint64:
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
    return result ^ (result >> np.uint64(16))


@_loop
def seed_generators(rows: np.ndarray, words: np.ndarray, offsets: np.ndarray, pcg: np.ndarray) -> None:
    """``pcg[rows[k]]`` := ``numpy.random.default_rng(seed_k)``'s PCG64 state.

    ``words[offsets[k]:offsets[k + 1]]``: seed ``k`` as SeedSequence reads an int, its 32-bit
    words from the lowest (``[0]`` for 0).  SeedSequence's pool of 4 words, then
    ``generate_state(4, uint64)``: state and increment of ``pcg64_set_seed``.
    """
    mixer = np.zeros(_POOL_SIZE, dtype=np.uint64)
    state = np.zeros(2 * _POOL_SIZE, dtype=np.uint64)
    for k in range(rows.shape[0]):
        start = offsets[k]
        length = offsets[k + 1] - start
        hash_const = _INIT_A
        for i in range(_POOL_SIZE):
            value = words[start + i] if i < length else np.uint64(0)
            mixer[i], hash_const = _hashmix(value, hash_const)
        for i_src in range(_POOL_SIZE):
            for i_dst in range(_POOL_SIZE):
                if i_src != i_dst:
                    hashed, hash_const = _hashmix(mixer[i_src], hash_const)
                    mixer[i_dst] = _mix(mixer[i_dst], hashed)
        for i_src in range(_POOL_SIZE, length):
            for i_dst in range(_POOL_SIZE):
                hashed, hash_const = _hashmix(words[start + i_src], hash_const)
                mixer[i_dst] = _mix(mixer[i_dst], hashed)
        hash_const = _INIT_B
        for i in range(2 * _POOL_SIZE):
            value = mixer[i % _POOL_SIZE] ^ hash_const
            hash_const = (hash_const * _MULT_B) & _M32
            value = (value * hash_const) & _M32
            state[i] = value ^ (value >> np.uint64(16))
        seed_hi = state[0] | (state[1] << np.uint64(32))
        seed_lo = state[2] | (state[3] << np.uint64(32))
        inc_hi = state[4] | (state[5] << np.uint64(32))
        inc_lo = state[6] | (state[7] << np.uint64(32))
        g = rows[k]
        pcg[g, 0] = 0
        pcg[g, 1] = 0
        pcg[g, 2] = (inc_hi << U1) | (inc_lo >> np.uint64(63))
        pcg[g, 3] = (inc_lo << U1) | U1
        _pcg_step(pcg, g)
        low = pcg[g, 1] + seed_lo
        pcg[g, 0] += seed_hi + (U1 if low < seed_lo else np.uint64(0))
        pcg[g, 1] = low
        _pcg_step(pcg, g)
        pcg[g, 4] = 0
        pcg[g, 5] = 0


@_loop
def reshuffle_sizes(games: np.ndarray, sizes: np.ndarray, open_discard: np.ndarray, face_down: np.ndarray) -> None:
    """``sizes[k]``: the cards an interim scoring of game ``games[k]`` shuffles into the pile (the rule's one
    statement: every card of the discard pile, open and face down, of both players)."""
    for k in range(games.shape[0]):
        i = games[k]
        size = np.int64(0)
        for island in range(open_discard.shape[1]):
            size += np.int64(open_discard[i, island]) + np.int64(face_down[i, 0, island] + face_down[i, 1, island])
        sizes[k] = size


@_loop
def permutations(rows: np.ndarray, sizes: np.ndarray, pcg: np.ndarray, out: np.ndarray) -> None:
    """``default_rng(...).permutation(sizes[k])`` from game ``rows[k]``'s generator, one after the other in ``out``."""
    start = 0
    for k in range(rows.shape[0]):
        g = rows[k]
        n = sizes[k]
        for t in range(n):
            out[start + t] = t
        for i in range(n - 1, 0, -1):
            j = np.int64(_interval(pcg, g, np.uint64(i)))
            swap = out[start + i]
            out[start + i] = out[start + j]
            out[start + j] = swap
        start += n


@_loop
def draw_seeds(rows: np.ndarray, pcg: np.ndarray, out: np.ndarray) -> None:
    """``out[k]`` := ``integers(2**63)`` of generator ``rows[k]`` (numpy's Lemire draw: one 64-bit draw, halved)."""
    for k in range(rows.shape[0]):
        out[k] = _next64(pcg, rows[k]) >> U1


@_loop
def deal(
    rows: np.ndarray,
    orders: np.ndarray,
    deck: np.ndarray,
    hand: np.ndarray,
    face_up: np.ndarray,
    pile: np.ndarray,
    pile_size: np.ndarray,
    current_player: np.ndarray,
    setup_left: np.ndarray,
    handicap_player: np.ndarray,
    first_player: np.ndarray,
    handicap_bridges: np.ndarray,
    starting_hand: int,
) -> None:
    """Deal the shuffled decks ``deck[orders[k]]`` into the cleared games ``rows[k]`` (``KahunaBatch._deal``).

    The first ``starting_hand`` cards to player 0, the next to player 1, then the face-up
    slots, the rest face down (the last card at the bottom); the handicapped player, if any,
    places first.
    """
    slots = face_up.shape[1]
    size = orders.shape[1]
    for k in range(rows.shape[0]):
        i = rows[k]
        for t in range(2 * starting_hand):
            hand[i, t // starting_hand, deck[orders[k, t]]] += 1
        for slot in range(slots):
            face_up[i, slot] = deck[orders[k, 2 * starting_hand + slot]]
        rest = size - 2 * starting_hand - slots
        for t in range(rest):
            pile[i, t] = deck[orders[k, size - 1 - t]]
        pile_size[i] = rest
        current_player[i] = handicap_player[i] if handicap_player[i] >= 0 else first_player[i]
        setup_left[i] = handicap_bridges[i]


PLAYED_OUT, NEED_DRAWS, INTERIM_UNSEEDED, NO_LEGAL_ACTION, GAME_ENDED = 0, 1, 2, 3, 4
"""What :func:`play_random` stopped on (its first return value)."""


@_loop
def play_random(
    waiting: np.ndarray,
    uniforms: np.ndarray,
    used: int,
    tick: np.ndarray,
    scratch: np.ndarray,
    actions: np.ndarray,
    kinds: np.ndarray,
    kind_of: np.ndarray,
    no_action: int,
    stale: np.ndarray,
    words: np.ndarray,
    over: np.ndarray,
    current_player: np.ndarray,
    words_args: tuple,
    step_args: tuple,
    interim: np.ndarray,
    pcg: np.ndarray,
    pcg_ready: np.ndarray,
    open_discard: np.ndarray,
    face_down: np.ndarray,
    interim_args: tuple,
) -> tuple:
    """Uniformly random legal actions, tick by tick, in every live game whose player to move is not ``waiting``.

    The loop of ``seated.play_seated`` with the batched ``random`` baseline in every seat
    that is not ``waiting[i, seat]``, fused: each tick takes the games to move (ascending),
    brings their stale legal words up to date (:func:`legal_words`), picks each one's action
    with the next of ``uniforms`` (those from ``used`` on, in the tick's order, as
    ``sample_set_bits`` draws one ``random()`` per game), marks them stale and steps them
    (:func:`step`), then makes their interim scorings (:func:`permutations`,
    :func:`interim_scoring`).  ``words_args``, ``step_args`` and ``interim_args``: the
    arguments of those loops after their first two (``step_args``: after ``interim``, its third).

    Returns ``(why, used, moves)``: the uniforms used so far and the actions played (moves), and why
    it stopped: :data:`PLAYED_OUT` (no game left to move), :data:`NEED_DRAWS` (the next tick
    needs more uniforms than are left; nothing of it done), :data:`INTERIM_UNSEEDED` (a game
    of the last tick reached an interim scoring with an unseeded generator: ``interim`` marks
    the games whose scoring the caller makes), :data:`NO_LEGAL_ACTION` (a game to move has
    none; nothing of that tick done), :data:`GAME_ENDED` (a game of the last tick ended).
    """
    n = waiting.shape[0]
    moves = 0
    while True:
        m = 0
        s = 0
        for i in range(n):
            if not over[i] and not waiting[i, current_player[i]]:
                tick[m] = i
                m += 1
                if stale[i]:
                    scratch[s] = i
                    s += 1
        if m == 0:
            return PLAYED_OUT, used, moves
        if used + m > uniforms.shape[0]:
            return NEED_DRAWS, used, moves
        if s:
            legal_words(scratch[:s], words, *words_args)
            for k in range(s):
                stale[scratch[k]] = False
        for i in range(n):
            actions[i] = no_action
            kinds[i] = 0
            interim[i] = False
        for k in range(m):
            i = tick[k]
            action = _sample_row(words, i, uniforms[used + k])
            if action < 0:  # nothing of this tick done yet (the scratch actions are the caller's to ignore)
                return NO_LEGAL_ACTION, used, moves
            actions[i] = action
            kinds[i] = kind_of[action]
        for k in range(m):
            stale[tick[k]] = True
        used += m
        moves += m
        step(actions, kinds, interim, *step_args)
        g = 0
        seeded = True
        for k in range(m):
            i = tick[k]
            if interim[i]:
                scratch[g] = i
                g += 1
                seeded = seeded and pcg_ready[i]
        if g:
            if not seeded:
                return INTERIM_UNSEEDED, used, moves
            games = scratch[:g].copy()
            sizes = np.zeros(g, dtype=np.int64)
            reshuffle_sizes(games, sizes, open_discard, face_down)
            orders = np.empty(sizes.sum(), dtype=np.int64)
            permutations(games, sizes, pcg, orders)
            interim_scoring(games, orders, *interim_args)
        for k in range(m):
            if over[tick[k]]:
                return GAME_ENDED, used, moves


# --- one game: KahunaGame's state is one record of kahuna_env.arrays.STATE_DTYPE ----------------------------
# Its fields are the batch's arrays by name (each a (1, ...) view here), the board's tables one record of
# kahuna_env.arrays.TABLE_RECORD: so a single game runs the loops above on itself, a batch of one, in one
# call per action.  The calls that pass the record's fields are generated (tools/game_calls.py, from PARAMETERS
# and the record's and tables' fields; the test suite checks the block is current).


# --- generated by `python tools/game_calls.py`: the one-game calls of the loops (do not edit) ---
# fmt: off
@_loop
def _on_game_legal_words(
    state: np.ndarray, t: Any, words: np.ndarray, terms: np.ndarray,
) -> Any:
    """:func:`legal_words` on the game's record ``state`` and the tables' record ``t``."""
    return legal_words(
        state.row, words, state.current_player, state.hand, state.lines, state.bridges, state.count,
        state.discarded_this_turn, state.played_this_turn, state.face_up, state.pile_size, state.must_draw,
        state.claim_line, state.setup_left, state.over, state.planning, state.hand_limit, t.majority, t.lines_a_in,
        t.lines_b_in, t.lines_touching, t.all_lines, t.max_bridges, t.max_hand, terms,
    )


@_loop
def _on_game_step(
    state: np.ndarray, t: Any,
) -> Any:
    """:func:`step` on the game's record ``state`` and the tables' record ``t``."""
    return step(
        state.action, state.kind, state.interim, state.owner, state.lines, state.count, state.bridges, state.hand,
        state.known, state.face_down, state.open_discard, state.pile, state.pile_size, state.face_up,
        state.current_player, state.round, state.scores, state.final_points, state.played_this_turn,
        state.discarded_this_turn, state.must_draw, state.claim_line, state.setup_left, state.final_turns_left,
        state.over, state.winner, state.planning, state.first_player, t.action_line, t.pay1, t.pay2, t.line_a,
        t.line_b, t.line_bit, t.majority, t.touch, t.max_bridges, t.discard_base, t.take_base,
    )


@_loop
def _on_game_interim_scoring(
    state: np.ndarray, t: Any, orders: np.ndarray,
) -> Any:
    """:func:`interim_scoring` on the game's record ``state`` and the tables' record ``t``."""
    return interim_scoring(
        state.row, orders, state.count, state.bridges, state.scores, state.round, state.open_discard,
        state.face_down, state.face_up, state.pile, state.pile_size, state.over, state.winner, t.majority,
    )


@_loop
def _on_game_deal(
    state: np.ndarray, t: Any, orders: np.ndarray,
) -> Any:
    """:func:`deal` on the game's record ``state`` and the tables' record ``t``."""
    return deal(
        state.row, orders, t.deck, state.hand, state.face_up, state.pile, state.pile_size, state.current_player,
        state.setup_left, state.handicap_player, state.first_player, state.handicap_bridges, t.starting_hand,
    )


@_loop
def _on_game_greedy_words(
    state: np.ndarray, t: Any, out: np.ndarray,
) -> Any:
    """:func:`greedy_words` on the game's record ``state`` and the tables' record ``t``."""
    return greedy_words(
        state.row, state.words, out, state.current_player, state.round, state.owner, state.lines, state.count,
        state.bridges, t.kind_of, t.action_line, t.line_a, t.line_b, t.line_bit, t.majority, t.touch,
        t.discard_base, t.draw, t.pass_action,
    )


@_loop
def _on_game_observations(
    state: np.ndarray, t: Any, seats: np.ndarray, out: np.ndarray, scaled: np.ndarray, scale: np.ndarray,
    starts: np.ndarray,
) -> Any:
    """:func:`observations` on the game's record ``state`` and the tables' record ``t``."""
    return observations(
        state.row, seats, out, scaled, scale, starts, state.owner, state.count, state.hand, state.face_up,
        state.pile_size, state.open_discard, state.face_down, state.known, state.scores, state.round,
        state.final_turns_left, state.over, state.bridges, state.current_player, state.played_this_turn,
        state.discarded_this_turn, state.must_draw, state.claim_line, state.setup_left, state.first_player,
        state.planning, state.hand_limit, t.majority, t.cards_per_island, t.max_bridges,
    )
# fmt: on
# --- end of the generated calls ---


@_loop
def _game_legal(state: np.ndarray, t: Any) -> np.int64:
    """The legal words of the game into ``state.words``, its legal actions, ascending, into ``state.legal`` and
    each player's controlled islands into ``state.control``; returns the number of legal actions (also
    ``state.legal_count``) plus 256 when the game is over."""
    _on_game_legal_words(state, t, state.words, t.terms)
    n = 0
    for w in range(3):
        x = state.words[0, w]
        while x:
            low = x & (~x + U1)
            state.legal[0, n] = 64 * w + _popcount(low - U1)
            n += 1
            x ^= low
    state.legal_count[0] = n
    for player in range(2):  # the islands each player controls, as bits (KahunaGame.control_mask)
        state.control[0, player] = _control_mask(0, player, state.count, t.majority)
    return np.int64(n + (256 if state.over[0] else 0))


@_loop
def game_legal(state: np.ndarray, tables: np.ndarray) -> np.int64:
    """:func:`_game_legal` with the tables' record array (a game built from a position)."""
    return _game_legal(state, tables[0])


@_loop
def game_illegal_reason(state: np.ndarray, tables: np.ndarray, action: np.int64) -> np.int64:
    """:func:`illegal_reason` of ``action`` in the game: its conditions written by :func:`legal_words`."""
    t = tables[0]
    terms = np.zeros((1, 15), dtype=np.uint64)
    words = np.zeros((1, 3), dtype=np.uint64)
    _on_game_legal_words(state, t, words, terms)
    return illegal_reason(
        action, terms[0], state.setup_left[0], state.over[0], state.face_up[0], t.action_line, t.pay1, t.pay2,
        t.remove_base, t.discard_base, t.draw, t.pass_action,
    )  # fmt: skip


@_loop
def game_deal(state: np.ndarray, tables: np.ndarray) -> np.int64:
    """Shuffle (``permutation(24)`` of the game's generator) and deal into an empty game; :func:`_game_legal`."""
    t = tables[0]
    size = t.deck.shape[0]
    orders = np.empty(size, dtype=np.int64)
    permutations(state.row, np.full(1, size, dtype=np.int64), state.pcg, orders)
    _on_game_deal(state, t, orders.reshape(1, size))
    return _game_legal(state, t)


@_loop
def game_step(state: np.ndarray, tables: np.ndarray, action: np.int64) -> np.int64:
    """One action of the player to move: -1, nothing changed, when it is not legal (or not an action id);
    else the step (:func:`step`, the interim scoring with its shuffle), then :func:`_game_legal`'s value."""
    t = tables[0]
    if action < 0 or action >= t.no_action or not (state.words[0, action >> 6] >> np.uint64(action & 63)) & U1:
        return np.int64(-1)
    state.action[0] = action
    state.kind[0] = t.kind_of[action]
    state.interim[0] = False
    _on_game_step(state, t)
    if state.interim[0]:
        sizes = np.zeros(1, dtype=np.int64)
        reshuffle_sizes(state.row, sizes, state.open_discard, state.face_down)
        orders = np.empty(sizes[0], dtype=np.int64)
        permutations(state.row, sizes, state.pcg, orders)
        _on_game_interim_scoring(state, t, orders)
    return _game_legal(state, t)


@_loop
def game_greedy(state: np.ndarray, tables: np.ndarray, out: np.ndarray) -> None:
    """:func:`greedy_words` of the game into ``out`` (``(1, 3)`` uint64)."""
    t = tables[0]
    _on_game_greedy_words(state, t, out)


@_loop
def game_end_prematurely(state: np.ndarray) -> None:
    """A position of round 2 or 3 in which a player has no bridge is over (:func:`_premature`); else unchanged."""
    if state.round[0] >= 2 and (state.bridges[0, 0] == 0 or state.bridges[0, 1] == 0):
        _premature(0, state.bridges, state.over, state.winner)


@_loop
def game_final_points(state: np.ndarray, tables: np.ndarray, out: np.ndarray) -> None:
    """The final scoring's points of the game as it stands (:func:`_final_points`) into ``out`` (2,)."""
    _final_points(0, state.count, tables[0].majority, out.reshape(1, 2))


@_loop
def game_final_winner(state: np.ndarray) -> np.int64:
    """:func:`_final_winner` of the game (a position loaded as finished by the final scoring)."""
    return _final_winner(0, state.scores, state.final_points, state.bridges)


@_loop
def game_observation(
    state: np.ndarray,
    tables: np.ndarray,
    seat: np.int64,
    out: np.ndarray,
    scaled: np.ndarray,
    scale: np.ndarray,
    starts: np.ndarray,
) -> None:
    """The game seen by ``seat`` (:func:`observations`): the raw counts into ``out`` (``(1, 246)`` uint8) and,
    unless ``scaled`` is empty, times ``scale`` into ``scaled`` (``(1, 246)`` float32)."""
    t = tables[0]
    seats = np.full(1, seat, dtype=np.intp)
    _on_game_observations(state, t, seats, out, scaled, scale, starts)
