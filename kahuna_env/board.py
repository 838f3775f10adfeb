"""Static facts of the Kahuna board (docs/RULES.md, "Material") and the one set of lookup tables.

Islands are numbered alphabetically (``ALOA`` = 0 … ``LALE`` = 11) and lines
(possible bridges) alphabetically by their two islands; a line's ``a`` island
is the alphabetically first one.  Everything here is computed once at import
and never changes.  The incidence and bitmask tables are built here only: the
engine uses them as Python ints, the batched engine (:mod:`kahuna_env.vector`)
converts the same tuples to numpy arrays and never rebuilds them.

Bitmask conventions: a set of lines is an ``int`` with bit ``l`` set for line
``l``; a set of islands is an ``int`` with bit ``i`` set for island ``i``.
"""

from __future__ import annotations

ISLANDS: tuple[str, ...] = (
    "ALOA",
    "BARI",
    "COCO",
    "DUDA",
    "ELAI",
    "FAAA",
    "GOLA",
    "HUNA",
    "IFFI",
    "JOJO",
    "KAHU",
    "LALE",
)
"""Island names; the index is the island id."""

NUM_ISLANDS = len(ISLANDS)
ISLAND_ID: dict[str, int] = {name: i for i, name in enumerate(ISLANDS)}
"""Island name -> island id."""

_LINE_NAMES = (
    "ALOA-BARI",
    "ALOA-DUDA",
    "ALOA-HUNA",
    "BARI-COCO",
    "BARI-DUDA",
    "BARI-ELAI",
    "BARI-FAAA",
    "COCO-FAAA",
    "COCO-GOLA",
    "COCO-KAHU",
    "DUDA-ELAI",
    "DUDA-HUNA",
    "ELAI-FAAA",
    "ELAI-HUNA",
    "ELAI-IFFI",
    "ELAI-JOJO",
    "FAAA-GOLA",
    "FAAA-JOJO",
    "GOLA-JOJO",
    "GOLA-KAHU",
    "HUNA-IFFI",
    "HUNA-LALE",
    "IFFI-JOJO",
    "IFFI-KAHU",
    "IFFI-LALE",
    "JOJO-KAHU",
    "KAHU-LALE",
)

LINES: tuple[tuple[int, int], ...] = tuple(
    (ISLAND_ID[name.split("-")[0]], ISLAND_ID[name.split("-")[1]]) for name in _LINE_NAMES
)
"""Lines as ``(a, b)`` island-id pairs, ``a < b``; the index is the line id."""

NUM_LINES = len(LINES)
LINE_NAMES: tuple[str, ...] = _LINE_NAMES
"""Line names such as ``"ALOA-BARI"``; the index is the line id."""
LINE_ID: dict[tuple[int, int], int] = {pair: line for line, pair in enumerate(LINES)}
"""``(a, b)`` with ``a < b`` -> line id."""
LINE_A: tuple[int, ...] = tuple(a for a, _ in LINES)
"""For each line, its ``a`` (first) island."""
LINE_B: tuple[int, ...] = tuple(b for _, b in LINES)
"""For each line, its ``b`` (second) island."""

ISLAND_LINES: tuple[tuple[int, ...], ...] = tuple(
    tuple(line for line, (a, b) in enumerate(LINES) if island in (a, b)) for island in range(NUM_ISLANDS)
)
"""For each island, the ids of the lines that touch it, ascending."""

DEGREE: tuple[int, ...] = tuple(len(lines) for lines in ISLAND_LINES)
"""Number of lines touching each island."""

MAJORITY: tuple[int, ...] = tuple(degree // 2 + 1 for degree in DEGREE)
"""Bridges needed on an island's lines to control it: strictly more than half."""

LAYOUT: tuple[tuple[int, int], ...] = (
    (240, 170),
    (385, 160),
    (550, 170),
    (305, 225),
    (380, 240),
    (455, 215),
    (510, 260),
    (245, 305),
    (360, 315),
    (445, 290),
    (550, 350),
    (380, 385),
)
"""Approximate position of each island on the printed board (x, y; y grows downward)."""

CARDS_PER_ISLAND = 2
NUM_CARDS = NUM_ISLANDS * CARDS_PER_ISLAND
BRIDGES_PER_PLAYER = 25
STONES_PER_PLAYER = 10
HAND_LIMIT = 5
FACE_UP_SLOTS = 3
STARTING_HAND = 3

# --- lookup tables: built once here, used by the engine (as ints) and the batched engine (as arrays) -----
ISLAND_BIT: tuple[int, ...] = tuple(1 << island for island in range(NUM_ISLANDS))
"""Island id -> its bit in an island set."""
LINE_BIT: tuple[int, ...] = tuple(1 << line for line in range(NUM_LINES))
"""Line id -> its bit in a line set."""
INCIDENCE: tuple[tuple[int, ...], ...] = tuple(
    tuple(int(island in pair) for island in range(NUM_ISLANDS)) for pair in LINES
)
"""Line-island incidence: ``INCIDENCE[l][i] == 1`` when line ``l`` touches island ``i``."""
ALL_LINES_MASK = (1 << NUM_LINES) - 1
"""The bitmask of all 27 lines (the complement of a line set is ``~mask & ALL_LINES_MASK``)."""
ISLAND_LINE_MASK: tuple[int, ...] = tuple(sum(1 << line for line in lines) for lines in ISLAND_LINES)
"""For each island, the bitmask of its lines."""
LINE_A_MASK: tuple[int, ...] = tuple(
    sum(1 << line for line, (a, _) in enumerate(LINES) if a == island) for island in range(NUM_ISLANDS)
)
"""For each island, the bitmask of lines whose ``a`` (first) island it is."""
LINE_B_MASK: tuple[int, ...] = tuple(
    sum(1 << line for line, (_, b) in enumerate(LINES) if b == island) for island in range(NUM_ISLANDS)
)
"""For each island, the bitmask of lines whose ``b`` (second) island it is."""


def _union_table(per_island: tuple[int, ...]) -> tuple[int, ...]:
    """For every island set (bitmask 0..4095), the union of ``per_island`` over its members."""
    table = [0] * (1 << NUM_ISLANDS)
    for island_set in range(1, 1 << NUM_ISLANDS):
        low = island_set & -island_set
        table[island_set] = table[island_set ^ low] | per_island[low.bit_length() - 1]
    return tuple(table)


LINES_WITH_A_IN: tuple[int, ...] = _union_table(LINE_A_MASK)
"""Island set -> lines whose ``a`` island is in the set."""
LINES_WITH_B_IN: tuple[int, ...] = _union_table(LINE_B_MASK)
"""Island set -> lines whose ``b`` island is in the set."""
LINES_TOUCHING: tuple[int, ...] = _union_table(ISLAND_LINE_MASK)
"""Island set -> lines touching at least one island of the set."""


def line_between(first: str | int, second: str | int) -> int:
    """Return the id of the line joining two islands (names or ids, either order).

    Raises ``ValueError`` when the islands are not joined by a line.
    """
    a = first if isinstance(first, int) else ISLAND_ID[first]
    b = second if isinstance(second, int) else ISLAND_ID[second]
    key = (a, b) if a < b else (b, a)
    if key not in LINE_ID:
        raise ValueError(f"no line joins {ISLANDS[a]} and {ISLANDS[b]}")
    return LINE_ID[key]
