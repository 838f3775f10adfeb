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
``open_discard``               12    openly played cards in the current discard pile / 2
``my_face_down``               12    my face-down discards in the current discard pile / 2
``opponent_face_down_count``   1     number of opponent face-down discards / 24
``opponent_hand_size``         1     opponent's hand size / 5
``opponent_known``             12    cards the opponent took face up and certainly still holds / 2
``unseen``                     12    cards of each island whose place I cannot see / 2
``scores``                     2     my score / 15, opponent's score / 15
``round``                      3     one-hot round 1, 2, 3
``final_turns_left``           2     in the round-3 extra turns; extra turns left / 2
``supply``                     2     my bridges in supply / 25, opponent's / 25
``played_this_turn``           1     cards I played this turn / 5 (0 when it is not my turn)
``discarded_this_turn``        1     1 if I discarded this turn
``must_draw``                  1     1 if the opponent passed last turn (I may not pass while a card is drawable)
``claim``                      27    planning variant: 1 on the line I may claim for free right now
``setup``                      2     handicap setup running; free bridges left / 3
``my_turn``                    1     1 if I am to act
``first_player``               1     1 if I took (or take) the first turn of the game
``rules``                      2     planning variant; discard rule ``hand_limit``
=============================  ====  =====================================================

The "turn" features (``played_this_turn``, ``discarded_this_turn``, ``must_draw``,
``claim``) describe the player to act and are zero for the other player.

:func:`encode_state` is the full state for a centralized critic (seen from
player 0): player 0's observation followed by the hidden cards, see
:data:`STATE_LAYOUT`.
"""

from __future__ import annotations

import numpy as np

from kahuna_env import kernels
from kahuna_env.arrays import TABLE_RECORD
from kahuna_env.board import NUM_ISLANDS
from kahuna_env.engine import KahunaGame
from kahuna_env.schema import FORMERLY, OBSERVATION_BLOCKS, STATE_BLOCKS, Block, renamed

_FEATURES: tuple[tuple[str, int], ...] = tuple((block.name, block.size) for block in OBSERVATION_BLOCKS)
"""The blocks of :data:`kahuna_env.schema.OBSERVATION_BLOCKS` (the one statement of the layout), in order."""


class Layout(dict[str, slice]):
    """Block name -> slice; a block's former name (:data:`kahuna_env.schema.FORMERLY`, e.g. ``cards_played``)
    is still answered by ``[]``, with a ``DeprecationWarning``, for one release."""

    def __missing__(self, name: str) -> slice:
        if name in FORMERLY and FORMERLY[name] in self:
            return self[renamed(name, "observation block")]
        raise KeyError(name)


def _layout(features: tuple[tuple[str, int], ...]) -> Layout:
    layout = Layout()
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
STATE_LAYOUT: dict[str, slice] = Layout(
    **OBSERVATION_LAYOUT,
    **{name: slice(OBSERVATION_SIZE + s.start, OBSERVATION_SIZE + s.stop) for name, s in _layout(_STATE_EXTRA).items()},
)
"""Feature name -> slice of the state vector: player 0's observation, then player 1's hand
(cards per island / 2), the pile's cards per island / 2, player 1's face-down discards / 2, and
the player to act (0 or 1)."""
STATE_SIZE: int = OBSERVATION_SIZE + sum(size for _, size in _STATE_EXTRA)
"""Length of the state vector."""


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


BLOCK_STARTS = np.array([OBSERVATION_LAYOUT[name].start for name in kernels.BLOCKS], dtype=np.int64)
"""The first column of each observation block, in the loop's order (:data:`kahuna_env.kernels.BLOCKS`)."""
NO_ROWS = np.zeros((0, OBSERVATION_SIZE), dtype=np.float32)
"""No scaled rows: the encoder then writes the raw counts only."""


def _check_player(player: object) -> int:
    if isinstance(player, (bool, np.bool_)) or not isinstance(player, (int, np.integer)) or player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, got {player!r}")
    return int(player)


def _raw_observation(game: KahunaGame, player: int, scaled: np.ndarray = NO_ROWS) -> np.ndarray:
    """The observation of ``player`` before scaling (counts and flags), one uint8 per entry; with ``scaled``
    (``(1, 246)`` float32) also the observation itself, written there.

    The batch's one encoder, :func:`kahuna_env.kernels.observations`, run on the game's record.  This
    module is the engine's one declared friend (see :mod:`kahuna_env.engine`): it hands the game's
    record (``game._state``) to the loop, which reads it and writes nothing of it.
    """
    raw = np.empty((1, OBSERVATION_SIZE), dtype=np.uint8)
    kernels.running().game_observation(
        game._state, TABLE_RECORD, _check_player(player), raw, scaled, _SCALE, BLOCK_STARTS
    )
    return raw[0]


def encode_observation(game: KahunaGame, player: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``player`` as a ``float32`` vector of :data:`OBSERVATION_SIZE`.

    With ``out`` (a float32 array of that length, e.g. a row of a batch) the
    values are written there and ``out`` is returned.
    """
    target = np.empty(OBSERVATION_SIZE, dtype=np.float32) if out is None else out
    if target.shape != (OBSERVATION_SIZE,) or target.dtype != np.float32:
        raise ValueError(
            f"out must be a float32 array of shape ({OBSERVATION_SIZE},), got {target.dtype} {target.shape}"
        )
    _raw_observation(game, player, target.reshape(1, OBSERVATION_SIZE))
    return target


def state_rows(
    raw: np.ndarray,
    hand: np.ndarray,
    pile: np.ndarray,
    pile_size: np.ndarray,
    face_down: np.ndarray,
    current_player: np.ndarray,
) -> np.ndarray:
    """The one encoder of the full state: ``(N, STATE_SIZE)`` float32 rows of :data:`STATE_BLOCKS` after
    player 0's observation.

    ``raw``: player 0's raw observations ``(N, 246)``; ``hand``, ``face_down``: ``(N, 2, 12)`` counts;
    ``pile``: ``(N, cards)`` island codes, of which the first ``pile_len`` ``(N,)`` are the pile;
    ``current``: ``(N,)``.  :func:`encode_state` and :meth:`kahuna_env.vector.KahunaBatch.states` call it.
    """
    in_pile = np.arange(pile.shape[1]) < pile_size[:, None]
    counts = ((pile[:, :, None] == np.arange(NUM_ISLANDS, dtype=pile.dtype)) & in_pile[:, :, None]).sum(1)
    extra = np.concatenate([hand[:, 1], counts, face_down[:, 1], current_player[:, None]], 1)
    return np.concatenate([raw, extra.astype(np.uint8)], 1) * _STATE_SCALE


def encode_state(game: KahunaGame) -> np.ndarray:
    """The full state (both hands, pile composition) as a ``float32`` vector of :data:`STATE_SIZE`."""
    record = game._state
    fields = (record[name] for name in ("hand", "pile", "pile_size", "face_down", "current_player"))
    return state_rows(_raw_observation(game, 0)[None], *fields)[0]


def describe_layout(layout: dict[str, slice] = OBSERVATION_LAYOUT) -> str:
    """A text table of a layout: name, start, stop."""
    width = max(len(name) for name in layout)
    return "\n".join(f"{name:<{width}}  {s.start:>4} .. {s.stop - 1:>4}" for name, s in layout.items())
