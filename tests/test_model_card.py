"""Model cards (training/tools/model_card.py): generated from an agent's meta, written by kahuna-ship, kept in sync."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from kahuna_policy.agent import read_policy_file, shipped_agent_names, shipped_agent_source
from training.tools import model_card

META = {
    "name": "tester",
    "run": "tiny-run",
    "run_dir": "runs/tiny-run",
    "commit": "0123456789abcdef0123",
    "shipped_at": "2026-12-03T10:00:00+00:00",
    "config": {
        "seed": 7,
        "env": {"variant": "planning", "discard_rule": "hand_limit"},
        "model": {"architecture": "board", "hidden_sizes": [64], "line_width": 16, "activation": "tanh"},
        "reward": {"win": 1.0, "island_shaping": 0.5},
    },
    "training": {"updates": 12, "learner_decisions": 34_000, "games": 560, "train_seconds": 7200.0},
    "init_from": {
        "agent": "champion-v1",
        "run": "first",
        "commit": "feedbeef" * 5,
        "training": {"learner_decisions": 9},
    },
    "total_training": {"learner_decisions": 34_009, "train_seconds": 9000.0},
    "final_eval": {
        "greedy": {"games": 100, "wins": 60, "draws": 2, "losses": 38, "score": 0.61, "score_ci95": [0.512, 0.7]}
    },
    "evaluation": [
        {
            "format": "kahuna-eval-v1",
            "seed": 3,
            "pairings": [
                # this agent in the second seat of the pairing: the card turns it to its own side
                {
                    "a": "mcts",
                    "b": "runs/tiny-run/final_agent.pt",
                    "games": 40,
                    "wins": 30,
                    "draws": 0,
                    "losses": 10,
                    "score": 0.75,
                    "score_ci95": [0.6, 0.86],
                },
                {"a": "greedy", "b": "random", "games": 40, "wins": 40, "draws": 0, "losses": 0, "score": 1.0},
                # another run's final agent (a best response trained against this one) is not this agent
                {
                    "a": "runs/exploit-tiny-run/final_agent.pt",
                    "b": "champion",
                    "games": 40,
                    "wins": 4,
                    "draws": 0,
                    "losses": 36,
                },
            ],
        },
        {
            "format": "kahuna-eval-v1",
            "seed": 4,
            "pairings": [  # this agent by another spelling of its path
                {
                    "a": "/work/runs/tiny-run/./final_agent.pt",
                    "b": "greedy",
                    "games": 20,
                    "wins": 15,
                    "draws": 0,
                    "losses": 5,
                    "score": 0.75,
                },
            ],
        },
    ],
}


def test_a_card_is_generated_from_the_meta() -> None:
    card = model_card.model_card(META)
    for section in (
        "# Model card: `tester`",
        "## Intended use",
        "## Training",
        "## Evaluation",
        "## Limitations",
        "## Licence",
    ):
        assert section in card
    assert "variant `planning`, discard rule `hand_limit`" in card
    assert "`board` network, trunk [64], per-line width 16, `tanh` activations" in card
    assert "12 updates, 34,000 learner decisions, 560 games, 2.00 hours" in card
    assert "`win: 1.0`, `island_shaping: 0.5`" in card
    assert "started from `champion-v1` (run `first`, commit `feedbeeffeed`, 9 learner decisions)" in card
    assert "over the whole chain: 34,009 learner decisions, 2.50 hours" in card
    assert "| `greedy` | 100 | 60-2-38 | 0.610 | 0.512–0.700 | the run's final evaluation |" in card
    assert "| `mcts` | 40 | 10-0-30 | 0.250 | 0.140–0.400 | `kahuna-eval` (seed 3) |" in card
    evaluation = card.split("## Evaluation")[1].split("## Limitations")[0]
    assert "`random`" not in evaluation and "exploit-tiny-run" not in evaluation  # pairings without it
    assert "| `greedy` | 20 | 15-0-5 | 0.750 |" in evaluation  # this agent, its path written otherwise
    assert "MIT" in card


def test_a_card_from_an_empty_meta_says_what_is_unknown() -> None:
    card = model_card.model_card({}, "bare")
    assert "# Model card: `bare`" in card and "No evaluation is recorded" in card and "wall time unknown" in card


@pytest.mark.parametrize("name", shipped_agent_names())
def test_the_committed_card_of_every_shipped_agent_is_the_generated_one(name: str) -> None:
    source = shipped_agent_source(name)
    meta = read_policy_file(source).get("meta") or {}
    committed = model_card.card_path(source)
    assert committed.is_file(), f"no card for {name}: run python -m training.tools.model_card {name}"
    assert committed.read_text("utf-8") == model_card.model_card(meta, name)


def test_kahuna_ship_writes_the_card_beside_the_agent(tmp_path: Path) -> None:
    from test_shipped_agents import make_run

    from training.tools import ship as ship_module

    run = make_run(tmp_path / "tiny-run")
    out = ship_module.ship(run, name="champion", out=tmp_path / "agents" / "mine.pt", commit="abc")
    card = (tmp_path / "agents" / "mine.md").read_text("utf-8")
    assert out.with_suffix(".md").is_file() and "# Model card: `champion`" in card
    assert "run `tiny-run`" in card and "| `greedy` | 10 | 6-0-4 | 0.600 | not recorded |" in card
