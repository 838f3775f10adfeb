"""Requests checked at the door: the web's one error type, JSON that is JSON, a new game's fields; no HTTP here.

Every bad request raises :class:`WebError` with a one-line message and the
HTTP status the server answers with, before anything changes.
:func:`parse_json` reads a request body, refusing what is not JSON text
(``NaN``, ``Infinity``, lone surrogates); :func:`new_game_request` checks the
fields of a new game (seat, seed and the rule options, :func:`parse_config`;
the opponent is checked when it is built, :func:`kahuna_web.opponents.resolve_opponent`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from kahuna_env.cli import first_line
from kahuna_env.config import RULE_OPTIONS
from kahuna_env.engine import KahunaConfig

MAX_SEED = 2**63 - 1
"""Largest play seed the page may ask for."""
NEW_GAME_RULE_OPTIONS = tuple(name for name in RULE_OPTIONS if name != "first_player")
"""The rule options a new game may set: KahunaConfig's, but ``first_player`` (the request's ``seat`` picks the side)."""
NEW_GAME_FIELDS = ("opponent", "seat", "seed", *NEW_GAME_RULE_OPTIONS)
"""The fields of a new-game request."""


class WebError(ValueError):
    """A request the server refuses: a one-line message and the HTTP status (4xx) to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def lone_surrogate(value: Any) -> bool:
    """Whether a JSON value (strings, keys, nested lists and objects) holds a lone surrogate such as ``\\ud800``.

    JSON's ``\\u`` escapes can spell one; Python reads it, but it is not text: no answer holding it could be
    encoded.  Iterative, so any nesting that parsed is walked.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str) -> Any:
    """``json.loads`` refusing ``NaN``, ``Infinity``, ``-Infinity`` and lone surrogates (a one-line ``ValueError``).

    Python's ``json`` reads them by default, but they are not JSON text: a
    value holding one cannot be sent back (every later answer showing it would fail).
    """
    data = json.loads(text, parse_constant=_refuse_constant)
    if lone_surrogate(data):
        raise ValueError("a string holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair): not text")
    return data


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a value from a request, cut to ``limit`` characters (for a one-line message)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def digits_to_int(value: Any) -> Any:
    """A string of at most 30 ASCII digits (spaces around allowed) as an int; anything else unchanged."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 30:
        return int(value.strip())
    return value


def int_field(params: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    """``params[key]`` as an integer in ``low..high`` (digits in a string count), ``default`` when absent or empty."""
    value = params.get(key, default)
    if value is None or value == "":
        return default
    value = digits_to_int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WebError(f"{key!r} must be an integer in {low}..{high}, got {short(value)}")
    return value


def parse_config(params: Mapping[str, Any]) -> KahunaConfig:
    """The rule options of a new-game request (:data:`NEW_GAME_RULE_OPTIONS`); :class:`WebError` if bad."""
    # A form sends "" and a client may send [] (no handicap) for an option left at its default.
    options = {key: params[key] for key in NEW_GAME_RULE_OPTIONS if params.get(key) not in (None, "", [])}
    try:
        return KahunaConfig.from_dict(options)
    except (TypeError, ValueError) as error:
        raise WebError(f"bad rule options: {first_line(error)}") from None


def new_game_request(params: Any) -> tuple[Any, int, int, KahunaConfig]:
    """``(opponent, seat, seed, rules)`` of a new-game request; :class:`WebError` (400) for a bad field.

    The opponent is returned as given (:func:`kahuna_web.opponents.resolve_opponent` checks it);
    without a seed, a random one is drawn.
    """
    if not isinstance(params, Mapping):
        raise WebError("a new game needs a JSON object with 'opponent', 'seat', 'seed' and rule options")
    unknown = sorted(str(key)[:40] for key in params if key not in NEW_GAME_FIELDS)
    if unknown:
        raise WebError(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(NEW_GAME_FIELDS)}")
    seat = int_field(params, "seat", 0, 1, 0)
    seed = int_field(params, "seed", 0, MAX_SEED, None)
    if seed is None:
        seed = secrets.randbits(32)
    assert seat is not None
    return params.get("opponent", "greedy"), seat, seed, parse_config(params)
