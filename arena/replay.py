"""``kahuna-replay``: re-render a recorded game and check that it reproduces exactly.

Examples::

    kahuna-eval greedy mcts --games 2 --record games/
    kahuna-replay games/pairing00-game0000-greedy-vs-mcts.json
    kahuna-replay game.json --gif game.gif --quiet

A record (written by ``kahuna-eval --record`` or ``kahuna-play --record``)
is a JSON action log::

    {"format": "kahuna-record-v1", "players": ["greedy", "mcts"], "seed": 123,
     "config": {...}, "actions": [147, 3, ...],
     "result": {"scores": [7, 3], "final_points": [4, 0], "winner": 0}}

The game is rebuilt from the seed and the config (the same seed gives the
same deal and the same reshuffles), every action is applied with the rules
engine, and the final scores and winner are compared with the recorded ones.
The board is printed at the start and after every turn (spectator view: both
hands), each action on its own line.  ``--gif PATH`` writes one frame per
action.  Exit code 0 when the replay reproduces the record, 1 when it does
not (an illegal action or a different result), 2 for an unreadable file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from arena.cli import OneLineParser, exit_with_error, write_gif
from arena.evaluation import RECORD_FORMAT
from kahuna_env.actions import describe_action
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame

PROGRAM = "kahuna-replay"


class ReplayError(ValueError):
    """A record that does not replay: an illegal action or a result different from the recorded one."""


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-replay`` argument parser."""
    parser = OneLineParser(prog=PROGRAM, description="Re-render a recorded Kahuna game and check it reproduces.")
    parser.add_argument("file", type=Path, metavar="FILE", help="a JSON game record (kahuna-eval --record)")
    parser.add_argument("--gif", type=Path, metavar="PATH", help="also save the game as an animated GIF")
    parser.add_argument("--quiet", action="store_true", help="print only the result check, not the game")
    return parser


def _fail(message: str, code: int) -> NoReturn:
    exit_with_error(PROGRAM, message, code)


def load_record(path: str | Path) -> dict[str, Any]:
    """Read and validate a game record; ``FileNotFoundError`` or ``ValueError`` saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"record not found: {path}")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a JSON game record: {error}") from None
    check_record(record, str(path))
    return record


def check_record(record: Any, source: str = "record") -> None:
    """Raise ``ValueError`` unless ``record`` has the fields of a game record with sensible types."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{source} is not a game record (a JSON object is expected)")
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{source} is not a game record (format {record.get('format')!r}, expected {RECORD_FORMAT!r})")
    seed = record.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"{source}: 'seed' must be a non-negative integer, got {seed!r}")
    actions = record.get("actions")
    if not isinstance(actions, list) or any(isinstance(a, bool) or not isinstance(a, int) for a in actions):
        raise ValueError(f"{source}: 'actions' must be a list of action ids")
    if not isinstance(record.get("config", {}), Mapping):
        raise ValueError(f"{source}: 'config' must be an object")
    result = record.get("result")
    if result is not None and (not isinstance(result, Mapping) or not {"scores", "winner"} <= set(result)):
        raise ValueError(f"{source}: 'result' must be null or an object with 'scores' and 'winner'")


def _player_names(record: Mapping[str, Any]) -> list[str]:
    players = record.get("players")
    if isinstance(players, list) and len(players) == 2:
        return [f"player_{seat} ({players[seat]})" for seat in (0, 1)]
    return ["player_0", "player_1"]


def replay(
    record: Mapping[str, Any],
    out: IO[str] | None = None,
    frames: list[np.ndarray] | None = None,
) -> KahunaGame:
    """Replay ``record`` with the rules engine and return the final game.

    With ``out``, the game is printed (board at the start and after every
    turn, every action); ``frames`` collects one picture per action.  Raises
    :class:`ReplayError` when an action is illegal or the result differs from
    the recorded one.
    """
    check_record(record)
    config = KahunaConfig.from_dict(record.get("config") or {})
    game = KahunaGame(config, seed=record["seed"])
    names = _player_names(record)
    render_ansi = None
    if out is not None:
        from kahuna_env.render import render_ansi

        out.write(f"{names[0]} vs {names[1]}, seed {record['seed']}, {len(record['actions'])} actions\n")
        out.write(render_ansi(game) + "\n")
    render_rgb = None
    if frames is not None:
        from kahuna_env.render import render_rgb

        frames.append(render_rgb(game))
    for number, action in enumerate(record["actions"], 1):
        if game.is_over:
            raise ReplayError(
                f"the record has {len(record['actions']) - number + 1} action(s) after the end of the game"
            )
        player = game.current_player
        try:
            game.step(action)
        except IllegalActionError as error:
            raise ReplayError(f"action #{number} does not replay: {error}") from None
        if out is not None and render_ansi is not None:
            out.write(f"{number:>4}. {names[player]}: {describe_action(action)}\n")
            if game.is_over or game.current_player != player:
                out.write(render_ansi(game, last_action=action) + "\n")
        if frames is not None and render_rgb is not None:
            frames.append(render_rgb(game, last_action=action))
    result = record.get("result")
    if result is not None:
        if not game.is_over:
            raise ReplayError(f"the record ends after {len(record['actions'])} actions but the game is not over")
        if list(result["scores"]) != game.scores or result["winner"] != game.winner:
            raise ReplayError(
                f"replay does not reproduce the record: recorded scores {list(result['scores'])} winner "
                f"{result['winner']}, replayed scores {game.scores} winner {game.winner}"
            )
        if "final_points" in result and list(result["final_points"]) != game.final_points:
            raise ReplayError(
                f"replay does not reproduce the record: recorded final points {list(result['final_points'])}, "
                f"replayed {game.final_points}"
            )
    return game


def main(argv: Sequence[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Run ``kahuna-replay``; returns the exit code (0 when the replay reproduces the record)."""
    args = build_parser().parse_args(argv)
    out = sys.stdout if stdout is None else stdout
    try:
        record = load_record(args.file)
    except (FileNotFoundError, ValueError) as error:
        _fail(str(error), code=2)
    frames: list[np.ndarray] | None = [] if args.gif is not None else None
    try:
        game = replay(record, out=None if args.quiet else out, frames=frames)
    except ReplayError as error:
        _fail(str(error), code=1)
    except ValueError as error:  # a config the engine rejects
        _fail(f"{args.file}: {error}", code=2)
    names = _player_names(record)
    if record.get("result") is None:
        out.write(f"replayed {len(record['actions'])} actions of an unfinished game (no result recorded)\n")
    else:
        winner = "draw" if game.winner is None else f"{names[game.winner]} wins"
        out.write(f"replay reproduces the record: scores {game.scores[0]} : {game.scores[1]}, {winner}\n")
    if frames is not None and args.gif is not None:
        write_gif(PROGRAM, frames, args.gif, out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
