"""``python -m kahuna_arena.lost_positions``: a start-positions file from the games an agent lost.

Usage::

    kahuna-eval champion greedy --games 4000 --seed 0 --workers 2 --record runs/records
    python -m kahuna_arena.lost_positions runs/records --player champion --out runs/lost.jsonl

Reads the ``kahuna-eval --record`` / ``kahuna-play --record`` game records given (files,
or folders whose ``*.json`` files are read), keeps the games that ``--player`` lost
(``--draws``: also those it drew), replays each from its seed and writes one line per turn of
``--player`` from round ``--from-round`` on: the position at the start of that turn with
``--player``'s seat as the learner's (the format of
``kahuna_arena.start_positions``, which the trainer's ``rollout.start_positions`` reads).  Training
games drawn from the file are determinized from the learner's seat, so the file's hidden
cards (the other player's hand, the pile) do not matter.

Bad input (a record that is not valid or does not replay, a player in no record or on
both seats of one, an existing output, no game kept) is one line
``lost_positions: error: ...`` and exit code 2, with nothing written; the line shows at
most :data:`MAX_REASON_CHARS` characters of the reason, so a hostile record's content
(a 12,000-character field) is never echoed whole.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kahuna_arena.records import ReplayError, read_record, replay_record
from kahuna_arena.start_positions import start_line
from kahuna_env.cli import OneLineParser, check_writable, exit_with_error, first_line, write_text_atomic
from kahuna_env.config import clipped
from kahuna_env.engine import KahunaGame

PROG = "lost_positions"
MAX_RECORDS = 100_000
"""Most game records read in one call."""
MAX_REASON_CHARS = 200
"""The longest reason an error line gives for a record (the rest is cut, marked ``...``)."""


def record_files(paths: Sequence[Path]) -> list[Path]:
    """The record files named: each file itself, each folder's ``*.json`` files in name order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(file for file in path.glob("*.json") if file.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such file or folder")
        if len(files) > MAX_RECORDS:
            raise ValueError(f"more than {MAX_RECORDS} records")
    if not files:
        raise ValueError("no game records (*.json) in the paths given")
    return files


def seat_of(record: Mapping[str, Any], player: str, source: str) -> int | None:
    """``player``'s seat in the record (None if it did not play); a player on both seats is a ``ValueError``."""
    seats = [seat for seat in (0, 1) if record["players"][seat] == player]
    if len(seats) == 2:
        raise ValueError(f"{source}: {player!r} plays both seats")
    return seats[0] if seats else None


def turn_starts(record: Mapping[str, Any], seat: int, from_round: int) -> list[KahunaGame]:
    """Copies of the game at the start of each of ``seat``'s turns from round ``from_round`` on, in ``record``."""
    starts: list[KahunaGame] = []
    previous = [None]

    def before(game: KahunaGame) -> None:
        if not game.is_over and game.current_player == seat and previous[0] != seat and game.round >= from_round:
            starts.append(game.clone())

    def after(player: int, action: int, game: KahunaGame) -> None:
        previous[0] = player
        before(game)

    replay_record(record, on_action=after, on_deal=before)
    return starts


def lost_positions(
    files: Sequence[Path], player: str, draws: bool, from_round: int
) -> tuple[list[str], dict[str, int]]:
    """The lines of the file and the counts (records, games of ``player``, games kept, positions)."""
    lines: list[str] = []
    counts = {"records": len(files), "games": 0, "kept": 0, "positions": 0}
    for file in files:
        source = file.name
        try:
            record = read_record(file)
        except (OSError, ValueError) as error:
            raise ValueError(f"{source}: {_reason(error)}") from None
        seat = seat_of(record, player, source)
        if seat is None:
            continue
        counts["games"] += 1
        winner = None if record["result"] is None else record["result"]["winner"]
        if record["result"] is None or winner == seat or (winner is None and not draws):
            continue
        counts["kept"] += 1
        try:
            for game in turn_starts(record, seat, from_round):
                lines.append(start_line(seat, game))
        except (ReplayError, ValueError) as error:
            raise ValueError(f"{source}: {_reason(error)}") from None
    counts["positions"] = len(lines)
    if not counts["games"]:
        raise ValueError(f"{player!r} plays in none of the {len(files)} records")
    if not lines:
        raise ValueError(f"no positions: {player!r} lost none of its {counts['games']} games from round {from_round}")
    return lines, counts


def _reason(error: BaseException) -> str:
    """The first line of ``error``'s message, cut to :data:`MAX_REASON_CHARS` characters."""
    return clipped(first_line(error), MAX_REASON_CHARS)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description="Write the positions of the games an agent lost (start positions).")
    parser.add_argument("records", nargs="+", type=Path, help="game record files or folders of them")
    parser.add_argument("--player", required=True, help="the player's name as the records give it (e.g. champion)")
    parser.add_argument("--out", required=True, type=Path, help="the JSON Lines file to write (must not exist)")
    parser.add_argument("--draws", action="store_true", help="also keep the games the player drew")
    parser.add_argument("--from-round", type=int, default=1, choices=(1, 2, 3), help="first round kept (default 1)")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists; choose another --out")
    try:
        check_writable("--out", args.out)
        lines, counts = lost_positions(record_files(args.records), args.player, args.draws, args.from_round)
    except ValueError as error:
        parser.error(first_line(error))
    try:
        write_text_atomic(args.out, "".join(line + "\n" for line in lines))
    except OSError as error:
        exit_with_error(PROG, f"cannot write --out {args.out}: {first_line(error)}", code=1)
    print(
        f"{PROG}: {counts['records']} records, {counts['games']} games of {args.player}, "
        f"{counts['kept']} {'lost or drawn' if args.draws else 'lost'} -> {counts['positions']} positions in {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
