"""``kahuna-ship SOUP --soup``: a weight soup shipped with its ingredients' provenance, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_shipped_agents import make_run

from policy.agent import load_agent
from policy.model import ActorCritic, ModelConfig, agent_payload
from training.ppo.provenance import weights_key
from training.tools import ship as ship_module
from training.tools.model_card import model_card
from training.tools.soup import main as soup_main

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def _model(seed: int) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(ModelConfig(hidden_sizes=(8,))).eval()


@pytest.fixture
def kitchen(tmp_path, monkeypatch):
    """Two finished runs and an agent file outside any run, souped as the README's commands do (relative paths)."""
    monkeypatch.chdir(tmp_path)
    make_run(Path("runs/a"), model=_model(0))
    make_run(Path("runs/b"), update=5, model=_model(1))
    loose = Path("loose.pt")
    meta = {"run": "older", "update": 9, "global_step": 777, "init_from": "somewhere.pt", "secret": "x"}
    torch.save(agent_payload(_model(2), meta), loose)
    assert soup_main(["runs/a/final_agent.pt", "runs/b/final_agent.pt", str(loose), "--out", "soup.pt"]) == 0
    return tmp_path


def _eval_report(tmp_path: Path, first: str) -> Path:
    from arena.eval_cli import main as eval_main

    path = tmp_path / "eval.json"
    assert eval_main([first, "random", "--games", "2", "--no-progress", "--json", str(path)]) == 0
    return path


def test_a_soup_ships_with_every_ingredients_provenance(kitchen) -> None:
    report = _eval_report(kitchen, "soup.pt")
    out = ship_module.ship("soup.pt", name="champion", eval_json=report, out="shipped.pt", commit="abc", soup=True)
    agent = load_agent(out)
    assert weights_key(agent.model) == weights_key(load_agent("soup.pt").model)
    meta = agent.meta
    assert meta["kind"] == "soup" and meta["agent_file"] == "soup.pt" and meta["commit"] == "abc"
    assert meta["run"] == "a+b+older"
    first, second, third = meta["soup"]
    assert first["provenance"]["source"] == "run directory" and first["provenance"]["run"] == "a"
    assert first["provenance"]["training"]["updates"] == 3 and second["provenance"]["training"]["updates"] == 5
    assert third["provenance"] == {
        "source": "agent file",
        "run": "older",
        "update": 9,
        "global_step": 777,
        "init_from": "somewhere.pt",
    }
    assert first["weights"] == weights_key(load_agent("runs/a/final_agent.pt").model)
    # Each run counted once; the loose file records no counters and is named as not counted.
    assert meta["training"]["updates"] == 8 and meta["training"]["learner_decisions"] == 2 * 1234
    assert "the sum of the runs a, b" in meta["training_note"] and "loose.pt" in meta["training_note"]
    assert meta["config"]["name"] == "tiny" and meta["evaluation"] == [json.loads(report.read_text())]
    card = Path("shipped.md").read_text()
    assert "a weight soup" in card and "run `b`, 5 updates" in card
    assert "| `random` | 2 |" in card  # the soup's own evaluation, from its side


def test_the_card_names_the_search_an_agent_guided() -> None:
    pairing = {"a": "x/soup.pt@mcts:50", "b": "mcts:1000", "games": 4, "wins": 3, "draws": 0, "losses": 1}
    pairing |= {"score": 0.75, "score_ci95": [0.3, 0.95]}
    meta = {"agent_file": "x/soup.pt", "evaluation": [{"seed": 0, "pairings": [pairing]}]}
    assert "| `mcts:1000` (as `this agent@mcts:50`) | 4 | 3-0-1 | 0.750 |" in model_card(meta)


def _rewrite_soup(path: Path, change) -> None:
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


def _scale_first_weight(payload) -> None:
    name = next(iter(payload["model_state"]))
    payload["model_state"][name] = payload["model_state"][name] * 1.5


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda: _rewrite_soup(Path("soup.pt"), lambda p: p["meta"].pop("soup")), "is not a weight soup"),
        (lambda: _rewrite_soup(Path("soup.pt"), lambda p: p["meta"]["soup"].pop()), None),  # average check below
        (lambda: _rewrite_soup(Path("soup.pt"), lambda p: p["meta"].update(soup=[{}])), "lists 1 ingredient(s)"),
        (
            lambda: _rewrite_soup(Path("soup.pt"), lambda p: p["meta"]["soup"][1].update(weight=-1)),
            "ingredient 2 is damaged",
        ),
        (lambda: _rewrite_soup(Path("soup.pt"), _scale_first_weight), "not the weighted average"),
        (lambda: Path("runs/b/final_agent.pt").unlink(), "ingredient 2 of the soup (runs/b/final_agent.pt) cannot"),
        (
            lambda: torch.save(agent_payload(_model(7), {}), "loose.pt"),
            "ingredient 3 of the soup (loose.pt) no longer holds the weights",
        ),
        (lambda: Path("soup.pt").write_text("junk"), "not a readable checkpoint"),
    ],
)
def test_a_bad_soup_is_one_line_and_writes_nothing(kitchen, capsys, damage, message) -> None:
    damage()
    with pytest.raises(SystemExit) as caught:
        ship_module.main(["soup.pt", "--soup", "--out", "shipped.pt"])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    message = message or "not the weighted average"  # two ingredients left: their average is another network
    assert error.startswith("kahuna-ship: error: ") and error.count("\n") == 1 and message in error, error
    assert not Path("shipped.pt").exists() and not Path("shipped.md").exists()


def test_ingredients_of_other_rules_are_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_run(Path("runs/a"), model=_model(0), env={"variant": "standard"})
    make_run(Path("runs/b"), model=_model(1), env={"variant": "planning"})
    assert soup_main(["runs/a/final_agent.pt", "runs/b/final_agent.pt", "--out", "soup.pt"]) == 0
    with pytest.raises(ValueError, match="trained on different rules"):
        ship_module.ship("soup.pt", out="shipped.pt", soup=True)


def test_the_output_may_not_be_an_ingredient(kitchen) -> None:
    with pytest.raises(ValueError, match="is one of the inputs"):
        ship_module.ship("soup.pt", out="loose.pt", soup=True, force=True)
