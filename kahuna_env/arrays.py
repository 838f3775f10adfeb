"""The game state and the board as numpy arrays: what the rules' one implementation (:mod:`kahuna_env.kernels`) reads.

* :data:`TABLES`: the board's lookup tables and constants (:mod:`kahuna_env.board`), by the names
  of the loops' parameters; :data:`TABLE_RECORD` holds the same in one numpy record, the form a
  single game (:class:`~kahuna_env.engine.KahunaGame`) hands to the loops in one argument.
* :data:`STATE_DTYPE`: one game's state as a numpy record: a field per array of the schema
  (:data:`kahuna_env.schema.FIELDS`, column ``batch``, the names of the batch's arrays and of the
  loops' parameters), then the game's legal actions and its generator.  A ``KahunaGame`` is one
  such record; a :class:`~kahuna_env.vector.KahunaBatch` holds the same fields as one array each.
* :func:`load_positions` and :func:`position_values`: validated positions into those arrays and
  back, for the one game and the batch alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kahuna_env import actions as A
from kahuna_env.board import (
    ALL_LINES_MASK,
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    HAND_LIMIT,
    INCIDENCE,
    LINE_A,
    LINE_B,
    LINE_BIT,
    LINES_TOUCHING,
    LINES_WITH_A_IN,
    LINES_WITH_B_IN,
    MAJORITY,
    NUM_ISLANDS,
    STARTING_HAND,
)
from kahuna_env.positions import POSITION_FIELDS
from kahuna_env.schema import FIELDS, dims

__all__ = [
    "INCIDENCE_ARRAY",
    "KIND",
    "LINE_BIT_ARRAY",
    "MAJORITY_ARRAY",
    "NO_ACTION",
    "STATE_ARRAYS",
    "STATE_DTYPE",
    "TABLES",
    "TABLE_RECORD",
    "load_positions",
    "position_values",
    "seed_generators",
]

MAJORITY_ARRAY = np.array(MAJORITY, dtype=np.int8)
INCIDENCE_ARRAY = np.array(INCIDENCE, dtype=np.int8)
"""Line-island incidence: ``INCIDENCE_ARRAY[l, i] == 1`` when line ``l`` touches island ``i``."""
LINE_BIT_ARRAY = np.array(LINE_BIT, dtype=np.uint64)

# Action kinds (the loops' numbers: 0 = no action, 1 place, 2 remove, 3 discard, 4 draw, 5 take, 6 pass, 7 free).
KIND = np.empty(A.NUM_ACTIONS + 1, dtype=np.int8)  # the extra last entry: no action (a finished game)
KIND[A.PLACE_A : A.REMOVE_AB] = 1
KIND[A.REMOVE_AB : A.DISCARD] = 2
KIND[A.DISCARD : A.DRAW] = 3
KIND[A.DRAW] = 4
KIND[A.TAKE : A.PASS] = 5
KIND[A.PASS] = 6
KIND[A.FREE_BRIDGE : A.NUM_ACTIONS] = 7
KIND[A.NUM_ACTIONS] = 0
NO_ACTION = A.NUM_ACTIONS

TABLES: dict[str, Any] = {
    "majority": MAJORITY_ARRAY,
    "lines_a_in": np.array(LINES_WITH_A_IN, dtype=np.uint64),  # island set -> lines whose a island is in it
    "lines_b_in": np.array(LINES_WITH_B_IN, dtype=np.uint64),  # island set -> lines whose b island is in it
    "lines_touching": np.array(LINES_TOUCHING, dtype=np.uint64),  # island set -> lines touching it
    "all_lines": np.uint64(ALL_LINES_MASK),
    "max_bridges": BRIDGES_PER_PLAYER,
    "max_hand": HAND_LIMIT,
    "action_line": np.array([*A.ACTION_LINE, -1], dtype=np.intp),
    "pay1": np.array([*(p[0] if len(p) > 0 else -1 for p in A.PAID_ISLANDS), -1], dtype=np.intp),
    "pay2": np.array([*(p[1] if len(p) > 1 else -1 for p in A.PAID_ISLANDS), -1], dtype=np.intp),
    "line_a": np.array(LINE_A, dtype=np.intp),
    "line_b": np.array(LINE_B, dtype=np.intp),
    "line_bit": LINE_BIT_ARRAY,
    "touch": INCIDENCE_ARRAY.T.astype(np.uint8),  # touch[i]: the lines touching island i (0/1)
    "remove_base": A.REMOVE_AB,
    "discard_base": A.DISCARD,
    "draw": A.DRAW,
    "take_base": A.TAKE,
    "pass_action": A.PASS,
    "terms": np.zeros((0, 15), dtype=np.uint64),  # legal_words keeps no conditions (illegal_reason's call does)
    "cards_per_island": CARDS_PER_ISLAND,
    "deck": np.repeat(np.arange(NUM_ISLANDS, dtype=np.int8), CARDS_PER_ISLAND),
    "starting_hand": STARTING_HAND,
    "kind_of": KIND,
    "no_action": NO_ACTION,
}
"""The board's tables and constants the loops take, by their parameter names (:data:`kahuna_env.kernels.PARAMETERS`)."""


def _record(values: Mapping[str, Any]) -> np.ndarray:
    """A ``(1,)`` record array with one field per value (its shape and dtype), read-only."""
    arrays = {name: np.asarray(value) for name, value in values.items()}
    dtype = np.dtype([(name, array.dtype, array.shape) for name, array in arrays.items()], align=True)
    record = np.zeros(1, dtype=dtype)
    for name, array in arrays.items():
        record[name][0] = array
    record.flags.writeable = False
    return record


TABLE_RECORD = _record(TABLES)
""":data:`TABLES` as one ``(1,)`` record array (``TABLE_RECORD[0].majority`` in a loop), read-only."""

STATE_ARRAYS: tuple[tuple[str, tuple[int, ...], np.dtype, Any], ...] = tuple(
    (field.batch, dims(field), np.dtype(field.dtype), field.empty)
    for field in FIELDS
    if field.batch is not None and field.role in ("state", "derived")
)
"""``(array name, shape per game, dtype, empty value)`` of every state array; a new deal clears them all."""
OPTION_ARRAYS: tuple[tuple[str, np.dtype, Callable[[Any], Any]], ...] = tuple(
    (field.batch, np.dtype(field.dtype), field.from_config)  # type: ignore[misc]
    for field in FIELDS
    if field.batch is not None and field.role == "option"
)
"""``(array name, dtype, reader of the config)`` of every per-game rule option."""

_GAME_EXTRAS: tuple[tuple[str, Any, tuple[int, ...]], ...] = (
    ("words", np.uint64, (3,)),  # the legal actions as bits (bit a % 64 of word a // 64)
    ("legal", np.int16, (A.NUM_ACTIONS,)),  # the legal actions, ascending: legal[:legal_count]
    ("legal_count", np.int16, ()),
    ("pcg", np.uint64, (6,)),  # the game's generator: numpy's PCG64 state (kahuna_env.kernels)
    ("control", np.uint16, (2,)),  # the schema's derived field: each player's islands (bits), for the queries
    # A game's one-row arguments of the loops (rows, actions, kinds, interim flags), kept here, not allocated per call.
    ("row", np.intp, ()),  # always 0
    ("action", np.intp, ()),
    ("kind", np.int8, ()),
    ("interim", np.bool_, ()),
)
STATE_DTYPE = np.dtype(
    [(field.batch, np.dtype(field.dtype), dims(field)) for field in FIELDS if field.batch is not None]
    + [(name, dtype, shape) for name, dtype, shape in _GAME_EXTRAS],
    align=True,
)
"""One game as a numpy record: the schema's arrays (state, derived, options) by their names, in its order, then its
legal actions (``words``; ``legal[:legal_count]``), its generator (``pcg``) and the loops' one-row arguments."""


def empty_state() -> np.ndarray:
    """A ``(1,)`` record of :data:`STATE_DTYPE` with every schema field at its empty value (nothing dealt)."""
    state = np.zeros(1, dtype=STATE_DTYPE)
    for name, _, _, empty in STATE_ARRAYS:
        state[name] = empty
    return state


LOADED: tuple[tuple[str, Any], ...] = tuple(
    (field.batch, field.empty if field.position_empty is None else ...)
    for field in POSITION_FIELDS
    if field.role == "state" and field.name != "pile"
)
"""``(array, the value a position writes as None)`` of each position field held as one array per game (the
pile, a row plus its length, aside); ``...`` where a position has no None."""


def load_positions(arrays: Callable[[str], np.ndarray], indices: np.ndarray, positions: Sequence[Any]) -> None:
    """Write validated positions into the games ``indices`` of ``arrays`` (name -> the ``(N, ...)`` array).

    Every position field into its array, by the schema, and the derived arrays (line sets, counts,
    bridges, the pile's length) computed from the owners and the pile.
    """
    for name, empty in LOADED:
        values = [getattr(position, name) for position in positions]
        arrays(name)[indices] = [empty if value is None else value for value in values]
    pile, pile_size = arrays("pile"), arrays("pile_size")
    pile[indices] = 0
    for i, position in zip(indices.tolist(), positions, strict=True):
        pile[i, : len(position.pile)] = position.pile
        pile_size[i] = len(position.pile)
    mine = arrays("owner")[indices][:, None, :] == np.array([0, 1], dtype=np.int8)[None, :, None]
    arrays("count")[indices] = mine.astype(np.int8) @ INCIDENCE_ARRAY
    arrays("lines")[indices] = mine.astype(np.uint64) @ LINE_BIT_ARRAY
    arrays("bridges")[indices] = mine.sum(2)


def position_values(arrays: Callable[[str], np.ndarray], indices: np.ndarray) -> list[dict[str, Any]]:
    """The position fields of the games ``indices`` (name -> plain value, None where the position writes null;
    the pile as its ids, bottom first), without the config: what ``position_json`` writes."""
    names = [name for name, _ in LOADED] + ["pile"]
    columns = [arrays(name)[indices].tolist() for name in names]
    nullable = [(name, empty) for name, empty in LOADED if empty is not ...]
    pile_size = arrays("pile_size")[indices].tolist()
    values = []
    for k in range(len(indices)):
        row = dict(zip(names, [column[k] for column in columns], strict=True))
        for name, empty in nullable:
            if row[name] == empty:
                row[name] = None
        row["pile"] = row["pile"][: pile_size[k]]  # the row has room for every card
        values.append(row)
    return values


def seed_generators(pcg: np.ndarray, rows: np.ndarray, seeds: Sequence[int | None], loops: Any) -> None:
    """``pcg[rows[k]]`` := the state of ``numpy.random.default_rng(seeds[k])`` (None: fresh entropy, as numpy's)."""
    words: list[int] = []
    offsets = [0]
    for seed in seeds:
        value = np.random.SeedSequence().entropy if seed is None else int(seed)
        words.append(value & 0xFFFFFFFF)  # SeedSequence reads an int as its 32-bit words, lowest first
        value >>= 32
        while value:
            words.append(value & 0xFFFFFFFF)
            value >>= 32
        offsets.append(len(words))
    loops.seed_generators(
        rows.astype(np.intp), np.array(words, dtype=np.uint64), np.array(offsets, dtype=np.int64), pcg
    )
