"""What the page receives: the board's fixed geometry and the JSON view of a game from one seat (or a spectator's).

Nothing here knows about HTTP.  :func:`seat_view` is the no-leak boundary of
the web app: it is built only from what the seat may know (its own hand, the
opponent's hand size and the cards the opponent is publicly known to hold,
the face-up row, the pile size, the open discards, its own face-down
discards and the number of the opponent's) and from the public board, so
two games with the same public history and different hidden cards give the
same view.  Moves are labelled for people with the position they are played
in (:func:`action_text`: ``take LALE (face-up)`` rather than the action
encoding's ``take face-up slot 1``).  The legal actions are listed only while the seat is to act (the
opponent's legal actions would tell its cards), and an opponent's face-down
discard is shown as "discard a card face down" (:func:`public_action_text`).

:func:`spectator_view` shows everything (both hands, every face-down
discard) and is used for replaying records, which are public game logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kahuna_env.actions import (
    ACTION_LINE,
    DISCARD,
    DRAW,
    PAID_ISLANDS,
    PASS,
    PLACE_B,
    REMOVE_AB,
    TAKE,
    describe_action,
)
from kahuna_env.board import ISLANDS, LINE_NAMES, LINES, MAJORITY, NUM_ISLANDS, NUM_LINES
from kahuna_env.engine import QUERIES, KahunaGame
from kahuna_env.render import ISLAND_RADIUS, PLAYER_COLOURS, island_pixel
from kahuna_env.schema import FIELD_BY_NAME

BOARD_WIDTH = 680
"""Width of the SVG board in layout pixels (the board part of :func:`kahuna_env.render.render_rgb`)."""
BOARD_HEIGHT = 600
"""Height of the SVG board in layout pixels."""


def board_geometry() -> dict[str, Any]:
    """The fixed board for the page: islands at the render coordinates, lines, majorities and player colours."""
    islands = []
    for island, name in enumerate(ISLANDS):
        x, y = island_pixel(island)
        islands.append({"id": island, "name": name, "x": round(x, 1), "y": round(y, 1), "majority": MAJORITY[island]})
    return {
        "width": BOARD_WIDTH,
        "height": BOARD_HEIGHT,
        "island_radius": ISLAND_RADIUS,
        "islands": islands,
        "lines": [{"id": line, "name": LINE_NAMES[line], "a": a, "b": b} for line, (a, b) in enumerate(LINES)],
        "colours": ["#{:02x}{:02x}{:02x}".format(*colour) for colour in PLAYER_COLOURS],
    }


def action_kind(action: int) -> str:
    """``place``, ``remove``, ``discard``, ``draw``, ``take``, ``pass`` or ``free`` (a free bridge)."""
    if action < REMOVE_AB:
        return "place"
    if action < DISCARD:
        return "remove"
    if action < DRAW:
        return "discard"
    if action == DRAW:
        return "draw"
    if action < PASS:
        return "take"
    if action == PASS:
        return "pass"
    return "free"


def action_line(action: int) -> int | None:
    """The line ``action`` acts on (places, removes or claims), ``None`` for one that acts on no line."""
    line = ACTION_LINE[action]
    return line if line >= 0 else None


def action_text(action: int, face_up: Sequence[int | None] | None = None) -> str:
    """The page's label of ``action``: :func:`~kahuna_env.actions.describe_action`, a take naming its card.

    ``face_up``: the face-up row where the action is played (``KahunaGame.face_up``); a take of a
    slot holding a card reads ``take LALE (face-up)``.  Without it, the action encoding's text.
    """
    if face_up is not None and TAKE <= action < PASS and face_up[action - TAKE] is not None:
        return f"take {ISLANDS[face_up[action - TAKE]]} (face-up)"
    return describe_action(action)


def action_entry(action: int, face_up: Sequence[int | None] | None = None) -> dict[str, Any]:
    """A legal action for the page: id, text, kind, the line it acts on, the paid islands, the slot taken."""
    kind = action_kind(action)
    entry: dict[str, Any] = {
        "id": action,
        "text": action_text(action, face_up),
        "kind": kind,
        "line": action_line(action),
        "pays": [ISLANDS[i] for i in PAID_ISLANDS[action]],
    }
    if kind == "take":
        entry["slot"] = action - TAKE
    if kind == "discard":
        entry["island"] = ISLANDS[action - DISCARD]
    if kind == "place":
        entry["paying_side"] = "b" if action >= PLACE_B else "a"
    return entry


def public_action_text(
    action: int, player: int, viewer: int | None, face_up: Sequence[int | None] | None = None
) -> str:
    """The text of ``player``'s ``action`` as ``viewer`` may read it (an opponent's face-down discard is hidden).

    ``face_up``: the face-up row before the action (:func:`action_text`).
    """
    if viewer is not None and player != viewer and DISCARD <= action < DRAW:
        return "discard a card face down"
    return action_text(action, face_up)


def _names(counts: list[int]) -> list[str]:
    return [ISLANDS[i] for i in range(NUM_ISLANDS) for _ in range(counts[i])]


def _shown(name: str, value: Any) -> Any:
    """A query's value as the view shows it: a count per island as card names, a slot's island id as its name."""
    shape = FIELD_BY_NAME[name].shape
    if shape == ("islands",):
        return _names(value)
    if shape == ("slots",):
        return [None if card is None else ISLANDS[card] for card in value]
    return value


def _board(game: KahunaGame) -> dict[str, Any]:
    """Everything public: every query the engine takes from the schema's public fields (``QUERIES``: round,
    scores, turn, pile size, face-up row, open discards, ...) under its field's name, then the lines, islands
    and supply.  While the game runs ``final_points`` is null; once it is over ``current_player`` is null;
    outside the final turns ``final_turns_left`` is null."""
    over = game.is_over
    view = {name: _shown(name, getattr(game, name)) for name in QUERIES}
    view.update(
        over=over,
        current_player=None if over else game.current_player,
        final_points=view["final_points"] if over else None,
        final_turns_left=game.final_turns_left if game.in_final_turns else None,
        lines=[game.owner(line) for line in range(NUM_LINES)],
        islands=[
            {"controller": game.controller(i), "bridges": [game.bridge_count(0, i), game.bridge_count(1, i)]}
            for i in range(NUM_ISLANDS)
        ],
        supply=[game.supply(0), game.supply(1)],
    )
    return view


def seat_view(game: KahunaGame, seat: int) -> dict[str, Any]:
    """``game`` as player ``seat`` may see it (see the module docstring); ``legal`` only while ``seat`` acts."""
    view = _board(game)
    opponent = 1 - seat
    hands: list[dict[str, Any]] = [{}, {}]
    hands[seat] = {"size": game.hand_size(seat), "cards": [ISLANDS[i] for i in game.hand(seat)]}
    hands[opponent] = {"size": game.hand_size(opponent), "known": _names(game.known_cards(opponent)), "cards": None}
    face_down: list[Any] = [None, None]
    face_down[seat] = _names(game.face_down_discards(seat))
    face_down[opponent] = sum(game.face_down_discards(opponent))
    view["viewer"] = seat
    view["hands"] = hands
    view["face_down"] = face_down
    mine = not game.is_over and game.current_player == seat
    view["legal"] = [action_entry(a, game.face_up) for a in game.legal_actions()] if mine else []
    return view


def spectator_view(game: KahunaGame) -> dict[str, Any]:
    """``game`` with everything shown (both hands, every face-down discard): for replays of records."""
    view = _board(game)
    view["viewer"] = None
    view["hands"] = [
        {"size": game.hand_size(p), "cards": [ISLANDS[i] for i in game.hand(p)], "known": _names(game.known_cards(p))}
        for p in (0, 1)
    ]
    view["face_down"] = [_names(game.face_down_discards(p)) for p in (0, 1)]
    view["legal"] = []
    return view


# ------------------------------------------------------------------------------------------------ turn summaries
PublicFacts = tuple[
    tuple[int | None, ...], tuple[int | None, ...], tuple[int, int], int, bool, bool, tuple[int | None, ...]
]
"""What :func:`public_facts` keeps of a position: line owners, island controllers, scores, round, final turns,
over, the face-up row."""


def public_facts(game: KahunaGame) -> PublicFacts:
    """The public facts an action's summary compares before and after it (:func:`action_summary`)."""
    return (
        tuple(game.owner(line) for line in range(NUM_LINES)),
        tuple(game.controller(island) for island in range(NUM_ISLANDS)),
        (game.scores[0], game.scores[1]),
        game.round,
        game.in_final_turns,
        game.is_over,
        tuple(game.face_up),
    )


def action_summary(
    before: PublicFacts, game: KahunaGame, action: int, player: int, viewer: int | None
) -> dict[str, Any]:
    """What ``player``'s ``action`` did, as ``viewer`` may know it (``before``: :func:`public_facts` before it).

    ``{"player", "action", "text", "line", "removed_bridges", "control_changes", "scoring"}``: the
    action id (``None`` for the opponent's face-down discard, whose id names the card), its text, the
    line it acted on, the lines whose bridge left the board (a removal, or the bridges a placement
    that took control threw off), the islands whose controller changed (``{"island", "from", "to"}``,
    ``None`` for nobody) and the scoring the action ended with: ``None``, or ``{"round", "points":
    [p0, p1], "detail": {"kind": "interim" | "final" | "no_bridges", "islands": [controlled by 0,
    by 1], "final_points" (final)}}``.  Built only from public facts: nothing hidden shows.
    """
    owners, controllers, scores, round_before, final_turns_left, was_over, face_up = before
    removed = [line for line in range(NUM_LINES) if owners[line] is not None and game.owner(line) is None]
    changes = [
        {"island": island, "from": controllers[island], "to": game.controller(island)}
        for island in range(NUM_ISLANDS)
        if controllers[island] != game.controller(island)
    ]
    points = [game.scores[0] - scores[0], game.scores[1] - scores[1]]
    islands = [len(game.controlled_islands(0)), len(game.controlled_islands(1))]
    scoring: dict[str, Any] | None = None
    if game.round != round_before:
        scoring = {"round": round_before, "points": points, "detail": {"kind": "interim", "islands": islands}}
    elif game.is_over and not was_over:
        final = final_turns_left and action == PASS  # the final scoring ends the last final turn (a pass)
        detail: dict[str, Any] = {"kind": "final" if final else "no_bridges", "islands": islands}
        if final:
            detail["final_points"] = list(game.final_points)
        scoring = {"round": game.round, "points": points, "detail": detail}
    hidden = viewer is not None and player != viewer and DISCARD <= action < DRAW
    return {
        "player": player,
        "action": None if hidden else action,
        "text": public_action_text(action, player, viewer, face_up),
        "line": action_line(action),
        "removed_bridges": removed,
        "control_changes": changes,
        "scoring": scoring,
    }


def last_turn(summaries: list[dict[str, Any]], player: int) -> list[dict[str, Any]]:
    """The summaries of ``player``'s last turn: its last run of actions (the other player's since then skipped)."""
    end = len(summaries)
    while end and summaries[end - 1]["player"] != player:
        end -= 1
    start = end
    while start and summaries[start - 1]["player"] == player:
        start -= 1
    return summaries[start:end]


def game_result(game: KahunaGame, names: list[str], seat: int | None, summaries: list[dict[str, Any]]) -> dict:
    """The end screen of a finished game: winner, scores, every scoring, both hands (revealed only now), a line."""
    if not game.is_over:
        raise ValueError("a game's result is shown only once it is over (it reveals both hands)")
    return {
        "winner": game.winner,
        "scores": list(game.scores),
        "final_points": list(game.final_points),
        "bridges": [game.bridges_on_board(0), game.bridges_on_board(1)],
        "scoring_breakdown": [entry["scoring"] for entry in summaries if entry["scoring"] is not None],
        "revealed_hands": [[ISLANDS[i] for i in game.hand(player)] for player in (0, 1)],
        "text": result_text(game, names, seat),
    }


def result_text(game: KahunaGame, names: list[str], seat: int | None = None) -> str:
    """One line for a finished game: the winner (``You win`` when ``seat`` won) and the points."""
    scores, final = game.scores, game.final_points
    winner = game.winner
    if winner is None:
        verdict = "The game is a draw"
    elif seat is not None and winner == seat:
        verdict = "You win"
    else:
        verdict = f"{names[winner]} wins"
    return (
        f"{verdict}: {names[0]} {_points(scores[0])}, {names[1]} {_points(scores[1])} "
        f"(final scoring {final[0]} : {final[1]})"
    )


def _points(count: int) -> str:
    return f"{count} point" if count == 1 else f"{count} points"


__all__ = [
    "action_entry",
    "action_kind",
    "action_line",
    "action_summary",
    "action_text",
    "board_geometry",
    "game_result",
    "last_turn",
    "public_action_text",
    "public_facts",
    "result_text",
    "seat_view",
    "spectator_view",
]
