"""Validation and loading of JSON positions (SPEC §5) for :meth:`KahunaGame.from_dict`.

Every check raises ``ValueError`` with a message naming the key and what was
wrong; nothing is silently repaired.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    FACE_UP_SLOTS,
    HAND_LIMIT,
    ISLAND_ID,
    ISLANDS,
    LINE_NAMES,
    LINES,
    MAJORITY,
    NUM_ISLANDS,
    NUM_LINES,
)

if TYPE_CHECKING:
    from kahuna_env.engine import KahunaGame


def load_position(cls: type[KahunaGame], position: Mapping[str, Any], seed: int | None) -> KahunaGame:
    """Build a game of class ``cls`` from a position dict; see :meth:`KahunaGame.from_dict`."""
    from kahuna_env.engine import _POSITION_OPTIONAL, _POSITION_REQUIRED, KahunaConfig, _as_config

    if not isinstance(position, Mapping):
        raise ValueError(f"position must be a dict, got {type(position).__name__}")
    missing = [key for key in _POSITION_REQUIRED if key not in position]
    if missing:
        raise ValueError(f"position is missing required key(s) {missing}")
    unknown = sorted(set(position) - set(_POSITION_REQUIRED) - set(_POSITION_OPTIONAL))
    if unknown:
        raise ValueError(
            f"position has unknown key(s) {unknown}; allowed keys: {list(_POSITION_REQUIRED + _POSITION_OPTIONAL)}"
        )

    config_value = position.get("config")
    try:
        config = KahunaConfig() if config_value is None else _as_config(config_value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"position key 'config': {error}") from None

    owners = _list(position, "bridges", NUM_LINES)
    for line, owner in enumerate(owners):
        if owner is not None and not _is_player(owner):
            raise ValueError(f"position 'bridges'[{line}] ({LINE_NAMES[line]}) must be null, 0 or 1, got {owner!r}")
    for player in (0, 1):
        placed = sum(1 for owner in owners if owner == player)
        if placed > BRIDGES_PER_PLAYER:
            raise ValueError(f"position 'bridges': player {player} has {placed} bridges, at most {BRIDGES_PER_PLAYER}")

    hands = _list(position, "hands", 2)
    hand_cards = [_cards(hands[player], f"hands[{player}]") for player in (0, 1)]
    for player in (0, 1):
        if len(hand_cards[player]) > HAND_LIMIT:
            raise ValueError(f"position 'hands'[{player}] holds {len(hand_cards[player])} cards, at most {HAND_LIMIT}")
    face_up_names = _list(position, "face_up", FACE_UP_SLOTS)
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

    current = position["current_player"]
    if not _is_player(current):
        raise ValueError(f"position 'current_player' must be 0 or 1, got {current!r}")
    round_ = position["round"]
    if not _is_int(round_) or not 1 <= round_ <= 3:
        raise ValueError(f"position 'round' must be 1, 2 or 3, got {round_!r}")
    scores = _int_pair(position, "scores")
    final_points = _int_pair(position, "final_points") if position.get("final_points") is not None else [0, 0]

    face_down_names = position.get("face_down")
    face_down = [[], []] if face_down_names is None else _list(position, "face_down", 2)
    face_down_cards = [_cards(face_down[player], f"face_down[{player}]") for player in (0, 1)]
    if not Counter(face_down_cards[0] + face_down_cards[1]) <= Counter(discard):
        raise ValueError("position 'face_down' cards must all be among the 'discard' cards")
    known_names = position.get("known")
    known = [[], []] if known_names is None else _list(position, "known", 2)
    known_cards = [_cards(known[player], f"known[{player}]") for player in (0, 1)]
    for player in (0, 1):
        if not Counter(known_cards[player]) <= Counter(hand_cards[player]):
            raise ValueError(f"position 'known'[{player}] cards must all be in 'hands'[{player}]")

    played = _count(position, "played_this_turn")
    discarded = _count(position, "discarded_this_turn")
    if played and discarded:
        raise ValueError("position cannot have both 'played_this_turn' and 'discarded_this_turn' above 0")
    if discarded and discarded > sum(Counter(face_down_cards[current]).values()):
        raise ValueError("position 'discarded_this_turn' exceeds the current player's face-down discards")
    must_draw = position.get("must_draw", False)
    if not isinstance(must_draw, bool):
        raise ValueError(f"position 'must_draw' must be true or false, got {must_draw!r}")
    setup_left = _count(position, "setup_left")
    final_turns_left = _count(position, "final_turns_left")
    claim_line = position.get("claim_line")
    over = position.get("over", False)
    if not isinstance(over, bool):
        raise ValueError(f"position 'over' must be true or false, got {over!r}")
    winner = position.get("winner")
    if winner is not None and not _is_player(winner):
        raise ValueError(f"position 'winner' must be null, 0 or 1, got {winner!r}")
    if winner is not None and not over:
        raise ValueError("position 'winner' is set but 'over' is not true")

    if setup_left:
        if config.handicap is None:
            raise ValueError("position 'setup_left' is above 0 but the config has no handicap")
        if setup_left > config.handicap[1]:
            raise ValueError(f"position 'setup_left' ({setup_left}) exceeds the handicap ({config.handicap[1]})")
        if current != config.handicap[0]:
            raise ValueError("position in handicap setup: 'current_player' must be the handicap player")
        if round_ != 1 or played or discarded or must_draw:
            raise ValueError("position in handicap setup must be in round 1 with no cards played or discarded")
    if final_turns_left:
        if final_turns_left > 2:
            raise ValueError(f"position 'final_turns_left' must be 0, 1 or 2, got {final_turns_left}")
        if round_ != 3 or pile or any(card >= 0 for card in face_up):
            raise ValueError("position 'final_turns_left' needs round 3 with an empty pile and face-up row")
    if claim_line is not None:
        if not _is_int(claim_line) or not 0 <= claim_line < NUM_LINES:
            raise ValueError(f"position 'claim_line' must be null or a line id 0..{NUM_LINES - 1}, got {claim_line!r}")
        if config.variant != "planning":
            raise ValueError("position 'claim_line' is only possible in the planning variant")
        if owners[claim_line] is not None:
            raise ValueError(f"position 'claim_line' {LINE_NAMES[claim_line]} is not a free line")
        if played < 2:
            raise ValueError("position 'claim_line' needs a removal this turn ('played_this_turn' >= 2)")

    game = cls.__new__(cls)
    game._init_empty(config, seed)
    for line, owner in enumerate(owners):
        if owner is not None:
            game._owner[line] = owner
            game._line_mask[owner] |= 1 << line
            a, b = LINES[line]
            game._count[owner][a] += 1
            game._count[owner][b] += 1
    for player in (0, 1):
        game._control[player] = sum(1 << i for i in range(NUM_ISLANDS) if game._count[player][i] >= MAJORITY[i])
        for card in hand_cards[player]:
            game._gain(player, card)
        for card in face_down_cards[player]:
            game._face_down[player][card] += 1
        for card in known_cards[player]:
            game._known[player][card] += 1
    for card in discard:
        game._open_discard[card] += 1
    for player in (0, 1):
        for card in face_down_cards[player]:
            game._open_discard[card] -= 1
    game._face_up = face_up
    game._pile = pile[::-1]
    game._current = current
    game._round = round_
    game._scores = scores
    game._final_points = final_points
    game._played = played
    game._discarded = discarded
    game._must_draw = must_draw
    game._claim_line = -1 if claim_line is None else claim_line
    game._setup_left = setup_left
    game._final_turns_left = final_turns_left
    if claim_line is not None:
        a, b = LINES[claim_line]
        if game._control[1 - current] & ((1 << a) | (1 << b)):
            raise ValueError("position 'claim_line': an island of that line is controlled by the opponent")
        if game.supply(current) == 0:
            raise ValueError("position 'claim_line': the current player has no bridge left in supply")
    if over:
        game._over = True
        game._winner = winner
    elif round_ >= 2 and not (game._line_mask[0] and game._line_mask[1]):
        # From the first interim scoring on, a player without bridges has lost: a finished game.
        game._end_prematurely()
    return game


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_player(value: object) -> bool:
    return _is_int(value) and value in (0, 1)


def _list(position: Mapping[str, Any], key: str, length: int | None = None) -> list[Any]:
    value = position[key]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"position '{key}' must be a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ValueError(f"position '{key}' must have {length} entries, got {len(value)}")
    return list(value)


def _card(name: object, where: str) -> int:
    if not isinstance(name, str) or name not in ISLAND_ID:
        raise ValueError(f"position '{where}': {name!r} is not an island name (one of {', '.join(ISLANDS)})")
    return ISLAND_ID[name]


def _cards(names: object, where: str) -> list[int]:
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise ValueError(f"position '{where}' must be a list of island names, got {names!r}")
    return [_card(name, f"{where}[{k}]") for k, name in enumerate(names)]


MAX_POINTS = 1 + 2 + 12
"""The most a player can score: both interim scorings and a 12-island final difference."""


def _int_pair(position: Mapping[str, Any], key: str) -> list[int]:
    pair = _list(position, key, 2)
    for value in pair:
        if not _is_int(value) or not 0 <= value <= MAX_POINTS:
            raise ValueError(f"position '{key}' must be two integers in 0..{MAX_POINTS}, got {pair!r}")
    return [int(pair[0]), int(pair[1])]


def _count(position: Mapping[str, Any], key: str) -> int:
    value = position.get(key)
    if value is None:
        return 0
    if not _is_int(value) or value < 0:
        raise ValueError(f"position '{key}' must be a non-negative integer, got {value!r}")
    return int(value)
