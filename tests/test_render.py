"""Rendering: the text board, the RGB picture, the human mode without a display, and GIFs."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import game_at
from pettingzoo.test import render_test
from PIL import Image

import kahuna_env
from kahuna_env.board import ISLAND_ID, LINE_NAMES, LINES
from kahuna_env.engine import KahunaGame
from kahuna_env.render import (
    BOARD_WIDTH,
    HEIGHT,
    ISLAND_RADIUS,
    PLAYER_COLOURS,
    STONE_OFFSET,
    WIDTH,
    island_pixel,
    record_game_gif,
    render_ansi,
    render_rgb,
    save_gif,
)

BOTH_PLAYERS = {"ALOA-BARI": 0, "ALOA-DUDA": 0, "KAHU-LALE": 1, "COCO-GOLA": 1}


@pytest.fixture(autouse=True)
def no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never open a window: the human mode falls back to text."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


def board_pixels_of(frame: np.ndarray, colour: tuple[int, int, int]) -> int:
    """Number of pixels of exactly ``colour`` in the board part of a frame (below the title line)."""
    board = frame[60 : HEIGHT - 40, :BOARD_WIDTH]
    return int(np.all(board == np.array(colour, dtype=np.uint8), axis=-1).sum())


def line_midpoint(name: str) -> tuple[int, int]:
    a, b = LINES[LINE_NAMES.index(name)]
    (xa, ya), (xb, yb) = island_pixel(a), island_pixel(b)
    return round((xa + xb) / 2), round((ya + yb) / 2)


# ---------------------------------------------------------------------------------------------- rgb picture
def test_rgb_frame_has_the_picture_shape_and_dtype() -> None:
    frame = render_rgb(KahunaGame(seed=0))
    assert frame.shape == (HEIGHT, WIDTH, 3)
    assert frame.dtype == np.uint8


def test_rgb_frame_is_not_blank() -> None:
    frame = render_rgb(game_at(BOTH_PLAYERS, hands=(["ALOA"], ["BARI"])))
    colours = np.unique(frame.reshape(-1, 3), axis=0)
    assert len(colours) >= 20


def test_bridges_of_both_players_are_drawn_in_their_colours() -> None:
    frame = render_rgb(game_at(BOTH_PLAYERS))
    for name, owner in BOTH_PLAYERS.items():
        x, y = line_midpoint(name)
        assert tuple(frame[y, x]) == PLAYER_COLOURS[owner], name
    assert board_pixels_of(frame, PLAYER_COLOURS[0]) > 500
    assert board_pixels_of(frame, PLAYER_COLOURS[1]) > 500


def test_a_board_with_only_red_bridges_shows_no_blue_on_the_board() -> None:
    frame = render_rgb(game_at({"ALOA-BARI": 0, "KAHU-LALE": 0}))
    assert board_pixels_of(frame, PLAYER_COLOURS[0]) > 500
    assert board_pixels_of(frame, PLAYER_COLOURS[1]) == 0


def test_a_free_line_is_not_drawn_in_a_player_colour() -> None:
    frame = render_rgb(game_at(BOTH_PLAYERS))
    x, y = line_midpoint("HUNA-IFFI")
    assert tuple(frame[y, x]) not in PLAYER_COLOURS


def test_a_controlled_island_carries_a_stone_of_its_controllers_colour() -> None:
    game = game_at(BOTH_PLAYERS)  # player 0 holds 2 of ALOA's 3 lines
    assert game.controller("ALOA") == 0 and game.controller("BARI") is None
    frame = render_rgb(game)
    for island, expected in (("ALOA", PLAYER_COLOURS[0]), ("BARI", None)):
        x, y = island_pixel(ISLAND_ID[island])
        stone = frame[round(y - ISLAND_RADIUS * STONE_OFFSET), round(x + ISLAND_RADIUS * STONE_OFFSET)]
        if expected is None:
            assert tuple(stone) not in PLAYER_COLOURS
        else:
            assert tuple(stone) == expected


def test_a_viewer_picture_hides_the_opponents_hand() -> None:
    game = game_at(hands=(["ALOA", "HUNA"], ["ELAI", "IFFI"]))
    assert not np.array_equal(render_rgb(game), render_rgb(game, viewer=0))
    swapped = game_at(hands=(["ALOA", "HUNA"], ["ELAI", "JOJO"]))
    assert np.array_equal(render_rgb(game, viewer=0), render_rgb(swapped, viewer=0))


# ---------------------------------------------------------------------------------------------- text board
def test_ansi_board_shows_round_scores_cards_and_owners() -> None:
    game = game_at(BOTH_PLAYERS, hands=(["HUNA", "HUNA"], ["ELAI"]), round=2, scores=[1, 0])
    text = render_ansi(game, last_action=147)
    assert "round 2/3" in text and "player_0 1 : 0 player_1" in text
    assert "face-up: FAAA GOLA KAHU" in text
    assert "ALOA-BARI 0" in text and "KAHU-LALE 1" in text and "HUNA-IFFI ." in text
    assert "ALOA 0 2/0" in text
    assert "hand (2) HUNA HUNA" in text and "hand (1) ELAI" in text
    assert "last action: draw" in text


def test_ansi_from_a_viewer_names_only_the_opponents_known_cards() -> None:
    game = game_at(hands=(["ALOA"], ["ELAI", "IFFI"]), known=[[], ["IFFI"]])
    text = render_ansi(game, viewer=0)
    assert "hand (2) IFFI ????" in text
    assert "ELAI" not in text.split("player_1: ")[1]


# ---------------------------------------------------------------------------------------------- environments
def test_pettingzoo_render_test_passes(capsys: pytest.CaptureFixture[str]) -> None:
    render_test(kahuna_env.env)
    assert "Kahuna" in capsys.readouterr().out  # the human mode printed the text board


def test_env_rgb_array_mode_returns_the_picture() -> None:
    environment = kahuna_env.env(render_mode="rgb_array")
    environment.reset(seed=0)
    frame = environment.render()
    assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, render_rgb(environment.unwrapped.game))


def test_env_ansi_mode_returns_the_text_board() -> None:
    environment = kahuna_env.env(render_mode="ansi")
    environment.reset(seed=0)
    assert environment.render() == render_ansi(environment.unwrapped.game)


def test_human_mode_without_a_display_prints_the_text_board(capsys: pytest.CaptureFixture[str]) -> None:
    environment = kahuna_env.env(render_mode="human")
    environment.reset(seed=0)  # the human mode renders on reset and after every step
    assert environment.render() is None
    out = capsys.readouterr().out
    assert out.count("Kahuna  round 1/3") == 2
    environment.close()


def test_render_without_a_mode_warns_and_returns_none() -> None:
    environment = kahuna_env.raw_env()
    environment.reset(seed=0)
    with pytest.warns(UserWarning, match="render mode"):
        assert environment.render() is None


def test_gym_wrapper_renders_rgb_frames() -> None:
    environment = kahuna_env.KahunaSingleAgentEnv(render_mode="rgb_array")
    environment.reset(seed=0)
    assert environment.render().shape == (HEIGHT, WIDTH, 3)


# ---------------------------------------------------------------------------------------------- GIFs
def test_record_game_gif_writes_an_animation_of_the_game(tmp_path) -> None:
    path = tmp_path / "game.gif"
    frames = record_game_gif(path, agents=("random", "greedy"), seed=0, max_actions=8, duration_ms=100)
    assert frames == 9
    with Image.open(path) as image:
        assert image.format == "GIF"
        assert image.size == (WIDTH, HEIGHT)
        assert image.n_frames >= 5


def test_record_game_gif_plays_a_whole_game_by_default(tmp_path) -> None:
    seen = []
    frames = record_game_gif(tmp_path / "whole.gif", seed=1, on_frame=lambda frame: seen.append(frame.shape))
    assert frames == len(seen) > 30


def test_save_gif_writes_the_given_frames(tmp_path) -> None:
    frames = [render_rgb(KahunaGame(seed=seed)) for seed in range(3)]
    path = save_gif(frames, tmp_path / "three.gif", duration_ms=50)
    with Image.open(path) as image:
        assert image.n_frames == 3


def test_save_gif_rejects_no_frames(tmp_path) -> None:
    with pytest.raises(ValueError, match="no frames"):
        save_gif([], tmp_path / "empty.gif")


def test_save_gif_rejects_a_frame_that_is_not_rgb(tmp_path) -> None:
    with pytest.raises(ValueError, match="frame 1"):
        save_gif([render_rgb(KahunaGame(seed=0)), np.zeros((4, 4), dtype=np.uint8)], tmp_path / "bad.gif")


def test_record_game_gif_rejects_an_unknown_agent(tmp_path) -> None:
    with pytest.raises(ValueError, match="agents\\[1\\]"):
        record_game_gif(tmp_path / "x.gif", agents=("random", 3.5))


def test_save_gif_rejects_frames_of_different_sizes(tmp_path) -> None:
    small = np.zeros((10, 10, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="one size"):
        save_gif([render_rgb(KahunaGame(seed=0)), small], tmp_path / "sizes.gif")
