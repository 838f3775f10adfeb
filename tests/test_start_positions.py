"""Start positions: training games that begin at positions of a file (``rollout.start_positions``),
the tool that writes such files from game records, and their refusals."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from kahuna_arena.lost_positions import main as tool_main
from kahuna_arena.records import game_record, write_record
from kahuna_arena.start_positions import MAX_LINE_BYTES, StartPositionsError, load_start_positions, start_line
from kahuna_env.agents import make_agent
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation
from kahuna_policy.model import ActorCritic, ModelConfig
from training.league.pool import KIND_GREEDY, OpponentPool
from training.ppo.config import ConfigError, config_from_dict
from training.selfplay.collector import SelfPlayCollector

ROOT = Path(__file__).resolve().parents[1]
MODEL_CONFIG = ModelConfig(hidden_sizes=(32,))
SHARES = {"latest": 0.25, "past": 0.0, "greedy": 0.75, "random": 0.0}


def _play(seed: int, players: tuple[str, str]) -> dict:
    """A finished game record of two baselines (deal ``seed``)."""
    game = KahunaGame(KahunaConfig(), seed=seed)
    agents = [make_agent(name, seed=seed + seat) for seat, name in enumerate(players)]
    actions = []
    while not game.is_over:
        action = int(agents[game.current_player].act(None, game.action_mask(), game))
        game.step(action)
        actions.append(action)
    result = {"scores": list(game.scores), "final_points": list(game.final_points), "winner": game.winner}
    return game_record(list(players), seed, KahunaConfig(), actions, result)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    """Twelve games of greedy and random, seats alternating (random loses almost all of them)."""
    folder = tmp_path_factory.mktemp("records")
    for k in range(12):
        players = ("greedy", "random") if k % 2 == 0 else ("random", "greedy")
        write_record(folder / f"game{k:02d}.json", _play(100 + k, players))
    return folder


@pytest.fixture(scope="module")
def positions_file(records, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("starts") / "lost.jsonl"
    assert tool_main([str(records), "--player", "random", "--out", str(out)]) == 0
    return out


# ---------------------------------------------------------------- the tool


def test_the_tool_writes_every_turn_start_of_the_lost_games(records, positions_file):
    lines = [json.loads(line) for line in positions_file.read_text().splitlines()]
    expected = 0
    for file in sorted(records.glob("*.json")):
        record = json.loads(file.read_text())
        seat = record["players"].index("random")
        if record["result"]["winner"] == seat:
            continue
        game, previous = KahunaGame(KahunaConfig(), seed=record["seed"]), None
        for action in record["actions"]:
            if game.current_player == seat and previous != seat:
                assert lines[expected] == {"seat": seat, "position": game.to_dict()}
                expected += 1
            previous = game.current_player
            game.step(action)
    assert expected == len(lines) > 100
    loaded = load_start_positions(positions_file)
    assert len(loaded) == len(lines)
    assert {0, 1} == set(loaded.seats.tolist())


def test_the_tool_keeps_later_rounds_only_when_asked(records, tmp_path):
    out = tmp_path / "late.jsonl"
    assert tool_main([str(records), "--player", "random", "--out", str(out), "--from-round", "3"]) == 0
    rounds = {json.loads(line)["position"]["round"] for line in out.read_text().splitlines()}
    assert rounds == {3}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--player", "champion"], "'champion' plays in none of the 12 records"),
        (["--player", "greedy"], "no positions: 'greedy' lost none of its 12 games from round 1"),
        (["--player", "random", "--from-round", "4"], "argument --from-round: invalid choice"),
    ],
)
def test_the_tool_refuses_in_one_line(records, tmp_path, capsys, arguments, message):
    out = tmp_path / "out.jsonl"
    with pytest.raises(SystemExit) as stop:
        tool_main([str(records), *arguments, "--out", str(out)])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("lost_positions: error: ") and message in error and "\n" not in error
    assert not out.exists()


def test_the_tool_refuses_an_existing_output_and_a_bad_record(records, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    out.write_text("mine\n")
    with pytest.raises(SystemExit):
        tool_main([str(records), "--player", "random", "--out", str(out)])
    assert "exists; choose another --out" in capsys.readouterr().err
    assert out.read_text() == "mine\n"
    bad = tmp_path / "bad"
    bad.mkdir()
    record = json.loads(next(records.glob("*.json")).read_text())
    record["actions"][3] = 178  # an action that is not legal there
    (bad / "game.json").write_text(json.dumps(record))
    with pytest.raises(SystemExit):
        tool_main([str(bad), "--player", "random", "--out", str(tmp_path / "new.jsonl")])
    error = capsys.readouterr().err.strip()
    assert error.startswith("lost_positions: error: game.json: ") and "\n" not in error
    assert not (tmp_path / "new.jsonl").exists()


# ---------------------------------------------------------------- the file


def _game(seed: int = 3, actions: int = 20) -> KahunaGame:
    game = KahunaGame(KahunaConfig(), seed=seed)
    greedy = make_agent("greedy", seed=seed)
    for _ in range(actions):
        game.step(int(greedy.act(None, game.action_mask(), game)))
    return game


def _finished() -> KahunaGame:
    game = KahunaGame(KahunaConfig(), seed=5)
    greedy = make_agent("greedy", seed=5)
    while not game.is_over:
        game.step(int(greedy.act(None, game.action_mask(), game)))
    return game


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "line 2: not a JSON object"),
        (b"[1, 2]", "line 2: not a JSON object"),
        (b'{"seat": 0}', "line 2: missing key 'position'"),
        (b'{"seat": 0, "position": {}, "note": 1}', "line 2: unknown key 'note'"),
        (b'{"seat": 2, "position": {}}', "line 2: seat must be 0 or 1"),
        (b'{"seat": true, "position": {}}', "line 2: seat must be 0 or 1"),
        (b'{"seat": 0, "position": []}', "line 2: position must be an object"),
        (b'{"seat": 0, "position": {"round": 1}}', "line 2: "),
        (lambda: start_line(0, _finished()).encode(), "line 2: the game is over"),
        (lambda: b'{"seat": 0, "position": "' + b"x" * MAX_LINE_BYTES + b'"}', "line 2: longer than"),
    ],
)
def test_a_bad_line_is_one_line_naming_it(tmp_path, line, message):
    path = tmp_path / "starts.jsonl"
    line = line() if callable(line) else line
    path.write_bytes(start_line(1, _game()).encode() + b"\n" + line + b"\n")
    with pytest.raises(StartPositionsError) as error:
        load_start_positions(path)
    text = str(error.value)
    assert text.startswith("start positions starts.jsonl") and message in text and "\n" not in text
    assert "xxxx" not in text and str(tmp_path) not in text  # neither the content nor the folder


def test_an_empty_or_missing_file_and_other_rules_are_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(StartPositionsError, match=r"empty\.jsonl: no positions"):
        load_start_positions(empty)
    with pytest.raises(StartPositionsError, match=r"missing\.jsonl: cannot be read"):
        load_start_positions(tmp_path / "missing.jsonl")
    good = tmp_path / "good.jsonl"
    good.write_text(start_line(0, _game()) + "\n")
    assert len(load_start_positions(good, KahunaConfig())) == 1
    with pytest.raises(StartPositionsError, match=r"line 1: the position's rules .* are not the training games'"):
        load_start_positions(good, KahunaConfig(variant="planning"))


def test_a_draw_keeps_what_the_seat_sees_and_deals_the_rest_afresh(tmp_path):
    game = _game(seed=9, actions=30)
    path = tmp_path / "one.jsonl"
    seat = game.current_player
    path.write_text(start_line(seat, game) + "\n")
    starts = load_start_positions(path)
    positions, seats = starts.draw(6, np.random.default_rng(0))
    assert seats.tolist() == [seat] * 6
    seen = encode_observation(game, seat)
    hidden = set()
    for position in positions:
        drawn = KahunaGame.from_dict(position)
        np.testing.assert_array_equal(encode_observation(drawn, seat), seen)
        hidden.add((tuple(position["hands"][1 - seat]), tuple(position["pile"])))
    assert len(hidden) > 1  # the opponent's hand and the pile are dealt again
    again, _ = starts.draw(6, np.random.default_rng(0))
    assert again == positions  # the same generator, the same draws


# ---------------------------------------------------------------- training


def test_a_collection_starts_its_share_of_greedy_games_from_the_positions(positions_file):
    starts = load_start_positions(positions_file)
    torch.manual_seed(0)
    model = ActorCritic(MODEL_CONFIG).eval()
    pool = OpponentPool(model.config, max_snapshots=1)
    collector = SelfPlayCollector(16, start_positions=starts, start_share=0.5, start_opponent="greedy")
    rng = np.random.default_rng(3)
    assignment = pool.assign(16, SHARES, rng)
    twin = np.random.default_rng(3)  # the same draws, to see which games start where
    pool.assign(16, SHARES, twin)
    twin.integers(2**63, size=16)
    seats, positions = collector._starts(assignment, twin)
    rollout = collector.collect(model, pool, assignment, rng)
    greedy_games = int((assignment.kinds == KIND_GREEDY).sum())
    started = [g for g, position in enumerate(positions) if position is not None]
    assert len(started) == round(0.5 * greedy_games) > 0
    assert all(assignment.kinds[g] == KIND_GREEDY for g in started)
    for g in started:
        seat = int(np.flatnonzero(seats[g])[0])
        assert seats[g].sum() == 1
        rows = np.flatnonzero(rollout.trajectory == 2 * g + seat)
        game = KahunaGame.from_dict(positions[g])
        assert game.current_player == seat
        np.testing.assert_array_equal(rollout.observations[rows[0]], encode_observation(game, seat))
        assert not (rollout.trajectory == 2 * g + 1 - seat).any()
    wins, draws, losses = rollout.stats.start_results
    assert wins + draws + losses == len(started)
    fresh = rollout.stats.results["greedy"]
    assert sum(fresh) == greedy_games - len(started)
    metrics = rollout.stats.as_metrics()
    assert metrics["rollout/win_rate_from_start"] == wins / len(started)


def test_the_config_keys_are_checked():
    base = {"rollout": {"start_positions": "lost.jsonl", "start_share": 0.5}}
    config = config_from_dict(base)
    assert (config.rollout.start_positions, config.rollout.start_share, config.rollout.start_opponent) == (
        "lost.jsonl",
        0.5,
        "greedy",
    )
    for rollout, message in [
        ({"start_share": 0.5}, "rollout.start_share: must be > 0 exactly when rollout.start_positions names a file"),
        ({"start_positions": "lost.jsonl"}, "rollout.start_share: must be > 0 exactly when"),
        ({"start_positions": "lost.jsonl", "start_share": 1.5}, "rollout.start_share: must be in [0, 1]"),
        ({"start_positions": "lost.jsonl", "start_share": 0.5, "start_opponent": "past"}, "rollout.start_opponent"),
        ({"start_positions": " ", "start_share": 0.5}, "rollout.start_positions: must be a file path"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            config_from_dict({"rollout": rollout})


def test_kahuna_train_refuses_a_bad_file_before_making_the_run(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seat": 0, "position": {"bridges": "zz-secret-zz"}}\n')
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "training.cli",
        "--config",
        str(ROOT / "configs" / "smoke.yaml"),
        "--set",
        f"rollout.start_positions={bad}",
        "--set",
        "rollout.start_share=0.5",
        "--run-dir",
        str(run_dir),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip()
    assert error.startswith("kahuna-train: error: start positions bad.jsonl, line 1: ")
    assert "\n" not in error and "zz-secret-zz" not in error
    assert not run_dir.exists()


def test_the_collector_refuses_inconsistent_start_settings(positions_file):
    starts = load_start_positions(positions_file)
    with pytest.raises(ValueError, match="start_share must be in"):
        SelfPlayCollector(4, start_positions=starts)
    with pytest.raises(ValueError, match="start_share must be in"):
        SelfPlayCollector(4, start_share=0.5)
    with pytest.raises(ValueError, match="start_opponent must be an opponent kind other than past, got 'past'"):
        SelfPlayCollector(4, start_positions=starts, start_share=0.5, start_opponent="past")


def test_a_huge_value_in_a_line_is_shown_as_a_short_excerpt(tmp_path):
    position = _game().to_dict()
    position["hands"][0][0] = "X" * 12_000  # a card name of 12,000 characters
    path = tmp_path / "starts.jsonl"
    path.write_text(json.dumps({"seat": 0, "position": position}) + "\n")
    with pytest.raises(StartPositionsError) as error:
        load_start_positions(path)
    text = str(error.value)
    assert "is not an island name" in text and "\n" not in text and len(text) < 400
    unknown_key = tmp_path / "key.jsonl"
    unknown_key.write_text(json.dumps({"seat": 0, "position": position, "Y" * 12_000: 1}) + "\n")
    with pytest.raises(StartPositionsError, match="unknown key 'YYYY") as error:
        load_start_positions(unknown_key)
    assert len(str(error.value)) < 300


def test_the_tool_cuts_a_records_reason_short(tmp_path, capsys):
    record = tmp_path / "huge.json"
    record.write_text(json.dumps({"format": "x" * 12_000}))
    with pytest.raises(SystemExit):
        tool_main([str(record), "--player", "random", "--out", str(tmp_path / "out.jsonl")])
    error = capsys.readouterr().err.strip()
    assert error.startswith("lost_positions: error: huge.json: ") and "xxx..." in error
    assert "\n" not in error and len(error) < 400
    assert not (tmp_path / "out.jsonl").exists()
