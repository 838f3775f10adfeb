"""kahuna-play driven by scripted input, and kahuna-replay reproducing recorded games."""

from __future__ import annotations

import io
import json

import pytest

from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.play import main as play_main
from kahuna_arena.replay import main as replay_main
from kahuna_env.board import ISLANDS

# A scripted player: bad input first, then, at every prompt, the first of these that is legal.
# Some end-of-turn action or a discard is always legal, so the game always moves on.
FALLBACKS = [
    "draw",
    "take face-up slot 0",
    "take face-up slot 1",
    "take face-up slot 2",
    "pass",
    *(f"discard {island} face down" for island in ISLANDS),
]
BAD_INPUT = ["foo", "999", "free bridge ALOA-BARI"]


def _script(bad: list[str] = BAD_INPUT) -> str:
    return "\n".join(bad + FALLBACKS * 400) + "\n"


def _play(argv, script):
    out = io.StringIO()
    code = play_main(argv, stdin=io.StringIO(script), stdout=out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def scripted_game(tmp_path_factory):
    """One full scripted game against random, recorded."""
    record = tmp_path_factory.mktemp("play") / "game.json"
    code, output = _play(["--opponent", "random", "--seed", "3", "--record", str(record)], _script())
    return code, output, record


def test_scripted_play_finishes_a_game_against_random(scripted_game):
    code, output, record = scripted_game
    assert code == 0
    assert json.loads(record.read_text())["finished"] is True
    assert "points (final scoring" in output


def test_play_rejects_an_unknown_word_and_asks_again(scripted_game):
    assert "not an action: 'foo'" in scripted_game[1]


def test_play_rejects_an_out_of_range_number_and_asks_again(scripted_game):
    assert "action must be an integer in 0..178, got 999" in scripted_game[1]


def test_play_rejects_an_illegal_action_and_asks_again(scripted_game):
    assert "action 152 (free bridge ALOA-BARI) is not legal now" in scripted_game[1]


def test_play_lists_legal_actions_by_number_and_name(scripted_game):
    assert "147  draw" in scripted_game[1]
    assert "151  pass" in scripted_game[1]


def test_play_shows_what_the_agent_did(scripted_game):
    assert "random plays: " in scripted_game[1]


def test_play_hides_the_opponents_hand(scripted_game):
    first_board = scripted_game[1].split("Legal actions:")[0]
    opponent_line = next(line for line in first_board.splitlines() if line.startswith("player_1: hand"))
    assert "(3) ???? ???? ????" in opponent_line


def test_play_hides_the_island_of_the_opponents_face_down_discards(scripted_game):
    announced = [line for line in scripted_game[1].splitlines() if line.startswith("random plays: discard")]
    assert announced, "the seeded game should contain a face-down discard by the agent"
    assert set(announced) == {"random plays: discard a card face down"}


def test_play_accepts_a_number_for_an_action():
    code, output = _play(["--opponent", "random", "--seed", "1"], "147\nquit\n")
    assert code == 0 and "You play: draw" in output


def test_play_quit_abandons_the_game():
    code, output = _play(["--opponent", "random", "--seed", "1"], "quit\n")
    assert code == 0 and "Game abandoned." in output


def test_play_end_of_input_abandons_the_game():
    code, output = _play(["--opponent", "random", "--seed", "1"], "")
    assert code == 0 and "Game abandoned." in output


def test_play_as_second_seat_lets_the_agent_move_first():
    _, output = _play(["--opponent", "greedy", "--seat", "1", "--seed", "2"], "quit\n")
    assert output.index("greedy plays:") < output.index("Your action")


def test_play_unknown_opponent_exits_with_a_one_line_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        play_main(["--opponent", "alphazero"], stdin=io.StringIO(""), stdout=io.StringIO())
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown entrant 'alphazero'" in err


def test_play_gif_saves_a_picture_sequence(tmp_path):
    gif = tmp_path / "game.gif"
    code, _ = _play(["--opponent", "random", "--seed", "1", "--gif", str(gif)], "147\n147\nquit\n")
    from PIL import Image

    assert code == 0

    with Image.open(gif) as image:
        assert image.n_frames >= 3


def test_replay_reproduces_a_played_game(scripted_game, capsys):
    assert replay_main([str(scripted_game[2]), "--quiet"]) == 0
    assert "replay reproduces the record" in capsys.readouterr().out


@pytest.fixture(scope="module")
def eval_records(tmp_path_factory):
    """Records of two evaluation games between greedy and a small search."""
    folder = tmp_path_factory.mktemp("records")
    run_evaluation(["greedy", "mcts:4"], games=2, seed=4, record_dir=folder)
    return sorted(folder.glob("*.json"))


def test_replay_reproduces_recorded_eval_games_exactly(eval_records):
    for path in eval_records:
        out = io.StringIO()
        assert replay_main([str(path)], stdout=out) == 0
        result = json.loads(path.read_text())["result"]
        assert f"scores {result['scores'][0]} : {result['scores'][1]}" in out.getvalue()


def test_replay_prints_every_action(eval_records):
    out = io.StringIO()
    replay_main([str(eval_records[0])], stdout=out)
    actions = json.loads(eval_records[0].read_text())["actions"]
    assert f"{len(actions):>4}. player_" in out.getvalue()


def test_replay_detects_a_tampered_result(eval_records, tmp_path, capsys):
    record = json.loads(eval_records[0].read_text())
    record["result"]["scores"][0] += 1
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(record))
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(tampered), "--quiet"])
    assert exit_info.value.code == 1
    assert "does not reproduce" in capsys.readouterr().err


def test_replay_detects_an_illegal_action(eval_records, tmp_path, capsys):
    record = json.loads(eval_records[0].read_text())
    record["actions"][0] = 152  # a free bridge outside the setup
    tampered = tmp_path / "illegal.json"
    tampered.write_text(json.dumps(record))
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(tampered), "--quiet"])
    assert exit_info.value.code == 1
    assert "action #1 does not replay" in capsys.readouterr().err


def test_replay_rejects_a_file_that_is_not_a_record(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(other)])
    assert exit_info.value.code == 2
    assert "not a game record" in capsys.readouterr().err


def test_replay_of_a_missing_file_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(tmp_path / "missing.json")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
