"""``kahuna-eval --json`` files for the page: checked, and cut down to the two tables it shows.

:func:`results_tables` accepts what :meth:`kahuna_arena.report.EvaluationReport.to_dict`
writes (``format: kahuna-eval-v1``) and returns the pairings (W-D-L, score,
95% interval, margin, games per second) and the ratings (Elo, ±95%, games,
score); anything else is a :class:`kahuna_web.validate.WebError` naming the
first field that is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kahuna_web.validate import WebError, parse_json

RESULTS_FORMAT = "kahuna-eval-v1"
"""``format`` of the files ``kahuna-eval --json`` writes."""
_PAIRING_FIELDS = ("a", "b", "games", "wins", "draws", "losses", "score", "score_ci95", "mean_margin")
_RATING_FIELDS = ("entrant", "elo", "elo_se", "elo_ci95", "games", "score")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _interval(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)


_CHECKS = {
    "a": lambda v: isinstance(v, str) and v != "",
    "b": lambda v: isinstance(v, str) and v != "",
    "entrant": lambda v: isinstance(v, str) and v != "",
    "games": _count,
    "wins": _count,
    "draws": _count,
    "losses": _count,
    "score": _number,
    "mean_margin": _number,
    "elo": _number,
    "elo_se": _number,
    "score_ci95": _interval,
    "elo_ci95": _interval,
}


def _rows(data: Mapping[str, Any], key: str, fields: tuple[str, ...], source: str) -> list[dict[str, Any]]:
    rows = data[key]
    if not isinstance(rows, list):
        raise WebError(f"{source}: {key!r} must be a list, got {type(rows).__name__}", 422)
    out = []
    for number, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise WebError(f"{source}: '{key}[{number}]' must be an object", 422)
        for field in fields:
            if field not in row:
                raise WebError(f"{source}: '{key}[{number}]' lacks {field!r}", 422)
            if not _CHECKS[field](row[field]):
                raise WebError(f"{source}: '{key}[{number}].{field}' is malformed: {json.dumps(row[field])[:40]}", 422)
        out.append({field: row[field] for field in fields})
    return out


def results_tables(data: Any, source: str = "results") -> dict[str, Any]:
    """The pairings and ratings of a ``kahuna-eval --json`` object, checked; :class:`WebError` (422) if malformed."""
    if not isinstance(data, Mapping):
        raise WebError(f"{source} is not a kahuna-eval --json file (a JSON object is expected)", 422)
    if data.get("format") != RESULTS_FORMAT:
        raise WebError(
            f"{source} is not a kahuna-eval --json file (format {str(data.get('format'))[:40]!r}, "
            f"expected {RESULTS_FORMAT!r})",
            422,
        )
    for key in ("entrants", "pairings", "ratings"):
        if key not in data:
            raise WebError(f"{source}: missing field {key!r}", 422)
    entrants = data["entrants"]
    if not isinstance(entrants, list) or not all(isinstance(e, str) for e in entrants):
        raise WebError(f"{source}: 'entrants' must be a list of strings", 422)
    for key, check, wanted in (
        ("games_per_pairing", _count, "a count"),
        ("total_games", _count, "a count"),
        ("seed", _count, "a non-negative integer"),
        ("config", lambda value: isinstance(value, Mapping), "an object"),
    ):
        if data.get(key) is not None and not check(data[key]):
            raise WebError(f"{source}: {key!r} must be {wanted} or null, got {json.dumps(data[key])[:40]}", 422)
    pairings = _rows(data, "pairings", _PAIRING_FIELDS, source)
    for row, raw in zip(pairings, data["pairings"], strict=True):
        speed = raw.get("games_per_second")
        row["games_per_second"] = speed if _number(speed) else None
    ratings = None if data["ratings"] is None else _rows(data, "ratings", _RATING_FIELDS, source)
    return {
        "source": source,
        "entrants": list(entrants),
        "games_per_pairing": data.get("games_per_pairing"),
        "seed": data.get("seed"),
        "config": data.get("config"),
        "total_games": data.get("total_games"),
        "pairings": pairings,
        "ratings": ratings,
    }


def read_results(path: str | Path) -> dict[str, Any]:
    """Read a ``kahuna-eval --json`` file; ``ValueError`` (one line) if it is missing, not JSON or malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read results file {path}: {getattr(error, 'strerror', None) or error}") from None
    try:
        data = parse_json(text)
    except (ValueError, RecursionError) as error:
        reason = str(error).splitlines()[0] if str(error) else "nested too deeply"
        raise ValueError(f"{path} is not JSON: {reason}") from None
    try:
        return results_tables(data, path.name)
    except WebError as error:
        raise ValueError(str(error)) from None
