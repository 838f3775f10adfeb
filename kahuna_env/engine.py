"""The rules engine of Kahuna (docs/RULES.md), one game at a time: no PettingZoo, no observations.

:class:`KahunaGame` holds one game as one numpy record (:data:`kahuna_env.arrays.STATE_DTYPE`):
the schema's fields (:data:`kahuna_env.schema.FIELDS`) under the names the batched engine
(:class:`kahuna_env.vector.KahunaBatch`) gives its arrays, the game's legal actions and its
generator.  A game is a batch of one: its legal actions, its steps (the interim scoring and its
shuffle included), its deal and its observations are the rules' one implementation, the loops of
:mod:`kahuna_env.kernels`, run on that record, one call per action.  This module adds what a single
game needs around them: checked arguments, the queries, the reasons an action is illegal, copies,
determinization and positions.

Rules as implemented (details and the reasons in ``docs/RULES.md``):

* control = holding a strict majority of an island's lines; a placement that
  gives its player a majority they did not have removes every opponent bridge
  on that island's lines, which may cost the opponent control elsewhere (one
  level, nothing more moves); a removal never gives anyone control;
* a turn is a card phase (plays, or face-down discards, one per action) that
  ends with DRAW, TAKE or PASS; the round ends when the pile and the face-up
  row are empty at the end of a turn; round 3 is followed by one more turn
  each without drawing, then the final scoring;
* premature end: from the first interim scoring on, a player without a bridge
  on the board loses at once (both: draw).

Reading the state.  Other modules read a game only through its public,
read-only queries (the properties and methods without a leading underscore:
``current_player``, ``hand_counts``, ``bridge_lines``, ``control_mask``, …)
and change it only through :meth:`KahunaGame.step` and :meth:`KahunaGame.put_on_top`
(which chooses the next card to leave the hidden pile: a chance outcome, for a
binding with explicit chance).  Two modules are
declared *friends* that may hand the record to a loop that reads (never writes)
it, because they are hot paths where copies would cost:
:mod:`kahuna_env.observation` (one observation per decision in training) and
:mod:`kahuna_env.agents.greedy` (greedy's look-ahead, played by the loops on a
scratch copy of the board).  Positions come in through
:mod:`kahuna_env.positions`, which validates a dict into a
:class:`~kahuna_env.positions.Position` value that the engine builds a game from.
"""

from __future__ import annotations

import math
import operator
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kahuna_env import actions as A
from kahuna_env import kernels
from kahuna_env.actions import (  # re-exported: the action encoding is part of the engine's public API
    DISCARD,
    DRAW,
    FREE_BRIDGE,
    NUM_ACTIONS,
    PASS,
    PLACE_A,
    PLACE_B,
    REMOVE_AA,
    REMOVE_AB,
    REMOVE_BB,
    TAKE,
    describe_action,
)
from kahuna_env.arrays import (
    OPTION_ARRAYS,
    STATE_DTYPE,
    TABLE_RECORD,
    empty_state,
    load_positions,
    position_values,
    seed_generators,
)
from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    HAND_LIMIT,
    ISLAND_BIT,
    ISLAND_ID,
    ISLANDS,
    LINE_NAMES,
    LINES,
    NUM_ISLANDS,
    NUM_LINES,
)
from kahuna_env.config import DISCARD_RULES, VARIANTS, KahunaConfig, as_config
from kahuna_env.positions import Position, parse_position, position_json
from kahuna_env.schema import FIELD_BY_NAME, FIELDS, FORMERLY, Field, dims, former_name, renamed

__all__ = [
    "DISCARD",
    "DISCARD_RULES",
    "DRAW",
    "FREE_BRIDGE",
    "NUM_ACTIONS",
    "PASS",
    "PLACE_A",
    "PLACE_B",
    "REMOVE_AA",
    "REMOVE_AB",
    "REMOVE_BB",
    "TAKE",
    "VARIANTS",
    "IllegalActionError",
    "KahunaConfig",
    "KahunaGame",
    "as_config",
    "check_seed",
    "describe_action",
]


class IllegalActionError(ValueError):
    """An action that is not legal in the current state (the state is left unchanged)."""


_PAID = A.PAID_ISLANDS
_ACTION_LINE = A.ACTION_LINE
_PLACE_END = A.REMOVE_AB
_REMOVE_END = A.DISCARD
_ONE = np.zeros(1, dtype=np.intp)
"""The row of a game's record (a batch of one) where a function of :mod:`kahuna_env.arrays` takes rows."""
_LOOPS: Any = None
_STEP: Any = None
"""The loops' ``game_step`` (as plain Python: rolled back if anything interrupts it), set by :func:`_loops`."""


def _loops() -> Any:
    """The loops that run now: compiled (numba), else the same functions as plain Python (chosen once).

    Every game is made through here (a deal or a position), so a game's :meth:`KahunaGame.step` finds
    :data:`_STEP` set.
    """
    global _LOOPS, _STEP
    if _LOOPS is None:
        loops = kernels.running()
        # _STEP first: a thread that finds _LOOPS set (several may make their first game at once) finds _STEP too
        _STEP = kernels.game_step if loops is kernels else _step_or_roll_back
        _LOOPS = loops
    return _LOOPS


def _step_or_roll_back(state: np.ndarray, tables: np.ndarray, action: int) -> int:
    """The plain-Python ``game_step``: an interrupt halfway (Ctrl-C) leaves the record as it was, not half a step."""
    backup = state.copy()
    try:
        return kernels.interpreted().game_step(state, tables, action)
    except BaseException:
        state[:] = backup
        raise


_EMPTY_STATE = empty_state().tobytes()
"""The bytes of a record with nothing dealt (every schema field empty): a new game starts from a copy."""
_AT = {name: STATE_DTYPE.fields[name][1] for name in STATE_DTYPE.names}
"""Each field's byte offset in the record (the queries read one value there)."""
_PLAYERS = (0, 1)
"""A player as a list index: 0, 1, -1 or -2 are a row; anything else is the IndexError a list would raise."""
assert all(
    STATE_DTYPE.fields[name][0].base == np.int8 for name in ("current_player", "count", "hand", "owner", "bridges")
)
assert STATE_DTYPE.fields["control"][0].base == np.uint16 and _AT["control"] % 2 == 0
assert STATE_DTYPE.fields["legal"][0].base == np.int16 and _AT["legal"] % 2 == 0


def _seed_pcg(state: np.ndarray, seed: int | None) -> None:
    """``state``'s generator := ``numpy.random.default_rng(seed)``'s (None: fresh entropy, as numpy's)."""
    pcg = np.zeros((1, 6), dtype=np.uint64)
    seed_generators(pcg, _ONE, [seed], _loops())
    state["pcg"] = pcg


def check_seed(seed: object) -> None:
    """A seed is ``None`` or a non-negative integer (numpy integers too), as ``numpy.random.default_rng`` takes.

    Anything else (a str, a float, a bool, a negative number) is a one-line ``ValueError``; every
    seeded object of ``kahuna_env`` (``KahunaGame``, ``KahunaBatch``, the vector env) checks through here.
    """
    if seed is None:
        return
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be None or a non-negative integer, got {seed!r}")


class KahunaGame:
    """One game of Kahuna: state, legal actions and transitions (docs/RULES.md).

    ``KahunaGame(config=None, seed=None)`` shuffles and deals a new game with the
    draws of ``numpy.random.default_rng(seed)`` (its PCG64 state, kept in the game's
    record and drawn by the loops bit for bit as numpy draws; the same seed gives
    the same game).  Players are 0 and 1; islands and lines are ids from
    :mod:`kahuna_env.board`; actions are the ids of :mod:`kahuna_env.actions`.
    ``seed`` is ``None`` or a non-negative integer (anything else is a
    ``ValueError`` here, not later at a reshuffle).

    The read-only queries other modules use (each returns a value or a new
    list, never the game's own state):

    * one per public field of one value or one row, by the field's name, made from the schema
      (:data:`QUERIES`): ``current_player``, ``round``, ``scores``, ``final_points``, ``winner``
      (``None``: none yet or a draw), ``played_this_turn``, ``discarded_this_turn``, ``must_draw``,
      ``claim_line`` (``None``: no claim), ``setup_left``, ``final_turns_left``, ``face_up``
      (``None``: an empty slot), ``pile_size``, ``open_discard``;
    * turn and game: ``is_over``, ``in_setup``, ``in_final_turns``;
    * board: ``owner(line)``, ``controller(island)``,
      ``controlled_islands(player)``, ``control_mask(player)``,
      ``bridge_lines(player)``, ``bridges_on_board(player)``,
      ``supply(player)``, ``bridge_count(player, island)``,
      ``bridge_counts(player)``;
    * cards: ``hand(player)``, ``hand_counts(player)``, ``hand_size(player)``,
      ``known_cards(player)``, ``face_down_discards(player)``, ``pile_counts()`` (hidden);
    * actions: ``legal_actions()``, ``action_mask()``, ``is_legal(action)``,
      ``describe(action)``; copies: ``clone()``, ``after(action, into)`` (the game after an
      action, this one unchanged), ``determinize(player, rng)``, ``to_dict()``.

    A query's former name (``cards_played_this_turn``, ``setup_bridges_left``, ``open_discards()``,
    docs/RULES.md "Names") still answers, with a ``DeprecationWarning``, for one release.

    One method changes the game besides :meth:`step`: :meth:`put_on_top`, which chooses the next
    card to leave the pile (a chance outcome; nothing a player sees changes).
    """

    __slots__ = ("_buffer", "_bytes", "_code", "_halves", "_legal", "_state", "config")

    def __init__(self, config: KahunaConfig | Mapping[str, Any] | None = None, seed: int | None = None) -> None:
        check_seed(seed)
        self._init_empty(as_config(config))
        _seed_pcg(self._state, seed)
        self._code = _loops().game_deal(self._state, TABLE_RECORD)

    def _init_empty(self, config: KahunaConfig) -> None:
        """Every field of the record at its empty value (nothing dealt, no bridges), the options from ``config``."""
        self.config = config
        self._adopt(bytearray(_EMPTY_STATE))
        for name, _, read in OPTION_ARRAYS:
            self._state[name] = read(config)
        self._legal: tuple[int, ...] | None = None
        self._code = 0
        """The last value of the loops' ``_game_legal``: the number of legal actions, plus 256 when over."""

    def _adopt(self, buffer: bytearray) -> None:
        """Hold ``buffer`` as the game's record: the numpy record the loops take, and the views the queries read."""
        self._buffer = buffer  # copied as bytes (clone): far quicker than the numpy record's .copy()
        self._state = np.frombuffer(buffer, dtype=STATE_DTYPE)
        self._bytes = memoryview(buffer).cast("b")
        self._halves = memoryview(buffer).cast("h")

    # ------------------------------------------------------------------ public queries
    # Read straight off the record's bytes (``_bytes``: signed bytes; ``_halves``: int16), at the offsets of
    # STATE_DTYPE's fields: far quicker than numpy's field access for one value.
    def _row(self, offset: int, player: int, size: int = NUM_ISLANDS) -> list[int]:
        """Player ``player``'s row of a per-player int8 field (``player`` indexes as a list would: 0, 1, -1, -2)."""
        start = offset + size * _PLAYERS[player]
        return self._bytes[start : start + size].tolist()

    def open_discards(self) -> list[int]:
        """Deprecated: the property :attr:`open_discard` (a count per island of the openly played discards)."""
        return getattr(self, renamed("open_discards", "KahunaGame query"))

    @property
    def is_over(self) -> bool:
        """Whether the game has ended (final scoring done, or a premature end)."""
        return self._code >= 256

    @property
    def in_setup(self) -> bool:
        """Whether the handicap player is still placing their free setup bridges."""
        return self.setup_left > 0

    @property
    def in_final_turns(self) -> bool:
        """Whether the round-3 extra turns (no drawing) are being played."""
        return self._bytes[_AT["final_turns_left"]] > 0 and self._code < 256

    def controller(self, island: int | str) -> int | None:
        """The player controlling ``island`` (id or name), or ``None``."""
        bit = 1 << _island_index(island)
        at = _AT["control"] // 2
        if self._halves[at] & bit:
            return 0
        return 1 if self._halves[at + 1] & bit else None

    def controlled_islands(self, player: int) -> list[int]:
        """Ids of the islands ``player`` controls."""
        mask = self.control_mask(player)
        return [i for i in range(NUM_ISLANDS) if mask >> i & 1]

    def owner(self, line: int) -> int | None:
        """Owner (0 or 1) of the bridge on ``line``, or ``None`` if the line is free."""
        owner = self._bytes[_AT["owner"] : _AT["owner"] + NUM_LINES][line]
        return None if owner < 0 else owner

    def bridge_lines(self, player: int) -> int:
        """The lines holding ``player``'s bridges, as a bitmask (bit ``l`` for line ``l``)."""
        start = _AT["lines"] + 8 * _PLAYERS[player]
        return int.from_bytes(self._buffer[start : start + 8], sys.byteorder)  # the record is in native order

    def control_mask(self, player: int) -> int:
        """The islands ``player`` controls, as a bitmask (bit ``i`` for island ``i``)."""
        return self._halves[_AT["control"] // 2 + _PLAYERS[player]]

    def bridge_counts(self, player: int) -> list[int]:
        """``player``'s bridges on the lines of each island (a new list, one count per island)."""
        return self._row(_AT["count"], player)

    def bridges_on_board(self, player: int) -> int:
        """Number of ``player``'s bridges on the board."""
        return self._bytes[_AT["bridges"] + _PLAYERS[player]]

    def supply(self, player: int) -> int:
        """Bridges ``player`` still has to place (25 minus those on the board)."""
        return BRIDGES_PER_PLAYER - self.bridges_on_board(player)

    def bridge_count(self, player: int, island: int) -> int:
        """Number of ``player``'s bridges on the lines of ``island``."""
        return self._row(_AT["count"], player)[island]

    def hand(self, player: int) -> list[int]:
        """``player``'s hand as a sorted list of island ids (one per card)."""
        counts = self._row(_AT["hand"], player)
        return [i for i in range(NUM_ISLANDS) for _ in range(counts[i])]

    def hand_counts(self, player: int) -> list[int]:
        """``player``'s hand as a count per island."""
        return self._row(_AT["hand"], player)

    def hand_size(self, player: int) -> int:
        """Number of cards in ``player``'s hand."""
        return sum(self._row(_AT["hand"], player))

    def known_cards(self, player: int) -> list[int]:
        """Public knowledge about ``player``'s hand, a count per island.

        Cards the player took face up and has not openly played since; each
        face-down discard by the player lowers every count by one (the hidden
        card could have been any of them), so these cards are certainly held.
        """
        return self._row(_AT["known"], player)

    def face_down_discards(self, player: int) -> list[int]:
        """``player``'s face-down discards in the current discard pile, a count per island."""
        return self._row(_AT["face_down"], player)

    def pile_counts(self) -> list[int]:
        """The cards of the face-down pile, a count per island (hidden from both players: the pile's content
        is what a player cannot place, and its order nobody sees)."""
        return np.bincount(self._state["pile"][0, : self.pile_size], minlength=NUM_ISLANDS).tolist()

    def describe(self, action: int) -> str:
        """Text of an action, as :func:`kahuna_env.actions.describe_action`."""
        return A.describe_action(action)

    # ------------------------------------------------------------------ legal actions
    def _legal_tuple(self) -> tuple[int, ...]:
        legal = self._legal
        if legal is None:
            legal = self._legal = tuple(self.legal_actions())
        return legal

    def legal_actions(self) -> list[int]:
        """The legal actions of the current state, ascending (empty once the game is over)."""
        start = _AT["legal"] // 2
        return self._halves[start : start + (self._code & 255)].tolist()

    def action_mask(self) -> np.ndarray:
        """Boolean mask over the 179 actions, ``True`` where legal."""
        mask = np.zeros(A.NUM_ACTIONS, dtype=bool)
        mask[list(self._legal_tuple())] = True
        return mask

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is legal now."""
        return action in self._legal_tuple()

    # ------------------------------------------------------------------ transitions
    def step(self, action: int) -> None:
        """Apply one action of the current player.

        ``action`` is an ``int`` or a numpy integer.  Raises
        :class:`IllegalActionError` (a ``ValueError``) naming the action and the
        reason when it is not legal (or not an action id); the state is then
        unchanged.  Everything is validated before the state changes (by the
        loop itself, against the legal actions it keeps), so no exception
        leaves a half-updated game.
        """
        if action.__class__ is not int:
            action = self._action_id(action)
        try:
            code = _STEP(self._state, TABLE_RECORD, action)
        except OverflowError:  # an int beyond 64 bits: not an action id
            code = -1
        if code < 0:
            raise IllegalActionError(self._explain_illegal(action))
        self._code = code
        self._legal = None

    def _action_id(self, action: object) -> int:
        """``action`` as an ``int`` when it is an integer (numpy integers too, bools not); else IllegalActionError."""
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
            return int(action)
        raise IllegalActionError(
            f"action must be an integer in 0..{A.NUM_ACTIONS - 1} (an int or a numpy integer), "
            f"got {action!r} ({type(action).__name__}); illegal for player {self.current_player}"
        )

    # ------------------------------------------------------------------ error messages
    def _explain_illegal(self, action: object) -> str:
        try:
            index = A.check_action(action)
        except ValueError as error:
            return str(error)
        text = f"action {index} ({A.describe_action(index)}) is illegal for player {self.current_player}"
        return f"{text}: {self._reason(index)}"

    def _reason(self, action: int) -> str:
        """Why ``action`` is illegal, in words: the condition of legality the loops say it fails
        (:func:`kahuna_env.kernels.illegal_reason`), worded by :data:`REASON_TEXT`."""
        code = _loops().game_illegal_reason(self._state, TABLE_RECORD, action)
        return REASON_TEXT[kernels.REASONS[code]](self, action)

    def put_on_top(self, island: int) -> None:
        """Put a card of ``island`` on top of the face-down pile: the next card a draw or a refill takes.

        It swaps places with the card that was on top.  No rule reads the pile's order but this one,
        which card leaves it next, and no player sees it, so this only decides a chance outcome: what
        a binding with explicit chance (:mod:`kahuna_env.openspiel`) does before the action that takes
        the top card.  ``ValueError`` (nothing changed) when the pile holds no card of ``island``.
        """
        index = _island_index(island)
        pile = self._state["pile"][0]
        top = self.pile_size - 1
        where = np.flatnonzero(pile[: top + 1] == index)
        if where.size == 0:
            raise ValueError(f"the pile holds no {ISLANDS[index]} card (its cards: {self.pile_counts()} per island)")
        pile[where[-1]], pile[top] = pile[top], pile[where[-1]]

    # ------------------------------------------------------------------ copies and positions
    def clone(self) -> KahunaGame:
        """An independent copy (the random generator is copied too, so both replay the same chance)."""
        other = object.__new__(KahunaGame)
        other.config = self.config
        other._adopt(bytearray(self._buffer))
        other._legal = self._legal
        other._code = self._code
        return other

    def after(self, action: int, into: KahunaGame | None = None) -> KahunaGame:
        """The game after ``action``, this one left as it is: a copy, stepped by the loops (``into``, a scratch
        game of the same rules reused to spare the allocation, or a new one).

        What an action would do, asked of the rules' one implementation (the tests state greedy's definition
        with it).  ``IllegalActionError`` as :meth:`step` (``into`` then holds this game's copy).
        """
        if into is None or into.config != self.config:
            into = self.clone()
        else:
            into._buffer[:] = self._buffer
            into._code = self._code
        into._legal = None
        into.step(action)
        return into

    def __copy__(self) -> KahunaGame:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> KahunaGame:
        return self.clone()

    def __getstate__(self) -> tuple[KahunaConfig, bytes, int]:
        """Pickled as its config and its record's bytes (the record's views are rebuilt on unpickling)."""
        return self.config, bytes(self._buffer), self._code

    def __setstate__(self, state: tuple[KahunaConfig, bytes, int]) -> None:
        config, data, code = state
        if len(data) != STATE_DTYPE.itemsize:
            raise ValueError(f"a pickled KahunaGame holds {len(data)} bytes, expected {STATE_DTYPE.itemsize}")
        self.config = config
        self._adopt(bytearray(data))
        self._legal = None
        self._code = code
        _loops()  # a game unpickled in a fresh process steps through the loops too

    def determinize(self, player: int, rng: np.random.Generator) -> KahunaGame:
        """A copy in which everything ``player`` cannot see is resampled (one information-set sample).

        The cards hidden from ``player`` (the opponent's hand apart from its
        publicly known cards, the opponent's face-down discards, and the
        pile) are dealt again at random into the same places with the same
        sizes; everything ``player`` can see stays.  The copy gets its own
        generator drawn from ``rng``, so later reshuffles do not reveal the
        real game's.  Search agents work on such copies only, which is what
        keeps them from reading hidden information.
        """
        opponent = 1 - player
        view = self.clone()
        _seed_pcg(view._state, int(rng.integers(2**63)))
        known = self.known_cards(opponent)
        hand = self.hand_counts(opponent)
        face_down = self.face_down_discards(opponent)
        size = self.pile_size
        # Pool the hidden cards in a canonical order (by island), so that the sample depends on
        # the public information and ``rng`` only, not on the true pile order.
        hidden_counts = self.pile_counts()
        hidden = []
        for island in range(NUM_ISLANDS):
            hidden += [island] * (hidden_counts[island] + hand[island] - known[island] + face_down[island])
        order = rng.permutation(len(hidden))
        hidden = [hidden[k] for k in order]
        unknown_in_hand = sum(hand) - sum(known)
        face_down_count = sum(face_down)
        target = view._state[0]
        target["hand"][opponent] = np.bincount(hidden[:unknown_in_hand], minlength=NUM_ISLANDS) + known
        target["face_down"][opponent] = np.bincount(
            hidden[unknown_in_hand : unknown_in_hand + face_down_count], minlength=NUM_ISLANDS
        )
        target["pile"][:size] = hidden[unknown_in_hand + face_down_count :]
        view._code = _loops().game_legal(view._state, TABLE_RECORD)
        view._legal = None
        return view

    def to_dict(self) -> dict[str, Any]:
        """The position as a JSON-serialisable dict (docs/RULES.md, "Positions"); :meth:`from_dict` restores it exactly.

        Beyond the fixed keys it records the config, the turn state
        (``played_this_turn``, ``discarded_this_turn``, ``must_draw``,
        ``claim_line``, ``setup_left``, ``final_turns_left``), each player's
        face-down cards within ``discard`` (``face_down``), the public
        knowledge about each hand (``known``), ``final_points``, ``over`` and
        ``winner``.
        """
        values = position_values(self._state.__getitem__, _ONE)[0]
        values["config"] = self.config
        return position_json(values)  # the format's one writer

    def _position(self) -> Position:
        """The position as a :class:`~kahuna_env.positions.Position`: every position field's array, by the schema."""
        values = position_values(self._state.__getitem__, _ONE)[0]
        return Position(config=self.config, **{name: _frozen(value) for name, value in values.items()})

    @classmethod
    def from_dict(cls, position: Mapping[str, Any], seed: int | None = None) -> KahunaGame:
        """Restore a position written by :meth:`to_dict` (or built by hand), validating everything.

        Only the fixed keys of docs/RULES.md ("Positions") are required; an
        omitted optional key means "start of a turn, nothing played yet,
        previous turn not a pass, no variant, no handicap".  ``seed`` (None or
        a non-negative integer) seeds the generator used for later reshuffles.
        A position that is malformed or cannot arise in play raises a one-line
        ``ValueError`` saying what is wrong (the checks are listed in
        docs/RULES.md, "Position validation").  A position of round 2 or 3 in
        which a player has no bridge on the board is a finished game
        (premature end) and loads as such.
        """
        check_seed(seed)
        return cls._from_position(parse_position(position), seed)

    @classmethod
    def _from_position(cls, position: Position, seed: int | None) -> KahunaGame:
        """Build a game from a validated position, then apply the checks that need the rules."""
        game = cls.__new__(cls)
        game._init_empty(position.config)
        state = game._state
        load_positions(state.__getitem__, _ONE, [position])
        # The engine decides the outcome and checks the position's against it.
        state["over"] = False
        state["winner"] = -1
        _loops().game_legal(state, TABLE_RECORD)  # the derived control masks the outcome reads
        game._check_control(position)
        _loops().game_end_prematurely(state)  # over, if a player has no bridge from round 2 on
        if position.over:
            game._check_outcome(position)
        _seed_pcg(state, seed)
        game._code = _loops().game_legal(state, TABLE_RECORD)
        if game._code == 0:
            raise ValueError(
                f"position: player {game.current_player} to move has no legal action in a game that is not over"
            )
        return game

    def _check_control(self, position: Position) -> None:
        """What control (the loops' masks of the loaded position) rules out: a free claim next to an island the
        opponent controls; in the planning variant, a bridge next to one (taking control sweeps them off, and
        the variant forbids building there afterwards)."""
        if position.claim_line >= 0:
            a, b = LINES[position.claim_line]
            if self.control_mask(1 - position.current_player) & (ISLAND_BIT[a] | ISLAND_BIT[b]):
                raise ValueError("position 'claim_line': an island of that line is controlled by the opponent")
        if position.config.variant == "planning":
            for player in (0, 1):
                opponent_control = self.control_mask(1 - player)
                for line, owner in enumerate(position.owner):
                    a, b = LINES[line]
                    if owner == player and opponent_control & (ISLAND_BIT[a] | ISLAND_BIT[b]):
                        raise ValueError(
                            f"position 'bridges': player {player}'s bridge on {LINE_NAMES[line]} touches an island "
                            f"controlled by player {1 - player}, impossible in the planning variant"
                        )

    def _final_difference(self) -> list[int]:
        """Final-scoring points now (the loops' final scoring of the position as it stands)."""
        points = np.zeros(2, dtype=self._state["final_points"].dtype)
        _loops().game_final_points(self._state, TABLE_RECORD, points)
        return points.tolist()

    def _check_outcome(self, position: Position) -> None:
        """A position marked over must be a premature end or the final scoring, with their result."""
        if self._state["over"][0]:  # a premature end: the winner is the player with bridges, no final scoring
            if any(position.final_points):
                raise ValueError(
                    f"position 'final_points' {list(position.final_points)}: a game that ended prematurely "
                    "(a player without bridges) had no final scoring"
                )
        else:
            if (
                position.round != 3
                or position.final_turns_left
                or position.pile
                or any(c >= 0 for c in position.face_up)
            ):
                raise ValueError(
                    "position 'over' is true but both players have bridges and the final turns of round 3 "
                    "are not done: a game ends by the final scoring or a premature end"
                )
            expected = self._final_difference()
            if list(position.final_points) != expected:
                raise ValueError(
                    f"position 'final_points' {list(position.final_points)} must be the final difference of "
                    f"controlled islands, {expected}"
                )
            self._state["over"] = True
            self._state["winner"] = _loops().game_final_winner(self._state)
        if position.winner != self.winner:
            expected_text = "a draw" if self.winner is None else f"player {self.winner}"
            raise ValueError(
                f"position 'winner' {position.winner} contradicts the outcome: {expected_text} "
                f"(scores {self.scores}, final points {self.final_points})"
            )


def _line(action: int) -> str:
    return LINE_NAMES[_ACTION_LINE[action]]


REASON_TEXT: dict[str, Callable[[KahunaGame, int], str]] = {
    "legal": lambda game, action: "it is legal (internal error: the mask and the reason disagree)",
    "game_over": lambda game, action: "the game is over",
    "setup_first": lambda game, action: (
        f"player {game.current_player} must first place {game.setup_left} free handicap bridge(s) (FREE_BRIDGE actions)"
    ),
    "setup_line_taken": lambda game, action: f"line {_line(action)} already holds a bridge",
    "discarded_no_play": lambda game, action: "a player who discarded this turn may not play cards",
    "missing_card": lambda game, action: (
        f"the hand holds no {_missing_cards(game.hand_counts(game.current_player), _PAID[action])} card"
    ),
    "line_taken": lambda game, action: (
        f"line {_line(action)} already holds a bridge of player {game.owner(_ACTION_LINE[action])}"
    ),
    "no_supply": lambda game, action: "no bridge left in supply",
    "planning_control": lambda game, action: (
        f"planning variant: an island of {_line(action)} is controlled by the opponent"
    ),
    "no_opponent_bridge": lambda game, action: f"line {_line(action)} holds no opponent bridge",
    "cannot_pay": lambda game, action: (
        f"the hand lacks the cards to pay ({_missing_cards(game.hand_counts(game.current_player), _PAID[action])})"
    ),
    "played_no_discard": lambda game, action: "a player who played a card this turn may not discard",
    "discard_rule": lambda game, action: (
        "discard rule 'hand_limit': a first discard needs 5 cards in hand and a card to draw"
    ),
    "hand_full": lambda game, action: f"a hand of {HAND_LIMIT} cards cannot draw",
    "pile_empty": lambda game, action: (
        "no drawing in the final extra turns" if game.final_turns_left else "the pile is empty"
    ),
    "slot_empty": lambda game, action: (
        "no drawing in the final extra turns" if game.final_turns_left else f"face-up slot {action - A.TAKE} is empty"
    ),
    "opponent_passed": lambda game, action: (
        "the opponent passed last turn and a card is drawable, so this turn must end with a draw"
    ),
    "pass_rule": lambda game, action: "discard rule 'hand_limit': a turn with discards ends with a draw or take",
    "no_claim": lambda game, action: (
        "a free bridge is only offered in handicap setup or right after a removal (planning variant)"
    ),
    "claim_other_line": lambda game, action: f"the free claim is for line {LINE_NAMES[game.claim_line]} only",
}
"""The words for each condition of legality an action can fail (:data:`kahuna_env.kernels.REASONS`, by name)."""
assert tuple(REASON_TEXT) == kernels.REASONS


_FORMER_METHODS = frozenset({"open_discards"})
"""Former names that were methods: each is a method still (:meth:`KahunaGame.open_discards`)."""
QUERIES_ELSEWHERE = {"owner": "owner(line)", "over": "is_over", "bridges": "bridges_on_board(player)"}
"""Public one-row fields whose query takes an argument or keeps the name docs/RULES.md gives it."""


def _query(field: Field) -> property:
    """The read-only property of a public field of one value or one row (e.g. ``current_player``, ``scores``):
    its value off the record's bytes, a row as a new list, ``None`` for -1 where -1 means "none"."""
    at = _AT[field.name]
    size = math.prod(dims(field))
    none = field.empty == -1
    get: Callable[[KahunaGame], Any]
    if field.shape and none:
        get = lambda self: [None if v < 0 else v for v in self._bytes[at : at + size].tolist()]  # noqa: E731
    elif field.shape:
        get = lambda self: self._bytes[at : at + size].tolist()  # noqa: E731
    elif field.dtype == "bool":
        get = lambda self: self._bytes[at] != 0  # noqa: E731
    elif none:
        get = lambda self: None if (v := self._bytes[at]) < 0 else v  # noqa: E731
    else:
        get = lambda self: self._bytes[at]  # noqa: E731
    get.__name__ = field.name
    return property(get, doc=field.meaning)


QUERIES: tuple[str, ...] = tuple(
    field.name
    for field in FIELDS
    if field.array
    and field.role != "option"
    and field.visibility == "public"
    and len(field.shape) <= 1
    and field.dtype in ("int8", "bool")
    and field.name not in QUERIES_ELSEWHERE
)
"""The queries :class:`KahunaGame` takes from the schema, one per public field of one value or one row, by the
field's name (``current_player``, ``round``, ``scores``, ``played_this_turn``, ``open_discard``, ...)."""
for _name in QUERIES:
    setattr(KahunaGame, _name, _query(FIELD_BY_NAME[_name]))
for _name, _new in FORMERLY.items():  # each former name of a query answers for one release, with a warning
    if _name not in _FORMER_METHODS and hasattr(KahunaGame, _new):
        setattr(KahunaGame, _name, former_name(_name, "KahunaGame query"))


def _frozen(value: Any) -> Any:
    """A value as a position holds it: lists as tuples, all the way down."""
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


def _island_index(island: int | str) -> int:
    if isinstance(island, str):
        if island not in ISLAND_ID:
            raise ValueError(f"unknown island {island!r}; islands are {', '.join(ISLANDS)}")
        return ISLAND_ID[island]
    index = operator.index(island)
    if not 0 <= index < NUM_ISLANDS:
        raise ValueError(f"island id must be in 0..{NUM_ISLANDS - 1}, got {index}")
    return index


def _missing_cards(hand: list[int], paid: tuple[int, ...]) -> str:
    """Names of the paid cards the hand cannot cover, '+'-joined ('' if it can pay)."""
    needed: dict[int, int] = {}
    for island in paid:
        needed[island] = needed.get(island, 0) + 1
    short = [ISLANDS[i] for i, n in needed.items() if hand[i] < n]
    return "+".join(short)
