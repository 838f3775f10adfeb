"""The pure rules engine of Kahuna (docs/RULES.md): no PettingZoo, no observations.

:class:`KahunaGame` holds one game as plain mutable state tuned for speed:
bridge ownership as per-player line bitmasks, incremental per-island bridge
counts, per-player control bitmasks, hands as per-island card counts with
"at least one" / "at least two" island bitmasks.  Every field is listed once,
with its meaning, in the schema of the game state (:data:`kahuna_env.schema.FIELDS`,
beside the batch's arrays and the position keys); :data:`STATE_FIELDS`,
``__slots__``, the empty game and :meth:`KahunaGame.clone` are built from it.  The legal actions of a
state are computed once (from those bitmasks and precomputed tables) and
reused both for :meth:`KahunaGame.legal_actions` and for validating
:meth:`KahunaGame.step`.

Rules as implemented (details and the reasons in ``docs/RULES.md``):

* control = holding a strict majority of an island's lines; a placement that
  gives its player a majority they did not have removes every opponent bridge
  on that island's lines, which may cost the opponent control elsewhere (one
  level, nothing more moves); a removal never gives anyone control
  (:func:`control_taken`, :func:`swept_lines`, :func:`control_kept`);
* a turn is a card phase (plays, or face-down discards, one per action) that
  ends with DRAW, TAKE or PASS; the round ends when the pile and the face-up
  row are empty at the end of a turn; round 3 is followed by one more turn
  each without drawing, then the final scoring;
* premature end: from the first interim scoring on, a player without a bridge
  on the board loses at once (both: draw).

Reading the state.  Other modules read a game only through its public,
read-only queries (the properties and methods without a leading underscore:
``current_player``, ``hand_counts``, ``bridge_lines``, ``control_mask``, …)
and change it only through :meth:`KahunaGame.step`.  One module is a
declared *friend* that may read (never write) the fields of
:data:`STATE_FIELDS` directly, because it is a hot path where copies would
cost: :mod:`kahuna_env.observation` (one observation per decision in
training).  Positions come in through :mod:`kahuna_env.positions`, which
validates a dict into a :class:`~kahuna_env.positions.Position` value that
the engine builds a game from.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from kahuna_env import actions as A
from kahuna_env import schema
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
from kahuna_env.board import (
    ALL_LINES_MASK,
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    FACE_UP_SLOTS,
    HAND_LIMIT,
    ISLAND_BIT,
    ISLAND_ID,
    ISLAND_LINE_MASK,
    ISLANDS,
    LINE_A,
    LINE_B,
    LINE_BIT,
    LINE_NAMES,
    LINES_TOUCHING,
    LINES_WITH_A_IN,
    LINES_WITH_B_IN,
    MAJORITY,
    NUM_CARDS,
    NUM_ISLANDS,
    STARTING_HAND,
)
from kahuna_env.config import DISCARD_RULES, VARIANTS, KahunaConfig, as_config
from kahuna_env.positions import POSITION_FIELDS, Position, parse_position
from kahuna_env.schema import INTERIM_POINTS

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


# --- legal-action tables ---------------------------------------------------------------------
# A 27-bit line set is turned into action ids by three 9-bit table lookups per action group.
_CHUNK = 9
_CHUNK_MASK = (1 << _CHUNK) - 1


def _chunk_table(offset: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(offset + bit for bit in range(_CHUNK) if value >> bit & 1) for value in range(1 << _CHUNK))


def _group_tables(first_action: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    return tuple(_chunk_table(first_action + k * _CHUNK) for k in range(3))


_PLACE_A_T = _group_tables(A.PLACE_A)
_PLACE_B_T = _group_tables(A.PLACE_B)
_REMOVE_AB_T = _group_tables(A.REMOVE_AB)
_REMOVE_AA_T = _group_tables(A.REMOVE_AA)
_REMOVE_BB_T = _group_tables(A.REMOVE_BB)
_FREE_T = _group_tables(A.FREE_BRIDGE)
_DISCARD_T: tuple[tuple[int, ...], ...] = tuple(
    tuple(A.DISCARD + i for i in range(NUM_ISLANDS) if value >> i & 1) for value in range(1 << NUM_ISLANDS)
)
_DRAW_BIT, _PASS_BIT = 1, 1 << 4  # end-of-turn actions as a 5-bit set: DRAW, TAKE0..2, PASS
_END_T: tuple[tuple[int, ...], ...] = tuple(
    tuple(A.DRAW + k for k in range(5) if value >> k & 1) for value in range(32)
)
_PLACE_END = A.REMOVE_AB
"""First action id after the PLACE actions (placements are ``action < _PLACE_END``)."""
_REMOVE_END = A.DISCARD
"""First action id after the REMOVE actions."""
_HIGH_CHUNK = 2 * _CHUNK
"""Shift of the third 9-bit chunk of a 27-bit line set (lines 18..26): ``mask >> _HIGH_CHUNK``."""
_ISLAND_BIT = ISLAND_BIT
_LINE_BIT = LINE_BIT
_LINE_A = LINE_A
_LINE_B = LINE_B
_PAID = A.PAID_ISLANDS
_ACTION_LINE = A.ACTION_LINE


# --- the control rule, as pure functions (the engine and agents/greedy.py share them) ----------------
def control_taken(count: Sequence[int], line: int) -> int:
    """Islands (bitmask) whose majority a new bridge on ``line`` completes.

    ``count`` is the placer's bridges per island *before* the placement; an
    island is taken when the new bridge brings its count to exactly the
    majority (a player already holding it takes nothing new).
    """
    a = _LINE_A[line]
    b = _LINE_B[line]
    taken = _ISLAND_BIT[a] if count[a] + 1 == MAJORITY[a] else 0
    if count[b] + 1 == MAJORITY[b]:
        taken |= _ISLAND_BIT[b]
    return taken


def swept_lines(taken: int, opponent_lines: int) -> int:
    """The opponent's lines (bitmask) the capture rule clears when the ``taken`` islands change hands."""
    return opponent_lines & LINES_TOUCHING[taken] if taken else 0


def control_kept(control: int, count: Sequence[int], removed: int) -> int:
    """A player's control (bitmask) after their bridges on the ``removed`` lines leave the board.

    ``count`` is their bridges per island before the removal; an island stays
    controlled only while its strict majority holds.  Losing bridges never
    moves anything else (one level of the capture rule).
    """
    kept = control
    while control:
        low = control & -control
        island = low.bit_length() - 1
        if count[island] - (removed & ISLAND_LINE_MASK[island]).bit_count() < MAJORITY[island]:
            kept ^= low
        control ^= low
    return kept


def _islands_per_player() -> list[list[int]]:
    return [[0] * NUM_ISLANDS, [0] * NUM_ISLANDS]


# --- the state fields: the engine's slots of the one schema (kahuna_env.schema.FIELDS) ----------------
class StateField(NamedTuple):
    """One field of a :class:`KahunaGame`: its slot, how :meth:`KahunaGame.clone` copies it, its meaning."""

    name: str
    copy: str
    """``"value"`` (immutable, shared), ``"list"`` (one list) or ``"pair"`` (one list per player)."""
    empty: Callable[[], Any] | None
    """The value in a game with nothing dealt (``None``: an option, set from the config)."""
    meaning: str


def _copy_kind(field: schema.Field) -> str:
    """A scalar is shared, a row is one list, a per-player table is a pair of lists."""
    if not field.shape:
        return "value"
    return "pair" if len(field.shape) == 2 else "list"


def _empty_factory(field: schema.Field) -> Callable[[], Any] | None:
    """A function making the field's empty value as the engine holds it (a fresh list each call)."""
    if field.role == "option":
        return None
    if field.engine_empty is not ...:
        empty = field.engine_empty
        return (lambda: list(empty)) if isinstance(empty, list) else (lambda: empty)
    empty, shape = field.empty, schema.dims(field)
    if not shape:
        return lambda: empty
    if len(shape) == 1:
        return lambda: [empty] * shape[0]
    return lambda: [[empty] * shape[1] for _ in range(shape[0])]


STATE_FIELDS: tuple[StateField, ...] = tuple(
    StateField(field.engine, _copy_kind(field), _empty_factory(field), field.meaning)
    for field in schema.FIELDS
    if field.engine is not None
)
"""Every field of a game, once, from :data:`kahuna_env.schema.FIELDS`: ``__slots__``, the empty game,
:meth:`KahunaGame.clone` and the rollback of a failed :meth:`KahunaGame.step` are built from this list."""

_FIELD_NAMES = tuple(field.name for field in STATE_FIELDS)
_VALUE_FIELDS = tuple(field.name for field in STATE_FIELDS if field.copy == "value")
_LIST_FIELDS = tuple(field.name for field in STATE_FIELDS if field.copy == "list")
_PAIR_FIELDS = tuple(field.name for field in STATE_FIELDS if field.copy == "pair")
_EMPTY = tuple((field.name, field.empty) for field in STATE_FIELDS if field.empty is not None)
_OPTIONS = tuple(
    (field.engine, field.from_config) for field in schema.FIELDS if field.engine and field.role == "option"
)
"""``(slot, reader of the config)`` of the options the engine holds: the config itself and its cached flags."""
_get_values = operator.attrgetter(*_VALUE_FIELDS)
_get_lists = operator.attrgetter(*_LIST_FIELDS)
_get_pairs = operator.attrgetter(*_PAIR_FIELDS)
_LOADED = tuple(
    (field.name, field.engine)
    for field in POSITION_FIELDS
    if field.role == "state" and field.name not in ("over", "winner")
)
"""``(position field, slot)`` a game is built from; the engine decides ``over`` and ``winner`` and checks the
position's against them, and derives the rest (:meth:`KahunaGame._derive`)."""


def _frozen(value: Any) -> Any:
    """A slot's value as a position holds it: lists as tuples, all the way down."""
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


def _thawed(value: Any) -> Any:
    """A position's value as a slot holds it: tuples as fresh lists, all the way down."""
    return [_thawed(item) for item in value] if isinstance(value, tuple) else value


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

    ``KahunaGame(config=None, seed=None)`` shuffles and deals a new game with a
    ``numpy.random.Generator`` seeded by ``seed`` (the same seed gives the same
    game).  Players are 0 and 1; islands and lines are ids from
    :mod:`kahuna_env.board`; actions are the ids of :mod:`kahuna_env.actions`.
    ``seed`` is ``None`` or a non-negative integer (anything else is a
    ``ValueError`` here, not later at a reshuffle).

    The read-only queries other modules use (each returns a value or a new
    list, never the game's own state):

    * turn and game: ``current_player``, ``round``, ``is_over``, ``winner``,
      ``scores``, ``final_points``, ``in_setup``, ``setup_bridges_left``,
      ``in_final_turns``, ``final_turns_left``, ``must_draw``,
      ``cards_played_this_turn``, ``cards_discarded_this_turn``,
      ``claim_line``;
    * board: ``owner(line)``, ``controller(island)``,
      ``controlled_islands(player)``, ``control_mask(player)``,
      ``bridge_lines(player)``, ``bridges_on_board(player)``,
      ``supply(player)``, ``bridge_count(player, island)``,
      ``bridge_counts(player)``;
    * cards: ``hand(player)``, ``hand_counts(player)``, ``hand_size(player)``,
      ``known_cards(player)``, ``face_up``, ``pile_size``,
      ``open_discards()``, ``face_down_discards(player)``;
    * actions: ``legal_actions()``, ``action_mask()``, ``is_legal(action)``,
      ``describe(action)``; copies: ``clone()``, ``determinize(player, rng)``,
      ``to_dict()``.
    """

    __slots__ = _FIELD_NAMES

    def __init__(self, config: KahunaConfig | Mapping[str, Any] | None = None, seed: int | None = None) -> None:
        check_seed(seed)
        self._init_empty(as_config(config), seed)
        deck = [island for island in range(NUM_ISLANDS) for _ in range(CARDS_PER_ISLAND)]
        order = self._generator().permutation(NUM_CARDS)
        cards = [deck[k] for k in order]
        for player in (0, 1):
            for card in cards[player * STARTING_HAND : (player + 1) * STARTING_HAND]:
                self._gain(player, card)
        dealt = 2 * STARTING_HAND
        self._face_up = cards[dealt : dealt + FACE_UP_SLOTS]
        # The pile is stored top-last so that drawing is list.pop().
        self._pile = cards[dealt + FACE_UP_SLOTS :][::-1]
        handicap = self.config.handicap
        if handicap is not None:
            self._current, self._setup_left = handicap
        else:
            self._current = self.config.first_player

    def _init_empty(self, config: KahunaConfig, seed: int | None) -> None:
        """Every field of :data:`STATE_FIELDS` at its empty value: nothing dealt, no bridges."""
        for name, empty in _EMPTY:
            setattr(self, name, empty())
        for name, read in _OPTIONS:
            setattr(self, name, read(config))
        # The generator is built lazily (see _generator): most copies of a game never reshuffle,
        # and building a Generator costs more than copying the whole game.
        self._rng_source: int | dict | None = seed

    # ------------------------------------------------------------------ public queries
    @property
    def current_player(self) -> int:
        """The player (0 or 1) to act.

        Once the game is over it is the last player who acted, except after a
        premature end right after an interim scoring: the turn had already
        passed, so it is the player who would have moved next.
        """
        return self._current

    @property
    def is_over(self) -> bool:
        """Whether the game has ended (final scoring done, or a premature end)."""
        return self._over

    @property
    def winner(self) -> int | None:
        """0 or 1 once the game is won; ``None`` while it runs or after a draw."""
        return self._winner

    @property
    def scores(self) -> list[int]:
        """Points of players 0 and 1 so far (a new list)."""
        return list(self._scores)

    @property
    def final_points(self) -> list[int]:
        """Points each player got from the final scoring (zeros until it happens)."""
        return list(self._final_points)

    @property
    def round(self) -> int:
        """The current round, 1, 2 or 3."""
        return self._round

    @property
    def pile_size(self) -> int:
        """Number of cards in the face-down pile."""
        return len(self._pile)

    @property
    def face_up(self) -> list[int | None]:
        """Island id of the card in each face-up slot, ``None`` for an empty slot."""
        return [None if card < 0 else card for card in self._face_up]

    @property
    def in_setup(self) -> bool:
        """Whether the handicap player is still placing their free setup bridges."""
        return self._setup_left > 0

    @property
    def setup_bridges_left(self) -> int:
        """Free handicap bridges still to place before the first turn."""
        return self._setup_left

    @property
    def in_final_turns(self) -> bool:
        """Whether the round-3 extra turns (no drawing) are being played."""
        return self._final_turns > 0 and not self._over

    @property
    def final_turns_left(self) -> int:
        """Extra turns left after round 3 ran out of cards (0 when not in that phase)."""
        return self._final_turns

    @property
    def must_draw(self) -> bool:
        """Whether the opponent's previous turn ended with a pass (then passing is illegal if a card is drawable)."""
        return self._must_draw

    @property
    def cards_played_this_turn(self) -> int:
        """Cards the current player has played (placements and removals) this turn."""
        return self._played

    @property
    def cards_discarded_this_turn(self) -> int:
        """Cards the current player has discarded face down this turn."""
        return self._discarded

    @property
    def claim_line(self) -> int | None:
        """Line the current player may claim for free right now (planning variant), else ``None``."""
        return None if self._claim_line < 0 else self._claim_line

    def controller(self, island: int | str) -> int | None:
        """The player controlling ``island`` (id or name), or ``None``."""
        bit = 1 << _island_index(island)
        if self._control[0] & bit:
            return 0
        if self._control[1] & bit:
            return 1
        return None

    def controlled_islands(self, player: int) -> list[int]:
        """Ids of the islands ``player`` controls."""
        mask = self._control[player]
        return [i for i in range(NUM_ISLANDS) if mask >> i & 1]

    def owner(self, line: int) -> int | None:
        """Owner (0 or 1) of the bridge on ``line``, or ``None`` if the line is free."""
        owner = self._owner[line]
        return None if owner < 0 else owner

    def bridge_lines(self, player: int) -> int:
        """The lines holding ``player``'s bridges, as a bitmask (bit ``l`` for line ``l``)."""
        return self._lines[player]

    def control_mask(self, player: int) -> int:
        """The islands ``player`` controls, as a bitmask (bit ``i`` for island ``i``)."""
        return self._control[player]

    def bridge_counts(self, player: int) -> list[int]:
        """``player``'s bridges on the lines of each island (a new list, one count per island)."""
        return list(self._count[player])

    def bridges_on_board(self, player: int) -> int:
        """Number of ``player``'s bridges on the board."""
        return self._lines[player].bit_count()

    def supply(self, player: int) -> int:
        """Bridges ``player`` still has to place (25 minus those on the board)."""
        return BRIDGES_PER_PLAYER - self._lines[player].bit_count()

    def bridge_count(self, player: int, island: int) -> int:
        """Number of ``player``'s bridges on the lines of ``island``."""
        return self._count[player][island]

    def hand(self, player: int) -> list[int]:
        """``player``'s hand as a sorted list of island ids (one per card)."""
        counts = self._hand[player]
        return [i for i in range(NUM_ISLANDS) for _ in range(counts[i])]

    def hand_counts(self, player: int) -> list[int]:
        """``player``'s hand as a count per island."""
        return list(self._hand[player])

    def hand_size(self, player: int) -> int:
        """Number of cards in ``player``'s hand."""
        return self._hand_size[player]

    def known_cards(self, player: int) -> list[int]:
        """Public knowledge about ``player``'s hand, a count per island.

        Cards the player took face up and has not openly played since; each
        face-down discard by the player lowers every count by one (the hidden
        card could have been any of them), so these cards are certainly held.
        """
        return list(self._known[player])

    def open_discards(self) -> list[int]:
        """Openly played cards in the current discard pile, a count per island."""
        return list(self._open_discard)

    def face_down_discards(self, player: int) -> list[int]:
        """``player``'s face-down discards in the current discard pile, a count per island."""
        return list(self._face_down[player])

    def describe(self, action: int) -> str:
        """Text of an action, as :func:`kahuna_env.actions.describe_action`."""
        return A.describe_action(action)

    def _generator(self) -> np.random.Generator:
        """The game's generator, built on first use from a seed or a copied generator state."""
        rng = self._rng
        if rng is None:
            source = self._rng_source
            if isinstance(source, dict):
                rng = np.random.Generator(getattr(np.random, source["bit_generator"])())
                rng.bit_generator.state = source
            else:
                rng = np.random.default_rng(source)
            self._rng = rng
            self._rng_source = None
        return rng

    # ------------------------------------------------------------------ legal actions
    def legal_actions(self) -> list[int]:
        """The legal actions of the current state, ascending (empty once the game is over)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return list(legal)

    def action_mask(self) -> np.ndarray:
        """Boolean mask over the 179 actions, ``True`` where legal."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        mask = np.zeros(A.NUM_ACTIONS, dtype=bool)
        mask[list(legal)] = True
        return mask

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is legal now."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return action in legal

    def _compute_legal(self) -> tuple[int, ...]:
        if self._over:
            return ()
        player = self._current
        if self._setup_left:
            free = ~(self._lines[0] | self._lines[1]) & ALL_LINES_MASK
            return (
                _FREE_T[0][free & _CHUNK_MASK]
                + _FREE_T[1][(free >> _CHUNK) & _CHUNK_MASK]
                + _FREE_T[2][free >> _HIGH_CHUNK]
            )
        out: list[int] = []
        has1 = self._has1[player]
        if not self._discarded:
            mine = self._lines[player]
            theirs = self._lines[1 - player]
            lines_a = LINES_WITH_A_IN[has1]
            lines_b = LINES_WITH_B_IN[has1]
            if mine.bit_count() < BRIDGES_PER_PLAYER:
                free = ~(mine | theirs) & ALL_LINES_MASK
                if self._planning:
                    free &= ~LINES_TOUCHING[self._control[1 - player]]
                pay_a = free & lines_a
                if pay_a:
                    out += _PLACE_A_T[0][pay_a & _CHUNK_MASK]
                    out += _PLACE_A_T[1][(pay_a >> _CHUNK) & _CHUNK_MASK]
                    out += _PLACE_A_T[2][pay_a >> _HIGH_CHUNK]
                pay_b = free & lines_b
                if pay_b:
                    out += _PLACE_B_T[0][pay_b & _CHUNK_MASK]
                    out += _PLACE_B_T[1][(pay_b >> _CHUNK) & _CHUNK_MASK]
                    out += _PLACE_B_T[2][pay_b >> _HIGH_CHUNK]
            if theirs:
                pairs = theirs & lines_a & lines_b
                if pairs:
                    out += _REMOVE_AB_T[0][pairs & _CHUNK_MASK]
                    out += _REMOVE_AB_T[1][(pairs >> _CHUNK) & _CHUNK_MASK]
                    out += _REMOVE_AB_T[2][pairs >> _HIGH_CHUNK]
                has2 = self._has2[player]
                if has2:
                    doubles = theirs & LINES_WITH_A_IN[has2]
                    if doubles:
                        out += _REMOVE_AA_T[0][doubles & _CHUNK_MASK]
                        out += _REMOVE_AA_T[1][(doubles >> _CHUNK) & _CHUNK_MASK]
                        out += _REMOVE_AA_T[2][doubles >> _HIGH_CHUNK]
                    doubles = theirs & LINES_WITH_B_IN[has2]
                    if doubles:
                        out += _REMOVE_BB_T[0][doubles & _CHUNK_MASK]
                        out += _REMOVE_BB_T[1][(doubles >> _CHUNK) & _CHUNK_MASK]
                        out += _REMOVE_BB_T[2][doubles >> _HIGH_CHUNK]
        face_up = self._face_up
        drawable = bool(self._pile) or face_up[0] >= 0 or face_up[1] >= 0 or face_up[2] >= 0
        if (
            not self._played
            and has1
            and (not self._hand_limit or self._discarded or (self._hand_size[player] == HAND_LIMIT and drawable))
        ):
            out += _DISCARD_T[has1]
        end = 0
        if drawable and self._hand_size[player] < HAND_LIMIT:
            if self._pile:
                end = _DRAW_BIT
            # TAKE of slot k is bit k + 1 of the end-of-turn set (see _END_T).
            if face_up[0] >= 0:
                end |= 2
            if face_up[1] >= 0:
                end |= 4
            if face_up[2] >= 0:
                end |= 8
        if not (drawable and self._must_draw) and not (self._hand_limit and self._discarded):
            end |= _PASS_BIT
        out += _END_T[end]
        if self._claim_line >= 0:
            out.append(A.FREE_BRIDGE + self._claim_line)
        return tuple(out)

    # ------------------------------------------------------------------ transitions
    def step(self, action: int) -> None:
        """Apply one action of the current player.

        ``action`` is an ``int`` or a numpy integer.  Raises
        :class:`IllegalActionError` (a ``ValueError``) naming the action and the
        reason when it is not legal (or not an action id); the state is then
        unchanged.  Everything is validated before the state changes, and the
        one step that calls outside code (the generator of a round-end
        reshuffle) is rolled back if it fails, so no exception leaves a
        half-updated game.
        """
        if action.__class__ is not int:
            action = self._action_id(action)
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        if action not in legal:
            raise IllegalActionError(self._explain_illegal(action))
        self._legal = None
        player = self._current
        if action < _PLACE_END:
            self._claim_line = -1
            self._pay(player, _PAID[action][0])
            self._played += 1
            self._put_bridge(player, _ACTION_LINE[action])
        elif action < _REMOVE_END:
            first, second = _PAID[action]
            self._pay(player, first)
            self._pay(player, second)
            self._played += 2
            line = _ACTION_LINE[action]
            opponent = 1 - player
            self._lift(opponent, _LINE_BIT[line])
            self._claim_line = -1
            if (
                self._planning
                and self._lines[player].bit_count() < BRIDGES_PER_PLAYER
                and not self._control[opponent] & (_ISLAND_BIT[_LINE_A[line]] | _ISLAND_BIT[_LINE_B[line]])
            ):
                self._claim_line = line
            self._check_premature_end()
        elif action < A.DRAW:
            self._claim_line = -1
            self._discard_face_down(player, action - A.DISCARD)
        elif action < A.FREE_BRIDGE:
            face_up = self._face_up
            cards_left = len(self._pile) + (face_up[0] >= 0) + (face_up[1] >= 0) + (face_up[2] >= 0)
            if self._round < 3 and cards_left <= 1:
                # This turn may end round 1 or 2, whose reshuffle calls the generator: keep a copy to roll back to.
                self._end_turn_atomically(player, action)
            else:
                self._end_turn_with(player, action)
        else:
            line = action - A.FREE_BRIDGE
            self._claim_line = -1
            if self._setup_left:
                self._setup_left -= 1
                self._put_bridge(player, line)
                if not self._setup_left:
                    self._current = self.config.first_player
            else:
                self._put_bridge(player, line)

    def _action_id(self, action: object) -> int:
        """``action`` as an ``int`` when it is an integer (numpy integers too, bools not); else IllegalActionError."""
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
            return int(action)
        raise IllegalActionError(
            f"action must be an integer in 0..{A.NUM_ACTIONS - 1} (an int or a numpy integer), "
            f"got {action!r} ({type(action).__name__}); illegal for player {self._current}"
        )

    def _end_turn_with(self, player: int, action: int) -> None:
        """Apply an end-of-turn action (DRAW, TAKE or PASS) and end the turn."""
        if action == A.DRAW:
            self._gain(player, self._pile.pop())
            self._end_turn(player, passed=False)
        elif action < A.PASS:
            slot = action - A.TAKE
            card = self._face_up[slot]
            self._face_up[slot] = self._pile.pop() if self._pile else -1
            self._gain(player, card)
            self._known[player][card] += 1
            self._end_turn(player, passed=False)
        else:
            self._end_turn(player, passed=True)

    def _end_turn_atomically(self, player: int, action: int) -> None:
        """:meth:`_end_turn_with`, restoring the state as it was if anything in it raises."""
        backup = self.clone()
        try:
            self._end_turn_with(player, action)
        except BaseException:
            for name in _FIELD_NAMES:
                setattr(self, name, getattr(backup, name))
            raise

    def _derive(self) -> None:
        """The derived fields from the state: line sets, counts and control from the owners, the hand's sizes
        and its one-card and two-card island sets from the hands (a game built from a position)."""
        for player in (0, 1):
            lines = 0
            count = [0] * NUM_ISLANDS
            for line, owner in enumerate(self._owner):
                if owner == player:
                    lines |= _LINE_BIT[line]
                    count[_LINE_A[line]] += 1
                    count[_LINE_B[line]] += 1
            self._lines[player] = lines
            self._count[player] = count
            self._control[player] = sum(_ISLAND_BIT[i] for i in range(NUM_ISLANDS) if count[i] >= MAJORITY[i])
            hand = self._hand[player]
            self._hand_size[player] = sum(hand)
            self._has1[player] = sum(_ISLAND_BIT[i] for i in range(NUM_ISLANDS) if hand[i] >= 1)
            self._has2[player] = sum(_ISLAND_BIT[i] for i in range(NUM_ISLANDS) if hand[i] >= 2)

    def _gain(self, player: int, island: int) -> None:
        hand = self._hand[player]
        hand[island] += 1
        self._hand_size[player] += 1
        if hand[island] == 1:
            self._has1[player] |= _ISLAND_BIT[island]
        elif hand[island] == 2:
            self._has2[player] |= _ISLAND_BIT[island]

    def _lose(self, player: int, island: int) -> None:
        hand = self._hand[player]
        hand[island] -= 1
        self._hand_size[player] -= 1
        if hand[island] == 0:
            self._has1[player] &= ~_ISLAND_BIT[island]
        elif hand[island] == 1:
            self._has2[player] &= ~_ISLAND_BIT[island]

    def _pay(self, player: int, island: int) -> None:
        """Play a card openly onto the discard pile."""
        self._lose(player, island)
        self._open_discard[island] += 1
        known = self._known[player]
        if known[island]:
            known[island] -= 1

    def _discard_face_down(self, player: int, island: int) -> None:
        self._lose(player, island)
        self._face_down[player][island] += 1
        self._discarded += 1
        known = self._known[player]
        for i in range(NUM_ISLANDS):
            if known[i]:
                known[i] -= 1

    def _put_bridge(self, player: int, line: int) -> None:
        """Place ``player``'s bridge on a free line and apply the control rule."""
        count = self._count[player]
        taken = control_taken(count, line)
        self._owner[line] = player
        self._lines[player] |= _LINE_BIT[line]
        count[_LINE_A[line]] += 1
        count[_LINE_B[line]] += 1
        if taken:
            self._control[player] |= taken
            opponent = 1 - player
            swept = swept_lines(taken, self._lines[opponent])
            if swept:
                self._lift(opponent, swept)
                self._check_premature_end()

    def _lift(self, player: int, lines: int) -> None:
        """Return ``player``'s bridges on ``lines`` (a bitmask) to their supply, keeping control only at majorities."""
        count = self._count[player]
        if self._control[player]:
            self._control[player] = control_kept(self._control[player], count, lines)
        self._lines[player] &= ~lines
        while lines:
            low = lines & -lines
            line = low.bit_length() - 1
            self._owner[line] = -1
            count[_LINE_A[line]] -= 1
            count[_LINE_B[line]] -= 1
            lines ^= low

    def _end_turn(self, player: int, passed: bool) -> None:
        self._played = 0
        self._discarded = 0
        self._claim_line = -1
        self._must_draw = passed
        if self._final_turns:
            self._final_turns -= 1
            if not self._final_turns:
                self._final_scoring()  # the last player to act stays current_player
                return
        self._current = 1 - player
        if self._final_turns:
            return
        face_up = self._face_up
        if self._pile or face_up[0] >= 0 or face_up[1] >= 0 or face_up[2] >= 0:
            return
        if self._round < 3:
            self._interim_scoring()
        else:
            self._final_turns = 2

    def _interim_scoring(self) -> None:
        islands = (self._control[0].bit_count(), self._control[1].bit_count())
        if islands[0] != islands[1]:
            self._scores[0 if islands[0] > islands[1] else 1] += INTERIM_POINTS[self._round]
        self._round += 1
        cards = [island for island in range(NUM_ISLANDS) for _ in range(self._open_discard[island])]
        for player in (0, 1):
            face_down = self._face_down[player]
            cards += [island for island in range(NUM_ISLANDS) for _ in range(face_down[island])]
        self._open_discard = [0] * NUM_ISLANDS
        self._face_down = _islands_per_player()
        order = self._generator().permutation(len(cards))
        shuffled = [cards[k] for k in order]
        self._face_up = shuffled[:FACE_UP_SLOTS] + [-1] * max(0, FACE_UP_SLOTS - len(shuffled))
        self._pile = shuffled[FACE_UP_SLOTS:][::-1]
        self._check_premature_end()

    def _final_scoring(self) -> None:
        self._final_points = self._final_difference()
        self._scores[0] += self._final_points[0]
        self._scores[1] += self._final_points[1]
        self._over = True
        self._winner = self._decide_winner()

    def _final_difference(self) -> list[int]:
        """Final-scoring points now: the difference of controlled islands, to the player with more."""
        difference = self._control[0].bit_count() - self._control[1].bit_count()
        return [max(difference, 0), max(-difference, 0)]

    def _decide_winner(self) -> int | None:
        """Higher total; then more final-scoring points; then more bridges on the board; else a draw."""
        for first, second in (
            self._scores,
            self._final_points,
            (self._lines[0].bit_count(), self._lines[1].bit_count()),
        ):
            if first != second:
                return 0 if first > second else 1
        return None

    def _check_premature_end(self) -> None:
        """From the first interim scoring on, a player without a bridge ends the game (checked only here)."""
        if self._round >= 2 and not (self._lines[0] and self._lines[1]):
            self._over = True
            self._legal = None
            self._winner = self._premature_winner()

    def _premature_winner(self) -> int | None:
        """The player who still has bridges wins a premature end; neither has: a draw."""
        if self._lines[0]:
            return 0
        return 1 if self._lines[1] else None

    # ------------------------------------------------------------------ error messages
    def _explain_illegal(self, action: object) -> str:
        try:
            index = A.check_action(action)
        except ValueError as error:
            return str(error)
        text = f"action {index} ({A.describe_action(index)}) is illegal for player {self._current}"
        return f"{text}: {self._reason(index)}"

    def _reason(self, action: int) -> str:
        player = self._current
        if self._over:
            return "the game is over"
        if self._setup_left and not action >= A.FREE_BRIDGE:
            return f"player {player} must first place {self._setup_left} free handicap bridge(s) (FREE_BRIDGE actions)"
        missing = _missing_cards(self._hand[player], _PAID[action])
        line = _ACTION_LINE[action]
        if action < _PLACE_END:
            if self._discarded:
                return "a player who discarded this turn may not play cards"
            if missing:
                return f"the hand holds no {missing} card"
            if self._owner[line] >= 0:
                return f"line {LINE_NAMES[line]} already holds a bridge of player {self._owner[line]}"
            if self.supply(player) == 0:
                return "no bridge left in supply"
            return f"planning variant: an island of {LINE_NAMES[line]} is controlled by the opponent"
        if action < _REMOVE_END:
            if self._discarded:
                return "a player who discarded this turn may not play cards"
            if self._owner[line] != 1 - player:
                return f"line {LINE_NAMES[line]} holds no opponent bridge"
            return f"the hand lacks the cards to pay ({missing})"
        if action < A.DRAW:
            if self._played:
                return "a player who played a card this turn may not discard"
            if missing:
                return f"the hand holds no {missing} card"
            return "discard rule 'hand_limit': a first discard needs 5 cards in hand and a card to draw"
        if action <= A.PASS:
            if self._final_turns and action != A.PASS:
                return "no drawing in the final extra turns"
            if action == A.PASS:
                if self._hand_limit and self._discarded:
                    return "discard rule 'hand_limit': a turn with discards ends with a draw or take"
                return "the opponent passed last turn and a card is drawable, so this turn must end with a draw"
            if self._hand_size[player] >= HAND_LIMIT:
                return f"a hand of {HAND_LIMIT} cards cannot draw"
            if action == A.DRAW:
                return "the pile is empty"
            return f"face-up slot {action - A.TAKE} is empty"
        if self._setup_left:
            return f"line {LINE_NAMES[line]} already holds a bridge"
        if self._claim_line < 0:
            return "a free bridge is only offered in handicap setup or right after a removal (planning variant)"
        return f"the free claim is for line {LINE_NAMES[self._claim_line]} only"

    # ------------------------------------------------------------------ copies and positions
    def clone(self) -> KahunaGame:
        """An independent copy (the random generator is copied too, so both replay the same chance)."""
        other = object.__new__(KahunaGame)
        for name, value in zip(_VALUE_FIELDS, _get_values(self), strict=True):
            setattr(other, name, value)
        for name, value in zip(_LIST_FIELDS, _get_lists(self), strict=True):
            setattr(other, name, value[:])
        for name, (first, second) in zip(_PAIR_FIELDS, _get_pairs(self), strict=True):
            setattr(other, name, [first[:], second[:]])
        other._rng = None
        other._rng_source = self._rng_source if self._rng is None else self._rng.bit_generator.state
        return other

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
        view._rng = None
        view._rng_source = int(rng.integers(2**63))
        known = self._known[opponent]
        hand = self._hand[opponent]
        face_down = self._face_down[opponent]
        # Pool the hidden cards in a canonical order (by island), so that the sample depends on
        # the public information and ``rng`` only, not on the true pile order.
        hidden_counts = [0] * NUM_ISLANDS
        for card in self._pile:
            hidden_counts[card] += 1
        hidden = []
        for island in range(NUM_ISLANDS):
            hidden += [island] * (hidden_counts[island] + hand[island] - known[island] + face_down[island])
        order = rng.permutation(len(hidden))
        hidden = [hidden[k] for k in order]
        unknown_in_hand = self._hand_size[opponent] - sum(known)
        view._hand[opponent] = [0] * NUM_ISLANDS
        view._hand_size[opponent] = 0
        view._has1[opponent] = view._has2[opponent] = 0
        for island in range(NUM_ISLANDS):
            for _ in range(known[island]):
                view._gain(opponent, island)
        for card in hidden[:unknown_in_hand]:
            view._gain(opponent, card)
        face_down_count = sum(face_down)
        view._face_down[opponent] = [0] * NUM_ISLANDS
        for card in hidden[unknown_in_hand : unknown_in_hand + face_down_count]:
            view._face_down[opponent][card] += 1
        view._pile = hidden[unknown_in_hand + face_down_count :]
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
        return self._position().to_dict()

    def _position(self) -> Position:
        """The position as a :class:`~kahuna_env.positions.Position`: every position field's slot, by the schema."""
        return Position(**{field.name: _frozen(getattr(self, field.engine)) for field in POSITION_FIELDS})

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
        game._init_empty(position.config, seed)
        for name, slot in _LOADED:
            setattr(game, slot, _thawed(getattr(position, name)))
        game._derive()
        game._check_premature_end()
        if position.over:
            game._check_outcome(position)
        if not game._over and not game._compute_legal():
            raise ValueError(f"position: player {game._current} to move has no legal action in a game that is not over")
        return game

    def _check_outcome(self, position: Position) -> None:
        """A position marked over must be a premature end or the final scoring, with their result."""
        if self._over:  # a premature end: the winner is the player with bridges, no final scoring
            if any(position.final_points):
                raise ValueError(
                    f"position 'final_points' {list(position.final_points)}: a game that ended prematurely "
                    "(a player without bridges) had no final scoring"
                )
        else:
            if position.round != 3 or position.final_turns or self._pile or any(c >= 0 for c in self._face_up):
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
            self._over = True
            self._winner = self._decide_winner()
        if position.winner != self._winner:
            expected_text = "a draw" if self._winner is None else f"player {self._winner}"
            raise ValueError(
                f"position 'winner' {position.winner} contradicts the outcome: {expected_text} "
                f"(scores {self._scores}, final points {self._final_points})"
            )


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
