"""The benchmark protocol (``kahuna-eval AGENT --protocol NAME``, :mod:`kahuna_arena.protocol`).

The shipped protocol's sizes are checked against its promise (interval
half-widths); the command is run with a tiny protocol of the same machinery,
so that a result is shown to depend on what the agent is, not on how its
path is written nor on ``--workers``.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest

from kahuna_arena import eval_cli
from kahuna_arena.protocol import KAHUNA_V1, PROTOCOLS, Opponent, Protocol, largest_half_width, rating_against
from kahuna_arena.stats import ANCHOR_RATINGS, expected_score

TINY = Protocol(name="tiny", seed=5, opponents=(Opponent("random", 4, 1.0), Opponent("greedy", 2, 624.0)))
"""Six games: enough to run every path of the command."""


def test_kahuna_v1_keeps_its_promised_interval_half_widths_with_seat_balanced_games():
    widths = {opponent.entrant: largest_half_width(opponent.games) for opponent in KAHUNA_V1.opponents}
    assert widths["greedy"] <= 0.03 and widths["champion"] <= 0.03
    assert widths["mcts"] <= 0.05
    assert all(opponent.games % 2 == 0 for opponent in KAHUNA_V1.opponents)
    # Its Elo is on the ladder's one scale: the anchors' ratings, not a scale of its own.
    ratings = {opponent.entrant: opponent.rating for opponent in KAHUNA_V1.opponents}
    assert ratings["greedy"] == ANCHOR_RATINGS["greedy"] and ratings["mcts"] == ANCHOR_RATINGS["mcts"]


def test_the_rating_against_one_opponent_is_the_elo_formula_and_a_sweep_stays_finite():
    rating, se = rating_against([75], [100], [1000.0], prior_draws=0)
    assert rating == pytest.approx(1000 + 400 * math.log10(75 / 25), abs=1e-6)
    assert se > 0
    assert expected_score(rating, 1000.0) == pytest.approx(0.75)
    swept, swept_se = rating_against([10, 10], [10, 10], [600.0, 1100.0])  # one virtual draw each: finite
    assert 1100 < swept < 2000 and math.isfinite(swept_se)


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(PROTOCOLS, TINY.name, TINY)
    return TINY


def _run(capsys, *argv: str) -> str:
    assert eval_cli.main([*argv, "--no-progress"]) == 0
    return capsys.readouterr().out


def test_one_agent_spelled_two_ways_or_copied_gets_the_same_result_for_any_workers(tiny, tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    from test_output_files import agent_file

    monkeypatch.chdir(tmp_path)
    agent_file(tmp_path / "agent.pt")
    shutil.copy(tmp_path / "agent.pt", tmp_path / "copy.pt")
    out = _run(capsys, "agent.pt", "--protocol", "tiny", "--json", "a.json")
    assert "tiny Elo (the ladder's scale)" in out and "random" in out and "greedy" in out
    _run(capsys, "./copy.pt", "--protocol", "tiny", "--workers", "2", "--json", "b.json")
    first, second = (json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json"))
    assert first["format"] == "kahuna-protocol-result"
    assert first["result"] == second["result"]
    assert [row["games"] for row in first["result"]["scores"]] == [4, 2]
    assert first["run"]["agent"] == "agent.pt" and second["run"]["workers"] == 2
    assert first["result"]["agent"]["identity"].startswith("sha256:")


def test_a_baseline_through_the_protocol_scores_what_its_games_say(tiny, tmp_path, capsys):
    _run(capsys, "greedy", "--protocol", "tiny", "--json", str(tmp_path / "g.json"))
    result = json.loads((tmp_path / "g.json").read_text())["result"]
    against_random = result["scores"][0]
    assert against_random["wins"] + against_random["draws"] + against_random["losses"] == 4
    assert against_random["score"] == pytest.approx((against_random["wins"] + against_random["draws"] / 2) / 4)
    low, high = result["elo"]["ci95"]
    assert low < result["elo"]["rating"] < high


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--games", "10"], "--games does not apply with --protocol"),
        (["--seed", "0"], "--seed does not apply with --protocol"),
        (["--common-deals"], "--common-deals does not apply with --protocol"),
        (["--variant", "planning"], "--variant does not apply with --protocol"),
        (["--record", "games"], "--record does not apply with --protocol"),
        (["--db", "r.sqlite"], "--db does not apply with --protocol"),
        (["greedy"], "--protocol plays one agent against the protocol's opponents, got 2 entrants"),
    ],
)
def test_what_a_protocol_fixes_cannot_be_given_and_is_one_line(tiny, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        eval_cli.main(["random", *extra, "--protocol", "tiny"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"kahuna-eval: error: {message}" or err.startswith(f"kahuna-eval: error: {message}")
    assert "\n" not in err and list(tmp_path.iterdir()) == []


def test_an_existing_json_is_kept_without_force_and_an_unknown_protocol_is_one_line(tiny, tmp_path, capsys):
    existing = tmp_path / "out.json"
    existing.write_text("{}")
    with pytest.raises(SystemExit):
        eval_cli.main(["random", "--protocol", "tiny", "--json", str(existing)])
    assert "--force" in capsys.readouterr().err and existing.read_text() == "{}"
    with pytest.raises(SystemExit) as stop:
        eval_cli.main(["random", "--protocol", "kahuna-v0"])
    assert stop.value.code == 2 and "invalid choice: 'kahuna-v0'" in capsys.readouterr().err
