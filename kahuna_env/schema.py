"""The game state described once: every field, its shape, type, empty value and who may see it.

One :class:`Field` per piece of a game's state, in :data:`FIELDS`; each row
says how the field is held by every representation of a game:

* ``batch``: the array holding it (``None``: computed when asked), named as the field: one array
  per field in :class:`kahuna_env.vector.KahunaBatch`, shape ``(N, *shape)``, and one field of the
  numpy record a :class:`kahuna_env.engine.KahunaGame` is (:data:`kahuna_env.arrays.STATE_DTYPE`),
  both allocated and cleared from these rows (``dtype``, filled with ``empty``), both read by the
  rules' one implementation (:mod:`kahuna_env.kernels`) under that name;
* ``position``: the key of the JSON position (docs/RULES.md, "Positions");
  :mod:`kahuna_env.positions` takes its list of keys (required first) and
  its integer ranges (``low``, ``high``) from here;
* ``observation``: the blocks of the observation (:data:`OBSERVATION_BLOCKS`)
  that show the field, or a sentence saying why none does.

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
    "INTERIM_POINTS",
    "MAX_POINTS",
    "OBSERVATION_BLOCKS",
    "ROLES",
    "STATE_BLOCKS",
    "VISIBILITIES",
    "Block",
    "Field",
    "check_schema",
    "dims",
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


class Field(NamedTuple):
    """One field of the game state and how every representation of a game holds it (see the module docstring).

    Every decision is a required argument: a new field says where it lives and whether a player sees it.
    """

    name: str
    shape: tuple[str, ...]
    """Per game, in :data:`DIMENSIONS` names; ``()`` for one value."""
    dtype: str
    """The numpy dtype of the field's array."""
    empty: Any
    """The value of every entry in a game with nothing dealt and nothing played."""
    visibility: str
    role: str
    batch: str | None
    position: str | None
    observation: tuple[str, ...] | str
    """The observation blocks showing the field, or why none does."""
    meaning: str
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


# Columns: name, shape, dtype, empty, visibility, role, array, position key,
# observation (blocks, or why none), meaning; then the keywords (ranges, required key, overrides).
# fmt: off
FIELDS: tuple[Field, ...] = (
    # --- the rule options of the game
    Field(
        "config", (), "object", None, "public", "option", None, "config",
        ("first_player", "rules"), "the rule options (a frozen KahunaConfig); the batch keeps a list `configs`",
        from_config=lambda config: config,
    ),
    Field(
        "planning", (), "bool", False, "public", "option", "planning", None, ("rules",),
        "config.variant == 'planning', cached for the legality hot path",
        from_config=lambda config: config.variant == "planning",
    ),
    Field(
        "hand_limit", (), "bool", False, "public", "option", "hand_limit", None, ("rules",),
        "config.discard_rule == 'hand_limit', cached likewise",
        from_config=lambda config: config.discard_rule == "hand_limit",
    ),
    Field(
        "first_player", (), "int8", 0, "public", "option", "first_player", None, ("first_player",),
        "config.first_player",
        from_config=lambda config: config.first_player,
    ),
    Field(
        "handicap_player", (), "int8", -1, "public", "option", "handicap_player", None,
        "it only decides who places the setup bridges, which the setup block and my_turn show",
        "the player of config.handicap, -1 without a handicap",
        from_config=lambda config: -1 if config.handicap is None else config.handicap[0],
    ),
    Field(
        "handicap_bridges", (), "int8", 0, "public", "option", "handicap_bridges", None,
        "the setup block shows the free bridges still to place",
        "the free bridges of config.handicap, 0 without a handicap",
        from_config=lambda config: 0 if config.handicap is None else config.handicap[1],
    ),
    # --- the board
    Field(
        "owner", ("lines",), "int8", -1, "public", "state", "owner", "bridges",
        ("lines_mine", "lines_opponent"), "per line: its bridge's owner, -1 when free", required=True,
    ),
    Field(
        "lines", ("players",), "uint64", 0, "public", "derived", "lines", None,
        "derived from owner, which the line blocks show", "per player: the lines holding their bridges (bitmask)",
    ),
    Field(
        "count", ("players", "islands"), "int8", 0, "public", "derived", "count", None,
        ("bridges_mine", "bridges_opponent"), "per player, per island: bridges on its lines",
    ),
    Field(
        "control", ("players",), "uint16", 0, "public", "derived", None, None,
        ("control_mine", "control_opponent"), "per player: the islands they control (computed from count)",
    ),
    Field(
        "bridges", ("players",), "int8", 0, "public", "derived", "bridges", None, ("supply",),
        "per player: bridges on the board",
    ),
    # --- the cards
    Field(
        "hand", ("players", "islands"), "int8", 0, "owner", "state", "hand", "hands",
        ("hand", "opponent_hand_size", "unseen"), "per player, per island: cards in hand", required=True,
    ),
    Field(
        "hand_size", ("players",), "int8", 0, "public", "derived", None, None,
        ("opponent_hand_size",), "per player: cards in hand (computed from hand)",
    ),
    Field(
        "face_up", ("slots",), "int8", -1, "public", "state", "face_up", "face_up",
        ("face_up", "unseen"), "per face-up slot: an island id, -1 when empty", required=True,
    ),
    Field(
        "pile", ("cards",), "int8", 0, "hidden", "state", "pile", "pile", ("pile_size",),
        "the face-down pile, island ids: the array's row is bottom first with pile_len cards (drawing takes "
        "pile[pile_len - 1]), the position's list is top first",
        required=True,
    ),
    Field(
        "pile_len", (), "int8", 0, "public", "derived", "pile_len", None, ("pile_size",),
        "cards in the pile", high=NUM_CARDS,
    ),
    Field(
        "open_discard", ("islands",), "int8", 0, "public", "state", "open_discard", "discard",
        ("discard_open", "unseen"),
        "per island: openly played cards this round (the position's 'discard' adds the face-down ones)",
        required=True,
    ),
    # --- the turn
    Field(
        "current", (), "int8", 0, "public", "state", "current", "current_player",
        ("my_turn", "cards_played", "discarding", "must_draw", "claim"),
        "the player to act (see KahunaGame.current_player once over)", high=1, required=True,
    ),
    Field(
        "round", (), "int8", 1, "public", "state", "round", "round", ("round",), "the round, 1..3",
        low=1, high=3, required=True,
    ),
    Field(
        "scores", ("players",), "int8", 0, "public", "state", "scores", "scores", ("scores",),
        "per player: points so far", high=MAX_POINTS, required=True,
    ),
    Field(
        "played", (), "int8", 0, "public", "state", "played", "played_this_turn", ("cards_played",),
        "cards the player to act played this turn", high=HAND_LIMIT,
    ),
    Field(
        "discarded", (), "int8", 0, "public", "state", "discarded", "discarded_this_turn",
        ("discarding",), "cards the player to act discarded face down this turn", high=HAND_LIMIT,
    ),
    Field(
        "must_draw", (), "bool", False, "public", "state", "must_draw", "must_draw", ("must_draw",),
        "the opponent's previous turn ended with a pass",
    ),
    Field(
        "claim_line", (), "int8", -1, "public", "state", "claim_line", "claim_line", ("claim",),
        "the line the player to act may claim for free, -1 if none", low=-1, high=NUM_LINES - 1,
    ),
    Field(
        "setup_left", (), "int8", 0, "public", "state", "setup_left", "setup_left", ("setup",),
        "free handicap bridges still to place", high=MAX_SETUP_BRIDGES,
    ),
    Field(
        "final_turns", (), "int8", 0, "public", "state", "final_turns", "final_turns_left",
        ("final_turns",), "extra turns left after round 3 ran out of cards", high=FINAL_TURNS,
    ),
    # --- the discard pile's owners and the public knowledge of hands
    Field(
        "face_down", ("players", "islands"), "int8", 0, "owner", "state", "face_down", "face_down",
        ("my_face_down", "opponent_face_down_count", "unseen"), "per player, per island: face-down discards",
    ),
    Field(
        "known", ("players", "islands"), "int8", 0, "public", "state", "known", "known",
        ("opponent_known", "unseen"), "per player, per island: cards known in hand (taken face up, not played since)",
    ),
    # --- the end of the game
    Field(
        "final_points", ("players",), "int8", 0, "public", "state", "final_points", "final_points",
        "set only when the game ends, when no player decides any more (the scores include it)",
        "per player: points of the final scoring", high=NUM_ISLANDS,
    ),
    Field(
        "over", (), "bool", False, "public", "state", "over", "over", ("final_turns", "my_turn"),
        "the game has ended",
    ),
    Field(
        "winner", (), "int8", -1, "public", "state", "winner", "winner",
        "set only when the game ends, when no player decides any more",
        "0, 1, or -1 (the position: None) for a draw or a running game", low=-1, high=1,
        position_empty=None,
    ),
)
# fmt: on
"""Every field of the game state, once (see the module docstring); the order is the record's field order."""

FIELD_BY_NAME: dict[str, Field] = {field.name: field for field in FIELDS}


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
    Block("pile_size", 1, 1.0 / NUM_CARDS, ("pile.total", "pile_len"), "cards in the face-down pile / 24"),
    Block("discard_open", NUM_ISLANDS, _HALF_CARDS, ("open_discard",),
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
    Block("final_turns", 2, (1.0, 1.0 / FINAL_TURNS), ("final_turns", "over"),
          "in the round-3 extra turns; extra turns left / 2"),
    Block("supply", 2, 1.0 / BRIDGES_PER_PLAYER, ("bridges.mine", "bridges.opponent"),
          "my bridges in supply / 25, opponent's / 25"),
    Block("cards_played", 1, 1.0 / HAND_LIMIT, ("played", "current"),
          "cards I played this turn / 5 (0 when it is not my turn)"),
    Block("discarding", 1, 1.0, ("discarded", "current"), "1 if I discarded this turn"),
    Block("must_draw", 1, 1.0, ("must_draw", "current"),
          "1 if the opponent passed last turn (I may not pass while a card is drawable)"),
    Block("claim", NUM_LINES, 1.0, ("claim_line", "current"),
          "planning variant: 1 on the line I may claim for free right now"),
    Block("setup", 2, (1.0, 1.0 / MAX_SETUP_BRIDGES), ("setup_left",),
          "handicap setup running; free bridges left / 3"),
    Block("my_turn", 1, 1.0, ("current", "over"), "1 if I am to act"),
    Block("first_player", 1, 1.0, ("first_player", "config"), "1 if I took (or take) the first turn of the game"),
    Block("rules", 2, 1.0, ("planning", "hand_limit", "config"), "planning variant; discard rule hand_limit"),
)
# fmt: on
"""The observation of one player, block by block in vector order (docs/ENV.md, "Observation")."""

STATE_BLOCKS: tuple[Block, ...] = (
    Block("hand_player_1", NUM_ISLANDS, _HALF_CARDS, ("hand",), "player 1's hand, cards per island / 2"),
    Block("pile_cards", NUM_ISLANDS, _HALF_CARDS, ("pile",), "the pile's cards per island / 2"),
    Block("face_down_player_1", NUM_ISLANDS, _HALF_CARDS, ("face_down",), "player 1's face-down discards / 2"),
    Block("current_player", 1, 1.0, ("current",), "the player to act (0 or 1)"),
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
    if field.batch not in (None, field.name):
        raise ValueError(f"{where}: one name per field: its batch array is {field.name!r}, got {field.batch!r}")
    if field.role == "state":
        missing = [name for name in ("batch", "position") if getattr(field, name) is None]
        if missing:
            raise ValueError(
                f"{where} is game state: it needs an array and a position key "
                f"(to_dict/from_dict round-trip it, the differential tests compare it); missing: {', '.join(missing)}"
            )
    if field.role == "option" and field.batch and field.from_config is None:
        raise ValueError(f"{where} is an option held in an array: it needs from_config")
    if isinstance(field.observation, str):
        if not field.observation.strip():
            raise ValueError(f"{where}: observation must name the blocks that show it, or say why none does")
    elif not field.observation or not all(isinstance(name, str) for name in field.observation):
        raise ValueError(f"{where}: observation must name the blocks that show it, or say why none does")
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
