"""Player views: the renderers, the GIF writer and the envs' ``render_viewer`` show nothing the viewer cannot see.

Each test builds two worlds that differ only in cards hidden from one player (the opponent's
face-down discard, the opponent's hand, the pile order) and finds that player's text and
pixels identical, while the spectator's (omniscient) view tells the worlds apart where the
difference is visible to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kahuna_env
from kahuna_env.actions import DISCARD, DRAW, HIDDEN_DISCARD, PASS, describe_action
from kahuna_env.board import ISLAND_ID, ISLANDS
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.render import last_action_text, record_game_gif, render_ansi, render_rgb

OPPONENT = 1
"""The player who acts (and discards) in these worlds; player 0 watches."""
VIEWER = 1 - OPPONENT


@pytest.fixture(autouse=True)
def no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never open a window."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


def turn_start() -> dict[str, Any]:
    """A position at the start of the opponent's first turn (it holds 3 cards and may discard)."""
    return KahunaGame(KahunaConfig(first_player=OPPONENT), seed=5).to_dict()


def swap_with_pile(position: dict[str, Any], player: int) -> tuple[dict[str, Any], str, str]:
    """``position`` with ``player``'s first card exchanged for a pile card of another island; both cards."""
    hand_card = position["hands"][player][0]
    slot = next(k for k, card in enumerate(position["pile"]) if card != hand_card)
    pile_card = position["pile"][slot]
    other = {**position, "hands": [list(hand) for hand in position["hands"]], "pile": list(position["pile"])}
    other["hands"][player][0] = pile_card
    other["pile"][slot] = hand_card
    return other, hand_card, pile_card


def discard_worlds() -> tuple[tuple[KahunaGame, int], tuple[KahunaGame, int]]:
    """Two games right after the opponent's face-down discard, alike but for the card it discarded."""
    position = turn_start()
    other, card, other_card = swap_with_pile(position, OPPONENT)
    worlds = []
    for start, discarded in ((position, card), (other, other_card)):
        game = KahunaGame.from_dict(start, seed=1)
        action = DISCARD + ISLAND_ID[discarded]
        game.step(action)
        worlds.append((game, action))
    return worlds[0], worlds[1]


def views(game: KahunaGame, action: int | None, viewer: int | None) -> tuple[str, np.ndarray]:
    return render_ansi(game, last_action=action, viewer=viewer), render_rgb(game, last_action=action, viewer=viewer)


def assert_same_view(a: tuple[str, np.ndarray], b: tuple[str, np.ndarray]) -> None:
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])


def assert_different_view(a: tuple[str, np.ndarray], b: tuple[str, np.ndarray]) -> None:
    assert a[0] != b[0]
    assert not np.array_equal(a[1], b[1])


# ---------------------------------------------------------------------------------------------- describing
def test_an_opponents_face_down_discard_reads_without_its_card() -> None:
    action = DISCARD + ISLAND_ID["DUDA"]
    assert describe_action(action) == "discard DUDA face down"  # the spectator's text
    assert describe_action(action, viewer=0, actor=1) == HIDDEN_DISCARD
    assert describe_action(action, viewer=0, actor=None) == HIDDEN_DISCARD  # an actor not known: hidden
    assert describe_action(action, viewer=1, actor=1) == "discard DUDA face down"  # one's own discard


def test_public_actions_read_the_same_for_every_viewer() -> None:
    for action in (0, 60, DRAW, DRAW + 1, PASS, PASS + 1):
        assert describe_action(action, viewer=0, actor=1) == describe_action(action)


def test_a_viewer_that_is_no_player_is_refused_in_one_line() -> None:
    for bad in (2, -1, True, 0.0, "0"):
        with pytest.raises(ValueError, match=r"^viewer must be None, 0 or 1, got ") as error:
            describe_action(DRAW, viewer=bad)
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="viewer must be None, 0 or 1"):
        render_ansi(KahunaGame(seed=0), viewer=2)
    with pytest.raises(ValueError, match="viewer must be None, 0 or 1"):
        render_rgb(KahunaGame(seed=0), viewer=2)


def test_a_face_down_discard_never_ends_a_turn_so_its_actor_is_the_player_to_act() -> None:
    # last_action_text names the actor of a discard as the player still to act: hold the rule to it.
    rng = np.random.default_rng(3)
    discards = 0
    for seed in range(4):
        for discard_rule in ("instead_of_play", "hand_limit"):
            game = KahunaGame(KahunaConfig(discard_rule=discard_rule), seed=seed)
            while not game.is_over:
                legal = game.legal_actions()
                wanted = [a for a in legal if DISCARD <= a < DRAW]
                action = int(rng.choice(wanted if wanted and rng.random() < 0.5 else legal))
                player = game.current_player
                game.step(action)
                if DISCARD <= action < DRAW:
                    discards += 1
                    assert not game.is_over and game.current_player == player
    assert discards > 20


# ---------------------------------------------------------------------------------------------- renderers
def test_the_opponents_face_down_discard_looks_the_same_whichever_card_it_was() -> None:
    (game_a, action_a), (game_b, action_b) = discard_worlds()
    assert_same_view(views(game_a, action_a, VIEWER), views(game_b, action_b, VIEWER))
    assert HIDDEN_DISCARD in render_ansi(game_a, last_action=action_a, viewer=VIEWER)
    # The spectator, and the player who discarded, see which card went.
    assert_different_view(views(game_a, action_a, None), views(game_b, action_b, None))
    assert_different_view(views(game_a, action_a, OPPONENT), views(game_b, action_b, OPPONENT))
    assert last_action_text(game_a, action_a, OPPONENT) == f"last action: {describe_action(action_a)}"


def test_the_opponents_hand_looks_the_same_whatever_it_holds() -> None:
    position = turn_start()
    other, _, _ = swap_with_pile(position, OPPONENT)
    game_a, game_b = KahunaGame.from_dict(position, seed=1), KahunaGame.from_dict(other, seed=1)
    for action in (None, PASS):  # with and without a (public) last action
        assert_same_view(views(game_a, action, VIEWER), views(game_b, action, VIEWER))
        assert_different_view(views(game_a, action, None), views(game_b, action, None))
        assert_different_view(views(game_a, action, OPPONENT), views(game_b, action, OPPONENT))


def test_the_pile_order_shows_in_no_view() -> None:
    position = turn_start()
    pile = position["pile"]
    slot = next(k for k in range(1, len(pile)) if pile[k] != pile[0])
    reordered = {**position, "pile": [pile[slot], *pile[1:slot], pile[0], *pile[slot + 1 :]]}
    game_a, game_b = KahunaGame.from_dict(position, seed=1), KahunaGame.from_dict(reordered, seed=1)
    assert game_a.to_dict() != game_b.to_dict()
    for viewer in (None, 0, 1):
        assert_same_view(views(game_a, None, viewer), views(game_b, None, viewer))


# ---------------------------------------------------------------------------------------------- envs
def env_views(position: dict[str, Any], action: int, **options: Any) -> tuple[str, np.ndarray]:
    """The text and the picture of ``kahuna_env.env`` after ``action`` from ``position``, per render mode."""
    shown = []
    for mode in ("ansi", "rgb_array"):
        environment = kahuna_env.env(render_mode=mode, **options)
        environment.reset(seed=0, options={"position": position})
        environment.step(action)
        shown.append(environment.render())
        environment.close()
    return shown[0], shown[1]


def test_env_render_viewer_hides_the_opponents_face_down_discard() -> None:
    position = turn_start()
    other, card, other_card = swap_with_pile(position, OPPONENT)
    first, second = DISCARD + ISLAND_ID[card], DISCARD + ISLAND_ID[other_card]
    assert_same_view(env_views(position, first, render_viewer=VIEWER), env_views(other, second, render_viewer=VIEWER))
    # render_viewer=None (the default) is the spectator's view, as before: the card is named.
    spectator = env_views(position, first)
    assert_different_view(spectator, env_views(other, second))
    assert f"discard {card} face down" in spectator[0]


def test_parallel_env_takes_render_viewer() -> None:
    position = turn_start()
    other, card, other_card = swap_with_pile(position, OPPONENT)
    texts = []
    for start, discarded in ((position, card), (other, other_card)):
        environment = kahuna_env.parallel_env(render_mode="ansi", render_viewer=VIEWER)
        environment.reset(seed=0, options={"position": start})
        environment.step({"player_1": DISCARD + ISLAND_ID[discarded]})
        texts.append(environment.render())
    assert texts[0] == texts[1] and HIDDEN_DISCARD in texts[0]


def test_gym_wrapper_takes_render_viewer() -> None:
    import gymnasium

    texts = []
    for viewer in (None, 1):
        environment = gymnasium.make("Kahuna-v0", render_mode="ansi", render_viewer=viewer, seat=1)
        environment.reset(seed=0)
        texts.append(environment.render())
        environment.close()
    hand_0 = texts[0].splitlines()[-3]  # player_0's line: named in the spectator's view, backs in player 1's
    assert "????" not in hand_0 and "????" in texts[1].splitlines()[-3]


@pytest.mark.parametrize("bad", [2, -1, True, "player_0"])
def test_env_refuses_a_render_viewer_that_is_no_player(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^kahuna_env.env\(\): render_viewer must be None, 0 or 1, got "):
        kahuna_env.env(render_mode="ansi", render_viewer=bad)


def test_env_render_viewer_takes_a_numpy_integer() -> None:
    environment = kahuna_env.env(render_mode="ansi", render_viewer=np.int64(0))
    environment.reset(seed=0)
    assert "????" in environment.render()


# ---------------------------------------------------------------------------------------------- GIFs
def discarding_opponent(pick: str) -> Any:
    """Player 1: discards one card face down each turn (its lowest or highest island, ``pick``), then draws.

    Whichever it picks, the public history is the same: one face-down discard and one draw per turn.
    """

    discarded = [False]  # whether this turn's discard is made

    def act(observation: Any, mask: np.ndarray) -> int:
        discards = [a for a in np.flatnonzero(mask).tolist() if DISCARD <= a < DRAW]
        if discards and not discarded[0]:
            discarded[0] = True
            return discards[0] if pick == "lowest" else discards[-1]
        discarded[0] = False
        return DRAW if mask[DRAW] else PASS

    return act


def first_legal(observation: Any, mask: np.ndarray) -> int:
    """Player 0: its first legal action (it reads only its own view, so it plays alike in both worlds)."""
    return int(np.flatnonzero(mask)[0])


def gif_frames(tmp_path: Path, pick: str, viewer: int | None) -> list[np.ndarray]:
    frames: list[np.ndarray] = []
    record_game_gif(
        tmp_path / f"{pick}-{viewer}.gif",
        agents=(first_legal, discarding_opponent(pick)),
        seed=2,
        max_actions=14,
        viewer=viewer,
        on_frame=frames.append,
    )
    return frames


def test_a_players_gif_looks_the_same_whichever_cards_the_opponent_discarded(tmp_path: Path) -> None:
    lowest, highest = gif_frames(tmp_path, "lowest", VIEWER), gif_frames(tmp_path, "highest", VIEWER)
    assert len(lowest) == len(highest) == 15
    for a, b in zip(lowest, highest, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (tmp_path / f"lowest-{VIEWER}.gif").read_bytes() == (tmp_path / f"highest-{VIEWER}.gif").read_bytes()
    # The worlds do differ: the spectator's GIF names the discarded cards.
    spectator = zip(gif_frames(tmp_path, "lowest", None), gif_frames(tmp_path, "highest", None), strict=True)
    assert any(not np.array_equal(a, b) for a, b in spectator)


def test_record_game_gif_refuses_a_viewer_that_is_no_player(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^record_game_gif: viewer must be None, 0 or 1, got 2$"):
        record_game_gif(tmp_path / "x.gif", viewer=2)
    assert not (tmp_path / "x.gif").exists()


def test_every_island_can_be_the_hidden_discard() -> None:
    # The hidden text names no island, whichever card it stands for.
    texts = {describe_action(DISCARD + island, viewer=0, actor=1) for island in range(len(ISLANDS))}
    assert texts == {HIDDEN_DISCARD} and not any(name in HIDDEN_DISCARD.upper() for name in ISLANDS)
