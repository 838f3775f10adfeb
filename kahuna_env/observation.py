"""Per-player observations (docs/ENV.md, "Observation") and the full state for centralized critics.

:func:`encode_observation` returns a flat ``float32`` vector seen from one
player's side ("mine" vs "opponent's").  It holds everything public and the
viewer's own private information, and nothing else: the opponent's hand, the
pile order and the identity of the opponent's face-down discards never enter
it, so two games with the same public history and different hidden cards give
the same vector.  :data:`OBSERVATION_LAYOUT` maps each feature name to its
slice; every entry lies in ``[0, 1]``.

=============================  ====  =====================================================
name                           size  meaning
=============================  ====  =====================================================
``lines_mine``                 27    1 where the line holds my bridge
``lines_opponent``             27    1 where the line holds an opponent bridge
``control_mine``               12    1 where I control the island
``control_opponent``           12    1 where the opponent controls the island
``bridges_mine``               12    my bridges on the island's lines / its degree
``bridges_opponent``           12    opponent bridges on the island's lines / its degree
``hand``                       12    my cards of each island / 2
``face_up``                    36    entry ``12*k + i``: 1 if face-up slot k holds a card of island i
``pile_size``                  1     cards in the face-down pile / 24
``discard_open``               12    openly played cards in the current discard pile / 2
``my_face_down``               12    my face-down discards in the current discard pile / 2
``opponent_face_down_count``   1     number of opponent face-down discards / 24
``opponent_hand_size``         1     opponent's hand size / 5
``opponent_known``             12    cards the opponent took face up and certainly still holds / 2
``unseen``                     12    cards of each island whose place I cannot see / 2
``scores``                     2     my score / 15, opponent's score / 15
``round``                      3     one-hot round 1, 2, 3
``final_turns``                2     in the round-3 extra turns; extra turns left / 2
``supply``                     2     my bridges in supply / 25, opponent's / 25
``cards_played``               1     cards I played this turn / 5 (0 when it is not my turn)
``discarding``                 1     1 if I discarded this turn
``must_draw``                  1     1 if the opponent passed last turn (I may not pass while a card is drawable)
``claim``                      27    planning variant: 1 on the line I may claim for free right now
``setup``                      2     handicap setup running; free bridges left / 3
``my_turn``                    1     1 if I am to act
``first_player``               1     1 if I took (or take) the first turn of the game
``rules``                      2     planning variant; discard rule ``hand_limit``
=============================  ====  =====================================================

The "turn" features (``cards_played``, ``discarding``, ``must_draw``,
``claim``) describe the player to act and are zero for the other player.

:func:`encode_state` is the full state for a centralized critic (seen from
player 0): player 0's observation followed by the hidden cards, see
:data:`STATE_LAYOUT`.
"""

from __future__ import annotations

from operator import sub

import numpy as np

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    DEGREE,
    HAND_LIMIT,
    NUM_CARDS,
    NUM_ISLANDS,
    NUM_LINES,
)
from kahuna_env.engine import KahunaGame

_FEATURES: tuple[tuple[str, int], ...] = (
    ("lines_mine", NUM_LINES),
    ("lines_opponent", NUM_LINES),
    ("control_mine", NUM_ISLANDS),
    ("control_opponent", NUM_ISLANDS),
    ("bridges_mine", NUM_ISLANDS),
    ("bridges_opponent", NUM_ISLANDS),
    ("hand", NUM_ISLANDS),
    ("face_up", 3 * NUM_ISLANDS),
    ("pile_size", 1),
    ("discard_open", NUM_ISLANDS),
    ("my_face_down", NUM_ISLANDS),
    ("opponent_face_down_count", 1),
    ("opponent_hand_size", 1),
    ("opponent_known", NUM_ISLANDS),
    ("unseen", NUM_ISLANDS),
    ("scores", 2),
    ("round", 3),
    ("final_turns", 2),
    ("supply", 2),
    ("cards_played", 1),
    ("discarding", 1),
    ("must_draw", 1),
    ("claim", NUM_LINES),
    ("setup", 2),
    ("my_turn", 1),
    ("first_player", 1),
    ("rules", 2),
)


def _layout(features: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    layout = {}
    start = 0
    for name, size in features:
        layout[name] = slice(start, start + size)
        start += size
    return layout


OBSERVATION_LAYOUT: dict[str, slice] = _layout(_FEATURES)
"""Feature name -> slice of the observation vector."""
OBSERVATION_SIZE: int = sum(size for _, size in _FEATURES)
"""Length of the observation vector."""

_STATE_EXTRA: tuple[tuple[str, int], ...] = (
    ("hand_player_1", NUM_ISLANDS),
    ("pile_cards", NUM_ISLANDS),
    ("face_down_player_1", NUM_ISLANDS),
    ("current_player", 1),
)
STATE_LAYOUT: dict[str, slice] = {
    **OBSERVATION_LAYOUT,
    **{name: slice(OBSERVATION_SIZE + s.start, OBSERVATION_SIZE + s.stop) for name, s in _layout(_STATE_EXTRA).items()},
}
"""Feature name -> slice of the state vector: player 0's observation, then player 1's hand
(cards per island / 2), the pile's cards per island / 2, player 1's face-down discards / 2, and
the player to act (0 or 1)."""
STATE_SIZE: int = OBSERVATION_SIZE + sum(size for _, size in _STATE_EXTRA)
"""Length of the state vector."""

# Features are first gathered as raw numbers (counts, 0/1 flags) in a Python list, with
# lookup tables turning bitmasks into runs of 0/1 in one concatenation; one vectorised
# multiply by _SCALE then maps every entry into [0, 1].
_HIGH_CHUNK = 18
"""Shift of the third 9-bit chunk of a 27-bit line set (lines 18..26)."""
_BITS9 = tuple(tuple(v >> k & 1 for k in range(9)) for v in range(512))
_BITS12 = tuple(tuple(v >> k & 1 for k in range(NUM_ISLANDS)) for v in range(1 << NUM_ISLANDS))
_ZERO27 = (0,) * NUM_LINES
_TWO12 = (CARDS_PER_ISLAND,) * NUM_ISLANDS
_SLOT_BY_CARD = {-1: (0,) * NUM_ISLANDS}
_SLOT_BY_CARD.update({i: tuple(int(k == i) for k in range(NUM_ISLANDS)) for i in range(NUM_ISLANDS)})
_CLAIM = {-1: _ZERO27, **{line: tuple(int(k == line) for k in range(NUM_LINES)) for line in range(NUM_LINES)}}
_ROUND = {1: (1, 0, 0), 2: (0, 1, 0), 3: (0, 0, 1)}
_SCALES: dict[str, float | tuple[float, ...]] = {
    "bridges_mine": tuple(1.0 / d for d in DEGREE),
    "bridges_opponent": tuple(1.0 / d for d in DEGREE),
    "hand": 1.0 / CARDS_PER_ISLAND,
    "pile_size": 1.0 / NUM_CARDS,
    "discard_open": 1.0 / CARDS_PER_ISLAND,
    "my_face_down": 1.0 / CARDS_PER_ISLAND,
    "opponent_face_down_count": 1.0 / NUM_CARDS,
    "opponent_hand_size": 1.0 / HAND_LIMIT,
    "opponent_known": 1.0 / CARDS_PER_ISLAND,
    "unseen": 1.0 / CARDS_PER_ISLAND,
    "scores": 1.0 / 15.0,
    "supply": 1.0 / BRIDGES_PER_PLAYER,
    "cards_played": 1.0 / HAND_LIMIT,
}


def _scale_vector(layout: dict[str, slice], size: int, extra: dict[str, float]) -> np.ndarray:
    scale = np.ones(size, dtype=np.float32)
    for name, factor in {**_SCALES, **extra}.items():
        scale[layout[name]] = factor
    scale[layout["final_turns"].start + 1] = 0.5
    scale[layout["setup"].start + 1] = 1.0 / 3.0
    return scale


_SCALE = _scale_vector(OBSERVATION_LAYOUT, OBSERVATION_SIZE, {})
_SCALE.flags.writeable = False
OBSERVATION_SCALE = _SCALE
"""The factor of each observation entry that maps its raw count into [0, 1] (read-only; the batched engine uses it)."""


def _lines(mask: int) -> tuple[int, ...]:
    """The 27 bits of a line set as 0/1 values: three 9-bit chunks (lines 0..8, 9..17, 18..26)."""
    return _BITS9[mask & 511] + _BITS9[(mask >> 9) & 511] + _BITS9[mask >> _HIGH_CHUNK]


def _raw_observation(game: KahunaGame, player: int) -> list[int]:
    """The observation of ``player`` before scaling (counts and flags).

    This module is the engine's one declared friend (see :mod:`kahuna_env.engine`): it reads the
    fields of :data:`~kahuna_env.engine.STATE_FIELDS` directly, never writing them, because
    copies through the public queries would cost on this per-decision path.
    """
    opponent = 1 - player
    g = game
    mine = g._line_mask[player]
    theirs = g._line_mask[opponent]
    hand = g._hand[player]
    face_up = g._face_up
    open_discard = g._open_discard
    my_face_down = g._face_down[player]
    known = g._known[opponent]
    to_act = g._current == player and not g._over
    values: list[int] = list(_lines(mine))
    values += _lines(theirs)
    values += _BITS12[g._control[player]]
    values += _BITS12[g._control[opponent]]
    values += g._count[player]
    values += g._count[opponent]
    values += hand
    values += _SLOT_BY_CARD[face_up[0]]
    values += _SLOT_BY_CARD[face_up[1]]
    values += _SLOT_BY_CARD[face_up[2]]
    values.append(len(g._pile))
    values += open_discard
    values += my_face_down
    values.append(sum(g._face_down[opponent]))
    values.append(g._hand_size[opponent])
    values += known
    unseen = list(map(sub, map(sub, map(sub, map(sub, _TWO12, hand), open_discard), my_face_down), known))
    for card in face_up:
        if card >= 0:
            unseen[card] -= 1
    values += unseen
    values.append(g._scores[player])
    values.append(g._scores[opponent])
    values += _ROUND[g._round]
    final_left = 0 if g._over else g._final_turns_left
    values.append(final_left > 0)
    values.append(final_left)
    values.append(BRIDGES_PER_PLAYER - mine.bit_count())
    values.append(BRIDGES_PER_PLAYER - theirs.bit_count())
    if to_act:
        values.append(g._played)
        values.append(g._discarded > 0)
        values.append(g._must_draw)
        values += _CLAIM[g._claim_line]
    else:
        values += (0, 0, 0)
        values += _ZERO27
    values.append(g._setup_left > 0)
    values.append(g._setup_left)
    values.append(to_act)
    values.append(g.config.first_player == player)
    values.append(g._planning)
    values.append(g._hand_limit_rule)
    return values


def encode_observation(game: KahunaGame, player: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``player`` as a ``float32`` vector of :data:`OBSERVATION_SIZE`.

    With ``out`` (a float32 array of that length, e.g. a row of a batch) the
    values are written there and ``out`` is returned.
    """
    # Every raw value is a small non-negative integer, and bytes -> uint8 is far quicker than
    # np.array over a list of Python ints.
    raw = np.frombuffer(bytes(_raw_observation(game, player)), dtype=np.uint8)
    if out is None:
        return raw * _SCALE
    np.multiply(raw, _SCALE, out=out)
    return out


_STATE_SCALE = np.concatenate([_SCALE, np.full(STATE_SIZE - OBSERVATION_SIZE, 0.5, dtype=np.float32)])
_STATE_SCALE[-1] = 1.0


def encode_state(game: KahunaGame) -> np.ndarray:
    """The full state (both hands, pile composition) as a ``float32`` vector of :data:`STATE_SIZE`."""
    values = _raw_observation(game, 0)
    values += game._hand[1]
    pile = [0] * NUM_ISLANDS
    for card in game._pile:
        pile[card] += 1
    values += pile
    values += game._face_down[1]
    values.append(game._current)
    return np.frombuffer(bytes(values), dtype=np.uint8) * _STATE_SCALE


def describe_layout(layout: dict[str, slice] = OBSERVATION_LAYOUT) -> str:
    """A text table of a layout: name, start, stop."""
    width = max(len(name) for name in layout)
    return "\n".join(f"{name:<{width}}  {s.start:>4} .. {s.stop - 1:>4}" for name, s in layout.items())
