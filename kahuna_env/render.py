"""Pictures of a Kahuna game: a text board, an RGB picture (Pillow), a window, and animated GIFs.

* :func:`render_ansi` — a compact text board: round, scores, whose move, the
  face-up row and pile, every island with its controller and bridge counts,
  every line with its owner, the hands and the discard pile.
* :func:`render_rgb` — an ``(HEIGHT, WIDTH, 3)`` ``uint8`` picture: the sea,
  the 27 lines, the islands at the layout coordinates of ``board.LAYOUT`` with their
  names, bridges drawn in the owners' colours (player 0 red, player 1 blue),
  a stone of the controller's colour on each controlled island, and a side
  panel with round, scores, the player to act, the last action, the face-up
  row, the pile size, bridges in supply, the discard pile and both hands.
* :class:`HumanWindow` — shows those pictures in a pygame window when a
  display exists (``DISPLAY`` or ``WAYLAND_DISPLAY`` set); prints the text
  board otherwise.
* :func:`save_gif` and :func:`record_game_gif` — an animated GIF of frames, or
  of a whole game played by two agents.

Perspective: by default a picture is a spectator's view and shows both hands
(the environment's ``render()`` uses that unless ``render_viewer`` is set).
With ``viewer=p`` it shows what player ``p`` may know and nothing else: the
opponent's hand as card backs, with the cards the opponent is publicly known to
hold (taken face up) named; the pile as a count; the discards as counts; and a
last action that is the opponent's face-down discard as "discard a card face
down", without its card (:func:`kahuna_env.actions.describe_action`, the one
description of an action for a viewer).  Two games that differ only in cards
``p`` cannot see give the same text and the same pixels.

Pillow is imported only when a picture is drawn, pygame only when a window is
opened.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_env.actions import check_viewer, describe_action
from kahuna_env.board import ISLAND_LINES, ISLANDS, LAYOUT, LINE_NAMES, LINES, MAJORITY, NUM_ISLANDS, NUM_LINES
from kahuna_env.engine import KahunaConfig, KahunaGame

WIDTH = 960
"""Width of an :func:`render_rgb` picture in pixels."""
HEIGHT = 600
"""Height of an :func:`render_rgb` picture in pixels."""

PLAYER_COLOURS: tuple[tuple[int, int, int], tuple[int, int, int]] = ((210, 55, 50), (40, 95, 200))
"""RGB colour of player 0 (red) and player 1 (blue): bridges, stones, names."""
PLAYER_NAMES = ("player_0", "player_1")
"""How pictures and the text board name the players (the AEC agent names)."""

_SEA = (158, 205, 226)
_FREE_LINE = (226, 238, 244)
_SAND = (238, 216, 160)
_SAND_EDGE = (130, 105, 60)
_INK = (30, 30, 35)
_PANEL = (246, 244, 236)
_MUTED = (120, 120, 120)
_CARD = (252, 248, 232)
_CARD_BACK = (95, 120, 95)

# Board transform: layout coordinates (board.LAYOUT) -> pixels of the board area (left of the panel).
_BOARD_SCALE = 1.75
_BOARD_ORIGIN = (215, 135)
_BOARD_OFFSET = (40, 62)
ISLAND_RADIUS = 27
"""Radius of an island disc in :func:`render_rgb` pictures, in pixels."""
BOARD_WIDTH = 680
"""Width of the board part of a picture; the side panel (hands, cards, scores) lies to its right."""
STONE_OFFSET = 0.75
"""A control stone sits at ``island_pixel + (STONE_OFFSET, -STONE_OFFSET) * ISLAND_RADIUS``."""


def island_pixel(island: int) -> tuple[float, float]:
    """Pixel (x, y) of an island's centre in :func:`render_rgb` pictures (its ``board.LAYOUT`` point, scaled)."""
    x, y = LAYOUT[island]
    return (
        _BOARD_OFFSET[0] + (x - _BOARD_ORIGIN[0]) * _BOARD_SCALE,
        _BOARD_OFFSET[1] + (y - _BOARD_ORIGIN[1]) * _BOARD_SCALE,
    )


# ---------------------------------------------------------------------------------------- text
def _status_line(game: KahunaGame) -> str:
    scores = game.scores
    head = f"Kahuna  round {game.round}/3  scores {PLAYER_NAMES[0]} {scores[0]} : {scores[1]} {PLAYER_NAMES[1]}"
    if game.is_over:
        winner = game.winner
        result = "draw" if winner is None else f"{PLAYER_NAMES[winner]} wins"
        return f"{head}  game over: {result}"
    player = game.current_player
    turn = f"{PLAYER_NAMES[player]} to act"
    details = []
    if game.in_setup:
        details.append(f"handicap setup, {game.setup_left} free bridge(s) left")
    if game.in_final_turns:
        details.append(f"final turns, {game.final_turns_left} left")
    if game.played_this_turn:
        details.append(f"{game.played_this_turn} card(s) played")
    if game.discarded_this_turn:
        details.append(f"{game.discarded_this_turn} discarded")
    if game.must_draw:
        details.append("opponent passed")
    if game.claim_line is not None:
        details.append(f"may claim {LINE_NAMES[game.claim_line]}")
    return f"{head}  {turn}" + (f" ({', '.join(details)})" if details else "")


def _names(islands: Iterable[int]) -> str:
    text = " ".join(ISLANDS[i] for i in islands)
    return text or "-"


def _hand_text(game: KahunaGame, player: int, viewer: int | None) -> str:
    size = game.hand_size(player)
    if viewer is None or viewer == player:
        return f"({size}) {_names(game.hand(player))}"
    known = game.known_cards(player)
    named = [i for i in range(NUM_ISLANDS) for _ in range(known[i])]
    hidden = size - len(named)
    return f"({size}) " + " ".join([ISLANDS[i] for i in named] + ["????"] * hidden) if size else "(0) -"


def last_action_text(game: KahunaGame, last_action: int, viewer: int | None = None) -> str:
    """``"last action: ..."`` for ``last_action``, the action that led to ``game``, as ``viewer`` may know it.

    A face-down discard never ends a turn (docs/RULES.md), so the player who made it is the one
    still to act in ``game``: that is the actor :func:`~kahuna_env.actions.describe_action` is given
    (none once the game is over, which hides the card from both viewers).
    """
    actor = None if game.is_over else game.current_player
    return f"last action: {describe_action(last_action, viewer=viewer, actor=actor)}"


def render_ansi(game: KahunaGame, last_action: int | None = None, viewer: int | None = None) -> str:
    """A compact text board of ``game`` (both hands, or only what ``viewer`` may see).

    Islands show their controller (``0``/``1``/``.``) and each player's bridges
    on their lines against the majority; lines show their owner.  ``last_action``
    is the action that led to ``game`` (see :func:`last_action_text`).
    """
    viewer = check_viewer(viewer)
    out = [_status_line(game)]
    if last_action is not None:
        out.append(last_action_text(game, last_action, viewer))
    face_up = " ".join("----" if card is None else ISLANDS[card] for card in game.face_up)
    out.append(f"face-up: {face_up}   pile: {game.pile_size}")
    out.append("islands (controller  bridges p0/p1  majority):")
    cells = []
    for island in range(NUM_ISLANDS):
        controller = game.controller(island)
        mark = "." if controller is None else str(controller)
        counts = f"{game.bridge_count(0, island)}/{game.bridge_count(1, island)}"
        cells.append(f"{ISLANDS[island]} {mark} {counts} of {len(ISLAND_LINES[island])} (need {MAJORITY[island]})")
    for row in range(0, NUM_ISLANDS, 3):
        out.append("  " + "   ".join(f"{cell:<24}" for cell in cells[row : row + 3]).rstrip())
    out.append("lines (owner 0/1, . free):")
    line_cells = []
    for line in range(NUM_LINES):
        owner = game.owner(line)
        line_cells.append(f"{LINE_NAMES[line]} {'.' if owner is None else owner}")
    for row in range(0, NUM_LINES, 5):
        out.append("  " + "  ".join(f"{cell:<11}" for cell in line_cells[row : row + 5]).rstrip())
    for player in (0, 1):
        out.append(
            f"{PLAYER_NAMES[player]}: hand {_hand_text(game, player, viewer)}   "
            f"bridges {game.bridges_on_board(player)} on board, {game.supply(player)} in supply   "
            f"islands {len(game.controlled_islands(player))}"
        )
    open_cards = sum(game.open_discard)
    face_down = [sum(game.face_down_discards(p)) for p in (0, 1)]
    out.append(
        f"discard: {open_cards} played openly, face down {face_down[0]} by player_0 / {face_down[1]} by player_1"
    )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------- picture
_FONTS: dict[int, Any] = {}


def _font(size: int) -> Any:
    from PIL import ImageFont

    if size not in _FONTS:
        try:
            _FONTS[size] = ImageFont.load_default(size=size)
        except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
            _FONTS[size] = ImageFont.load_default()
    return _FONTS[size]


def _card(draw: Any, x: float, y: float, label: str | None, width: int = 46, height: int = 30) -> None:
    """One card at (x, y): named face up, a back when ``label`` is ``"?"``, an empty slot when ``None``."""
    box = (x, y, x + width, y + height)
    if label is None:
        draw.rounded_rectangle(box, radius=5, outline=_MUTED, width=1)
        return
    if label == "?":
        draw.rounded_rectangle(box, radius=5, fill=_CARD_BACK, outline=_INK, width=1)
        return
    draw.rounded_rectangle(box, radius=5, fill=_CARD, outline=_INK, width=1)
    draw.text((x + width / 2, y + height / 2), label, fill=_INK, font=_font(12), anchor="mm")


def _card_row(draw: Any, x: float, y: float, labels: Sequence[str | None]) -> None:
    for k, label in enumerate(labels):
        _card(draw, x + k * 52, y, label)


def render_rgb(game: KahunaGame, last_action: int | None = None, viewer: int | None = None) -> np.ndarray:
    """A picture of ``game`` as a ``(HEIGHT, WIDTH, 3)`` ``uint8`` array (see the module docstring).

    ``last_action`` is the action that led to ``game`` (see :func:`last_action_text`).
    """
    from PIL import Image, ImageDraw

    viewer = check_viewer(viewer)
    image = Image.new("RGB", (WIDTH, HEIGHT), _SEA)
    draw = ImageDraw.Draw(image)
    _draw_lines(draw, game)  # lines first, then bridges over them, then the islands on top
    _draw_islands(draw, game)
    _draw_title(draw, game, last_action, viewer)
    _draw_panel(draw, game, viewer)
    return np.asarray(image, dtype=np.uint8).copy()


def _draw_lines(draw: Any, game: KahunaGame) -> None:
    """Free lines, bridges in their owner's colour, and the line being claimed."""
    for line, (a, b) in enumerate(LINES):
        start, end = island_pixel(a), island_pixel(b)
        owner = game.owner(line)
        if owner is None:
            draw.line((start, end), fill=_FREE_LINE, width=3)
        else:
            draw.line((start, end), fill=_INK, width=13)
            draw.line((start, end), fill=PLAYER_COLOURS[owner], width=9)
    claim = game.claim_line
    if claim is not None:
        a, b = LINES[claim]
        draw.line((island_pixel(a), island_pixel(b)), fill=(250, 230, 60), width=5)


def _draw_islands(draw: Any, game: KahunaGame) -> None:
    """Each island: its name, bridge counts against its majority, and its controller's stone."""
    r = ISLAND_RADIUS
    for island in range(NUM_ISLANDS):
        x, y = island_pixel(island)
        controller = game.controller(island)
        edge = _SAND_EDGE if controller is None else PLAYER_COLOURS[controller]
        draw.ellipse((x - r, y - r, x + r, y + r), fill=_SAND, outline=edge, width=2 if controller is None else 4)
        draw.text((x, y - 4), ISLANDS[island], fill=_INK, font=_font(13), anchor="mm")
        counts = f"{game.bridge_count(0, island)}:{game.bridge_count(1, island)}/{MAJORITY[island]}"
        draw.text((x, y + 11), counts, fill=_MUTED, font=_font(10), anchor="mm")
        if controller is not None:
            sx, sy = x + r * STONE_OFFSET, y - r * STONE_OFFSET
            draw.ellipse((sx - 9, sy - 9, sx + 9, sy + 9), fill=PLAYER_COLOURS[controller], outline="white", width=2)


def _draw_title(draw: Any, game: KahunaGame, last_action: int | None, viewer: int | None) -> None:
    """The title over the board (round, who acts or the result) and the last action under it."""
    draw.text((20, 14), "Kahuna", fill=_INK, font=_font(24))
    draw.text((140, 22), f"round {game.round} of 3", fill=_INK, font=_font(16))
    if game.is_over:
        winner = game.winner
        result = "Game over: draw" if winner is None else f"Game over: {PLAYER_NAMES[winner]} wins"
        draw.text((300, 22), result, fill=_INK if winner is None else PLAYER_COLOURS[winner], font=_font(16))
    else:
        player = game.current_player
        phase = " (handicap setup)" if game.in_setup else " (final turns)" if game.in_final_turns else ""
        draw.text((300, 22), f"{PLAYER_NAMES[player]} to act{phase}", fill=PLAYER_COLOURS[player], font=_font(16))
    if last_action is not None:
        draw.text((20, HEIGHT - 30), last_action_text(game, last_action, viewer), fill=_INK, font=_font(14))


def _draw_panel(draw: Any, game: KahunaGame, viewer: int | None) -> None:
    """The side panel: scores, the face-up row, the pile, the discards, then each player's hand."""
    draw.rectangle((BOARD_WIDTH, 0, WIDTH, HEIGHT), fill=_PANEL)
    x0 = BOARD_WIDTH + 16
    y = 16
    draw.text((x0, y), "Scores", fill=_INK, font=_font(16))
    for player in (0, 1):
        text = f"{PLAYER_NAMES[player]}: {game.scores[player]}"
        draw.text((x0 + 80 + player * 95, y + 1), text, fill=PLAYER_COLOURS[player], font=_font(14))
    y += 34
    draw.text((x0, y), "Face-up", fill=_INK, font=_font(14))
    draw.text((x0 + 170, y), f"Pile: {game.pile_size}", fill=_INK, font=_font(14))
    y += 22
    _card_row(draw, x0, y, [None if card is None else ISLANDS[card] for card in game.face_up])
    _card(draw, x0 + 170, y, "?" if game.pile_size else None)
    draw.text((x0 + 193, y + 15), str(game.pile_size), fill="white", font=_font(12), anchor="mm")
    y += 44
    open_cards = sum(game.open_discard)
    face_down = [sum(game.face_down_discards(p)) for p in (0, 1)]
    draw.text(
        (x0, y),
        f"Discard: {open_cards} open, {face_down[0]} + {face_down[1]} face down",
        fill=_INK,
        font=_font(13),
    )
    y += 30
    for player in (0, 1):
        y = _draw_player(draw, game, player, viewer, x0, y)
    draw.text((x0, y), "Islands: name, bridges red:blue / majority", fill=_MUTED, font=_font(11))


def _draw_player(draw: Any, game: KahunaGame, player: int, viewer: int | None, x0: int, y: int) -> int:
    """One player's line (to-act mark, islands, bridges) and hand as ``viewer`` may see it; the next ``y``."""
    colour = PLAYER_COLOURS[player]
    acting = not game.is_over and game.current_player == player
    draw.rectangle((x0 - 8, y - 4, x0 - 4, y + 18), fill=colour if acting else _PANEL)
    draw.text((x0, y), PLAYER_NAMES[player], fill=colour, font=_font(16))
    draw.text(
        (x0 + 90, y + 2),
        f"islands {len(game.controlled_islands(player))}   bridges {game.bridges_on_board(player)}"
        f" (+{game.supply(player)})",
        fill=_INK,
        font=_font(12),
    )
    y += 26
    size = game.hand_size(player)
    if viewer is None or viewer == player:
        labels: list[str | None] = [ISLANDS[i] for i in game.hand(player)]
    else:
        known = game.known_cards(player)
        labels = [ISLANDS[i] for i in range(NUM_ISLANDS) for _ in range(known[i])]
        labels += ["?"] * (size - len(labels))
    draw.text((x0, y), f"hand ({size})", fill=_INK, font=_font(12))
    y += 18
    _card_row(draw, x0, y, labels if labels else [None])
    return y + 50


# ---------------------------------------------------------------------------------------- window
def display_available() -> bool:
    """Whether a graphical display is configured (``DISPLAY`` or ``WAYLAND_DISPLAY`` set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class HumanWindow:
    """Shows frames in a pygame window when a display exists; otherwise prints the text board to stdout."""

    def __init__(self, fps: float = 2.0) -> None:
        self.fps = fps
        self._screen: Any = None
        self._clock: Any = None
        self._pygame: Any = None
        self.graphical = display_available()
        if self.graphical:
            try:
                os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
                import pygame

                self._pygame = pygame
            except ImportError:
                self.graphical = False

    def show(self, game: KahunaGame, last_action: int | None = None, viewer: int | None = None) -> None:
        """Show ``game`` as ``viewer`` may see it (a window frame, or the text board when there is no display)."""
        if not self.graphical:
            print(render_ansi(game, last_action=last_action, viewer=viewer), end="\n\n", file=sys.stdout)
            return
        pygame = self._pygame
        if self._screen is None:
            try:
                pygame.display.init()
                visible = pygame.display.get_driver() not in ("offscreen", "dummy")
                if visible:
                    self._screen = pygame.display.set_mode((WIDTH, HEIGHT))
            except pygame.error:
                visible = False
            if not visible:  # DISPLAY is set but no display can be opened: fall back to text
                pygame.display.quit()
                self.graphical = False
                self.show(game, last_action, viewer)
                return
            pygame.display.set_caption("Kahuna")
            self._clock = pygame.time.Clock()
        frame = render_rgb(game, last_action=last_action, viewer=viewer)
        surface = pygame.surfarray.make_surface(frame.swapaxes(0, 1))
        self._screen.blit(surface, (0, 0))
        pygame.event.pump()
        pygame.display.flip()
        self._clock.tick(self.fps)

    def close(self) -> None:
        """Close the window (if one was opened)."""
        if self._screen is not None:
            self._pygame.display.quit()
            self._screen = None


# ---------------------------------------------------------------------------------------- GIF
def save_gif(frames: Iterable[np.ndarray], path: str | os.PathLike[str], duration_ms: int = 400) -> Path:
    """Write ``frames`` (``(H, W, 3)`` ``uint8`` arrays of one size, e.g. from :func:`render_rgb`) as a looping GIF.

    ``duration_ms`` is the time each frame is shown.  All frames share one
    palette, taken from a sample of them (much quicker than a palette per
    frame, and smaller).  Returns the path.  Raises ``ValueError`` when there
    are no frames, or a frame is not an RGB image of the first frame's size.
    """
    from PIL import Image

    if duration_ms <= 0:
        raise ValueError(f"save_gif: duration_ms must be positive, got {duration_ms}")
    images = []
    for index, frame in enumerate(frames):
        array = np.asarray(frame)
        if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
            raise ValueError(
                f"save_gif: frame {index} must be an (H, W, 3) uint8 array, got shape {array.shape} dtype {array.dtype}"
            )
        if images and array.shape[:2] != (images[0].height, images[0].width):
            raise ValueError(
                f"save_gif: frame {index} is {array.shape[1]}x{array.shape[0]}, "
                f"frame 0 is {images[0].width}x{images[0].height}; all frames must have one size"
            )
        images.append(Image.fromarray(array))
    if not images:
        raise ValueError("save_gif: no frames to save")
    sample = images[:: max(1, len(images) // 8)][:8]
    width, height = images[0].size
    mosaic = Image.new("RGB", (width, height * len(sample)))
    for k, image in enumerate(sample):
        mosaic.paste(image, (0, k * height))
    palette = mosaic.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    indexed = [image.quantize(palette=palette, dither=Image.Dither.NONE) for image in images]
    path = Path(path)
    indexed[0].save(path, save_all=True, append_images=indexed[1:], duration=duration_ms, loop=0)
    return path


AgentSpec = Any
"""An agent for :func:`record_game_gif`: a baseline name, an :class:`~kahuna_env.agents.Agent`, or a callable
``(observation, action_mask) -> action``."""


class EnvRenderer:
    """``render()`` / ``close()`` of an environment, shared by the AEC env and the Gymnasium wrapper.

    ``render_mode`` is ``None``, ``"ansi"`` (text), ``"rgb_array"`` (a picture)
    or ``"human"`` (a window when a display exists, else the text on stdout).
    ``viewer`` is ``None`` (the spectator's view: everything) or the player 0 or 1
    whose view every rendering shows (nothing that player cannot see).
    """

    def __init__(self, render_mode: str | None, fps: float, viewer: int | None = None) -> None:
        self.render_mode = render_mode
        self.fps = fps
        self.viewer = check_viewer(viewer)
        """Whose view is rendered: ``None`` for the spectator's (both hands), or player 0 or 1."""
        self._window: HumanWindow | None = None

    def render(self, game: KahunaGame | None, last_action: int | None) -> str | np.ndarray | None:
        """Render ``game`` as ``render_mode`` says; a warning and ``None`` without a render mode."""
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if game is None:
            raise RuntimeError("render(): call reset() first")
        if self.render_mode == "ansi":
            return render_ansi(game, last_action=last_action, viewer=self.viewer)
        if self.render_mode == "rgb_array":
            return render_rgb(game, last_action=last_action, viewer=self.viewer)
        if self._window is None:
            self._window = HumanWindow(self.fps)
        self._window.show(game, last_action=last_action, viewer=self.viewer)
        return None

    def close(self) -> None:
        """Close the window of ``render_mode="human"`` if one is open."""
        if self._window is not None:
            self._window.close()
            self._window = None

    def __getstate__(self) -> dict[str, Any]:
        """A copy or pickle of the renderer leaves the window behind: the copy opens its own when it renders."""
        return {**self.__dict__, "_window": None}


def record_game_gif(
    path: str | os.PathLike[str],
    agents: Sequence[AgentSpec] = ("random", "random"),
    seed: int | None = None,
    config: KahunaConfig | None = None,
    duration_ms: int = 400,
    max_actions: int | None = None,
    viewer: int | None = None,
    on_frame: Callable[[np.ndarray], None] | None = None,
) -> int:
    """Play a game between two agents and save it as an animated GIF (one frame per action, plus the start).

    Args:
        path: where to write the GIF.
        agents: the agents of players 0 and 1 (baseline names such as ``"random"``/``"greedy"``,
            :class:`~kahuna_env.agents.Agent` objects, or callables ``(observation, action_mask) -> action``).
        seed: seeds the deal and the agents (the same seed gives the same GIF).
        config: the rule options (``None`` for the defaults).
        duration_ms: time each frame is shown.
        max_actions: stop after this many actions (``None``: play the whole game).
        viewer: draw every frame from this player's side, showing nothing that player cannot see
            (the opponent's face-down discards unnamed; ``None``: spectator view, both hands).
        on_frame: called with every frame (e.g. to collect them as well).

    Returns the number of frames written.  The game is played by :func:`kahuna_env.match.play`;
    agents act through :func:`kahuna_env.agents.choose_action`, so they never see hidden cards.
    """
    from kahuna_env.agents import Agent, CallableAgent, make_agent
    from kahuna_env.match import agent_chooser, play

    if len(agents) != 2:
        raise ValueError(f"record_game_gif: agents must be a pair (player 0, player 1), got {len(agents)} item(s)")
    try:
        viewer = check_viewer(viewer)
    except ValueError as error:
        raise ValueError(f"record_game_gif: {error}") from None
    rng = np.random.default_rng(seed)
    players: list[Agent] = []
    for index, spec in enumerate(agents):
        if isinstance(spec, str):
            players.append(make_agent(spec, seed=int(rng.integers(2**63))))
        elif isinstance(spec, Agent):
            players.append(spec)
        elif callable(spec):
            players.append(CallableAgent(spec))
        else:
            raise ValueError(
                f"record_game_gif: agents[{index}] must be a baseline name, an Agent or a callable, got {spec!r}"
            )
    game = KahunaGame(config, seed=int(rng.integers(2**63)))
    frames = [render_rgb(game, viewer=viewer)]

    def film(_player: int, action: int, after: KahunaGame) -> None:
        frames.append(render_rgb(after, last_action=action, viewer=viewer))

    play(game, [agent_chooser(player, rng) for player in players], film, max_actions)
    if on_frame is not None:
        for frame in frames:
            on_frame(frame)
    save_gif(frames, path, duration_ms=duration_ms)
    return len(frames)
