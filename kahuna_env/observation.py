"""Per-player observations (docs/ENV.md, "Observation") and the full state for centralized critics.

:func:`encode_observation` returns a flat ``float32`` vector seen from one
player's side ("mine" vs "opponent's").  It holds everything public and the
viewer's own private information, and nothing else: the opponent's hand, the
pile order and the identity of the opponent's face-down discards never enter
it, so two games with the same public history and different hidden cards give
the same vector.  :data:`OBSERVATION_LAYOUT` maps each feature name to its
slice; every entry lies in ``[0, 1]``.  The blocks, their order, sizes and
scaling are stated once in :data:`kahuna_env.schema.OBSERVATION_BLOCKS` (with
the state fields each reads, checked against who may see them); this module
and the batched encoder (:meth:`kahuna_env.vector.KahunaBatch.observations`)
both take :data:`OBSERVATION_LAYOUT`, :data:`OBSERVATION_SCALE` and
:data:`STATE_SCALE` from here.

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

import numpy as np

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    NUM_ISLANDS,
    NUM_LINES,
)
from kahuna_env.engine import KahunaGame
from kahuna_env.schema import OBSERVATION_BLOCKS, STATE_BLOCKS, Block

_FEATURES: tuple[tuple[str, int], ...] = tuple((block.name, block.size) for block in OBSERVATION_BLOCKS)
"""The blocks of :data:`kahuna_env.schema.OBSERVATION_BLOCKS` (the one statement of the layout), in order."""


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

_STATE_EXTRA: tuple[tuple[str, int], ...] = tuple((block.name, block.size) for block in STATE_BLOCKS)
STATE_LAYOUT: dict[str, slice] = {
    **OBSERVATION_LAYOUT,
    **{name: slice(OBSERVATION_SIZE + s.start, OBSERVATION_SIZE + s.stop) for name, s in _layout(_STATE_EXTRA).items()},
}
"""Feature name -> slice of the state vector: player 0's observation, then player 1's hand
(cards per island / 2), the pile's cards per island / 2, player 1's face-down discards / 2, and
the player to act (0 or 1)."""
STATE_SIZE: int = OBSERVATION_SIZE + sum(size for _, size in _STATE_EXTRA)
"""Length of the state vector."""

# Features are first gathered as raw numbers (counts, 0/1 flags) in one ``bytes`` object: lookup
# tables turn bitmasks and card ids into ready-made runs of bytes, ``bytes(list)`` copies the
# per-island counts, and one ``b"".join`` assembles the ~30 pieces (far quicker than a list of
# 246 Python ints).  One vectorised multiply by _SCALE then maps every entry into [0, 1].
_HIGH_CHUNK = 18
"""Shift of the third 9-bit chunk of a 27-bit line set (lines 18..26)."""
_BITS9 = tuple(bytes(v >> k & 1 for k in range(9)) for v in range(512))
"""9-bit value -> its bits as 9 bytes of 0/1 (a third of a line set)."""
_BITS12 = tuple(bytes(v >> k & 1 for k in range(NUM_ISLANDS)) for v in range(1 << NUM_ISLANDS))
"""Island bitmask -> 12 bytes of 0/1."""
_SLOT_BY_CARD = {-1: bytes(NUM_ISLANDS)}
_SLOT_BY_CARD.update({i: bytes(int(k == i) for k in range(NUM_ISLANDS)) for i in range(NUM_ISLANDS)})
"""A face-up slot's card (-1: empty) -> its one-hot 12 bytes."""
_CLAIM = {-1: bytes(NUM_LINES)}
_CLAIM.update({line: bytes(int(k == line) for k in range(NUM_LINES)) for line in range(NUM_LINES)})
"""The claimable line (-1: none) -> its one-hot 27 bytes."""
_NOT_TO_ACT = bytes(3 + NUM_LINES)
"""The turn features (cards played, discarding, must draw, claim) of the player not to act: zeros."""
_ROUND = {1: b"\1\0\0", 2: b"\0\1\0", 3: b"\0\0\1"}
# "Unseen" cards per island are counted in one Python int holding a byte per island: a byte starts at
# 0x80 + 2 (the top bit a guard, 2 cards per island) and loses every card whose place I can see.  Each
# byte loses at most 11 (far below 0x80), so nothing borrows across bytes; a guard bit that drops means
# more than 2 cards of an island were counted (an inconsistent state), which is refused.
_GUARD = int.from_bytes(bytes([0x80] * NUM_ISLANDS), "little")
_UNSEEN_START = int.from_bytes(bytes([0x80 + CARDS_PER_ISLAND] * NUM_ISLANDS), "little")
_SLOT_COUNT = {card: int.from_bytes(one_hot, "little") for card, one_hot in _SLOT_BY_CARD.items()}
_from_bytes = int.from_bytes
assert CARDS_PER_ISLAND == 2 and 4 * CARDS_PER_ISLAND + 3 < 0x80


def _scale_vector(blocks: tuple[Block, ...]) -> np.ndarray:
    """The blocks' scale factors laid end to end: entry ``k`` of the vector times ``scale[k]`` lies in [0, 1]."""
    scale = np.ones(sum(block.size for block in blocks), dtype=np.float32)
    start = 0
    for block in blocks:
        scale[start : start + block.size] = block.scale
        start += block.size
    scale.flags.writeable = False
    return scale


OBSERVATION_SCALE = _SCALE = _scale_vector(OBSERVATION_BLOCKS)
"""The factor of each observation entry that maps its raw count into [0, 1] (read-only; the batched engine uses it)."""
STATE_SCALE = _STATE_SCALE = _scale_vector(OBSERVATION_BLOCKS + STATE_BLOCKS)
"""The factor of each state entry, likewise (read-only; the batched engine uses it)."""


def _raw_observation(game: KahunaGame, player: int) -> bytes:
    """The observation of ``player`` before scaling (counts and flags), one byte per entry.

    This module is the engine's one declared friend (see :mod:`kahuna_env.engine`): it reads the
    fields of :data:`~kahuna_env.engine.STATE_FIELDS` directly, never writing them, because
    copies through the public queries would cost on this per-decision path.
    """
    opponent = 1 - player
    g = game
    mine = g._lines[player]
    theirs = g._lines[opponent]
    hand = bytes(g._hand[player])
    first, second, third = g._face_up
    open_discard = bytes(g._open_discard)
    my_face_down = bytes(g._face_down[player])
    known = bytes(g._known[opponent])
    unseen = (
        _UNSEEN_START
        - _from_bytes(hand, "little")
        - _from_bytes(open_discard, "little")
        - _from_bytes(my_face_down, "little")
        - _from_bytes(known, "little")
        - _SLOT_COUNT[first]
        - _SLOT_COUNT[second]
        - _SLOT_COUNT[third]
    )
    if unseen & _GUARD != _GUARD:
        raise ValueError(f"observation: more than {CARDS_PER_ISLAND} cards of an island are accounted for")
    over = g._over
    to_act = g._current == player and not over
    final_left = 0 if over else g._final_turns
    setup_left = g._setup_left
    scores = g._scores
    return b"".join(
        (
            _BITS9[mine & 511],
            _BITS9[(mine >> 9) & 511],
            _BITS9[mine >> _HIGH_CHUNK],
            _BITS9[theirs & 511],
            _BITS9[(theirs >> 9) & 511],
            _BITS9[theirs >> _HIGH_CHUNK],
            _BITS12[g._control[player]],
            _BITS12[g._control[opponent]],
            bytes(g._count[player]),
            bytes(g._count[opponent]),
            hand,
            _SLOT_BY_CARD[first],
            _SLOT_BY_CARD[second],
            _SLOT_BY_CARD[third],
            bytes((len(g._pile),)),
            open_discard,
            my_face_down,
            bytes((sum(g._face_down[opponent]), g._hand_size[opponent])),
            known,
            (unseen ^ _GUARD).to_bytes(NUM_ISLANDS, "little"),
            bytes((scores[player], scores[opponent])),
            _ROUND[g._round],
            bytes(
                (
                    final_left > 0,
                    final_left,
                    BRIDGES_PER_PLAYER - mine.bit_count(),
                    BRIDGES_PER_PLAYER - theirs.bit_count(),
                )
            ),
            bytes((g._played, g._discarded > 0, g._must_draw)) + _CLAIM[g._claim_line] if to_act else _NOT_TO_ACT,
            bytes(
                (
                    setup_left > 0,
                    setup_left,
                    to_act,
                    g.config.first_player == player,
                    g._planning,
                    g._hand_limit,
                )
            ),
        )
    )


def encode_observation(game: KahunaGame, player: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``player`` as a ``float32`` vector of :data:`OBSERVATION_SIZE`.

    With ``out`` (a float32 array of that length, e.g. a row of a batch) the
    values are written there and ``out`` is returned.
    """
    raw = np.frombuffer(_raw_observation(game, player), dtype=np.uint8)
    if out is None:
        return raw * _SCALE
    np.multiply(raw, _SCALE, out=out)
    return out


def encode_state(game: KahunaGame) -> np.ndarray:
    """The full state (both hands, pile composition) as a ``float32`` vector of :data:`STATE_SIZE`."""
    pile = [0] * NUM_ISLANDS
    for card in game._pile:
        pile[card] += 1
    values = _raw_observation(game, 0) + bytes(game._hand[1]) + bytes(pile) + bytes(game._face_down[1])
    return np.frombuffer(values + bytes((game._current,)), dtype=np.uint8) * _STATE_SCALE


def describe_layout(layout: dict[str, slice] = OBSERVATION_LAYOUT) -> str:
    """A text table of a layout: name, start, stop."""
    width = max(len(name) for name in layout)
    return "\n".join(f"{name:<{width}}  {s.start:>4} .. {s.stop - 1:>4}" for name, s in layout.items())
