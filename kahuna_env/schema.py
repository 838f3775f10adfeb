"""The game state described once: every field, its shape, type, empty value and who may see it.

One :class:`Field` per piece of a game's state, in :data:`FIELDS`, written with keywords; each row gives
the field its one name and says how every representation of a game holds it:

* ``array``: whether an array holds it (else it is computed when asked), named as the field: one array
  per field in :class:`kahuna_env.vector.KahunaBatch`, shape ``(N, *shape)``, and one field of the
  numpy record a :class:`kahuna_env.engine.KahunaGame` is (:data:`kahuna_env.arrays.STATE_DTYPE`),
  both allocated and cleared from these rows (``dtype``, filled with ``empty``), both read by the
  rules' one implementation (:mod:`kahuna_env.kernels`) under that name;
* ``position`` and ``form``: the key of the JSON position (docs/RULES.md, "Positions"), the field's name
  but for three older keys (:data:`FORMAT_KEYS`), and how it is written (:data:`POSITION_FORMS`);
  :mod:`kahuna_env.positions` writes and reads every key from these rows (required first), with the
  integer ranges (``low``, ``high``);
* ``observation``: the blocks of the observation (:data:`OBSERVATION_BLOCKS`) that show the field, or a
  sentence saying why none does;
* ``formerly``: the names the field had before it had one, still answered with a warning for one release.

The engine's queries of the public fields of one value or one row (``game.current_player``,
``game.played_this_turn``, ...) and the web view are made from these rows too.

``visibility`` says who may see a field: ``"public"`` (both players),
``"owner"`` (a per-player field: each player sees their own row and only the
*number* of cards in the other's) or ``"hidden"`` (nobody sees more than its
number of cards: the pile order).  :func:`check_schema` holds the observation
blocks to it at import, so a block that reads the opponent's hand, or a new
state field without an array, a position key or an observation decision, fails loudly the moment the module loads.

``role``: ``"state"`` (the position: a game is rebuilt from these),
``"derived"`` (kept in step with the state for speed, or computed when asked), ``"option"``
(read off the game's :class:`~kahuna_env.engine.KahunaConfig`).  What a game holds beyond its
fields (its legal actions, its generator) is :mod:`kahuna_env.arrays`'s, never in a position or
an observation.

The observation layout (name, size, scaling of every block) is stated here
too, once, for the one encoder (:func:`kahuna_env.kernels.observations`),
which a game (:func:`kahuna_env.observation.encode_observation`) and a batch
(:meth:`kahuna_env.vector.KahunaBatch.observations`) both run.

This module imports only the board.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    DEGREE,
    FACE_UP_SLOTS,
    HAND_LIMIT,
    NUM_CARDS,
    NUM_ISLANDS,
    NUM_LINES,
)

__all__ = [
    "DIMENSIONS",
    "FIELDS",
    "FIELD_BY_NAME",
    "FORMAT_KEYS",
    "FORMERLY",
    "INTERIM_POINTS",
    "MAX_POINTS",
    "OBSERVATION_BLOCKS",
    "POSITION_FORMS",
    "ROLES",
    "STATE_BLOCKS",
    "VISIBILITIES",
    "Block",
    "Field",
    "check_schema",
    "dims",
    "renamed",
]

DIMENSIONS: dict[str, int] = {
    "players": 2,
    "islands": NUM_ISLANDS,
    "lines": NUM_LINES,
    "slots": FACE_UP_SLOTS,
    "cards": NUM_CARDS,
}
"""The names a field's shape is written in, and their sizes (from the board)."""
VISIBILITIES = ("public", "owner", "hidden")
ROLES = ("state", "derived", "option")
MAX_SETUP_BRIDGES = 3
"""The most free handicap bridges (``KahunaConfig.handicap``)."""
FINAL_TURNS = 2
"""The extra turns after round 3 runs out of cards: one each."""
INTERIM_POINTS = {1: 1, 2: 2}
"""Points for the player with more controlled islands at the end of rounds 1 and 2."""
MAX_POINTS = sum(INTERIM_POINTS.values()) + NUM_ISLANDS
"""The most a player can score: both interim scorings and a 12-island final difference."""


POSITION_FORMS: dict[str, str] = {
    "config": "the rule options as an object (KahunaConfig.to_dict)",
    "owners": "per line: null, 0 or 1",
    "cards_per_player": "per player: a list of card (island) names",
    "slots": "per slot: a card name or null",
    "pile": "card names, top of the pile first",
    "discard": "card names: the openly played and every player's face-down discards",
    "player": "0 or 1",
    "player_or_null": "null, 0 or 1",
    "integer": "an integer in the field's range (omitted: 0)",
    "pair": "per player: an integer in the field's range",
    "flag": "true or false (omitted: false)",
    "line_or_null": "a line id or null",
}
"""The forms a position writes a field in (:attr:`Field.form`), read and written by :mod:`kahuna_env.positions`."""

FORMAT_KEYS: dict[str, str] = {"owner": "bridges", "hand": "hands", "open_discard": "discard"}
"""The fields whose position key is another word: docs/RULES.md fixed these keys before the schema named the
fields (``discard`` also holds the face-down discards, :attr:`Field.position`).  Every other field with a key
is written under its own name."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Field:
    """One field of the game state and how every representation of a game holds it (see the module docstring).

    Written with keywords only.  Every decision is a required argument: a new field says where it lives and
    whether a player sees it.
    """

    name: str
    """The field's one name: its array in the batch and the record, its position key (but for
    :data:`FORMAT_KEYS`), its observation block where one block shows it alone, the engine's query."""
    shape: tuple[str, ...]
    """Per game, in :data:`DIMENSIONS` names; ``()`` for one value."""
    dtype: str
    """The numpy dtype of the field's array."""
    empty: Any
    """The value of every entry in a game with nothing dealt and nothing played."""
    visibility: str
    role: str
    array: bool
    """Whether the batch and the record hold the field in an array named as the field (else: computed when
    asked)."""
    observation: tuple[str, ...] | str
    """The observation blocks showing the field, or why none does."""
    meaning: str
    position: str | None = None
    """The field's key in a JSON position: its name, or the older word of :data:`FORMAT_KEYS`; ``None``: not
    in a position."""
    form: str | None = None
    """How a position writes the field (one of :data:`POSITION_FORMS`); ``None`` without a position key."""
    low: int = 0
    """Smallest value of each entry of an integer field in a valid position (-1: written as null)."""
    high: int | None = None
    """Largest value of each entry of an integer field in a valid position (None: no bound stated here)."""
    required: bool = False
    """Whether the position key must be present (docs/RULES.md: the fixed keys)."""
    position_empty: Any = ...
    """How a position writes ``empty`` when it differs in form (``None``: null; ``...``: as ``empty``)."""
    from_config: Callable[[Any], Any] | None = None
    """For an option: its value read off a :class:`~kahuna_env.engine.KahunaConfig` (the game and the batch
    both set their option fields through it)."""
    formerly: tuple[str, ...] = ()
    """Names the field had before it had one (a batch array, an engine query, an observation block): each is
    still answered, with a ``DeprecationWarning`` naming the new one, for one release (docs/RULES.md,
    "Names")."""

    @property
    def batch(self) -> str | None:
        """The field's array in the batch and the record (its name), or ``None``."""
        return self.name if self.array else None


FIELDS: tuple[Field, ...] = (
    # --- the rule options of the game
    Field(
        name="config",
        shape=(),
        dtype="object",
        empty=None,
        visibility="public",
        role="option",
        array=False,
        position="config",
        form="config",
        observation=("first_player", "rules"),
        meaning="the rule options (a frozen KahunaConfig); the batch keeps a list `configs`",
        from_config=lambda config: config,
    ),
    Field(
        name="planning",
        shape=(),
        dtype="bool",
        empty=False,
        visibility="public",
        role="option",
        array=True,
        observation=("rules",),
        meaning="config.variant == 'planning', cached for the legality hot path",
        from_config=lambda config: config.variant == "planning",
    ),
    Field(
        name="hand_limit",
        shape=(),
        dtype="bool",
        empty=False,
        visibility="public",
        role="option",
        array=True,
        observation=("rules",),
        meaning="config.discard_rule == 'hand_limit', cached likewise",
        from_config=lambda config: config.discard_rule == "hand_limit",
    ),
    Field(
        name="first_player",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="option",
        array=True,
        observation=("first_player",),
        meaning="config.first_player",
        from_config=lambda config: config.first_player,
    ),
    Field(
        name="handicap_player",
        shape=(),
        dtype="int8",
        empty=-1,
        visibility="public",
        role="option",
        array=True,
        observation="it only decides who places the setup bridges, which the setup block and my_turn show",
        meaning="the player of config.handicap, -1 without a handicap",
        from_config=lambda config: -1 if config.handicap is None else config.handicap[0],
    ),
    Field(
        name="handicap_bridges",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="option",
        array=True,
        observation="the setup block shows the free bridges still to place",
        meaning="the free bridges of config.handicap, 0 without a handicap",
        from_config=lambda config: 0 if config.handicap is None else config.handicap[1],
    ),
    # --- the board
    Field(
        name="owner",
        shape=("lines",),
        dtype="int8",
        empty=-1,
        visibility="public",
        role="state",
        array=True,
        position="bridges",
        form="owners",
        observation=("lines_mine", "lines_opponent"),
        meaning="per line: its bridge's owner, -1 when free",
        required=True,
    ),
    Field(
        name="lines",
        shape=("players",),
        dtype="uint64",
        empty=0,
        visibility="public",
        role="derived",
        array=True,
        observation="derived from owner, which the line blocks show",
        meaning="per player: the lines holding their bridges (bitmask)",
    ),
    Field(
        name="count",
        shape=("players", "islands"),
        dtype="int8",
        empty=0,
        visibility="public",
        role="derived",
        array=True,
        observation=("bridges_mine", "bridges_opponent"),
        meaning="per player, per island: bridges on its lines",
    ),
    Field(
        name="control",
        shape=("players",),
        dtype="uint16",
        empty=0,
        visibility="public",
        role="derived",
        array=False,
        observation=("control_mine", "control_opponent"),
        meaning="per player: the islands they control (computed from count)",
    ),
    Field(
        name="bridges",
        shape=("players",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="derived",
        array=True,
        observation=("supply",),
        meaning="per player: bridges on the board",
    ),
    # --- the cards
    Field(
        name="hand",
        shape=("players", "islands"),
        dtype="int8",
        empty=0,
        visibility="owner",
        role="state",
        array=True,
        position="hands",
        form="cards_per_player",
        observation=("hand", "opponent_hand_size", "unseen"),
        meaning="per player, per island: cards in hand",
        required=True,
    ),
    Field(
        name="hand_size",
        shape=("players",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="derived",
        array=False,
        observation=("opponent_hand_size",),
        meaning="per player: cards in hand (computed from hand)",
    ),
    Field(
        name="face_up",
        shape=("slots",),
        dtype="int8",
        empty=-1,
        visibility="public",
        role="state",
        array=True,
        position="face_up",
        form="slots",
        observation=("face_up", "unseen"),
        meaning="per face-up slot: an island id, -1 when empty",
        required=True,
    ),
    Field(
        name="pile",
        shape=("cards",),
        dtype="int8",
        empty=0,
        visibility="hidden",
        role="state",
        array=True,
        position="pile",
        form="pile",
        observation=("pile_size",),
        meaning="the face-down pile, island ids: the array's row is bottom first with pile_len cards (drawing takes "
        "pile[pile_len - 1]), the position's list is top first",
        required=True,
    ),
    Field(
        name="pile_size",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="derived",
        array=True,
        observation=("pile_size",),
        meaning="cards in the pile",
        high=NUM_CARDS,
        formerly=("pile_len",),
    ),
    Field(
        name="open_discard",
        shape=("islands",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="discard",
        form="discard",
        observation=("open_discard", "unseen"),
        meaning="per island: openly played cards this round (the position's 'discard' adds the face-down ones)",
        required=True,
        formerly=("discard_open", "open_discards"),
    ),
    # --- the turn
    Field(
        name="current_player",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="current_player",
        form="player",
        observation=("my_turn", "played_this_turn", "discarded_this_turn", "must_draw", "claim"),
        meaning="the player to act (see KahunaGame.current_player once over)",
        high=1,
        required=True,
        formerly=("current", "to_act"),
    ),
    Field(
        name="round",
        shape=(),
        dtype="int8",
        empty=1,
        visibility="public",
        role="state",
        array=True,
        position="round",
        form="integer",
        observation=("round",),
        meaning="the round, 1..3",
        low=1,
        high=3,
        required=True,
    ),
    Field(
        name="scores",
        shape=("players",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="scores",
        form="pair",
        observation=("scores",),
        meaning="per player: points so far",
        high=MAX_POINTS,
        required=True,
    ),
    Field(
        name="played_this_turn",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="played_this_turn",
        form="integer",
        observation=("played_this_turn",),
        meaning="cards the player to act played this turn",
        high=HAND_LIMIT,
        formerly=("played", "cards_played", "cards_played_this_turn"),
    ),
    Field(
        name="discarded_this_turn",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="discarded_this_turn",
        form="integer",
        observation=("discarded_this_turn",),
        meaning="cards the player to act discarded face down this turn",
        high=HAND_LIMIT,
        formerly=("discarded", "discarding", "cards_discarded_this_turn"),
    ),
    Field(
        name="must_draw",
        shape=(),
        dtype="bool",
        empty=False,
        visibility="public",
        role="state",
        array=True,
        position="must_draw",
        form="flag",
        observation=("must_draw",),
        meaning="the opponent's previous turn ended with a pass",
    ),
    Field(
        name="claim_line",
        shape=(),
        dtype="int8",
        empty=-1,
        visibility="public",
        role="state",
        array=True,
        position="claim_line",
        form="line_or_null",
        observation=("claim",),
        meaning="the line the player to act may claim for free, -1 if none",
        low=-1,
        high=NUM_LINES - 1,
    ),
    Field(
        name="setup_left",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="setup_left",
        form="integer",
        observation=("setup",),
        meaning="free handicap bridges still to place",
        high=MAX_SETUP_BRIDGES,
        formerly=("setup_bridges_left",),
    ),
    Field(
        name="final_turns_left",
        shape=(),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="final_turns_left",
        form="integer",
        observation=("final_turns_left",),
        meaning="extra turns left after round 3 ran out of cards",
        high=FINAL_TURNS,
        formerly=("final_turns",),
    ),
    # --- the discard pile's owners and the public knowledge of hands
    Field(
        name="face_down",
        shape=("players", "islands"),
        dtype="int8",
        empty=0,
        visibility="owner",
        role="state",
        array=True,
        position="face_down",
        form="cards_per_player",
        observation=("my_face_down", "opponent_face_down_count", "unseen"),
        meaning="per player, per island: face-down discards",
    ),
    Field(
        name="known",
        shape=("players", "islands"),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="known",
        form="cards_per_player",
        observation=("opponent_known", "unseen"),
        meaning="per player, per island: cards known in hand (taken face up, not played since)",
    ),
    # --- the end of the game
    Field(
        name="final_points",
        shape=("players",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="final_points",
        form="pair",
        observation="set only when the game ends, when no player decides any more (the scores include it)",
        meaning="per player: points of the final scoring",
        high=NUM_ISLANDS,
    ),
    Field(
        name="over",
        shape=(),
        dtype="bool",
        empty=False,
        visibility="public",
        role="state",
        array=True,
        position="over",
        form="flag",
        observation=("final_turns_left", "my_turn"),
        meaning="the game has ended",
    ),
    Field(
        name="winner",
        shape=(),
        dtype="int8",
        empty=-1,
        visibility="public",
        role="state",
        array=True,
        position="winner",
        form="player_or_null",
        observation="set only when the game ends, when no player decides any more",
        meaning="0, 1, or -1 (the position: None) for a draw or a running game",
        low=-1,
        high=1,
        position_empty=None,
    ),
)
"""Every field of the game state, once (see the module docstring); the order is the record's field order."""

FIELD_BY_NAME: dict[str, Field] = {field.name: field for field in FIELDS}

FORMERLY: dict[str, str] = {old: field.name for field in FIELDS for old in field.formerly}
"""A former name -> the field's one name (:attr:`Field.formerly`): what the batch, the engine and the
observation layout still answer, with a warning, for one release."""


def renamed(old: str, where: str) -> str:
    """The one name of ``old`` (a key of :data:`FORMERLY`), warning that ``where``'s ``old`` is deprecated."""
    new = FORMERLY[old]
    warnings.warn(
        f"{where} {old!r} is deprecated and will be removed in the next release; it is now {new!r} "
        "(one name per state field, docs/RULES.md)",
        DeprecationWarning,
        stacklevel=3,
    )
    return new


def former_name(old: str, where: str) -> property:
    """A read-only property answering the former name ``old`` with the value under its one name, warning
    (:func:`renamed`): what ``KahunaGame`` and ``KahunaBatch`` carry for each of their former names, one release.
    Properties, not a ``__getattr__`` hook, which would slow every attribute read of the class."""

    def get(self: Any) -> Any:
        return getattr(self, renamed(old, where))

    get.__name__ = old
    return property(get, doc=f'Deprecated: ``{FORMERLY[old]}`` ({where} {old!r}, docs/RULES.md "Names").')


def dims(field: Field) -> tuple[int, ...]:
    """A field's shape per game in numbers, e.g. ``(2, 12)`` for ``("players", "islands")``."""
    return tuple(DIMENSIONS[name] for name in field.shape)


# ---------------------------------------------------------------------------------------------- observation
class Block(NamedTuple):
    """One block of the observation vector: its entries, their scaling into [0, 1], the fields it reads.

    ``sources`` name schema fields as ``"field"`` (a field without a player axis), ``"field.mine"`` /
    ``"field.opponent"`` (the viewer's row or the other player's), with ``".total"`` added when the
    block shows only the number of cards (``"hand.opponent.total"``, ``"pile.total"``).
    """

    name: str
    size: int
    scale: float | tuple[float, ...]
    """The factor of each entry (one for all, or one per entry) that maps its raw count into [0, 1]."""
    sources: tuple[str, ...]
    meaning: str


_HALF_CARDS = 1.0 / CARDS_PER_ISLAND
_PER_DEGREE = tuple(1.0 / degree for degree in DEGREE)

# fmt: off
OBSERVATION_BLOCKS: tuple[Block, ...] = (
    Block("lines_mine", NUM_LINES, 1.0, ("owner",), "1 where the line holds my bridge"),
    Block("lines_opponent", NUM_LINES, 1.0, ("owner",), "1 where the line holds an opponent bridge"),
    Block("control_mine", NUM_ISLANDS, 1.0, ("control.mine",), "1 where I control the island"),
    Block("control_opponent", NUM_ISLANDS, 1.0, ("control.opponent",), "1 where the opponent controls the island"),
    Block("bridges_mine", NUM_ISLANDS, _PER_DEGREE, ("count.mine",), "my bridges on the island's lines / its degree"),
    Block("bridges_opponent", NUM_ISLANDS, _PER_DEGREE, ("count.opponent",),
          "opponent bridges on the island's lines / its degree"),
    Block("hand", NUM_ISLANDS, _HALF_CARDS, ("hand.mine",), "my cards of each island / 2"),
    Block("face_up", FACE_UP_SLOTS * NUM_ISLANDS, 1.0, ("face_up",),
          "entry 12*k + i: 1 if face-up slot k holds a card of island i"),
    Block("pile_size", 1, 1.0 / NUM_CARDS, ("pile.total", "pile_size"), "cards in the face-down pile / 24"),
    Block("open_discard", NUM_ISLANDS, _HALF_CARDS, ("open_discard",),
          "openly played cards in the current discard pile / 2"),
    Block("my_face_down", NUM_ISLANDS, _HALF_CARDS, ("face_down.mine",),
          "my face-down discards in the current discard pile / 2"),
    Block("opponent_face_down_count", 1, 1.0 / NUM_CARDS, ("face_down.opponent.total",),
          "number of opponent face-down discards / 24"),
    Block("opponent_hand_size", 1, 1.0 / HAND_LIMIT, ("hand.opponent.total", "hand_size.opponent"),
          "opponent's hand size / 5"),
    Block("opponent_known", NUM_ISLANDS, _HALF_CARDS, ("known.opponent",),
          "cards the opponent took face up and certainly still holds / 2"),
    Block("unseen", NUM_ISLANDS, _HALF_CARDS,
          ("hand.mine", "open_discard", "face_down.mine", "known.opponent", "face_up"),
          "cards of each island whose place I cannot see / 2"),
    Block("scores", 2, 1.0 / MAX_POINTS, ("scores.mine", "scores.opponent"), "my score / 15, opponent's score / 15"),
    Block("round", 3, 1.0, ("round",), "one-hot round 1, 2, 3"),
    Block("final_turns_left", 2, (1.0, 1.0 / FINAL_TURNS), ("final_turns_left", "over"),
          "in the round-3 extra turns; extra turns left / 2"),
    Block("supply", 2, 1.0 / BRIDGES_PER_PLAYER, ("bridges.mine", "bridges.opponent"),
          "my bridges in supply / 25, opponent's / 25"),
    Block("played_this_turn", 1, 1.0 / HAND_LIMIT, ("played_this_turn", "current_player"),
          "cards I played this turn / 5 (0 when it is not my turn)"),
    Block("discarded_this_turn", 1, 1.0, ("discarded_this_turn", "current_player"), "1 if I discarded this turn"),
    Block("must_draw", 1, 1.0, ("must_draw", "current_player"),
          "1 if the opponent passed last turn (I may not pass while a card is drawable)"),
    Block("claim", NUM_LINES, 1.0, ("claim_line", "current_player"),
          "planning variant: 1 on the line I may claim for free right now"),
    Block("setup", 2, (1.0, 1.0 / MAX_SETUP_BRIDGES), ("setup_left",),
          "handicap setup running; free bridges left / 3"),
    Block("my_turn", 1, 1.0, ("current_player", "over"), "1 if I am to act"),
    Block("first_player", 1, 1.0, ("first_player", "config"), "1 if I took (or take) the first turn of the game"),
    Block("rules", 2, 1.0, ("planning", "hand_limit", "config"), "planning variant; discard rule hand_limit"),
)
# fmt: on
"""The observation of one player, block by block in vector order (docs/ENV.md, "Observation")."""

STATE_BLOCKS: tuple[Block, ...] = (
    Block("hand_player_1", NUM_ISLANDS, _HALF_CARDS, ("hand",), "player 1's hand, cards per island / 2"),
    Block("pile_cards", NUM_ISLANDS, _HALF_CARDS, ("pile",), "the pile's cards per island / 2"),
    Block("face_down_player_1", NUM_ISLANDS, _HALF_CARDS, ("face_down",), "player 1's face-down discards / 2"),
    Block("current_player", 1, 1.0, ("current_player",), "the player to act (0 or 1)"),
)
"""What the full state (for a centralized critic) adds after player 0's observation: the hidden cards."""


# ---------------------------------------------------------------------------------------------- checks
def _source_field(source: str) -> tuple[str, str | None, bool]:
    """``"hand.opponent.total"`` -> ``("hand", "opponent", True)``."""
    parts = source.split(".")
    total = parts[-1] == "total"
    if total:
        parts.pop()
    seat = parts[1] if len(parts) > 1 else None
    return parts[0], seat, total


def _check_field(field: Field) -> None:
    """One row: known names, and the decisions its role demands."""
    where = f"schema field {field.name!r}"
    unknown = [name for name in field.shape if name not in DIMENSIONS]
    if unknown:
        raise ValueError(f"{where}: unknown dimension(s) {unknown}; dimensions are {list(DIMENSIONS)}")
    if field.visibility not in VISIBILITIES:
        raise ValueError(f"{where}: visibility must be one of {VISIBILITIES}, got {field.visibility!r}")
    if field.role not in ROLES:
        raise ValueError(f"{where}: role must be one of {ROLES}, got {field.role!r}")
    if field.position not in (None, field.name, FORMAT_KEYS.get(field.name)):
        raise ValueError(
            f"{where}: one name per field: its position key is {field.name!r} (or none), got {field.position!r}"
        )
    if field.role == "state":
        missing = [name for name in ("batch", "position") if getattr(field, name) is None]
        if missing:
            raise ValueError(
                f"{where} is game state: it needs an array and a position key "
                f"(to_dict/from_dict round-trip it, the differential tests compare it); missing: {', '.join(missing)}"
            )
    if field.role == "option" and field.array and field.from_config is None:
        raise ValueError(f"{where} is an option held in an array: it needs from_config")
    if isinstance(field.observation, str):
        if not field.observation.strip():
            raise ValueError(f"{where}: observation must name the blocks that show it, or say why none does")
    elif not field.observation or not all(isinstance(name, str) for name in field.observation):
        raise ValueError(f"{where}: observation must name the blocks that show it, or say why none does")
    if (field.position is None) != (field.form is None) or (field.form and field.form not in POSITION_FORMS):
        raise ValueError(f"{where}: a position key needs a form, one of {list(POSITION_FORMS)}; got {field.form!r}")
    if field.position is None and field.required:
        raise ValueError(f"{where}: a required position key needs a position key")


def _check_block(block: Block, fields: dict[str, Field]) -> None:
    """One block: known fields, and nothing its viewer may not see."""
    where = f"observation block {block.name!r}"
    if isinstance(block.scale, tuple) and len(block.scale) != block.size:
        raise ValueError(f"{where}: {len(block.scale)} scale factors for {block.size} entries")
    for source in block.sources:
        name, seat, total = _source_field(source)
        if name not in fields:
            raise ValueError(f"{where} reads {source!r}, which is not a schema field")
        field = fields[name]
        if seat not in (None, "mine", "opponent"):
            raise ValueError(f"{where} reads {source!r}: the seat must be 'mine' or 'opponent'")
        if field.visibility == "hidden" and not total:
            raise ValueError(f"{where} reads {source!r}, hidden from both players (only its number of cards is public)")
        if field.visibility == "owner" and seat != "mine" and not total:
            raise ValueError(
                f"{where} reads {source!r}: only the owner sees that field (others see its number of cards)"
            )
        if isinstance(field.observation, str) or block.name not in field.observation:
            raise ValueError(f"{where} reads {source!r}, but field {name!r} does not list the block")


def check_schema(fields: tuple[Field, ...] = FIELDS, blocks: tuple[Block, ...] = OBSERVATION_BLOCKS) -> None:
    """Raise a one-line ``ValueError`` naming the first field or block whose decisions are missing or wrong.

    Every field: known dimensions, visibility and role; a state field has an array and a position key; every
    field names the observation blocks showing it (each of which lists it) or says why none does.  Every
    block reads only schema fields, and only what its viewer may see.  Names, arrays and position keys are
    each unique.  Run at import on :data:`FIELDS`.
    """
    names = {field.name for field in fields}
    former = [old for field in fields for old in field.formerly]
    clash = sorted({old for old in former if old in names or former.count(old) > 1})
    if clash:
        raise ValueError(f"schema: former name(s) {clash} are a field's name or another field's former name")
    for column in ("name", "batch", "position"):
        values = [getattr(field, column) for field in fields if getattr(field, column) is not None]
        twice = sorted({value for value in values if values.count(value) > 1})
        if twice:
            raise ValueError(f"schema: {column} {twice} given to more than one field")
    for field in fields:
        _check_field(field)
    by_name = {field.name: field for field in fields}
    block_names = {block.name for block in blocks}
    for field in fields:
        if not isinstance(field.observation, str):
            unknown = [name for name in field.observation if name not in block_names]
            if unknown:
                raise ValueError(f"schema field {field.name!r} names unknown observation block(s) {unknown}")
            for name in field.observation:
                block = next(block for block in blocks if block.name == name)
                if not any(_source_field(source)[0] == field.name for source in block.sources):
                    raise ValueError(
                        f"schema field {field.name!r} names observation block {name!r}, which does not read it"
                    )
    for block in blocks:
        _check_block(block, by_name)


check_schema()
