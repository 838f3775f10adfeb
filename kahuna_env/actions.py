"""The action encoding (docs/ENV.md, "Actions"): one ``Discrete(179)`` space, stable public API.

========  ===========================================================
indices   action
========  ===========================================================
0..26     PLACE on line i, paying a card of its ``a`` island
27..53    PLACE on line i-27, paying a card of its ``b`` island
54..80    REMOVE the opponent bridge on line i-54, paying ``a`` + ``b``
81..107   REMOVE on line i-81, paying ``a`` + ``a``
108..134  REMOVE on line i-108, paying ``b`` + ``b``
135..146  DISCARD face down one card of island i-135
147       DRAW the top card of the pile
148..150  TAKE face-up slot i-148
151       PASS (end the turn without drawing)
152..178  FREE_BRIDGE on line i-152 (handicap setup, planning-variant claim)
========  ===========================================================

Which cards pay is part of the action because it changes the hand and the
discard pile.
"""

from __future__ import annotations

import operator

from kahuna_env.board import ISLAND_ID, ISLANDS, LINE_NAMES, LINES, NUM_ISLANDS, NUM_LINES
from kahuna_env.config import is_integer, shown

PLACE_A = 0
"""First PLACE action paying the line's ``a`` island (``PLACE_A + line``)."""
PLACE_B = PLACE_A + NUM_LINES  # 27
"""First PLACE action paying the line's ``b`` island (``PLACE_B + line``)."""
REMOVE_AB = PLACE_B + NUM_LINES  # 54
"""First REMOVE action paying ``a`` + ``b`` (``REMOVE_AB + line``)."""
REMOVE_AA = REMOVE_AB + NUM_LINES  # 81
"""First REMOVE action paying ``a`` + ``a`` (``REMOVE_AA + line``)."""
REMOVE_BB = REMOVE_AA + NUM_LINES  # 108
"""First REMOVE action paying ``b`` + ``b`` (``REMOVE_BB + line``)."""
DISCARD = REMOVE_BB + NUM_LINES  # 135
"""First face-down DISCARD action (``DISCARD + island``)."""
DRAW = DISCARD + NUM_ISLANDS  # 147
"""Draw the top card of the face-down pile."""
TAKE = DRAW + 1  # 148
"""First TAKE action (``TAKE + slot`` for face-up slot 0, 1 or 2)."""
PASS = TAKE + 3  # 151
"""End the turn without drawing."""
FREE_BRIDGE = PASS + 1  # 152
"""First FREE_BRIDGE action (``FREE_BRIDGE + line``): handicap setup or planning claim."""
NUM_ACTIONS = FREE_BRIDGE + NUM_LINES  # 179
"""Size of the action space."""

assert NUM_ACTIONS == 179


def _paid_islands(action: int) -> tuple[int, ...]:
    """Islands of the cards an action pays (empty for actions that pay nothing)."""
    if action < REMOVE_AB:
        line = action % NUM_LINES
        return (LINES[line][0] if action < PLACE_B else LINES[line][1],)
    if action < DISCARD:
        line = (action - REMOVE_AB) % NUM_LINES
        a, b = LINES[line]
        if action < REMOVE_AA:
            return (a, b)
        return (a, a) if action < REMOVE_BB else (b, b)
    if action < DRAW:
        return (action - DISCARD,)
    return ()


PAID_ISLANDS: tuple[tuple[int, ...], ...] = tuple(_paid_islands(action) for action in range(NUM_ACTIONS))
"""For each action, the islands of the cards it pays (one per card)."""

ACTION_LINE: tuple[int, ...] = tuple(
    (action - REMOVE_AB) % NUM_LINES
    if REMOVE_AB <= action < DISCARD
    else action % NUM_LINES
    if action < REMOVE_AB
    else action - FREE_BRIDGE
    if action >= FREE_BRIDGE
    else -1
    for action in range(NUM_ACTIONS)
)
"""For each action, the line it acts on, or -1."""


def check_action(action: object) -> int:
    """Return ``action`` as an ``int`` if it is an integer in ``0..178``; raise ``ValueError`` otherwise."""
    try:
        if isinstance(action, bool) or type(action).__name__ == "bool_":
            raise TypeError
        # operator.index refuses floats, Decimal, Fraction, complex, strings and arrays of size > 0-d.
        index = operator.index(action)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"action must be an integer in 0..{NUM_ACTIONS - 1}, got {shown(action)}") from None
    if not 0 <= index < NUM_ACTIONS:
        raise ValueError(f"action must be an integer in 0..{NUM_ACTIONS - 1}, got {index}")
    return index


def check_viewer(viewer: object, name: str = "viewer") -> int | None:
    """``viewer`` as ``None`` (everything shown) or a player, 0 or 1; else a one-line ``ValueError`` naming ``name``."""
    if viewer is None:
        return None
    if not is_integer(viewer) or viewer not in (0, 1):
        raise ValueError(f"{name} must be None, 0 or 1, got {shown(viewer)}")
    return int(viewer)  # type: ignore[call-overload]


HIDDEN_DISCARD = "discard a card face down"
"""How a face-down discard reads to a player who did not make it: which card went is hidden from them."""


def describe_action(action: int, viewer: int | None = None, actor: int | None = None) -> str:
    """Human-readable text for an action, e.g. ``"place ALOA-BARI paying ALOA"``.

    With ``viewer`` (0 or 1) the text is what that player may know of the action: a face-down
    discard by ``actor`` reads :data:`HIDDEN_DISCARD` unless ``actor`` is ``viewer`` (``None``,
    an actor not known, hides it too).  Every other action is public, and so is its text.  The
    text board, the pictures and the GIFs of :mod:`kahuna_env.render` describe actions with it.
    """
    action = check_action(action)
    if check_viewer(viewer) is not None and DISCARD <= action < DRAW and actor != viewer:
        return HIDDEN_DISCARD
    if action < REMOVE_AB:
        line = action % NUM_LINES
        return f"place {LINE_NAMES[line]} paying {ISLANDS[PAID_ISLANDS[action][0]]}"
    if action < DISCARD:
        line = ACTION_LINE[action]
        first, second = PAID_ISLANDS[action]
        return f"remove {LINE_NAMES[line]} paying {ISLANDS[first]}+{ISLANDS[second]}"
    if action < DRAW:
        return f"discard {ISLANDS[action - DISCARD]} face down"
    if action == DRAW:
        return "draw"
    if action < PASS:
        return f"take face-up slot {action - TAKE}"
    if action == PASS:
        return "pass"
    return f"free bridge {LINE_NAMES[action - FREE_BRIDGE]}"


_ACTION_BY_TEXT: dict[str, int] = {describe_action(action): action for action in range(NUM_ACTIONS)}


def parse_action(text: str) -> int:
    """Inverse of :func:`describe_action` (case and spacing insensitive); also accepts a number.

    Raises ``ValueError`` naming the text when it is not an action.
    """
    cleaned = " ".join(text.strip().lower().split())
    if cleaned.isdigit():
        return check_action(int(cleaned))
    for description, action in _ACTION_BY_TEXT.items():
        if description.lower() == cleaned:
            return action
    raise ValueError(
        f"not an action: {text!r} (expected a number 0..{NUM_ACTIONS - 1} or a text like 'place ALOA-BARI paying ALOA')"
    )


def place_action(line: int, paying: str | int) -> int:
    """The PLACE action on ``line`` paying a card of island ``paying`` (name or id)."""
    island = paying if isinstance(paying, int) else ISLAND_ID[paying]
    a, b = LINES[line]
    if island == a:
        return PLACE_A + line
    if island == b:
        return PLACE_B + line
    raise ValueError(f"island {ISLANDS[island]} is not on line {LINE_NAMES[line]}")


def remove_action(line: int, first: str | int, second: str | int) -> int:
    """The REMOVE action on ``line`` paying cards of ``first`` and ``second`` (names or ids, any order)."""
    pair = sorted(x if isinstance(x, int) else ISLAND_ID[x] for x in (first, second))
    a, b = LINES[line]
    if pair == [a, b]:
        return REMOVE_AB + line
    if pair == [a, a]:
        return REMOVE_AA + line
    if pair == [b, b]:
        return REMOVE_BB + line
    names = "+".join(ISLANDS[x] for x in pair)
    raise ValueError(f"cards {names} cannot remove a bridge on {LINE_NAMES[line]}")
