"""``kahuna-replay``: re-render a recorded game and check that it reproduces exactly.

Examples::

    kahuna-eval greedy mcts --games 2 --record games/
    kahuna-replay games/pairing00-game0000-greedy-vs-mcts.json
    kahuna-replay game.json --gif game.gif --quiet

A record (written by ``kahuna-eval --record`` or ``kahuna-play --record``;
the format is :mod:`kahuna_arena.records`) is a JSON action log.  The game is
rebuilt from its seed and config (the same seed gives the same deal and the
same reshuffles), every action is replayed by the one replayer
(:func:`kahuna_arena.records.replay_record`, through the one play loop
:func:`kahuna_arena.match.play`), and the final scores, final-scoring points and
winner are compared with the recorded ones; a record without a result must
stop before the game ends.  The board is printed at the start and after
every turn (spectator view: both hands), each action on its own line; the
players' names are printed with control characters shown as escapes
(``\\x1b``), never sent to the terminal.
``--gif PATH`` writes one frame per action.  Exit code 0 when the replay
reproduces the record, 1 when it does not (an illegal action, actions after
the end, a different or missing result), 2 for a file that is not a valid
record (each problem named in one line).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from kahuna_arena.match import OnAction
from kahuna_arena.records import ReplayError, read_record, replay_record
from kahuna_env.actions import describe_action
from kahuna_env.cli import (
    OneLineParser,
    add_force_argument,
    check_gif_path,
    exit_with_error,
    quiet_on_closed_pipe,
    terminal_safe,
    write_gif,
)
from kahuna_env.engine import KahunaGame

PROGRAM = "kahuna-replay"


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-replay`` argument parser."""
    parser = OneLineParser(prog=PROGRAM, description="Re-render a recorded Kahuna game and check it reproduces.")
    parser.add_argument("file", type=Path, metavar="FILE", help="a JSON game record (kahuna-eval --record)")
    parser.add_argument("--gif", type=Path, metavar="PATH", help="also save the game as an animated GIF")
    parser.add_argument("--quiet", action="store_true", help="print only the result check, not the game")
    add_force_argument(parser)
    return parser


def _fail(message: str, code: int) -> NoReturn:
    exit_with_error(PROGRAM, message, code)


def load_record(path: str | Path) -> dict[str, Any]:
    """Read and validate a game record (:func:`kahuna_arena.records.read_record`)."""
    return read_record(path)


def _player_names(record: Mapping[str, Any]) -> list[str]:
    """How the output names each seat: ``player_0 (NAME)``, the name as a record holds it, escapes shown as text."""
    players = record["players"]
    return [f"player_{seat} ({terminal_safe(players[seat])})" for seat in (0, 1)]


def replay(
    record: Mapping[str, Any],
    out: IO[str] | None = None,
    frames: list[np.ndarray] | None = None,
    on_action: OnAction | None = None,
) -> KahunaGame:
    """Replay ``record`` with the one replayer (:func:`kahuna_arena.records.replay_record`) and return the final game.

    With ``out``, the game is printed (board at the start and after every
    turn, every action); ``frames`` collects one picture per action, and
    ``on_action`` (as in :func:`kahuna_arena.match.play`) is called after each.  Raises
    ``ValueError`` for a record that is not valid (:func:`kahuna_arena.records.check_record`)
    and :class:`ReplayError` when an action is illegal, actions follow the
    end of the game, or the result differs from the recorded one (a record
    without a result must end before the game does).
    """
    render_ansi = render_rgb = None
    if out is not None:
        from kahuna_env.render import render_ansi
    if frames is not None:
        from kahuna_env.render import render_rgb
    names: list[str] = []

    def deal(game: KahunaGame) -> None:
        names.extend(_player_names(record))
        if out is not None and render_ansi is not None:
            out.write(f"{names[0]} vs {names[1]}, seed {record['seed']}, {len(record['actions'])} actions\n")
            out.write(render_ansi(game) + "\n")
        if frames is not None and render_rgb is not None:
            frames.append(render_rgb(game))

    number = [0]

    def show(player: int, action: int, game: KahunaGame) -> None:
        number[0] += 1
        if out is not None and render_ansi is not None:
            out.write(f"{number[0]:>4}. {names[player]}: {describe_action(action)}\n")
            if game.is_over or game.current_player != player:
                out.write(render_ansi(game, last_action=action) + "\n")
        if frames is not None and render_rgb is not None:
            frames.append(render_rgb(game, last_action=action))
        if on_action is not None:
            on_action(player, action, game)

    return replay_record(record, show, on_deal=deal)


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Run ``kahuna-replay``; returns the exit code (0 when the replay reproduces the record)."""
    args = build_parser().parse_args(argv)
    out = sys.stdout if stdout is None else stdout
    if args.gif is not None:
        try:
            check_gif_path(args.gif, inputs=[args.file], force=args.force)
        except ValueError as error:
            _fail(str(error), code=2)
    try:
        record = load_record(args.file)
    except (FileNotFoundError, ValueError) as error:
        _fail(str(error), code=2)
    frames: list[np.ndarray] | None = [] if args.gif is not None else None
    try:
        game = replay(record, out=None if args.quiet else out, frames=frames)
    except ReplayError as error:
        _fail(f"{args.file}: {error}", code=1)
    names = _player_names(record)
    if record["result"] is None:
        out.write(f"replayed {len(record['actions'])} actions of an unfinished game (no result recorded)\n")
    else:
        winner = "draw" if game.winner is None else f"{names[game.winner]} wins"
        out.write(f"replay reproduces the record: scores {game.scores[0]} : {game.scores[1]}, {winner}\n")
    if frames is not None and args.gif is not None:
        write_gif(PROGRAM, frames, args.gif, out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
