"""Game records: the one JSON format that ``kahuna-eval --record`` and ``kahuna-play --record`` write
and ``kahuna-replay`` reads.

A record is an action log from which the rules engine rebuilds the game::

    {"format": "kahuna-record-v1", "players": ["greedy", "mcts"], "seed": 123,
     "config": {...}, "actions": [147, 3, ...],
     "result": {"scores": [7, 3], "final_points": [4, 0], "winner": 0},
     "pairing": 0, "game": 0}

* ``players``: the agents of seat 0 and seat 1 (two non-empty strings).
* ``seed``: the deal's seed, an integer in ``0 .. 2**64 - 1``; the same seed
  gives the same deal and the same reshuffles.
* ``config``: the rule options (:meth:`kahuna_env.engine.KahunaConfig.to_dict`).
* ``actions``: every action id (docs/ENV.md, "Actions"), in order.
* ``result``: the finished game's scores, final-scoring points and winner
  (0, 1 or ``null`` for a draw); ``null`` only for an unfinished game.
* Optional: ``pairing`` and ``game`` (``kahuna-eval``), ``finished`` and
  ``play_seed`` (``kahuna-play``), ``undos`` (``kahuna-serve``: where a
  player took moves back, ``[{"player", "ply", "actions"}]``: the actions
  taken back from that ply on, which are not in ``actions``).

:func:`check_record` validates all of it and names the first field that is
wrong; :func:`read_record` also turns unreadable files (not JSON, not UTF-8,
nested too deeply) into one ``ValueError``.  :func:`write_record` writes
atomically (a temporary file renamed into place, given the umask's mode), so
a record is never half written.

:func:`replay_actions` is the one replayer: it plays a list of actions on a
game through the one play loop (:func:`kahuna_arena.match.play`), each action
checked legal when its turn comes.  :func:`replay_record` checks a record,
replays it from its deal (:func:`record_deal`) and compares the result; so
``kahuna-replay``, the start positions of lost games and the web's replays,
analyses and games rebuilt from its game store all replay the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kahuna_arena.match import OnAction, play
from kahuna_env.actions import NUM_ACTIONS, describe_action
from kahuna_env.cli import check_input_file, first_line, write_text_atomic
from kahuna_env.engine import KahunaConfig, KahunaGame

RECORD_FORMAT = "kahuna-record-v1"
"""``format`` field of game records."""
MAX_SEED = 2**64 - 1
"""Largest deal seed a record may hold (the tools draw 64-bit seeds)."""
_REQUIRED = ("format", "players", "seed", "config", "actions", "result")
_OPTIONAL = ("pairing", "game", "finished", "play_seed", "undos")
_UNDO_FIELDS = ("player", "ply", "actions")
_RESULT_FIELDS = ("scores", "final_points", "winner")


def game_result(game: KahunaGame) -> dict[str, Any] | None:
    """The ``result`` field for ``game``: its scores, final points and winner; ``None`` while it is not over."""
    if not game.is_over:
        return None
    return {"scores": list(game.scores), "final_points": list(game.final_points), "winner": game.winner}


def game_record(
    players: Sequence[str],
    seed: int,
    config: KahunaConfig,
    actions: Sequence[int],
    result: Mapping[str, Any] | None,
    **extra: Any,
) -> dict[str, Any]:
    """A validated game record: the deal's seed, the rules, every action and the result (``None``: unfinished).

    ``extra`` holds the optional fields (``pairing``, ``game``, ``finished``,
    ``play_seed``).  Raises ``ValueError`` if the record would not pass
    :func:`check_record`.
    """
    record = {
        "format": RECORD_FORMAT,
        "players": list(players),
        "seed": int(seed),
        "config": config.to_dict(),
        "actions": [int(a) for a in actions],
        "result": None if result is None else {key: result[key] for key in _RESULT_FIELDS},
        **extra,
    }
    if record["result"] is not None:
        for key in ("scores", "final_points"):
            record["result"][key] = [int(v) for v in record["result"][key]]
    check_record(record)
    return record


def write_record(path: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``record`` as one line of JSON at ``path``, atomically; return the path.  ``OSError`` on failure.

    Through :func:`kahuna_env.cli.write_text_atomic`: its folder is created, and the file gets the mode any
    file the user creates gets (0666 less the umask).
    """
    path = Path(path)
    write_text_atomic(path, json.dumps(record) + "\n")
    return path


def read_record(path: str | Path) -> dict[str, Any]:
    """Read and validate a record; ``FileNotFoundError`` or a one-line ``ValueError`` saying what is wrong."""
    path = Path(path)
    check_input_file(path, "a game record")  # a FIFO would block the read below
    if not path.is_file():
        raise FileNotFoundError(f"record not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not a JSON game record: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise ValueError(f"{path} is not a JSON game record: nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, and integers too long to convert
        raise ValueError(f"{path} is not a JSON game record: {first_line(error)}") from None
    check_record(record, str(path))
    return record


def check_record(record: Any, source: str = "record") -> None:
    """Raise ``ValueError`` naming the first field of ``record`` that is missing, unknown or of the wrong kind."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{source} is not a game record (a JSON object is expected, got {_kind(record)})")
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{source} is not a game record (format {record.get('format')!r}, expected {RECORD_FORMAT!r})")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise ValueError(f"{source}: missing field(s) {', '.join(map(repr, missing))}")
    unknown = sorted(str(key) for key in record if key not in _REQUIRED + _OPTIONAL)
    if unknown:
        raise ValueError(f"{source}: unknown field(s) {', '.join(map(repr, unknown))}")
    players = record["players"]
    if not isinstance(players, list) or len(players) != 2 or not all(isinstance(p, str) and p for p in players):
        raise ValueError(f"{source}: 'players' must be a list of two non-empty strings, got {_short(players)}")
    if not _is_int(record["seed"], 0, MAX_SEED):
        raise ValueError(f"{source}: 'seed' must be an integer in 0..2**64-1, got {_short(record['seed'])}")
    if not isinstance(record["config"], Mapping):
        raise ValueError(f"{source}: 'config' must be an object, got {_kind(record['config'])}")
    try:
        KahunaConfig.from_dict(record["config"])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{source}: 'config': {first_line(error)}") from None
    actions = record["actions"]
    if not isinstance(actions, list):
        raise ValueError(f"{source}: 'actions' must be a list of action ids, got {_kind(actions)}")
    for number, action in enumerate(actions):
        if not _is_int(action, 0, NUM_ACTIONS - 1):
            raise ValueError(
                f"{source}: 'actions[{number}]' must be an action id in 0..{NUM_ACTIONS - 1}, got {_short(action)}"
            )
    _check_result(record["result"], source)
    _check_undos(record.get("undos", []), source)
    for key in ("pairing", "game", "play_seed"):
        if key in record and not _is_int(record[key], 0, None):
            raise ValueError(f"{source}: {key!r} must be a non-negative integer, got {_short(record[key])}")
    if "finished" in record:
        finished = record["finished"]
        if not isinstance(finished, bool):
            raise ValueError(f"{source}: 'finished' must be true or false, got {_short(finished)}")
        if finished != (record["result"] is not None):
            raise ValueError(
                f"{source}: 'finished' is {str(finished).lower()} but 'result' is "
                f"{'null' if record['result'] is None else 'given'}"
            )


def _check_undos(undos: Any, source: str) -> None:
    if not isinstance(undos, list):
        raise ValueError(f"{source}: 'undos' must be a list, got {_kind(undos)}")
    for number, mark in enumerate(undos):
        where = f"{source}: 'undos[{number}]'"
        if not isinstance(mark, Mapping) or set(mark) != set(_UNDO_FIELDS):
            raise ValueError(f"{where} must be an object with exactly {', '.join(map(repr, _UNDO_FIELDS))}")
        if not _is_int(mark["player"], 0, 1) or not _is_int(mark["ply"], 0, None):
            raise ValueError(f"{where}: 'player' must be 0 or 1 and 'ply' a non-negative integer")
        taken = mark["actions"]
        if not isinstance(taken, list) or not all(_is_int(a, 0, NUM_ACTIONS - 1) for a in taken):
            raise ValueError(f"{where}: 'actions' must be a list of action ids in 0..{NUM_ACTIONS - 1}")


def _check_result(result: Any, source: str) -> None:
    if result is None:
        return
    if not isinstance(result, Mapping):
        raise ValueError(f"{source}: 'result' must be null or an object, got {_kind(result)}")
    missing = [key for key in _RESULT_FIELDS if key not in result]
    if missing:
        raise ValueError(f"{source}: 'result' lacks {', '.join(repr(f'result.{key}') for key in missing)}")
    unknown = sorted(str(key) for key in result if key not in _RESULT_FIELDS)
    if unknown:
        raise ValueError(f"{source}: unknown field(s) {', '.join(repr(f'result.{key}') for key in unknown)}")
    for key in ("scores", "final_points"):
        value = result[key]
        if not isinstance(value, list) or len(value) != 2 or not all(_is_int(v, 0, None) for v in value):
            raise ValueError(
                f"{source}: 'result.{key}' must be a list of two non-negative integers, got {_short(value)}"
            )
    winner = result["winner"]
    if winner is not None and not _is_int(winner, 0, 1):
        raise ValueError(f"{source}: 'result.winner' must be 0, 1 or null (a draw), got {_short(winner)}")


def _is_int(value: Any, low: int, high: int | None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value and (high is None or value <= high)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}"
    )


def _short(value: Any, limit: int = 40) -> str:
    """``repr`` of a value from a file, cut to ``limit`` characters (records can be huge and hostile)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = _kind(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------- replaying
class ReplayError(ValueError):
    """Actions that do not replay: an illegal action, actions after the end, or a result other than the recorded one."""


def record_deal(record: Mapping[str, Any]) -> KahunaGame:
    """The game a checked record starts from: its rules and its seed (the same deal and the same reshuffles)."""
    return KahunaGame(KahunaConfig.from_dict(record["config"]), seed=record["seed"])


def replay_actions(game: KahunaGame, actions: Sequence[int], on_action: OnAction | None = None) -> KahunaGame:
    """Play ``actions`` in order on ``game`` through the one play loop (:func:`kahuna_arena.match.play`);
    returns ``game``.

    ``on_action`` is called after each action, as in :func:`kahuna_arena.match.play`.
    Raises :class:`ReplayError` for the first action that is not legal when
    its turn comes (numbered from 1; the game then stands before it) and for
    actions left over once the game is over.
    """
    used = [0]

    def recorded(game: KahunaGame) -> int | None:
        if used[0] == len(actions):
            return None
        action = actions[used[0]]
        used[0] += 1
        if not game.is_legal(action):
            raise ReplayError(
                f"action #{used[0]} does not replay: {action} ({describe_action(action)}) is not legal "
                f"for player_{game.current_player} at that point"
            )
        return action

    play(game, (recorded, recorded), on_action)
    if used[0] < len(actions):
        raise ReplayError(f"the record has {len(actions) - used[0]} action(s) after the end of the game")
    return game


def replay_record(
    record: Any,
    on_action: OnAction | None = None,
    plies: int | None = None,
    source: str = "record",
    on_deal: Callable[[KahunaGame], None] | None = None,
) -> KahunaGame:
    """Check ``record`` and replay it from its deal with :func:`replay_actions`; returns the final game.

    ``on_deal`` sees the game as dealt, before the first action; ``on_action``
    every action after it.  ``plies``: replay only the first ``plies`` actions
    (a position of the record; the result is then not compared).  Raises
    ``ValueError`` naming ``source`` for a record that is not valid
    (:func:`check_record`) and :class:`ReplayError` when an action is
    illegal, actions follow the end of the game, or the result differs from
    the recorded one (a record without a result must end before the game does).
    """
    check_record(record, source)
    game = record_deal(record)
    if on_deal is not None:
        on_deal(game)
    actions = record["actions"]
    replay_actions(game, actions if plies is None else actions[:plies], on_action)
    if plies is None:
        _check_outcome(record, game)
    return game


def _check_outcome(record: Mapping[str, Any], game: KahunaGame) -> None:
    """Raise :class:`ReplayError` unless the replayed ``game`` ends as ``record`` says (or neither ends)."""
    result = record["result"]
    replayed = game_result(game)
    if result is None:
        if replayed is not None:
            raise ReplayError(
                f"the replayed game ends (scores {game.scores[0]} : {game.scores[1]}, winner {game.winner}) "
                "but the record has no result"
            )
        return
    if replayed is None:
        raise ReplayError(f"the record ends after {len(record['actions'])} actions but the game is not over")
    for key in ("scores", "winner", "final_points"):
        if result[key] != replayed[key]:
            raise ReplayError(
                f"replay does not reproduce the record: recorded {key.replace('_', ' ')} {result[key]}, "
                f"replayed {replayed[key]}"
            )
