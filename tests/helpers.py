"""Shared test helpers: hand-built positions and a from-scratch invariant checker."""

from __future__ import annotations

import contextlib
import importlib.util
import random
import threading
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

from kahuna_env.board import (
    BRIDGES_PER_PLAYER,
    CARDS_PER_ISLAND,
    ISLAND_LINES,
    ISLANDS,
    LINE_NAMES,
    LINES,
    MAJORITY,
    NUM_ISLANDS,
)
from kahuna_env.engine import KahunaGame

LINE = {name: line for line, name in enumerate(LINE_NAMES)}


def position(
    bridges: dict[str, int] | None = None,
    hands: tuple[list[str], list[str]] = ([], []),
    face_up: list[str | None] | None = None,
    pile: list[str] | None = None,
    discard: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A valid position dict: unlisted cards go to the pile (or to the discard when ``pile`` is given).

    ``bridges`` maps line names such as ``"ALOA-BARI"`` to their owner.
    """
    owners: list[int | None] = [None] * len(LINES)
    for name, owner in (bridges or {}).items():
        owners[LINE[name]] = owner
    face_up = ["FAAA", "GOLA", "KAHU"] if face_up is None else face_up
    used = Counter(hands[0]) + Counter(hands[1]) + Counter(c for c in face_up if c) + Counter(pile or [])
    used += Counter(discard or [])
    rest = [name for name in ISLANDS for _ in range(CARDS_PER_ISLAND - used[name])]
    if any(used[name] > CARDS_PER_ISLAND for name in ISLANDS):
        raise AssertionError(f"test position uses too many cards: {used}")
    if pile is None:
        pile = rest
    else:
        discard = (discard or []) + rest
    result: dict[str, Any] = {
        "bridges": owners,
        "hands": [list(hands[0]), list(hands[1])],
        "face_up": face_up,
        "pile": pile,
        "discard": discard or [],
        "current_player": 0,
        "round": 1,
        "scores": [0, 0],
    }
    result.update(extra)
    return result


def final_turns_position(turns_left: int) -> dict[str, Any]:
    """Round 3 with ``turns_left`` extra turns (player 0 first): player 0 controls ALOA, LALE and GOLA,
    player 1 nothing; scores 1 : 2.  When the remaining turns are passes, the final scoring gives
    player 0 three points: 4 : 2."""
    return position(
        bridges={
            "ALOA-BARI": 0,
            "ALOA-DUDA": 0,
            "HUNA-LALE": 0,
            "IFFI-LALE": 0,
            "COCO-GOLA": 0,
            "FAAA-GOLA": 0,
            "GOLA-JOJO": 0,
            "ELAI-JOJO": 1,
        },
        hands=(["BARI"], ["ELAI"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        scores=[1, 2],
        final_turns_left=turns_left,
    )


def drawn_final_turn_position() -> dict[str, Any]:
    """Round 3, the last turn, player 0 to act: player 0 controls ALOA and player 1 LALE, scores 0 : 0,
    and no tie-break decides, so a pass ends the game in a draw."""
    return position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA"], ["KAHU"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=1,
        scores=[0, 0],
    )


def game_at(*args: Any, seed: int = 0, **kwargs: Any) -> KahunaGame:
    """``KahunaGame.from_dict(position(...))``."""
    return KahunaGame.from_dict(position(*args, **kwargs), seed=seed)


def check_invariants(game: KahunaGame) -> None:
    """Recompute everything derivable from the position and compare with the engine's answers."""
    d = game.to_dict()
    cards = Counter(d["hands"][0] + d["hands"][1] + [c for c in d["face_up"] if c] + d["pile"] + d["discard"])
    assert all(cards[name] == CARDS_PER_ISLAND for name in ISLANDS), cards
    assert sum(cards.values()) == 24
    for player in (0, 1):
        on_board = sum(1 for owner in d["bridges"] if owner == player)
        assert on_board == game.bridges_on_board(player)
        assert on_board + game.supply(player) == BRIDGES_PER_PLAYER
        assert game.supply(player) >= 0
        assert len(d["hands"][player]) == game.hand_size(player) <= 5
        assert not Counter(d["known"][player]) - Counter(d["hands"][player])
    for island in range(NUM_ISLANDS):
        counts = [sum(1 for line in ISLAND_LINES[island] if d["bridges"][line] == p) for p in (0, 1)]
        majority = [counts[p] >= MAJORITY[island] for p in (0, 1)]
        assert not all(majority)
        expected = 0 if majority[0] else 1 if majority[1] else None
        assert game.controller(island) == expected, (ISLANDS[island], counts)
    if not game.is_over and game.round >= 2:
        assert game.bridges_on_board(0) > 0 and game.bridges_on_board(1) > 0
    if not game.is_over:
        assert game.legal_actions(), "a running game must offer an action"
    mask = game.action_mask()
    assert [int(a) for a in mask.nonzero()[0]] == game.legal_actions()
    _check_turn_and_score_invariants(game)


_ROUND_1_RESULTS = {(0, 0), (1, 0), (0, 1)}
_ROUND_2_RESULTS = {(0, 0), (2, 0), (0, 2)}
INTERIM_SCORES = {
    1: {(0, 0)},
    2: _ROUND_1_RESULTS,
    3: {(a + c, b + d) for a, b in _ROUND_1_RESULTS for c, d in _ROUND_2_RESULTS},
}
"""Round -> the scores the interim scorings before it can give (1 point after round 1, 2 after round 2)."""


def _check_turn_and_score_invariants(game: KahunaGame) -> None:
    """What play keeps true and position validation (docs/RULES.md, "Position validation") demands."""
    final = game.final_points
    assert min(final) == 0
    scores = game.scores
    assert (scores[0] - final[0], scores[1] - final[1]) in INTERIM_SCORES[game.round], (scores, final)
    if not game.is_over:
        assert final == [0, 0]
        player = game.current_player
        spent = game.played_this_turn + game.discarded_this_turn
        assert game.hand_size(player) + spent <= 5
    if game.config.variant == "planning":
        for line, (a, b) in enumerate(LINES):
            owner = game.owner(line)
            if owner is not None:
                assert 1 - owner not in (game.controller(a), game.controller(b)), LINE_NAMES[line]


def midgame_positions(count: int, seed: int = 0) -> list[KahunaGame]:
    """Positions reached by random play (a spread of rounds and turn states), each with a choice to make."""
    chooser = random.Random(seed)
    positions = []
    for k in range(count):
        game = KahunaGame(seed=seed + k)
        for _ in range(chooser.randrange(0, 140)):
            if game.is_over:
                break
            game.step(chooser.choice(game.legal_actions()))
        if not game.is_over and len(game.legal_actions()) > 1:
            positions.append(game)
    return positions


def local_algorithm(runner: Any) -> Any:
    """A stand-in for an RLlib Algorithm whose only EnvRunner is ``runner`` in this process.

    Enough for the driver-side helpers that reach the runners through
    ``algorithm.env_runner_group`` (e.g. ``training.rllib.train.push_snapshot_probabilities``).
    """

    class Group:
        local_env_runner = runner

        @staticmethod
        def num_remote_env_runners() -> int:
            return 0

    class Algorithm:
        env_runner_group = Group()

    return Algorithm()


@contextlib.contextmanager
def running(app):
    """``app`` served by uvicorn on a free loopback port, in a thread; yields the port."""
    import uvicorn  # the web extra: only the web tests call this

    from kahuna_web.server import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(6000):
        if server.started:
            break
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


def thought(client: Any, game: str) -> Any:
    """``GET game`` (a game's API path) through ``client`` once its agent is not thinking: the first other answer.

    A searching agent's opening (``POST /api/games`` answers 202) or move is computed in the server's bot
    queue; this looks again until it is done (a game that is gone, or an opening that failed, answers 4xx/5xx).
    """
    for _ in range(60000):  # hang guard (10 minutes): a stopped or small search ends at once
        answer = client.get(game)
        if answer.status_code != 200 or not answer.json()["state"]["thinking"]:
            return answer
        time.sleep(0.01)
    raise AssertionError(f"{game} still thinks")


def benchmark_module(name: str) -> ModuleType:
    """The script ``benchmarks/NAME.py`` imported as the module ``NAME`` (the scripts are not a package)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


THIRD_CHAMPION = Path(__file__).resolve().parents[1] / "experiments" / "2026-12-03-champion-v3-v6" / "champion-v3.pt"
"""The third champion's agent file (no longer shipped; kept with its history, docs/history.md): trained from
fresh weights, and the network the recorded guided-search moves (tests/test_mcts_recorded.py) were made with."""


# --- greedy's choice, by its definition: each card action stepped on a copy, keyed by the public queries ------
def greedy_position_key(game: KahunaGame, player: int) -> tuple[int, int, int]:
    """(controlled-island difference, progress towards majorities the opponent does not hold, bridge difference)."""
    opponent = 1 - player
    theirs = game.control_mask(opponent)
    counts = game.bridge_counts(player)
    progress = sum(min(counts[i], MAJORITY[i]) for i in range(NUM_ISLANDS) if not theirs >> i & 1)
    bridges = game.bridges_on_board(player) - game.bridges_on_board(opponent)
    return game.control_mask(player).bit_count() - theirs.bit_count(), progress, bridges


def greedy_outcome_by_stepping(game: KahunaGame, action: int, scratch: KahunaGame | None = None) -> tuple[int, ...]:
    """(terminal, *greedy_position_key) after the current player's card ``action``, by stepping a copy:
    terminal 1 for a win it ends the game with, -1 for another end (then zeros), else 0."""
    player = game.current_player
    child = game.after(action, scratch)
    if child.is_over:
        return (1 if child.winner == player else -1, 0, 0, 0)
    return (0, *greedy_position_key(child, player))


def greedy_reference(game: KahunaGame) -> tuple[list[int], str]:
    """The greedy baseline's choice set by its definition (docs/AGENTS.md's greedy), and which branch gave it.

    The card actions (placements, removals, free bridges) of the best ``(*outcome, -cards paid)`` when that
    wins or improves on the position's key; else the first legal of draw, take 0, 1, 2, pass; else the best
    card actions anyway; else the legal face-down discards.
    """
    from kahuna_env import actions as A

    legal = game.legal_actions()
    scratch = game.clone()
    best_key, best = None, []
    for action in legal:
        if A.DISCARD <= action < A.FREE_BRIDGE:
            continue
        key = (*greedy_outcome_by_stepping(game, action, scratch), -len(A.PAID_ISLANDS[action]))
        if best_key is None or key > best_key:
            best_key, best = key, [action]
        elif key == best_key:
            best.append(action)
    if best_key is not None and best_key[0] > 0:
        return best, "winning play"
    if best_key is not None and best_key[0] == 0 and best_key[1:4] > greedy_position_key(game, game.current_player):
        return best, "improving play"
    for end in (A.DRAW, A.TAKE, A.TAKE + 1, A.TAKE + 2, A.PASS):
        if end in legal:
            return [end], "end of turn"
    if best:
        return best, "forced play"
    return [a for a in legal if A.DISCARD <= a < A.DRAW], "discard"
