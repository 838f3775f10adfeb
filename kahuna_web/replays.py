"""Records on the page: every position of a record, a position before any of its actions, the undo notes.

Records replay with the one replayer (:func:`kahuna_arena.records.replay_record`,
``kahuna-replay``'s rules); a record that is malformed, holds a string that
is not text (a lone surrogate) or does not replay is a one-line
:class:`~kahuna_web.validate.WebError` (422).  No HTTP here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kahuna_arena.match import OnAction
from kahuna_arena.records import ReplayError, check_record, replay_record
from kahuna_env.cli import first_line
from kahuna_env.engine import KahunaGame
from kahuna_web.validate import WebError, digits_to_int, lone_surrogate
from kahuna_web.views import action_line, action_text, result_text, spectator_view


def undo_note(who: str, plies: Sequence[int]) -> str:
    """``you took moves back 2 times, at plies 5, 9``: the note of a game's undos (at most 20 plies named)."""
    shown = ", ".join(str(ply) for ply in plies[:20]) + (", ..." if len(plies) > 20 else "")
    times = f"{len(plies)} time{'s' * (len(plies) != 1)}"
    return f"{who} took moves back {times}, at pl{'ies' if len(plies) != 1 else 'y'} {shown}"


def replay_frames(record: Any, source: str = "record") -> dict[str, Any]:
    """Check a record with ``kahuna-replay``'s rules and return every position of it for the page.

    ``frames[k]`` is the spectator's view after ``k`` actions (``frames[0]``
    the deal); ``moves[k]`` who played action ``k + 1`` and its text
    (:func:`~kahuna_web.views.action_text`); ``notes`` what the page says
    besides (the undos of the record's ``undos`` field).  A record that is
    malformed, holds a string that is not text (a lone surrogate) or does not
    replay raises :class:`WebError` (422).
    """
    frames: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    face_up: list[Sequence[int | None]] = []  # the face-up row before the next action

    def after(player: int, action: int, game: KahunaGame) -> None:
        moves.append({"player": player, "text": action_text(action, face_up[0]), "line": action_line(action)})
        frames.append(spectator_view(game))
        face_up[0] = game.face_up

    def deal(game: KahunaGame) -> None:
        frames.append(spectator_view(game))
        face_up.append(game.face_up)

    if lone_surrogate(record):
        raise WebError(f"{source} holds a string that is not text (a lone surrogate such as \\ud800)", 422)
    final = _replayed(record, source, on_action=after, on_deal=deal)
    players = list(record["players"])
    return {
        "players": players,
        "seed": str(record["seed"]),  # text: a 64-bit seed does not fit a JavaScript number
        "config": record["config"],
        "finished": final.is_over,
        "result": result_text(final, players) if final.is_over else "unfinished game",
        "frames": frames,
        "moves": moves,
        "notes": record_notes(record),
    }


def record_notes(record: Mapping[str, Any]) -> list[str]:
    """The notes of a checked record: who took moves back, at which plies (its ``undos`` field)."""
    plies: dict[int, list[int]] = {}
    for mark in record.get("undos", []):
        plies.setdefault(mark["player"], []).append(mark["ply"])
    return [undo_note(record["players"][player], plies[player]) for player in sorted(plies)]


def record_position(record: Any, ply: Any, source: str = "the record") -> tuple[KahunaGame, int]:
    """The position of a record before its action ``ply`` (0: the deal), and the ply; :class:`WebError` if bad."""
    try:
        check_record(record, source)
    except ValueError as error:
        raise WebError(first_line(error), 422) from None
    actions = record["actions"]
    ply = digits_to_int(ply)
    if isinstance(ply, bool) or not isinstance(ply, int) or not 0 <= ply <= len(actions):
        raise WebError(f"'ply' must be an integer in 0..{len(actions)} (the record's actions), got {repr(ply)[:40]}")
    return _replayed(record, source, plies=ply), ply


def _replayed(
    record: Any,
    source: str,
    on_action: OnAction | None = None,
    plies: int | None = None,
    on_deal: Callable[[KahunaGame], None] | None = None,
) -> KahunaGame:
    """:func:`kahuna_arena.records.replay_record`, its errors as one-line :class:`WebError` (422) naming ``source``."""
    try:
        return replay_record(record, on_action, plies=plies, source=source, on_deal=on_deal)
    except ReplayError as error:
        raise WebError(f"{source} does not replay: {first_line(error)}", 422) from None
    except ValueError as error:
        raise WebError(first_line(error), 422) from None
