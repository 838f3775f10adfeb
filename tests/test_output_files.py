"""Tools never overwrite a file without ``--force`` (issue 34, items 3 and 7; issue 76).

Every tool that writes a user-named file checks it with
:func:`kahuna_env.cli.check_output_file`: never one of its inputs, never a
protected file of another kind (a results store, an agent file, a record, a
report), and an existing file only with ``--force``.  ``test_output_guard.py``
runs every such command against each of those cases.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
import torch
import yaml

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.play import main as play_main
from kahuna_env.cli import AGENT, RECORD, REPORT, STORE, check_output_file, file_kind
from kahuna_policy.model import ActorCritic, ModelConfig
from training.ppo.checkpoint import build_checkpoint, export_agent, save_checkpoint
from training.tools import ship as ship_module

REPOSITORY = Path(__file__).resolve().parent.parent
TINY = ModelConfig(hidden_sizes=(8,))


def error_line(capsys, program: str) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{program}: error: "), lines
    return lines[0]


def agent_file(path: Path) -> Path:
    export_agent(path, ActorCritic(TINY), {"run": "victim", "reward": {"win": 1.0, "island_shaping": 1.0}})
    return path


def refused(capsys, program: str, run, code: int = 2) -> str:
    with pytest.raises(SystemExit) as stop:
        run()
    assert stop.value.code == code
    return error_line(capsys, program)


# ---------------------------------------------------------------------------------------------- the shared rule
def test_an_output_that_is_an_input_is_refused_even_with_force(tmp_path):
    source = tmp_path / "a.pt"
    source.write_bytes(b"x")
    (tmp_path / "link.pt").symlink_to(source)
    for path in (source, tmp_path / "link.pt", tmp_path / "sub" / ".." / "a.pt"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(ValueError, match="is one of the inputs"):
            check_output_file("--out", path, None, inputs=[source], force=True)
    with pytest.raises(ValueError, match=r"^--json r.sqlite is also --db r.sqlite; give another output path$"):
        check_output_file("--json", Path("r.sqlite"), REPORT, inputs=[("--db", Path("r.sqlite"))], force=True)


def test_any_existing_file_is_replaced_only_with_force(tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}')
    with pytest.raises(ValueError, match=r"exists; give another path, or --force to replace it"):
        check_output_file("--json", notes, REPORT)
    check_output_file("--json", notes, REPORT, force=True)
    notes.write_text('{\n  "format": "kahuna-eval-v1", "rest": 2}')  # an earlier report of the same kind
    with pytest.raises(ValueError, match=r"exists \(a kahuna report\); give another path, or --force"):
        check_output_file("--json", notes, REPORT)
    check_output_file("--json", notes, REPORT, force=True)


def test_a_protected_file_of_another_kind_is_never_replaced(tmp_path):
    agent = agent_file(tmp_path / "agent.pt")
    record = tmp_path / "game.json"
    record.write_text('{"format": "kahuna-record-v1", "players": []}')
    store = tmp_path / "results.sqlite"
    store.write_bytes(b"SQLite format 3\x00" + bytes(100))
    assert [file_kind(path) for path in (agent, record, store)] == [AGENT, RECORD, STORE]
    for path, kind in ((agent, "an agent file"), (record, "a game record"), (store, "a results store")):
        with pytest.raises(
            ValueError, match=rf"^--json {path} is {kind} \(--json writes a kahuna report\); give another"
        ):
            check_output_file("--json", path, REPORT, force=True)
    check_output_file("--out", agent, AGENT, force=True)  # its own kind, with --force


# ---------------------------------------------------------------------------------------------- kahuna-eval
def test_eval_refuses_to_write_its_json_over_the_agent_it_evaluates(tmp_path, capsys):
    # The command: the agent was replaced by the JSON report, exit 0.
    victim = agent_file(tmp_path / "victim.pt")
    before = victim.read_bytes()
    line = refused(
        capsys, "kahuna-eval", lambda: eval_main(["random", str(victim), "--games", "2", "--json", str(victim)])
    )
    assert f"--json {victim} is one of the inputs" in line
    assert victim.read_bytes() == before
    line = refused(capsys, "kahuna-eval", lambda: eval_main([f"{victim}@mcts:2", "random", "--json", str(victim)]))
    assert "is one of the inputs" in line and victim.read_bytes() == before


def test_eval_replaces_an_existing_file_only_with_force(tmp_path, capsys):
    report = tmp_path / "report.json"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    base = ["random", "greedy", "--games", "2", "--no-progress"]
    line = refused(capsys, "kahuna-eval", lambda: eval_main([*base, "--json", str(notes)]))
    assert "exists; give another path, or --force to replace it" in line and notes.read_text() == "my notes\n"
    assert eval_main([*base, "--json", str(report)]) == 0
    line = refused(capsys, "kahuna-eval", lambda: eval_main([*base, "--json", str(report), "--seed", "5"]))
    assert "exists (a kahuna report); give another path, or --force" in line  # even an earlier report
    assert eval_main([*base, "--json", str(report), "--seed", "5", "--force"]) == 0
    assert json.loads(report.read_text())["seed"] == 5
    assert eval_main([*base, "--json", str(notes), "--force"]) == 0
    assert json.loads(notes.read_text())["format"] == "kahuna-eval-v1"


def test_eval_never_overwrites_an_earlier_evaluations_records(tmp_path, capsys):
    records = tmp_path / "records"
    base = ["random", "greedy", "--games", "2", "--no-progress", "--record", str(records)]
    assert eval_main(base) == 0
    first = {path.name: path.read_bytes() for path in records.iterdir()}
    assert len(first) == 2
    line = refused(capsys, "kahuna-eval", lambda: eval_main([*base, "--seed", "9"]))
    assert "already holds 2 game record(s) of an earlier evaluation" in line
    assert {path.name: path.read_bytes() for path in records.iterdir()} == first
    assert eval_main([*base, "--seed", "9", "--force"]) == 0
    assert {path.name: path.read_bytes() for path in records.iterdir()} != first


def _signal_lines(pid: int) -> str:
    """The signal masks of process ``pid`` (``SigBlk``, ``SigIgn``, ``SigCgt`` from /proc), for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "(no /proc status)"
    return " ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_during_eval_keeps_the_finished_games(tmp_path, sent, code, said):
    # Issue 34, item 7: Ctrl-C threw the finished games away.  A real SIGINT once three games are done.
    # Issue 66, item 4: any early end keeps them the same way; SIGTERM (a scheduler's stop) ended with nothing.
    report, records = tmp_path / "report.json", tmp_path / "records"
    command = [sys.executable, "-m", "kahuna_arena.eval_cli", "mcts:30", "greedy", "--games", "200"]
    command += ["--json", str(report), "--record", str(records)]
    # A user's Ctrl-C reaches a process whose SIGINT has its default action.  The test process may have
    # inherited SIGINT ignored (a child started with it ignored keeps ignoring it, and Python then installs
    # no KeyboardInterrupt handler), so the child starts with the default action, as from a terminal.
    process = subprocess.Popen(
        command,
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = b""
    os.set_blocking(process.stderr.fileno(), False)
    deadline = time.monotonic() + 300  # generous: three games take a second or two
    while not re.search(rb"\| +([3-9]|\d\d+)/200", seen) and time.monotonic() < deadline:
        assert process.poll() is None, seen
        seen += process.stderr.read() or b""
        time.sleep(0.05)
    dispositions = _signal_lines(process.pid)
    process.send_signal(sent)
    out, err = process.communicate(timeout=120)
    err = (seen + err).decode().replace("\r", "\n")
    assert process.returncode == code, f"{dispositions}\n{err}"
    last = err.strip().splitlines()[-1]
    counts = rf"(\d+) in --json {re.escape(str(report))}, (\d+) records in {re.escape(str(records))}/"
    found = re.fullmatch(rf"kahuna-eval: error: {re.escape(said)} after (\d+) of 200 games: {counts}", last)
    assert found, last
    data = json.loads(report.read_text())
    played = data["total_games"]
    assert data["partial"] is True and 3 <= played < 200
    assert [int(number) for number in found.groups()] == [played] * 3  # each output holds what it says
    assert len(list(records.glob("*.json"))) == played
    assert b"partial results written to" in out


# ---------------------------------------------------------------------------------------------- kahuna-play
def test_play_refuses_to_record_over_its_opponent_or_a_foreign_file(tmp_path, capsys):
    opponent = agent_file(tmp_path / "opponent.pt")
    before = opponent.read_bytes()
    line = refused(
        capsys,
        "kahuna-play",
        lambda: play_main(["--opponent", str(opponent), "--record", str(opponent)], stdin=StringIO("quit\n")),
    )
    assert "is one of the inputs" in line and opponent.read_bytes() == before
    notes = tmp_path / "notes.gif"
    notes.write_text("not a gif")
    line = refused(capsys, "kahuna-play", lambda: play_main(["--gif", str(notes)], stdin=StringIO("quit\n")))
    assert "exists; give another path, or --force" in line and notes.read_text() == "not a gif"
    record = tmp_path / "game.json"
    arguments = ["--record", str(record), "--seed", "1"]
    assert play_main(arguments, stdin=StringIO("quit\n"), stdout=StringIO()) == 0
    line = refused(capsys, "kahuna-play", lambda: play_main(arguments, stdin=StringIO("quit\n")))
    assert "exists (a game record); give another path, or --force" in line
    assert play_main([*arguments, "--force"], stdin=StringIO("quit\n"), stdout=StringIO()) == 0
    assert file_kind(record) is RECORD
    line = refused(capsys, "kahuna-play", lambda: play_main(["--record", str(opponent), "--force"], stdin=StringIO("")))
    assert "is an agent file (--record writes a game record)" in line and opponent.read_bytes() == before


# ---------------------------------------------------------------------------------------------- kahuna-ship
def make_run(directory: Path, model_config: dict | None = None) -> Path:
    """A finished run (config.yaml, final_agent.pt, checkpoints/latest.pt, final_eval.json) of the TINY network."""
    model = ActorCritic(TINY)
    config = {"name": "tiny", "model": model_config or {"hidden_sizes": [8], "architecture": "mlp"}}
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    counters = {"update": 3, "global_step": 10, "actions": 20, "games": 4, "train_seconds": 1.0}
    optimizer = torch.optim.Adam(model.parameters())
    save_checkpoint(directory, build_checkpoint(model, optimizer, config, counters, [], {"run": "tiny"}))
    export_agent(directory / "final_agent.pt", model, {"run": "tiny", "update": 3})
    (directory / "final_eval.json").write_text(json.dumps({"greedy": {"score": 0.5}}))
    return directory


def test_ship_refuses_a_config_that_does_not_describe_the_network(tmp_path, capsys):
    # The case: meta said hidden_sizes [32], the network was [256, 128] (here [8]).
    run = make_run(tmp_path / "run", {"hidden_sizes": [32], "architecture": "mlp"})
    out = tmp_path / "agent.pt"
    line = refused(capsys, "kahuna-ship", lambda: ship_module.main([str(run), "--out", str(out)]))
    assert "config.yaml does not describe the network of" in line and "refusing to write false provenance" in line
    assert not out.exists()


def test_ship_records_the_reward_settings_of_the_run(tmp_path):
    run = make_run(tmp_path / "run")
    out = ship_module.ship(run, out=tmp_path / "agent.pt", commit="abc")
    from training import load_agent

    agent = load_agent(out)
    assert agent.meta["reward"] == {"win": 1.0, "island_shaping": 0.0} == agent.reward  # the config's defaults


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ({"format": "kahuna-eval-v1"}, "missing entrants"),
        ("complete", None),
        ("partial", "the partial report of an interrupted evaluation"),
        ("wins", "pairings[0]: wins + draws + losses must equal games"),
        ("score", "pairings[0]: score must be (wins + draws / 2) / games"),
        ("total", "total_games 99 is not the sum"),
    ],
)
def test_ship_checks_the_whole_eval_report(tmp_path, capsys, report, message):
    run = make_run(tmp_path / "run")
    real = tmp_path / "real.json"
    assert eval_main(["random", "greedy", "--games", "2", "--no-progress", "--json", str(real)]) == 0
    data = json.loads(real.read_text())
    if report == "partial":
        data["partial"] = True
    elif report == "wins":
        data["pairings"][0]["wins"] += 1
    elif report == "score":
        data["pairings"][0]["score"] = 0.123
    elif report == "total":
        data["total_games"] = 99
    elif isinstance(report, dict):
        data = report
    (tmp_path / "eval.json").write_text(json.dumps(data))
    out = tmp_path / "agent.pt"
    arguments = [str(run), "--out", str(out), "--eval-json", str(tmp_path / "eval.json")]
    capsys.readouterr()
    if message is None:
        assert ship_module.main(arguments) == 0
        return
    line = refused(capsys, "kahuna-ship", lambda: ship_module.main(arguments))
    assert "is not a complete kahuna-eval --json report" in line and message in line, line
    assert not out.exists()


def test_ship_never_writes_over_its_inputs_or_a_foreign_file(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    agent_before = (run / "final_agent.pt").read_bytes()
    for target in (run / "final_agent.pt", run / "checkpoints" / "latest.pt", run / "config.yaml"):
        arguments = [str(run), "--out", str(target), "--force"]
        line = refused(capsys, "kahuna-ship", lambda arguments=arguments: ship_module.main(arguments))
        assert "is one of the inputs" in line
    assert (run / "final_agent.pt").read_bytes() == agent_before
    notes = tmp_path / "notes.pt"
    notes.write_text("notes")
    line = refused(capsys, "kahuna-ship", lambda: ship_module.main([str(run), "--out", str(notes)]))
    assert "exists; give another path, or --force" in line and notes.read_text() == "notes"
    out = tmp_path / "shipped.pt"
    assert ship_module.main([str(run), "--out", str(out)]) == 0
    line = refused(capsys, "kahuna-ship", lambda: ship_module.main([str(run), "--out", str(out)]))
    assert "exists (an agent file); give another path, or --force" in line  # even an earlier shipped agent
    assert ship_module.main([str(run), "--out", str(out), "--force"]) == 0
    # The model card goes beside the agent (NAME.md): a file of that name is not replaced either.
    (tmp_path / "other.md").write_text("my notes")
    line = refused(capsys, "kahuna-ship", lambda: ship_module.main([str(run), "--out", str(tmp_path / "other.pt")]))
    assert (
        "other.md exists; give another path, or --force" in line and (tmp_path / "other.md").read_text() == "my notes"
    )
    assert not (tmp_path / "other.pt").exists()


# ---------------------------------------------------------------------------------------------- kahuna-rllib
def test_rllib_export_refuses_a_foreign_output_and_a_missing_extra_exits_2(tmp_path, capsys, monkeypatch):
    from training.rllib.cli import main as rllib_main

    notes = tmp_path / "notes.pt"
    notes.write_text("notes")
    assert rllib_main(["export", str(tmp_path), str(notes)]) == 2
    assert "OUT" in error_line(capsys, "kahuna-rllib") and notes.read_text() == "notes"
    # A missing rllib extra is an environment problem: status 2, like kahuna-serve's missing web extra.
    monkeypatch.setitem(sys.modules, "ray", None)
    assert rllib_main(["export", str(tmp_path), str(tmp_path / "x.pt")]) == 2
    assert "Ray RLlib is not installed" in error_line(capsys, "kahuna-rllib")


def test_replay_gif_never_overwrites_its_record_or_a_foreign_file(tmp_path, capsys):
    from kahuna_arena.replay import main as replay_main

    record = tmp_path / "game.gif"  # a record under a .gif name: --gif would destroy it
    assert play_main(["--record", str(record), "--seed", "1"], stdin=StringIO("quit\n"), stdout=StringIO()) == 0
    before = record.read_bytes()
    line = refused(capsys, "kahuna-replay", lambda: replay_main([str(record), "--gif", str(record), "--force"]))
    assert "is one of the inputs" in line and record.read_bytes() == before
    notes = tmp_path / "notes.gif"
    notes.write_text("not a gif")
    line = refused(capsys, "kahuna-replay", lambda: replay_main([str(record), "--gif", str(notes), "--quiet"]))
    assert "exists; give another path, or --force" in line and notes.read_text() == "not a gif"
    assert replay_main([str(record), "--gif", str(notes), "--quiet", "--force"], stdout=StringIO()) == 0
    assert notes.read_bytes().startswith(b"GIF8")
