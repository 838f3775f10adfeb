"""``kahuna-play``: play Kahuna in the terminal against a baseline or a checkpoint.

Examples::

    kahuna-play                                   # you are player_0 against greedy
    kahuna-play --opponent mcts:400 --seat 1 --seed 7
    kahuna-play --opponent runs/ppo/checkpoints/latest.pt --gif game.gif --record game.json

Before each of your actions the program prints the board from your side
(:func:`kahuna_env.render.render_ansi` with your seat as the viewer: the
opponent's hand shows only the cards it is known to hold), your hand, the
face-up row and the legal actions with their numbers (the action ids of
:mod:`kahuna_env.actions`).  Type a number (``147``) or the action's text
(``place ALOA-BARI paying ALOA``, ``draw``, ``pass``; case and spacing do
not matter).  Unknown words, numbers out of range and illegal actions are
rejected with a message and you are asked again; ``help`` repeats the
actions, ``quit`` (or end of input) abandons the game.  The opponent's
actions are printed as it plays them; the agent gets only what its seat may
know (:func:`kahuna_env.agents.choose_action`).

``--gif PATH`` saves the game as an animated GIF (one frame per action, the
spectator's view) and ``--record PATH`` as a JSON record that
``kahuna-replay`` re-renders.  Neither may be the opponent's file or the
other output, an existing file is replaced only with ``--force``, and
never when it is a protected file of another kind (an agent file, a
results store: :func:`kahuna_env.cli.check_output_file`).  Input is read from stdin, so a game can be
scripted: ``printf '147\\n...' | kahuna-play``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, NoReturn

import numpy as np

from kahuna_arena.entrants import ENTRANT_FORMS, resolve_entrant
from kahuna_arena.match import Chooser, agent_chooser, play
from kahuna_arena.records import game_record, game_result, write_record
from kahuna_env.actions import DISCARD, DRAW, describe_action, parse_action
from kahuna_env.agents import Agent
from kahuna_env.board import ISLANDS
from kahuna_env.cli import (
    RECORD,
    OneLineParser,
    add_force_argument,
    add_rule_arguments,
    check_gif_path,
    check_output_file,
    exit_with_error,
    first_line,
    non_negative_int,
    quiet_on_closed_pipe,
    terminal_safe,
    write_gif,
)
from kahuna_env.engine import KahunaConfig, KahunaGame

PROGRAM = "kahuna-play"
QUIT_WORDS = ("quit", "exit", "q")
"""Inputs that abandon the game."""
HELP_WORDS = ("help", "?", "h")
"""Inputs that list the legal actions again."""


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-play`` argument parser."""
    parser = OneLineParser(prog=PROGRAM, description="Play Kahuna in the terminal against an agent.")
    parser.add_argument("--opponent", default="greedy", metavar="ENTRANT", help=f"{ENTRANT_FORMS} (default greedy)")
    parser.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat: 0 moves first (default 0)")
    parser.add_argument("--seed", type=non_negative_int, help="seed of the deal and the agent (default: a random one)")
    parser.add_argument("--gif", type=Path, metavar="PATH", help="save the game as an animated GIF")
    parser.add_argument("--record", type=Path, metavar="PATH", help="save the game as a JSON record for kahuna-replay")
    add_rule_arguments(parser)
    add_force_argument(parser)
    return parser


def _fail(message: str, code: int = 2) -> NoReturn:
    exit_with_error(PROGRAM, message, code)


def game_seeds(seed: int) -> tuple[int, int, int]:
    """(deal seed, agent seed, determinization seed) derived from a ``kahuna-play`` seed."""
    values = np.random.SeedSequence(seed).generate_state(3, dtype=np.uint64)
    return int(values[0]), int(values[1]), int(values[2])


def legal_actions_text(game: KahunaGame, columns: int = 2) -> str:
    """The legal actions as ``number  text`` entries in columns."""
    entries = [f"{action:>3}  {describe_action(action)}" for action in game.legal_actions()]
    width = max(len(entry) for entry in entries) + 3
    rows = (len(entries) + columns - 1) // columns
    lines = []
    for row in range(rows):
        cells = [entries[row + rows * column] for column in range(columns) if row + rows * column < len(entries)]
        lines.append("  " + "".join(f"{cell:<{width}}" for cell in cells).rstrip())
    return "\n".join(lines)


def player_view_text(game: KahunaGame, seat: int, last_action: int | None = None) -> str:
    """The board from ``seat``'s side, its hand, the face-up row and its legal actions."""
    from kahuna_env.render import render_ansi

    hand = " ".join(ISLANDS[i] for i in game.hand(seat)) or "-"
    face_up = " ".join("----" if card is None else ISLANDS[card] for card in game.face_up)
    return "\n".join(
        [
            render_ansi(game, last_action=last_action, viewer=seat),
            "",
            f"You are player_{seat}.  Your hand: {hand}   face-up row: {face_up}   pile: {game.pile_size}",
            "Legal actions:",
            legal_actions_text(game),
        ]
    )


def read_human_action(game: KahunaGame, seat: int, stdin: IO[str], out: IO[str]) -> int | None:
    """Ask for an action until a legal one is given; ``None`` when the player quits (or input ends)."""
    while True:
        out.write("Your action (number or text; 'help', 'quit'): ")
        out.flush()
        line = stdin.readline()
        if not line:
            out.write("\n(end of input)\n")
            return None
        text = line.strip()
        if not text:
            continue
        if text.lower() in QUIT_WORDS:
            return None
        if text.lower() in HELP_WORDS:
            out.write(player_view_text(game, seat) + "\n")
            continue
        try:
            action = parse_action(text)
        except ValueError as error:
            out.write(f"  {error}; try again\n")
            continue
        if not game.is_legal(action):
            out.write(
                f"  action {action} ({describe_action(action)}) is not legal now; choose one of the listed actions\n"
            )
            continue
        return action


def _result_text(game: KahunaGame, seat: int, opponent_name: str) -> str:
    scores = game.scores
    mine, theirs = scores[seat], scores[1 - seat]
    if game.winner is None:
        verdict = "The game is a draw"
    elif game.winner == seat:
        verdict = "You win"
    else:
        verdict = f"{opponent_name} wins"
    final = game.final_points
    return (
        f"{verdict}: you {mine} points, {opponent_name} {theirs} points "
        f"(final scoring {final[seat]} : {final[1 - seat]})"
    )


def _human_chooser(seat: int, stdin: IO[str], out: IO[str], last: list[int | None]) -> Chooser:
    """A chooser that shows ``seat``'s view and reads its action from ``stdin`` (``None`` when it quits)."""

    def choose(game: KahunaGame) -> int | None:
        out.write("\n" + player_view_text(game, seat, last[0]) + "\n")
        action = read_human_action(game, seat, stdin, out)
        if action is not None:
            out.write(f"You play: {describe_action(action)}\n")
        return action

    return choose


def _announcing_chooser(chooser: Chooser, name: str, out: IO[str]) -> Chooser:
    """``chooser``, printing each action it picks as ``NAME plays: ACTION``."""

    def choose(game: KahunaGame) -> int | None:
        action = chooser(game)
        if action is not None:
            # Only the discarding player knows a face-down card's island (docs/RULES.md, "Public knowledge").
            text = "discard a card face down" if DISCARD <= action < DRAW else describe_action(action)
            out.write(f"{name} plays: {text}\n")
        return action

    return choose


class GameInterrupted(KeyboardInterrupt):
    """Ctrl-C during a game; carries the game and its actions so far, so that they can still be saved."""

    def __init__(self, game: KahunaGame, actions: list[int]) -> None:
        super().__init__("game interrupted")
        self.game = game
        self.actions = actions


def play_against_human(
    opponent: Agent,
    seat: int,
    seed: int,
    config: KahunaConfig | None = None,
    stdin: IO[str] | None = None,
    out: IO[str] | None = None,
    opponent_name: str | None = None,
    frames: list[np.ndarray] | None = None,
) -> tuple[KahunaGame, list[int], bool]:
    """Play one game, the human in ``seat`` reading from ``stdin``; returns (game, actions, finished).

    ``frames`` (if given) collects a spectator picture after every action
    (:func:`kahuna_env.render.render_rgb`).  Ctrl-C raises
    :class:`GameInterrupted` with the game as it stands.
    """
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if out is None else out
    name = terminal_safe(opponent_name or opponent.name)
    deal_seed, agent_seed, choice_seed = game_seeds(seed)
    opponent.reset(agent_seed)
    game = KahunaGame(config, seed=deal_seed)
    rng = np.random.default_rng(choice_seed)
    last: list[int | None] = [None]
    render_rgb = None
    if frames is not None:
        from kahuna_env.render import render_rgb

        frames.append(render_rgb(game))

    actions: list[int] = []

    def after(player: int, action: int, game: KahunaGame) -> None:
        actions.append(action)
        last[0] = action
        if render_rgb is not None and frames is not None:
            frames.append(render_rgb(game, last_action=action))

    choosers: list[Chooser] = [_announcing_chooser(agent_chooser(opponent, rng), name, out)] * 2
    choosers[seat] = _human_chooser(seat, stdin, out, last)
    out.write(f"Kahuna: you are player_{seat}, {name} is player_{1 - seat}; seed {seed}\n")
    try:
        play(game, choosers, after)
    except KeyboardInterrupt:
        raise GameInterrupted(game, actions) from None
    if not game.is_over:
        out.write("Game abandoned.\n")
        return game, actions, False
    from kahuna_env.render import render_ansi

    out.write("\n" + render_ansi(game, last_action=last[0]) + "\n\n" + _result_text(game, seat, name) + "\n")
    return game, actions, True


def check_outputs(args: argparse.Namespace) -> None:
    """``ValueError`` (one line) unless ``--record`` and ``--gif`` may be written (``cli.check_output_file``).

    Neither may be the opponent's file or the other output; an existing file
    is replaced only with ``--force``, and never when it is a protected file
    of another kind (an agent file, a results store, ...).
    """
    from kahuna_arena.entrants import split_search

    try:
        source = Path(split_search(args.opponent)[0])
    except ValueError:  # reported when the opponent is built
        source = Path(args.opponent)
    try:
        inputs = [source] if source.is_file() else []
    except (OSError, ValueError):  # a name the system refuses (too long, a NUL): reported when the opponent is built
        inputs = []
    if args.record is not None:
        check_output_file("--record", args.record, RECORD, inputs=inputs, force=args.force)
    if args.gif is not None:
        others = [("--record", args.record)] if args.record is not None else []
        check_gif_path(args.gif, inputs=[*inputs, *others], force=args.force)


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Run ``kahuna-play``; returns the exit code (0 when the game finished or was abandoned, 130 on Ctrl-C).

    The record and the GIF are written in every case, so an abandoned or
    interrupted game is saved as far as it went.
    """
    args = build_parser().parse_args(argv)
    # Every output path is checked before the game, so that a finished game is never lost to a bad path.
    try:
        check_outputs(args)
    except ValueError as error:
        _fail(str(error))
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    try:
        opponent = resolve_entrant(args.opponent, seed=seed)
    except (FileNotFoundError, ValueError) as error:
        _fail(str(error))
    if args.gif is not None:
        try:
            import PIL  # noqa: F401

            import kahuna_env.render  # noqa: F401
        except ImportError as error:
            _fail(f"--gif needs kahuna_env.render and Pillow: {error}")
    config = KahunaConfig(variant=args.variant, discard_rule=args.discard_rule)
    frames: list[np.ndarray] | None = [] if args.gif is not None else None
    out = sys.stdout if stdout is None else stdout
    code = 0
    try:
        game, actions, finished = play_against_human(
            opponent, args.seat, seed, config, stdin=stdin, out=out, opponent_name=args.opponent, frames=frames
        )
    except GameInterrupted as interrupted:  # what was played is still saved below
        out.write("\nGame abandoned.\n")
        game, actions, finished, code = interrupted.game, interrupted.actions, False, 130
    players = ["human", args.opponent] if args.seat == 0 else [args.opponent, "human"]
    if args.record is not None:
        record = game_record(
            players=players,
            seed=game_seeds(seed)[0],
            config=config,
            actions=actions,
            result=game_result(game),
            finished=finished,
            play_seed=seed,
        )
        try:
            write_record(args.record, record)
        except OSError as error:
            _fail(f"cannot write --record {args.record}: {first_line(error)}", code=1)
        out.write(f"record written to {args.record}\n")
    if frames is not None and args.gif is not None:
        write_gif(PROGRAM, frames, args.gif, out)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
