"""The searches decide exactly as recorded: same options and seeds, same moves and same trees.

``tests/mcts_recorded.json`` holds, for midgame positions and several option sets of
the baseline ``mcts`` and of the network-guided search (``champion@mcts:N``, with the network
kept with its history as ``experiments/2026-12-03-champion-v3-v6/champion-v3.pt``), the move
each search played and a digest of its tree (every node's visits and availability, the
root children's mean values).  It was written by the two descents the search had before
issue 35 (``search`` and ``guided_search``) and is the gate of the single descent that
replaced them: a refactor of the search must leave these decisions bit-identical.

    python tests/test_mcts_recorded.py   # rewrites the record (only when a change of play is meant)
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import THIRD_CHAMPION, midgame_positions

from kahuna_env.agents import MCTSAgent, choose_action
from kahuna_env.agents.mcts import action_priors, win_probability

RECORD = Path(__file__).with_name("mcts_recorded.json")


class HeuristicLeafEvaluator:
    """A torch-free evaluator: the baseline's prior and its evaluation, as a guided search's plug-in."""

    def evaluate(self, states, legal):
        priors = [action_priors(state, actions) for state, actions in zip(states, legal, strict=True)]
        values = [
            win_probability(state) if state.current_player == 0 else 1.0 - win_probability(state) for state in states
        ]
        return priors, values


def _baseline(options):
    return lambda seed: MCTSAgent(seed=seed, **options)


def _heuristic_guided(options):
    return lambda seed: MCTSAgent(seed=seed, evaluator=HeuristicLeafEvaluator(), **options)


_LOADED: dict = {}


RECORDED_NETWORK = str(THIRD_CHAMPION)
"""The agent the ``champion@mcts:N`` entries were recorded with (shipped as ``champion`` then; the name
keys of the record stay as written)."""


def _champion(options):
    """``champion@mcts:N`` as :func:`kahuna_policy.search.load_guided_agent` builds it, with the recorded network
    (:data:`RECORDED_NETWORK`), the file read once."""

    def build(seed):
        from kahuna_policy.agent import load_agent
        from kahuna_policy.search import GuidedMCTSAgent

        if RECORDED_NETWORK not in _LOADED:
            _LOADED[RECORDED_NETWORK] = load_agent(RECORDED_NETWORK)
        policy = _LOADED[RECORDED_NETWORK]
        reward = {"island_shaping": policy.reward["island_shaping"], "win_reward": policy.reward["win"]}
        return GuidedMCTSAgent(policy.model, seed=seed, **reward, **options)

    return build


CASES = {
    "mcts:50": (20, _baseline({"simulations": 50})),
    "mcts:30 random rollout, options": (
        6,
        _baseline(
            {
                "simulations": 30,
                "rollout": "random",
                "rollout_depth": 3,
                "exploration": 2.0,
                "first_play_penalty": 0.2,
                "lcb_weight": 0.5,
            }
        ),
    ),
    "heuristic-guided:20 batch 2": (6, _heuristic_guided({"simulations": 20, "batch_size": 2})),
    "heuristic-guided:24 halving 3, batch 3, mixed value": (
        6,
        _heuristic_guided(
            {
                "simulations": 24,
                "batch_size": 3,
                "root_candidates": 3,
                "value_weight": 0.5,
                "rollout_depth": 4,
                "opponent_prior_power": 2.0,
            }
        ),
    ),
    "champion@mcts:8": (20, _champion({"simulations": 8})),
    "champion@mcts:16 PUCT root, batch 1, mixed value, lcb": (
        6,
        _champion(
            {
                "simulations": 16,
                "root_candidates": 0,
                "batch_size": 1,
                "value_weight": 0.5,
                "rollout_depth": 4,
                "lcb_weight": 0.3,
                "opponent_prior_temperature": None,
            }
        ),
    ),
    "champion@mcts:24 halving 8, batch 3": (6, _champion({"simulations": 24, "root_candidates": 8, "batch_size": 3})),
}
"""Name -> (positions, agent factory taking a seed)."""


def _positions(count):
    return midgame_positions(2 * count, seed=21)[:count]


def _tree_digest(root):
    """SHA-256 of every node's (action, visits, available) in a fixed order: the shape of the whole search."""
    digest = hashlib.sha256()

    def walk(node):
        for action in sorted(node.children):
            child = node.children[action]
            digest.update(f"{action}:{child.visits}:{child.available}(".encode())
            walk(child)
            digest.update(b")")

    walk(root)
    return digest.hexdigest()[:24]


def play_case(name):
    """For each position: the move played through choose_action, and the searched tree from a fixed view."""
    count, build = CASES[name]
    results = []
    for k, game in enumerate(_positions(count)):
        move = choose_action(build(k), game, np.random.default_rng(k))
        agent = build(100 + k)
        root = agent.search(game.determinize(game.current_player, np.random.default_rng(200 + k)))
        means = {
            str(action): round(child.value / child.visits, 6) for action, child in root.children.items() if child.visits
        }
        results.append(
            {"move": move, "searched_move": agent.choose_move(root), "tree": _tree_digest(root), "means": means}
        )
    return results


@pytest.fixture
def one_torch_thread():
    """One torch thread while the test runs (the network's small forward passes; a busy machine's cores)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", list(CASES))
def test_the_search_decides_as_recorded(name, one_torch_thread):
    recorded = json.loads(RECORD.read_text())[name]
    played = play_case(name)
    assert [r["move"] for r in played] == [r["move"] for r in recorded]
    assert [r["searched_move"] for r in played] == [r["searched_move"] for r in recorded]
    assert [r["tree"] for r in played] == [r["tree"] for r in recorded]
    for now, then in zip(played, recorded, strict=True):
        assert now["means"].keys() == then["means"].keys()
        for action, mean in now["means"].items():
            assert mean == pytest.approx(then["means"][action], abs=2e-6)


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)
    RECORD.write_text(json.dumps({name: play_case(name) for name in CASES}, indent=1) + "\n")
    print(f"wrote {RECORD}", file=sys.stderr)
