"""Seeded fuzz test of position validation (docs/RULES.md, "Position validation").

Positions come from random games of every variant and option; each mutation
changes one or two fields (numbers, lists, owners, flags, the config).  For
every mutated position, either ``KahunaGame.from_dict`` rejects it with a
one-line ``ValueError``, or the game it loads keeps every invariant of play
(the checks of ``helpers.check_invariants``, observations inside the
observation space, a legal action unless over, each state reached is again
a valid position) and plays to the end by random legal moves without an
exception.  The other direction is checked too: every state of random games
loads (validation rejects nothing that play can reach).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import numpy as np
from helpers import check_invariants

from kahuna_env.board import ISLANDS, NUM_LINES
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation, encode_state

CONFIGS = (
    KahunaConfig(),
    KahunaConfig(variant="planning", handicap=(1, 2)),
    KahunaConfig(discard_rule="hand_limit", first_player=1),
    KahunaConfig(variant="planning", discard_rule="hand_limit", handicap=(0, 3)),
)
MUTATIONS = 4000
"""Mutated positions checked (seeded; about 8 s on one core, a third of them accepted and played out)."""
ODD_VALUES = (-1, 0, 1, 2, 3, 4, 5, 6, 10, 12, 15, 16, 300, None, True, False, 1.5, "1", [1])


def _random_games(count: int, seed: int) -> list[KahunaGame]:
    """Every state of ``count`` random games (several per config), as clones."""
    rng = random.Random(seed)
    states = []
    for k in range(count):
        game = KahunaGame(CONFIGS[k % len(CONFIGS)], seed=seed + k)
        states.append(game.clone())
        while not game.is_over:
            game.step(rng.choice(game.legal_actions()))
            states.append(game.clone())
    return states


def test_every_state_of_random_games_is_a_valid_position():
    for game in _random_games(60, seed=100):
        d = game.to_dict()
        restored = KahunaGame.from_dict(d)
        assert restored.to_dict() == d
        assert restored.legal_actions() == game.legal_actions()


# ---------------------------------------------------------------------------------------------- mutations
NUMBER_KEYS = (
    "played_this_turn",
    "discarded_this_turn",
    "setup_left",
    "final_turns_left",
    "current_player",
    "round",
    "claim_line",
    "winner",
)


def _number(rng: random.Random, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and rng.random() < 0.5:
        return value + rng.choice((-2, -1, 1, 2))
    return rng.choice(ODD_VALUES)


def _move_card(rng: random.Random, d: dict[str, Any]) -> None:
    """Move one card between two of hands, face-up row, pile and discard (the 24 cards stay)."""
    places: list[tuple[list[Any], int]] = [(d["hands"][0], -1), (d["hands"][1], -1), (d["pile"], -1)]
    places += [(d["discard"], -1), (d["face_up"], 0)]
    source, _ = rng.choice(places)
    cards = [k for k, card in enumerate(source) if card is not None]
    if not cards:
        return
    k = rng.choice(cards)
    card = source[k]
    if source is d["face_up"]:
        source[k] = None
    else:
        source.pop(k)
    target, _ = rng.choice(places)
    if target is d["face_up"]:
        empty = [slot for slot, name in enumerate(target) if name is None]
        target[rng.choice(empty) if empty else rng.randrange(3)] = card
    else:
        target.insert(rng.randrange(len(target) + 1), card)


def _card_list(rng: random.Random, cards: list[str]) -> None:
    if cards and rng.random() < 0.5:
        cards.pop(rng.randrange(len(cards)))
    else:
        cards.append(rng.choice(ISLANDS))


def _mutate(rng: random.Random, d: dict[str, Any]) -> str:
    """Change one field of ``d`` in place; return what was changed."""
    kind = rng.choice(MUTATORS)
    kind(rng, d)
    return kind.__name__


def _numbers(rng: random.Random, d: dict[str, Any]) -> None:
    key = rng.choice(NUMBER_KEYS)
    d[key] = _number(rng, d.get(key))


def _flags(rng: random.Random, d: dict[str, Any]) -> None:
    key = rng.choice(("must_draw", "over"))
    d[key] = not d[key] if rng.random() < 0.8 else rng.choice(ODD_VALUES)


def _points(rng: random.Random, d: dict[str, Any]) -> None:
    key = rng.choice(("scores", "final_points"))
    d[key][rng.randrange(2)] = _number(rng, d[key][0])


def _owners(rng: random.Random, d: dict[str, Any]) -> None:
    for _ in range(rng.randint(1, 3)):
        d["bridges"][rng.randrange(NUM_LINES)] = rng.choice((None, 0, 1, 0, 1, 2))


def _cards(rng: random.Random, d: dict[str, Any]) -> None:
    _move_card(rng, d)


def _hidden(rng: random.Random, d: dict[str, Any]) -> None:
    key = rng.choice(("face_down", "known", "hands"))
    _card_list(rng, d[key][rng.randrange(2)])


def _config(rng: random.Random, d: dict[str, Any]) -> None:
    config = d["config"]
    key = rng.choice(("variant", "discard_rule", "handicap", "first_player"))
    config[key] = {
        "variant": lambda: rng.choice(("standard", "planning")),
        "discard_rule": lambda: rng.choice(("instead_of_play", "hand_limit")),
        "handicap": lambda: rng.choice((None, [0, 1], [1, 3], [0, 2])),
        "first_player": lambda: rng.choice((0, 1)),
    }[key]()


MUTATORS: tuple[Callable[[random.Random, dict[str, Any]], None], ...] = (
    _numbers,
    _flags,
    _points,
    _owners,
    _cards,
    _hidden,
    _config,
)


# ---------------------------------------------------------------------------------------------- invariants
def _check_loaded(game: KahunaGame) -> None:
    check_invariants(game)
    for player in (0, 1):
        observation = encode_observation(game, player)
        assert np.all(observation >= 0.0) and np.all(observation <= 1.0), player
    state = encode_state(game)
    assert np.all(state >= 0.0) and np.all(state <= 1.0)
    assert game.is_over or game.legal_actions()
    assert KahunaGame.from_dict(game.to_dict()).to_dict() == game.to_dict()


def _play_to_the_end(game: KahunaGame, rng: random.Random) -> None:
    for step in range(2000):
        if game.is_over:
            _check_loaded(game)
            return
        game.step(rng.choice(game.legal_actions()))
        if step % 16 == 0:
            _check_loaded(game)
    raise AssertionError("a loaded game did not end within 2000 actions")


def test_mutated_positions_are_rejected_in_one_line_or_load_as_playable_games():
    rng = random.Random(2024)
    sources = [game.to_dict() for game in _random_games(24, seed=7)]
    accepted = rejected = 0
    for k in range(MUTATIONS):
        d = copy.deepcopy(rng.choice(sources))
        changes = [_mutate(rng, d) for _ in range(rng.choice((1, 1, 2)))]
        try:
            game = KahunaGame.from_dict(d, seed=k)
        except ValueError as error:
            message = str(error)
            assert message and "\n" not in message, (changes, message)
            rejected += 1
            continue
        accepted += 1
        try:
            _check_loaded(game)
            _play_to_the_end(game, rng)
        except Exception as error:
            raise AssertionError(f"mutation {k} {changes} loaded but broke an invariant: {d}") from error
    # Both outcomes must be common, or the fuzzing is not exercising the validation.
    assert accepted > MUTATIONS // 10 and rejected > MUTATIONS // 4, (accepted, rejected)
