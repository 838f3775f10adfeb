"""Start positions: the file format of positions training games begin from, its one writer and its one reader.

A start-positions file is JSON Lines, one object per line::

    {"seat": 1, "position": {...}}

``position`` is a position dict (docs/RULES.md, "Positions") of a game that is
not over; ``seat`` (0 or 1) is the seat the learner takes in a game started
from it.  ``python -m kahuna_arena.start_positions`` writes such files from
``kahuna-eval --record`` game records (the positions of the games an agent lost).

With ``rollout.start_positions: FILE`` and ``rollout.start_share: S`` a share
``S`` of each update's games against ``rollout.start_opponent`` start from a
position drawn uniformly from the file instead of a fresh deal.  Each drawn
position is first **determinized from the learner's seat**
(:meth:`kahuna_env.engine.KahunaGame.determinize`): the cards the learner
cannot see (the opponent's hand apart from its publicly known cards, its
face-down discards, the pile order) are dealt again at random, so a position
teaches what its public information supports, not the hidden cards of the
game it came from.  Those games are kept out of the per-opponent win rates
(``rollout/win_rate_vs_*``) and reported as ``rollout/win_rate_from_start``.

Everything in the file is checked before training starts; a bad file is one
line naming the line and what is wrong, never more of its content than a short
excerpt of the bad value (at most 80 characters, :func:`kahuna_env.config.shown`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_env.cli import check_input_file
from kahuna_env.config import shown
from kahuna_env.engine import KahunaConfig, KahunaGame

START_KEYS = ("seat", "position")
"""The keys of one line of a start-positions file."""
MAX_START_POSITIONS = 200_000
"""Most positions a start-positions file may hold."""
MAX_FILE_BYTES = 256 * 2**20
"""Largest start-positions file read (256 MiB)."""
MAX_LINE_BYTES = 64 * 2**10
"""Longest line of a start-positions file (a position takes about 1.5 KiB)."""


def start_line(seat: int, game: KahunaGame) -> str:
    """One line of a start-positions file: ``game``'s position with the learner at ``seat``."""
    return json.dumps({"seat": int(seat), "position": game.to_dict()}, separators=(",", ":"))


class StartPositionsError(ValueError):
    """A start-positions file that cannot be used (one line: the file's line and what is wrong)."""


@dataclasses.dataclass(frozen=True)
class StartPositions:
    """The validated positions of a start-positions file, ready to draw from.

    Attributes:
        games: each position as a game (never played on: draws determinize copies).
        seats: the learner's seat of each position.
    """

    games: tuple[KahunaGame, ...]
    seats: np.ndarray

    def __len__(self) -> int:
        return len(self.games)

    def draw(self, count: int, rng: np.random.Generator) -> tuple[list[dict[str, Any]], np.ndarray]:
        """``count`` positions drawn uniformly (with replacement), each determinized from its learner's seat.

        Returns the position dicts and the learner's seat of each; everything random comes from ``rng``.
        """
        chosen = rng.integers(len(self.games), size=count)
        positions = [self.games[k].determinize(int(self.seats[k]), rng).to_dict() for k in chosen.tolist()]
        return positions, self.seats[chosen].copy()


def load_start_positions(path: str | Path, config: KahunaConfig | None = None) -> StartPositions:
    """Read and validate a start-positions file (see the module docstring).

    Every line must be an object with exactly the keys ``seat`` (0 or 1) and
    ``position`` (a valid position, not over, played with ``config``'s rules
    when given).  Raises :class:`StartPositionsError` (one line, naming the line)
    for anything else: an unreadable or oversized file, invalid JSON, a bad
    position, or no positions at all.
    """
    path = Path(path)
    name = path.name
    try:
        size = path.stat().st_size
        try:
            check_input_file(path, "a start-positions file")
        except ValueError:  # the message names the file only (its path may be a server's)
            raise StartPositionsError(f"start positions {name}: not a regular file") from None
        if size > MAX_FILE_BYTES:
            raise StartPositionsError(f"start positions {name}: {size} bytes, more than {MAX_FILE_BYTES}")
        raw = path.read_bytes()
    except OSError as error:
        raise StartPositionsError(f"start positions {name}: cannot be read ({error.strerror or 'error'})") from None
    games: list[KahunaGame] = []
    seats: list[int] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"start positions {name}, line {number}"
        if len(line) > MAX_LINE_BYTES:
            raise StartPositionsError(f"{where}: longer than {MAX_LINE_BYTES} bytes")
        if len(games) >= MAX_START_POSITIONS:
            raise StartPositionsError(f"start positions {name}: more than {MAX_START_POSITIONS} positions")
        seat, game = _parse_line(line, where)
        if config is not None and game.config != config:
            raise StartPositionsError(
                f"{where}: the position's rules {game.config.to_dict()} are not the training games' {config.to_dict()}"
            )
        games.append(game)
        seats.append(seat)
    if not games:
        raise StartPositionsError(f"start positions {name}: no positions")
    return StartPositions(tuple(games), np.asarray(seats, dtype=np.int8))


def _parse_line(line: bytes, where: str) -> tuple[int, KahunaGame]:
    try:
        entry = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise StartPositionsError(f"{where}: not a JSON object") from None
    if not isinstance(entry, dict):
        raise StartPositionsError(f"{where}: not a JSON object")
    unknown = sorted(str(key) for key in entry if key not in START_KEYS)
    missing = [key for key in START_KEYS if key not in entry]
    if unknown or missing:
        problem = f"unknown key {shown(unknown[0])}" if unknown else f"missing key {missing[0]!r}"
        raise StartPositionsError(f"{where}: {problem} (each line has exactly {', '.join(START_KEYS)})")
    seat = entry["seat"]
    if type(seat) is not int or seat not in (0, 1):
        raise StartPositionsError(f"{where}: seat must be 0 or 1")
    if not isinstance(entry["position"], dict):
        raise StartPositionsError(f"{where}: position must be an object")
    try:
        game = KahunaGame.from_dict(entry["position"])
    except ValueError as error:
        raise StartPositionsError(f"{where}: {error}") from None
    if game.is_over:
        raise StartPositionsError(f"{where}: the game is over")
    return seat, game
