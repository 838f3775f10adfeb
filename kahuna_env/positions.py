"""Validation of JSON positions (docs/RULES.md, "Positions") into a :class:`Position` value.

:func:`parse_position` checks a position dict against the format and against
every invariant of play listed in docs/RULES.md ("Position validation") that
can be read off the position itself: bounds, card counts, scores against the
round, turn state against hand sizes, bridges against control and the
handicap setup.  It returns a frozen :class:`Position` of plain numbers, from
which :meth:`kahuna_env.engine.KahunaGame.from_dict` builds the game; the
engine then adds the checks that need its rules (the outcome of a finished
game, a legal action for the player to move).  Every rejection is a one-line
``ValueError`` naming the key and what is wrong; nothing is silently
repaired.  The keys, their order and the integer ranges come from the
schema of the game state (:data:`kahuna_env.schema.FIELDS`).  This module
imports only the board, the config and the schema.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    HAND_LIMIT,
    ISLAND_ID,
    ISLANDS,
    LINE_NAMES,
    NUM_ISLANDS,
    NUM_LINES,
)
from kahuna_env.config import KahunaConfig, as_config, is_integer, shown
from kahuna_env.schema import FIELDS, INTERIM_POINTS, MAX_POINTS, POSITION_FORMS, Field, dims

__all__ = [
    "INTERIM_POINTS",
    "MAX_NESTING",
    "MAX_POINTS",
    "OPTIONAL_KEYS",
    "POSITION_FIELDS",
    "REQUIRED_KEYS",
    "Position",
    "parse_position",
    "position_json",
]

REQUIRED_KEYS: tuple[str, ...] = tuple(field.position for field in FIELDS if field.position and field.required)
"""Keys every position has (docs/RULES.md, "Positions"): bridges, hands, face_up, pile, discard,
current_player, round, scores (the schema's fields with a required position key, in its order)."""
OPTIONAL_KEYS: tuple[str, ...] = tuple(field.position for field in FIELDS if field.position and not field.required)
"""Keys :meth:`KahunaGame.to_dict` adds; omitted, they mean "start of a turn, nothing played yet"."""
_LENGTH = {
    field.position: dims(field)[0]
    for field in FIELDS
    if field.position and field.shape[:1] in (("players",), ("lines",), ("slots",))
}
"""Position key -> the length of its list: the first dimension of the schema's shape when it is players, lines
or slots (a per-island count is written as a list of card names, of any length)."""


def _interim_results(round_: int) -> frozenset[tuple[int, int]]:
    """Every score pair the interim scorings before ``round_`` can give (each goes to player 0, 1 or nobody)."""
    results = set()
    for winners in itertools.product((None, 0, 1), repeat=round_ - 1):
        scores = [0, 0]
        for scored_round, winner in enumerate(winners, start=1):
            if winner is not None:
                scores[winner] += INTERIM_POINTS[scored_round]
        results.add((scores[0], scores[1]))
    return frozenset(results)


INTERIM_RESULTS: dict[int, frozenset[tuple[int, int]]] = {round_: _interim_results(round_) for round_ in (1, 2, 3)}
"""Round -> the scores possible before the final scoring: round 1 (0, 0); round 2 one point to
at most one player; round 3 adds two points to at most one player."""


MAX_NESTING = 8
"""The deepest nesting of lists and objects a position may have (its format nests 3 deep: the position,
a key's list, a player's list of cards; the config, its handicap pair).  Deeper input is refused in one
line before anything reads it: nothing downstream recurses into a value nested 100,000 deep."""

POSITION_FIELDS = tuple(field for field in FIELDS if field.position is not None)
"""The schema's fields a position holds (the config and the state), in the schema's order: :class:`Position`'s
fields, by the same names."""


class _PositionRules:
    """What a position says beyond its fields: the rules :class:`Position` reads off them."""

    __slots__ = ()
    owner: tuple[int, ...]
    pile: tuple[int, ...]
    face_up: tuple[int, ...]
    round: int

    @property
    def drawable(self) -> bool:
        """Whether a card can be drawn or taken."""
        return bool(self.pile) or any(card >= 0 for card in self.face_up)

    def bridges(self, player: int) -> int:
        """Number of ``player``'s bridges on the board."""
        return sum(1 for owner in self.owner if owner == player)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, every key of :data:`REQUIRED_KEYS` and :data:`OPTIONAL_KEYS` (see :func:`position_json`)."""
        return position_json(vars(self))


Position = dataclasses.make_dataclass(
    "Position",
    [(field.name, Any) for field in POSITION_FIELDS],
    bases=(_PositionRules,),
    frozen=True,
)
Position.__module__ = __name__  # pickled and named as this module's (make_dataclass's module= needs Python 3.12)
Position.__doc__ = """A validated position: plain numbers only (islands, lines and players as ids).

Its fields are the schema's position fields (:data:`POSITION_FIELDS`), by the schema's names and in the
engine's forms: ``config`` a :class:`~kahuna_env.config.KahunaConfig`; card collections counts per island
(per player: a pair of them); ``face_up`` an island id or -1 per slot; ``pile`` island ids bottom first
(the engine's and the batch's order; the JSON form lists it top first); ``owner`` 0, 1 or -1 (free) per
line; ``claim_line`` -1 when no claim is pending; ``winner`` 0, 1 or None.
"""


def position_json(values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON form of a position given as :class:`Position`'s fields by name (plain numbers).

    The one writer of the format: :meth:`Position.to_dict` (so :meth:`KahunaGame.to_dict`) and
    :meth:`kahuna_env.vector.KahunaBatch.to_dicts` both call it, the batch without building a
    :class:`Position` per game.  ``pile`` lists island ids bottom first.  Each field is written under its
    position key in its form (:attr:`kahuna_env.schema.Field.form`, :data:`_WRITE`): the keys of
    :data:`REQUIRED_KEYS`, then those of :data:`OPTIONAL_KEYS`.
    """
    return {field.position: _WRITE[field.form](values, field.name) for field in _KEY_ORDER}


_KEY_ORDER = sorted(POSITION_FIELDS, key=lambda field: not field.required)
"""The order a position's keys are written in: :data:`REQUIRED_KEYS`, then :data:`OPTIONAL_KEYS`."""


def _none_below_zero(value: int) -> int | None:
    return None if value < 0 else value


def _as_is(values: Mapping[str, Any], name: str) -> Any:
    return values[name]


_WRITE: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "config": lambda values, name: values[name].to_dict(),
    "owners": lambda values, name: [_none_below_zero(owner) for owner in values[name]],
    "cards_per_player": lambda values, name: [_names(cards) for cards in values[name]],
    "slots": lambda values, name: [None if card < 0 else ISLANDS[card] for card in values[name]],
    "pile": lambda values, name: [ISLANDS[card] for card in reversed(values[name])],
    "discard": lambda values, name: _names(
        [sum(counts) for counts in zip(values[name], *values["face_down"], strict=True)]
    ),
    "player": _as_is,
    "player_or_null": _as_is,
    "integer": _as_is,
    "pair": lambda values, name: list(values[name]),
    "flag": _as_is,
    "line_or_null": lambda values, name: _none_below_zero(values[name]),
}
"""Per form of :data:`kahuna_env.schema.POSITION_FORMS`: how a field's value is written (``discard`` adds the
face-down discards to the open ones; a -1 is null)."""
assert _WRITE.keys() == POSITION_FORMS.keys()


def parse_position(position: object, parse_config: Callable[[Any], KahunaConfig] = as_config) -> Position:
    """Validate a position dict (see :meth:`KahunaGame.from_dict`) into a :class:`Position`.

    ``parse_config`` turns the ``config`` value (``None`` for the defaults)
    into a config or raises ``ValueError``/``TypeError`` (default: :func:`kahuna_env.config.as_config`).
    """
    if not isinstance(position, Mapping):
        raise ValueError(f"position must be a dict, got {type(position).__name__}")
    _check_nesting(position)
    missing = [key for key in REQUIRED_KEYS if key not in position]
    if missing:
        raise ValueError(f"position is missing required key(s) {missing}")
    unknown = sorted(shown(key) for key in position if key not in REQUIRED_KEYS and key not in OPTIONAL_KEYS)
    if unknown:
        raise ValueError(
            f"position has unknown key(s) [{', '.join(unknown)}]; allowed keys: {list(REQUIRED_KEYS + OPTIONAL_KEYS)}"
        )
    try:
        config = parse_config(position.get("config"))
    except (TypeError, ValueError) as error:
        raise ValueError(f"position key 'config': {error}") from None
    value = _read_fields(position, config)
    _check_scores(value)
    _check_turn_state(value)
    _check_setup(value)
    return value


# ---------------------------------------------------------------------------------------------- format
def _read_fields(position: Mapping[str, Any], config: KahunaConfig) -> Position:
    """Types, ranges and card counts of every key; the cross-field rules come after.

    The keys are checked in a fixed order (the board, the cards and who holds them, then the other fields
    in the schema's order), so a position with several faults always names the same one.
    """
    values: dict[str, Any] = {"config": config, "owner": _read_bridges(position), **_read_cards(position)}
    for field in POSITION_FIELDS:
        if field.name not in values:
            values[field.name] = _READ[field.form](position, field)
    if values["winner"] is not None and not values["over"]:
        raise ValueError("position 'winner' is set but 'over' is not true")
    return Position(**values)


def _read_player(position: Mapping[str, Any], field: Field) -> int | None:
    value = position.get(field.position)
    if value is None and field.form == "player_or_null":
        return None
    if not _is_player(value):
        allowed = "null, 0 or 1" if field.form == "player_or_null" else "0 or 1"
        raise ValueError(f"position '{field.position}' must be {allowed}, got {shown(value)}")
    return int(value)


def _read_integer(position: Mapping[str, Any], field: Field) -> int:
    low, high = field.low, field.high
    value = position.get(field.position)
    if value is None:
        return 0
    if not is_integer(value) or not low <= value <= high:
        allowed = f"an integer in {low}..{high}"
        if field.required:  # round: 1, 2 or 3
            allowed = f"{', '.join(str(v) for v in range(low, high))} or {high}"
        raise ValueError(f"position '{field.position}' must be {allowed}, got {shown(value)}")
    return int(value)


def _read_pair(position: Mapping[str, Any], field: Field) -> tuple[int, int]:
    key, top = field.position, field.high
    if position.get(key) is None:
        return (0, 0)
    pair = _list(position, key, _LENGTH[key])
    for value in pair:
        if not is_integer(value) or not 0 <= value <= top:
            raise ValueError(f"position '{key}' must be two integers in 0..{top}, got {shown(pair)}")
    return (int(pair[0]), int(pair[1]))


def _read_flag(position: Mapping[str, Any], field: Field) -> bool:
    value = position.get(field.position, False)
    if not isinstance(value, bool):
        raise ValueError(f"position '{field.position}' must be true or false, got {shown(value)}")
    return value


def _read_line(position: Mapping[str, Any], field: Field) -> int:
    line = position.get(field.position)
    if line is None:
        return -1
    if not is_integer(line) or not 0 <= line < NUM_LINES:
        raise ValueError(f"position '{field.position}' must be null or a line id 0..{NUM_LINES - 1}, got {shown(line)}")
    return int(line)


_READ: dict[str, Callable[[Mapping[str, Any], Field], Any]] = {
    "player": _read_player,
    "player_or_null": _read_player,
    "integer": _read_integer,
    "pair": _read_pair,
    "flag": _read_flag,
    "line_or_null": _read_line,
}
"""Per form of a field read on its own: its value off the position (the board and the cards are read together,
:func:`_read_cards`)."""
assert _READ.keys() | {"config", "owners", "cards_per_player", "slots", "pile", "discard"} == POSITION_FORMS.keys()


def _read_bridges(position: Mapping[str, Any]) -> tuple[int, ...]:
    """``bridges``: an owner (null, 0 or 1) per line, at most the bridges a player has."""
    owners = _list(position, "bridges", _LENGTH["bridges"])
    for line, owner in enumerate(owners):
        if owner is not None and not _is_player(owner):
            raise ValueError(
                f"position 'bridges'[{line}] ({LINE_NAMES[line]}) must be null, 0 or 1, got {shown(owner)}"
            )
    for player in (0, 1):
        placed = sum(1 for owner in owners if owner == player)
        if placed > BRIDGES_PER_PLAYER:
            raise ValueError(f"position 'bridges': player {player} has {placed} bridges, at most {BRIDGES_PER_PLAYER}")
    return tuple(-1 if owner is None else int(owner) for owner in owners)


def _read_cards(position: Mapping[str, Any]) -> dict[str, Any]:
    """``hands``, ``face_up``, ``pile`` and ``discard``, which together hold every card exactly once, and who
    holds what among them (``face_down``, ``known``): the card fields by name, as counts per island."""
    hands = _list(position, "hands", _LENGTH["hands"])
    hand_cards = [_cards(hands[player], f"hands[{player}]") for player in (0, 1)]
    for player in (0, 1):
        if len(hand_cards[player]) > HAND_LIMIT:
            raise ValueError(f"position 'hands'[{player}] holds {len(hand_cards[player])} cards, at most {HAND_LIMIT}")
    face_up_names = _list(position, "face_up", _LENGTH["face_up"])
    face_up = [-1 if name is None else _card(name, f"face_up[{slot}]") for slot, name in enumerate(face_up_names)]
    pile = _cards(_list(position, "pile"), "pile")
    discard = _cards(_list(position, "discard"), "discard")
    all_cards = Counter(hand_cards[0] + hand_cards[1] + [c for c in face_up if c >= 0] + pile + discard)
    wrong = [f"{ISLANDS[i]} x{all_cards[i]}" for i in range(NUM_ISLANDS) if all_cards[i] != CARDS_PER_ISLAND]
    if wrong:
        raise ValueError(
            "position cards (hands + face_up + pile + discard) must hold exactly "
            f"{CARDS_PER_ISLAND} cards of each island; wrong counts: {', '.join(wrong)}"
        )
    face_down_cards, known_cards = _read_hidden(position, hand_cards, discard)
    open_discard = _counts(discard)
    for player in (0, 1):
        open_discard = tuple(
            total - own for total, own in zip(open_discard, _counts(face_down_cards[player]), strict=True)
        )
    return {
        "hand": (_counts(hand_cards[0]), _counts(hand_cards[1])),
        "face_up": tuple(face_up),
        "pile": tuple(reversed(pile)),
        "open_discard": open_discard,
        "face_down": (_counts(face_down_cards[0]), _counts(face_down_cards[1])),
        "known": (_counts(known_cards[0]), _counts(known_cards[1])),
    }


def _read_hidden(
    position: Mapping[str, Any], hand_cards: list[list[int]], discard: list[int]
) -> tuple[list[list[int]], list[list[int]]]:
    """``face_down`` (among the discard) and ``known`` (among the hand) cards of each player."""
    face_down = [[], []] if position.get("face_down") is None else _list(position, "face_down", _LENGTH["face_down"])
    face_down_cards = [_cards(face_down[player], f"face_down[{player}]") for player in (0, 1)]
    if not Counter(face_down_cards[0] + face_down_cards[1]) <= Counter(discard):
        raise ValueError("position 'face_down' cards must all be among the 'discard' cards")
    known = [[], []] if position.get("known") is None else _list(position, "known", _LENGTH["known"])
    known_cards = [_cards(known[player], f"known[{player}]") for player in (0, 1)]
    for player in (0, 1):
        if not Counter(known_cards[player]) <= Counter(hand_cards[player]):
            raise ValueError(f"position 'known'[{player}] cards must all be in 'hands'[{player}]")
    return face_down_cards, known_cards


# ---------------------------------------------------------------------------------------------- rules
def _check_scores(p: Position) -> None:
    """Scores come from the interim scorings of the rounds already played, plus the final scoring."""
    if p.final_points[0] and p.final_points[1]:
        raise ValueError(f"position 'final_points' {list(p.final_points)}: only one player can score at the end")
    if any(p.final_points) and not p.over:
        raise ValueError(f"position 'final_points' {list(p.final_points)} must be [0, 0] while the game is not over")
    interim = (p.scores[0] - p.final_points[0], p.scores[1] - p.final_points[1])
    if interim not in INTERIM_RESULTS[p.round]:
        possible = ", ".join(str(list(pair)) for pair in sorted(INTERIM_RESULTS[p.round]))
        raise ValueError(
            f"position 'scores' {list(p.scores)} (less 'final_points' {list(p.final_points)}) cannot arise in "
            f"round {p.round}: the interim scorings before it give one of {possible}"
        )
    if p.over and p.round == 1:
        raise ValueError("position 'over' is true in round 1: a game ends at the earliest right after round 1")


def _check_turn_state(p: Position) -> None:
    """The card phase only spends cards: hand + cards played or discarded this turn <= 5."""
    hand = sum(p.hand[p.current_player])
    if p.played_this_turn and p.discarded_this_turn:
        raise ValueError("position cannot have both 'played_this_turn' and 'discarded_this_turn' above 0")
    spent = p.played_this_turn + p.discarded_this_turn
    if hand + spent > HAND_LIMIT:
        key = "played_this_turn" if p.played_this_turn else "discarded_this_turn"
        raise ValueError(
            f"position '{key}' ({spent}) plus the current player's {hand} cards exceed the {HAND_LIMIT} cards "
            "a turn can start with"
        )
    if p.discarded_this_turn > sum(p.face_down[p.current_player]):
        raise ValueError("position 'discarded_this_turn' exceeds the current player's face-down discards")
    if p.discarded_this_turn and p.config.discard_rule == "hand_limit":
        if hand + p.discarded_this_turn != HAND_LIMIT:
            raise ValueError(
                f"position under discard rule 'hand_limit': {p.discarded_this_turn} discard(s) this turn need a "
                f"hand of {HAND_LIMIT - p.discarded_this_turn} (the first discard is made with {HAND_LIMIT} cards), "
                f"got {hand}"
            )
        if not p.drawable:
            raise ValueError("position under discard rule 'hand_limit': a discard this turn needs a card to draw")
    if p.final_turns_left and (p.round != 3 or p.drawable):
        raise ValueError("position 'final_turns_left' needs round 3 with an empty pile and face-up row")
    if p.claim_line >= 0:
        line = p.claim_line
        if p.config.variant != "planning":
            raise ValueError("position 'claim_line' is only possible in the planning variant")
        if p.owner[line] >= 0:
            raise ValueError(f"position 'claim_line' {LINE_NAMES[line]} is not a free line")
        if p.played_this_turn < 2:
            raise ValueError("position 'claim_line' needs a removal this turn ('played_this_turn' >= 2)")
        if p.bridges(p.current_player) == BRIDGES_PER_PLAYER:
            raise ValueError("position 'claim_line': the current player has no bridge left in supply")


def _check_setup(p: Position) -> None:
    """Handicap setup comes right after the deal: nothing but the handicap player's free bridges has happened."""
    if not p.setup_left:
        return
    handicap = p.config.handicap
    if handicap is None:
        raise ValueError("position 'setup_left' is above 0 but the config has no handicap")
    player, count = handicap
    if p.setup_left > count:
        raise ValueError(f"position 'setup_left' ({p.setup_left}) exceeds the handicap ({count})")
    if p.current_player != player:
        raise ValueError("position in handicap setup: 'current_player' must be the handicap player")
    if p.round != 1 or p.played_this_turn or p.discarded_this_turn or p.must_draw or p.over:
        raise ValueError("position in handicap setup must be in round 1 with no cards played or discarded")
    if p.bridges(1 - player):
        raise ValueError(f"position in handicap setup: player {1 - player} cannot have bridges before the first turn")
    if p.bridges(player) > count - p.setup_left:
        raise ValueError(
            f"position in handicap setup: player {player} has {p.bridges(player)} bridges, more than the "
            f"{count - p.setup_left} free bridge(s) placed so far ({count} minus 'setup_left')"
        )


# ---------------------------------------------------------------------------------------------- helpers
def _check_nesting(position: Mapping[str, Any]) -> None:
    """Refuse a position nested deeper than :data:`MAX_NESTING`, walking it without recursion."""
    if _too_deep(list(position.values())):
        key = next(key for key, value in position.items() if _too_deep([value]))
        raise ValueError(
            f"position key {shown(key)} nests lists or objects more than {MAX_NESTING} levels deep (the format nests 3)"
        )


def _too_deep(level: list[Any]) -> bool:
    """Whether ``level``, values at depth 2 of a position, hold containers deeper than :data:`MAX_NESTING`."""
    for _ in range(MAX_NESTING - 1):
        # The containers one level down, each once: a list that holds itself many times (built in
        # Python) is walked once per depth.
        level = list({id(c): c for item in level for c in _children(item) if type(c) not in _SCALARS}.values())
        if not level:
            return False
    return True


_SCALARS = frozenset((str, int, bool, float, type(None)))
"""Types that hold nothing (checked by exact type first: the walk visits every card name and number)."""


def _children(item: object) -> Any:
    """What ``item`` holds: its values, its items, or nothing (a scalar, a string)."""
    if type(item) is list:  # what JSON gives; the abstract checks below are slower
        return item
    if isinstance(item, Mapping):
        return item.values()
    if isinstance(item, Sequence) and not isinstance(item, (str, bytes)):
        return item
    return ()


def _is_player(value: object) -> bool:
    return is_integer(value) and value in (0, 1)


def _list(position: Mapping[str, Any], key: str, length: int | None = None) -> list[Any]:
    value = position[key]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"position '{key}' must be a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ValueError(f"position '{key}' must have {length} entries, got {len(value)}")
    return list(value)


def _card(name: object, where: str) -> int:
    if not isinstance(name, str) or name not in ISLAND_ID:
        raise ValueError(f"position '{where}': {shown(name)} is not an island name (one of {', '.join(ISLANDS)})")
    return ISLAND_ID[name]


def _cards(names: object, where: str) -> list[int]:
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise ValueError(f"position '{where}' must be a list of island names, got {shown(names)}")
    return [_card(name, f"{where}[{k}]") for k, name in enumerate(names)]


def _names(counts: Sequence[int]) -> list[str]:
    return [ISLANDS[i] for i in range(NUM_ISLANDS) for _ in range(counts[i])]


def _counts(cards: list[int]) -> tuple[int, ...]:
    counts = [0] * NUM_ISLANDS
    for card in cards:
        counts[card] += 1
    return tuple(counts)
