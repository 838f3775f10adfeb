"""Hostile and careless input to the arena tools (issue 10): every failure one line, nothing lost, no hangs.

Each test reproduces a failure the audit found: a worker that cannot load an
agent file made ``kahuna-eval --workers 2`` restart workers forever; bad
records, a 100k-deep JSON file and ``kahuna-demo --seed -1`` gave
tracebacks; a finished game recorded without a result replayed as
"unfinished"; ``kahuna-play`` checked its output paths only after the game.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kahuna_arena.match
from kahuna_arena import evaluation
from kahuna_arena.demo import main as demo_main
from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import EvaluationError, WorkerError, run_evaluation
from kahuna_arena.match import GameTask, agent_chooser, play, play_task
from kahuna_arena.play import main as play_main
from kahuna_arena.records import RECORD_FORMAT, check_record, game_record, game_result, read_record, write_record
from kahuna_arena.replay import main as replay_main
from kahuna_arena.store import ResultsStore
from kahuna_env.agents import make_agent
from kahuna_env.engine import KahunaConfig, KahunaGame

REPO = Path(__file__).resolve().parents[1]


def _one_line_error(capsys, program: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{program}: error: ") and "Traceback" not in err, err
    return err


def _exit_code(main, argv, **kwargs) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(argv, **kwargs)
    return exit_info.value.code


def _finished_record(seed: int = 5) -> dict:
    """The record of a finished game between two baselines."""
    game = KahunaGame(seed=seed)
    rng = np.random.default_rng(seed)
    agents = [make_agent("greedy", seed=1), make_agent("random", seed=2)]
    actions = play(game, [agent_chooser(agent, rng) for agent in agents])
    return game_record(["greedy", "random"], seed, KahunaConfig(), actions, game_result(game))


def _write(tmp_path: Path, record: dict, name: str = "record.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


# ---------------------------------------------------------------------------------------------- kahuna-eval workers
def _policy_file(path: Path) -> Path:
    import torch

    from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload

    torch.manual_seed(0)
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(16,))), {"run": "test"}), path)
    return path


VANISHING_FILE_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import kahuna_arena.evaluation as evaluation
    from kahuna_arena.eval_cli import main

    path = sys.argv[1]
    start_workers = evaluation._play_in_workers

    def delete_then_start(*args, **kwargs):
        os.remove(path)  # after the parent's checks, before the workers load it (as keep_last pruning does)
        return start_workers(*args, **kwargs)

    evaluation._play_in_workers = delete_then_start
    if __name__ == "__main__":
        sys.exit(main(sys.argv[2:]))
    """
)


HANG_S = 600
"""Guard against a hang of a multi-process evaluation (seconds idle; three processes importing torch on a busy
2-core machine take minutes), not a speed check."""


def test_eval_with_two_workers_plays_the_agents_the_parent_loaded_when_a_file_vanishes(tmp_path):
    # The entrants are resolved once, in the parent, and handed to the workers: an agent file deleted after
    # the parent's checks (as keep_last pruning does) no longer matters (before, the workers read it again
    # and the pool restarted them forever; then a one-line error).
    policy = _policy_file(tmp_path / "vanishing.pt")
    script = tmp_path / "vanish.py"
    script.write_text(VANISHING_FILE_SCRIPT)
    argv = [sys.executable, str(script), str(policy), str(policy), "greedy", "--games", "4", "--workers", "2"]
    done = subprocess.run(
        [*argv, "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=HANG_S, check=False
    )  # the timeout guards against a hang, not a speed check
    assert done.returncode == 0, done.stderr
    assert not policy.exists()
    assert "vanishing" in done.stdout and "greedy" in done.stdout


DYING_WORKER_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import kahuna_arena.evaluation as evaluation
    from kahuna_arena.eval_cli import main

    play = evaluation._run_in_worker

    def die(state, task):
        if task.index >= 6:  # kill -9 in the middle of a game, once games 0 to 3 at least are finished
            os.kill(os.getpid(), signal.SIGKILL)
        return play(state, task)

    evaluation._run_in_worker = die
    if __name__ == "__main__":
        sys.exit(main(sys.argv[1:]))
    """
)


def test_eval_keeps_the_finished_games_as_ctrl_c_does_when_a_worker_is_killed(tmp_path):
    # Issue 66, item 4: a worker killed with kill -9 ended the run with one line but no records and no --json.
    script = tmp_path / "die.py"
    script.write_text(DYING_WORKER_SCRIPT)
    report, records, db = tmp_path / "report.json", tmp_path / "records", tmp_path / "results.sqlite"
    argv = [sys.executable, str(script), "greedy", "random", "--games", "16", "--workers", "2", "--no-progress"]
    argv += ["--json", str(report), "--record", str(records), "--db", str(db)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert done.returncode == 1
    found = re.fullmatch(
        r"kahuna-eval: error: a worker process died unexpectedly \(killed, or out of memory\?\); "
        rf"stopped after (\d+) of 16 games: (\d+) in --db {re.escape(str(db))}, (\d+) in --json "
        rf"{re.escape(str(report))}, (\d+) records in {re.escape(str(records))}/\n",
        done.stderr,
    )
    assert found, done.stderr
    played = int(found[1])
    assert [int(count) for count in found.groups()] == [played] * 4  # what each output holds
    data = json.loads(report.read_text())
    assert data["partial"] is True and data["total_games"] == played and 4 <= played < 16
    assert len(list(records.glob("*.json"))) == played
    with ResultsStore(db, readonly=True) as store:
        assert store.game_count() == played
    assert f"partial results written to {report}" in done.stdout and f"{played} game records written" in done.stdout


def test_entrants_that_cannot_be_built_fail_before_any_worker_starts(tmp_path):
    # The parent resolves every entrant once (check_entrants) and hands the built agents to the workers.
    with pytest.raises(FileNotFoundError, match="not found"):
        run_evaluation([str(tmp_path / "gone.pt"), "greedy"], games=2, workers=2)


def _broken_choose_action(agent, game, rng):
    raise RuntimeError("the agent crashed")


def test_a_game_that_fails_in_a_worker_is_reported_in_one_line(monkeypatch):
    state: dict = {}
    evaluation._setup_worker(state, evaluation.check_entrants(("greedy", "random")), KahunaConfig().to_dict(), False)
    monkeypatch.setattr("kahuna_env.match.choose_action", _broken_choose_action)
    with pytest.raises(WorkerError, match=r"game 0 of pairing 0 failed: RuntimeError: the agent crashed"):
        evaluation._run_in_worker(state, GameTask(0, 0, (0, 1), 1, (2, 3), 4))


def test_a_game_that_fails_in_process_ends_the_cli_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr("kahuna_env.match.choose_action", _broken_choose_action)
    with pytest.raises(EvaluationError):
        run_evaluation(["greedy", "random"], games=2)
    assert _exit_code(eval_main, ["greedy", "random", "--games", "2", "--no-progress"]) == 1
    assert "the agent crashed" in _one_line_error(capsys, "kahuna-eval")


@pytest.mark.parametrize(
    ("option", "make_path", "message"),
    [
        ("--json", lambda tmp: tmp, "is a directory"),
        ("--json", lambda tmp: _file(tmp / "file") / "eval.json", "is not a directory"),
        ("--record", lambda tmp: _file(tmp / "file"), "is a file"),
    ],
)
def test_eval_checks_its_output_paths_before_any_game(tmp_path, option, make_path, message, capsys):
    path = make_path(tmp_path)
    assert _exit_code(eval_main, ["greedy", "random", "--games", "2", option, str(path), "--no-progress"]) == 2
    assert message in _one_line_error(capsys, "kahuna-eval")


@pytest.mark.parametrize("entrant", ["mcts:²", "mcts:-1", "mcts:1.5"])
def test_eval_a_bad_simulation_budget_is_one_clear_line(entrant, capsys):
    assert _exit_code(eval_main, ["greedy", entrant]) == 2
    assert "bad simulation budget" in _one_line_error(capsys, "kahuna-eval")


@pytest.mark.parametrize(
    "entrant", ["mcts:99999999999999999999999999", "mcts:1000001", "champion@mcts:1000001", "x.pt@mcts:" + "9" * 5000]
)
def test_a_simulation_budget_over_the_hard_bound_is_one_line_for_every_tool(entrant, capsys):
    """Issue 34, item 5: budgets above kahuna_arena.entrants.MAX_SIMULATIONS (10^6) are refused before any game."""
    assert _exit_code(eval_main, ["random", entrant]) == 2
    assert "at most 1000000" in _one_line_error(capsys, "kahuna-eval")
    assert _play_exit_code(["--opponent", entrant])[0] == 2
    assert "at most 1000000" in _one_line_error(capsys, "kahuna-play")
    if not entrant.partition("@")[1]:
        assert _exit_code(demo_main, ["--player0", entrant]) == 2
        assert "at most 1000000" in _one_line_error(capsys, "kahuna-demo")


# ---------------------------------------------------------------------------------------------- kahuna-demo
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "-1"], "non-negative integer, got -1"),
        (["--seed", "x"], "--seed"),
        (["--player0", "mcts:²"], "bad simulation budget"),
        (["--player1", "alphazero"], "unknown entrant 'alphazero'"),
        (["--player0", "runs/agent.pt"], "baselines only"),
    ],
)
def test_demo_bad_arguments_are_one_line(argv, message, capsys):
    assert _exit_code(demo_main, argv) == 2
    assert message in _one_line_error(capsys, "kahuna-demo")


def test_demo_plays_a_budgeted_search_baseline(capsys):
    assert demo_main(["--seed", "2", "--player0", "mcts:2", "--quiet"]) == 0
    assert "final score" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- kahuna-replay
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("result.scores", 5, "'result.scores' must be a list of two non-negative integers, got 5"),
        ("result.final_points", 5, "'result.final_points' must be a list of two non-negative integers, got 5"),
        ("result.scores", [1, -2], "'result.scores'"),
        ("result.winner", 2, "'result.winner' must be 0, 1 or null"),
        ("result.winner", True, "'result.winner'"),
        ("result.extra", 1, "unknown field(s) 'result.extra'"),
        ("result", [], "'result' must be null or an object"),
        ("players", "greedy", "'players' must be a list of two non-empty strings"),
        ("seed", -1, "'seed' must be an integer in 0..2**64-1"),
        ("seed", 2**64, "'seed'"),
        ("seed", 1.5, "'seed'"),
        ("config", 7, "'config' must be an object"),
        ("config", {"variant": "chaos"}, "'config':"),
        ("config", {"colour": 1}, "'config': unknown config option"),
        ("actions", {"0": 1}, "'actions' must be a list"),
        ("actions", [147, 179], "'actions[1]' must be an action id in 0..178, got 179"),
        ("actions", [147, "draw"], "'actions[1]'"),
        ("actions", [147, False], "'actions[1]'"),
        ("pairing", -3, "'pairing' must be a non-negative integer"),
        ("finished", "yes", "'finished' must be true or false"),
        ("finished", False, "'finished' is false but 'result' is given"),
        ("comment", "hi", "unknown field(s) 'comment'"),
    ],
)
def test_replay_names_the_bad_field_of_a_record_in_one_line(tmp_path, field, value, message, capsys):
    record = _finished_record()
    target = record
    *parents, key = field.split(".")
    for parent in parents:
        target = target[parent]
    target[key] = value
    assert _exit_code(replay_main, [str(_write(tmp_path, record)), "--quiet"]) == 2
    err = _one_line_error(capsys, "kahuna-replay")
    assert message in err


@pytest.mark.parametrize("field", ["players", "seed", "config", "actions", "result"])
def test_a_record_missing_a_field_is_rejected_naming_it(field):
    record = _finished_record()
    del record[field]
    with pytest.raises(ValueError, match=f"missing field.*'{field}'"):
        check_record(record)


def test_replay_of_a_100k_deep_json_file_is_one_line(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert _exit_code(replay_main, [str(deep)]) == 2
    assert "nested too deeply" in _one_line_error(capsys, "kahuna-replay")


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\xff\xfe not text", "not UTF-8"), (b"{", "not a JSON game record"), (b"9" * 5000, "not a JSON game record")],
)
def test_replay_of_an_unreadable_file_is_one_line(tmp_path, content, message, capsys):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert _exit_code(replay_main, [str(path)]) == 2
    assert message in _one_line_error(capsys, "kahuna-replay")


def test_replay_of_a_finished_game_recorded_without_a_result_is_a_mismatch(tmp_path, capsys):
    record = _finished_record()
    record["result"] = None
    assert _exit_code(replay_main, [str(_write(tmp_path, record)), "--quiet"]) == 1
    assert "the replayed game ends" in _one_line_error(capsys, "kahuna-replay")


def test_replay_of_an_unfinished_game_without_a_result_succeeds(tmp_path, capsys):
    record = _finished_record()
    record["actions"] = record["actions"][:10]
    record["result"] = None
    assert replay_main([str(_write(tmp_path, record)), "--quiet"]) == 0
    assert "unfinished game" in capsys.readouterr().out


def test_replay_detects_actions_after_the_end_of_the_game(tmp_path, capsys):
    record = _finished_record()
    record["actions"].append(147)
    assert _exit_code(replay_main, [str(_write(tmp_path, record)), "--quiet"]) == 1
    assert "1 action(s) after the end of the game" in _one_line_error(capsys, "kahuna-replay")


def test_replay_detects_a_result_recorded_for_an_unfinished_game(tmp_path, capsys):
    record = _finished_record()
    record["actions"] = record["actions"][:10]
    assert _exit_code(replay_main, [str(_write(tmp_path, record)), "--quiet"]) == 1
    assert "the game is not over" in _one_line_error(capsys, "kahuna-replay")


def test_replay_checks_the_gif_path_before_replaying(tmp_path, capsys):
    path = _write(tmp_path, _finished_record())
    assert _exit_code(replay_main, [str(path), "--gif", str(tmp_path / "game.png")]) == 2
    assert "must end in .gif" in _one_line_error(capsys, "kahuna-replay")


# ---------------------------------------------------------------------------------------------- records
def test_a_record_round_trips_through_write_and_read(tmp_path):
    record = _finished_record()
    assert read_record(write_record(tmp_path / "game.json", record)) == record
    assert [p.name for p in tmp_path.iterdir()] == ["game.json"]  # no temporary file left behind


def test_game_record_refuses_to_build_an_invalid_record():
    with pytest.raises(ValueError, match="'players'"):
        game_record(["greedy"], 1, KahunaConfig(), [], None)


def test_every_evaluation_record_passes_the_schema(tmp_path):
    run_evaluation(["greedy", "random"], games=2, seed=1, record_dir=tmp_path)
    for path in tmp_path.glob("*.json"):
        assert read_record(path)["format"] == RECORD_FORMAT


# ---------------------------------------------------------------------------------------------- kahuna-play
def _file(path: Path) -> Path:
    path.write_text("a file\n")
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _play_exit_code(argv) -> tuple[int, str]:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        play_main(["--opponent", "random", "--seed", "1", *argv], stdin=io.StringIO("147\n"), stdout=out)
    return exit_info.value.code, out.getvalue()


@pytest.mark.parametrize(
    ("option", "make_path", "message"),
    [
        ("--record", lambda tmp: tmp, "is a directory; give a file path"),
        ("--record", lambda tmp: _file(tmp / "file") / "game.json", "is not a directory"),
        ("--gif", lambda tmp: _folder(tmp / "game.gif"), "is a directory"),
        ("--gif", lambda tmp: _file(tmp / "file") / "game.gif", "is not a directory"),
        ("--gif", lambda tmp: tmp / "game.txt", "must end in .gif"),
    ],
)
def test_play_checks_output_paths_before_the_game(tmp_path, option, make_path, message, capsys):
    code, output = _play_exit_code([option, str(make_path(tmp_path))])
    assert code == 2 and output == ""  # no game was started, so none was lost
    assert message in _one_line_error(capsys, "kahuna-play")


def test_play_refuses_an_unwritable_record_directory_before_the_game(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    if os.geteuid() == 0:
        # Root may write anywhere, so the permission check would pass; show it what any other user would see.
        real_access = os.access

        def access(path, mode):
            return False if Path(path) == locked and mode & os.W_OK else real_access(path, mode)

        monkeypatch.setattr(os, "access", access)
    try:
        code, output = _play_exit_code(["--record", str(locked / "game.json")])
    finally:
        locked.chmod(0o700)
    assert code == 2 and output == ""
    assert "is not writable" in _one_line_error(capsys, "kahuna-play")


def test_play_records_an_abandoned_game_that_replays_as_unfinished(tmp_path, capsys):
    path = tmp_path / "new" / "game.json"
    assert (
        play_main(
            ["--opponent", "random", "--seed", "1", "--record", str(path)], io.StringIO("147\nquit\n"), io.StringIO()
        )
        == 0
    )
    record = read_record(path)
    assert record["result"] is None and record["finished"] is False and record["actions"][0] == 147
    assert replay_main([str(path), "--quiet"]) == 0


class _InterruptedInput(io.StringIO):
    """Input that answers ``147`` (draw) once, then is interrupted by Ctrl-C."""

    def readline(self, *args) -> str:
        if self.tell() == 0:
            self.seek(4)
            return "147\n"
        raise KeyboardInterrupt


def test_play_saves_the_record_of_an_interrupted_game(tmp_path):
    path = tmp_path / "game.json"
    out = io.StringIO()
    code = play_main(["--opponent", "random", "--seed", "1", "--record", str(path)], _InterruptedInput("...."), out)
    assert code == 130 and "Game abandoned." in out.getvalue()
    record = read_record(path)
    assert record["result"] is None and record["actions"][0] == 147


def test_play_a_bad_simulation_budget_is_one_clear_line(capsys):
    code, _ = _play_exit_code(["--opponent", "mcts:²"])
    assert code == 2
    assert "bad simulation budget in 'mcts:²'" in _one_line_error(capsys, "kahuna-play")


# ---------------------------------------------------------------------------------------------- one play loop
def test_the_play_loop_stops_when_a_chooser_gives_up():
    game = KahunaGame(seed=3)
    answers = iter([147, None])
    actions = play(game, [lambda g: next(answers)] * 2)
    assert actions == [147] and not game.is_over


def test_the_play_loop_reports_every_action_to_its_callback():
    seen = []
    game = KahunaGame(seed=4)
    rng = np.random.default_rng(0)
    agents = [make_agent("random", seed=0), make_agent("random", seed=1)]
    actions = play(game, [agent_chooser(a, rng) for a in agents], lambda p, a, g: seen.append(a))
    assert game.is_over and seen == actions


def test_evaluation_games_go_through_the_play_loop(monkeypatch):
    calls = []
    original = kahuna_arena.match.play

    def spy(game, choosers, on_action=None):
        calls.append(game)
        return original(game, choosers, on_action)

    monkeypatch.setattr(kahuna_arena.match, "play", spy)
    agents = (make_agent("random", seed=0), make_agent("greedy", seed=0))
    result = play_task(agents, GameTask(0, 0, (0, 1), 7, (1, 2), 3))
    assert len(calls) == 1 and result.moves > 0


# ---------------------------------------------------------------------------------------------- layering
@pytest.mark.parametrize(
    "module",
    [
        "kahuna_arena",
        "kahuna_env.cli",
        "kahuna_arena.demo",
        "kahuna_arena.entrants",
        "kahuna_arena.eval_cli",
        "kahuna_arena.evaluation",
        "kahuna_arena.ladder",
        "kahuna_arena.match",
        "kahuna_arena.play",
        "kahuna_arena.records",
        "kahuna_arena.replay",
        "kahuna_arena.report",
        "kahuna_arena.stats",
    ],
)
def test_importing_an_arena_module_loads_neither_torch_nor_training(module):
    code = (
        f"import sys, {module}\n"
        "loaded = [name for name in ('torch', 'training') if name in sys.modules]\n"
        "sys.exit(f'{loaded} imported' if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_replaying_a_record_loads_neither_torch_nor_training(tmp_path):
    path = _write(tmp_path, _finished_record())
    code = (
        "import sys\nfrom kahuna_arena.replay import main\n"
        f"assert main([{str(path)!r}, '--quiet']) == 0\n"
        "loaded = [name for name in ('torch', 'training') if name in sys.modules]\n"
        "sys.exit(f'{loaded} imported' if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------------------------- issue 66: bounds
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--games", "1000000000000"], "--games: games per pairing must be at most 100,000, got 1,000,000,000,000"),
        (["mcts:2", "--games", "40000"], "3 entrants play 3 pairings of 40,000 games, 120,000 games in all; one"),
        (["--workers", "100000"], "--workers: at most 256 worker processes, got 100000"),
        (["--seed", str(2**63)], f"--seed: the base seed must be below 2**63, got {2**63}"),
        (["--sprt", "elo0=0", "elo1=10", "--games", "200000"], "--games: games per pairing must be at most 100,000"),
    ],
)
def test_eval_counts_beyond_their_hard_bounds_are_one_line_before_anything_starts(argv, message, capsys):
    # Issue 66, item 8: --games 1000000000000 started, printed nothing and grew by 5 MB/s.
    assert _exit_code(eval_main, ["greedy", "random", *argv, "--no-progress"]) == 2
    assert message in _one_line_error(capsys, "kahuna-eval")


def test_run_evaluation_refuses_counts_beyond_the_bounds_before_any_game():
    with pytest.raises(ValueError, match="at most 100,000"):
        run_evaluation(["greedy", "random"], games=10**12)
    with pytest.raises(ValueError, match=r"workers must be an integer in \[1, 256\]"):
        run_evaluation(["greedy", "random"], games=2, workers=10**6)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63 - 1\]"):
        run_evaluation(["greedy", "random"], games=2, seed=2**64)


# ---------------------------------------------------------------------------------------------- issue 66: terminals
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202e"
"""Clears the screen, sets the window title, a C1 CSI, a right-to-left override."""


def _assert_shown_escaped(text: str) -> None:
    assert not any(char in text for char in "\x1b\x07\x9b\u202e"), repr(text)
    assert "\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202e" in text


def test_replay_prints_hostile_player_names_as_escapes(tmp_path):
    record = _finished_record()
    record["players"] = [HOSTILE, "random"]
    out = io.StringIO()
    assert replay_main([str(_write(tmp_path, record))], stdout=out) == 0
    _assert_shown_escaped(out.getvalue())


def test_kahuna_ratings_prints_hostile_labels_of_a_store_as_escapes(tmp_path, capsys):
    from kahuna_arena.ratings_cli import main as ratings_main
    from kahuna_arena.store import Entrant, StoredGame

    db = tmp_path / "results.sqlite"
    hostile, greedy = Entrant("sha256:" + "0" * 64, HOSTILE, "file"), Entrant("baseline:greedy", "greedy", "baseline")
    with ResultsStore(db) as store:
        session = store.start_session("kahuna-eval", KahunaConfig().to_dict())
        for index in range(4):
            store.add_game(session, hostile, greedy, StoredGame(index, index, float(index % 2), 5, 3, 80))
    assert ratings_main(["--db", str(db), "--schedule", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("\\x1b[2J") == 2  # the ladder and the proposed pairing
    _assert_shown_escaped(out)


def test_kahuna_eval_prints_hostile_entrant_names_as_escapes(tmp_path, capsys):
    agent = _policy_file(tmp_path / f"agent{HOSTILE[-5:]}.pt")  # a file name with a C1 CSI and an override
    assert eval_main([str(agent), "greedy", "--games", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "\\x9b31m\\u202e.pt vs greedy" in out and not any(char in out for char in "\x9b\u202e")


def test_one_line_errors_print_control_characters_as_escapes(tmp_path, capsys):
    assert _exit_code(replay_main, [str(tmp_path / f"{HOSTILE}.json")]) == 2
    _assert_shown_escaped(_one_line_error(capsys, "kahuna-replay"))


# ---------------------------------------------------------------------------------------------- issue 66: files, help
@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_game_records_get_the_mode_the_umask_gives(tmp_path, mask):
    # Issue 66, item 11: records were created 0600 (the temporary file's mode) despite umask 0022.
    before = os.umask(mask)
    try:
        assert eval_main(["greedy", "random", "--games", "2", "--record", str(tmp_path / "eval"), "--no-progress"]) == 0
        play = ["--opponent", "random", "--seed", "1", "--record", str(tmp_path / "play.json")]
        assert play_main(play, stdin=io.StringIO("quit\n"), stdout=io.StringIO()) == 0
    finally:
        os.umask(before)
    paths = [tmp_path / "play.json", *(tmp_path / "eval").glob("*.json")]
    assert len(paths) == 3 and {stat.S_IMODE(path.stat().st_mode) for path in paths} == {0o666 & ~mask}


@pytest.mark.parametrize("program", ["kahuna-eval", "kahuna-play", "kahuna-ratings"])
def test_the_entrant_help_names_every_form_from_the_one_grammar(program, capsys):
    from kahuna_arena.entrants import ENTRANT_FORMS
    from kahuna_arena.ratings_cli import main as ratings_main

    main = {"kahuna-eval": eval_main, "kahuna-play": play_main, "kahuna-ratings": ratings_main}[program]
    assert _exit_code(main, ["--help"]) == 0
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at spaces and hyphens
    assert "".join(ENTRANT_FORMS.split()) in text
    assert "champion" in ENTRANT_FORMS and "@mcts:N" in ENTRANT_FORMS and "mcts:N" in ENTRANT_FORMS


# ---------------------------------------------------------------------------------------------- special input files
@pytest.mark.parametrize(
    ("program", "arguments", "what"),
    [
        ("kahuna-replay", ["{fifo}"], "a game record"),
        ("kahuna-eval", ["random", "greedy", "--games", "2", "--db", "{fifo}"], "a results store"),
        ("kahuna-ratings", ["--db", "{store}", "--import-report", "{fifo}"], "a kahuna-eval report"),
        ("kahuna-ratings", ["--db", "{fifo}"], "a results store"),
    ],
    ids=["replay record", "eval --db", "ratings --import-report", "ratings --db"],
)
def test_an_input_that_is_a_fifo_is_refused_unopened(tmp_path, capsys, program, arguments, what):
    # Issue 76: special files given as inputs are refused in one line before anything opens them.
    from test_agent_files import fifo_at, never_blocking

    from kahuna_arena.ratings_cli import main as ratings_main

    fifo = fifo_at(tmp_path / "fifo")
    store = tmp_path / "r.sqlite"
    ResultsStore(store).close()
    main = {"kahuna-replay": replay_main, "kahuna-eval": eval_main, "kahuna-ratings": ratings_main}[program]
    with never_blocking(fifo), pytest.raises(SystemExit) as stop:
        main([part.format(fifo=fifo, store=store) for part in arguments])
    assert stop.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line == f"{program}: error: {fifo} is not a regular file (a device, pipe or socket), not {what}"
