"""Every command that writes a user-named file, pointed at what it must not destroy (issue 76).

Each output of each command (``kahuna-eval --json/--db/--record``, ``kahuna-ratings --json/--plot``,
``kahuna-play --record/--gif``, ``kahuna-replay --gif``, ``kahuna-export --out``, ``kahuna-ship --out``,
``kahuna-distill --out``, ``kahuna-rllib export OUT``, ``kahuna-exploit`` and ``kahuna-train --run-dir``,
``python -m kahuna_arena.lost_positions --out``) is pointed at (a) one of the command's inputs, (b) a results
store, (c) an agent file and (d) an unrelated existing file: without ``--force`` every one is refused in one
line, and with ``--force`` (a) to (c) still are, unless the output is of that file's own kind.  Every file
of the fixture folder is byte-identical afterwards and nothing is added to it.  The rule is
:func:`kahuna_env.cli.check_output_file` (docs/RELIABILITY.md); the refusals come before any game, so
this costs no play.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_output_files import agent_file, make_run

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.lost_positions import main as positions_main
from kahuna_arena.play import main as play_main
from kahuna_arena.ratings_cli import main as ratings_main
from kahuna_arena.replay import main as replay_main
from kahuna_arena.store import ResultsStore
from training.cli import main as train_main
from training.recipes import resolve_config
from training.rllib.cli import main as rllib_main
from training.tools.distill import main as distill_main
from training.tools.exploit import main as exploit_main
from training.tools.export import main as export_main
from training.tools.ship import main as ship_main

REPOSITORY = Path(__file__).resolve().parent.parent
CASES = ("input", "store", "agent", "unrelated")
"""(a) one of the command's inputs, (b) a results store, (c) an agent file, (d) an unrelated existing file."""
HANG_S = 300
"""Guard against a hang of a child process (seconds), not a speed check."""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of one file of each kind, under the names (and suffixes) the commands' outputs need."""
    folder = tmp_path_factory.mktemp("guarded")
    agent_file(folder / "agent.pt")
    ResultsStore(folder / "store.sqlite").close()
    (folder / "notes.txt").write_text("my notes\n")
    assert eval_main(["random", "greedy", "--games", "2", "--no-progress", "--json", str(folder / "report.json")]) == 0
    record = ["--record", str(folder / "game.json"), "--seed", "1"]
    assert play_main(record, stdin=StringIO("quit\n"), stdout=StringIO()) == 0
    for name, copies in (
        ("agent.pt", ("agent.gif", "agent.png", "opponent.gif")),
        ("store.sqlite", ("store.gif", "store.png")),
        ("notes.txt", ("notes.gif", "notes.png")),
        ("report.json", ("report.png",)),
        ("game.json", ("game.gif",)),
    ):
        for copy in copies:
            shutil.copyfile(folder / name, folder / copy)
    make_run(folder / "run")
    (folder / "checkpoint").mkdir()  # an RLlib checkpoint is a directory
    shutil.copyfile(resolve_config("smoke"), folder / "config.yaml")
    for case, source in (
        ("input", "agent.pt"),
        ("store", "store.sqlite"),
        ("agent", "agent.pt"),
        ("unrelated", "notes.txt"),
    ):
        (folder / f"distill-{case}").mkdir()
        shutil.copyfile(folder / source, folder / f"distill-{case}" / "agent.pt")
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (relative name -> sha256 of its bytes)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@dataclass(frozen=True)
class Output:
    """One output option of one command: how to run it with the output at a given path, and what it writes."""

    program: str
    run: Callable[[Path, Path, list[str]], int | None]
    """``run(files, target, extra)``: the command with this output at ``target`` (``extra``: ``--force`` or not)."""
    targets: dict[str, str]
    """For each case, the file (below the fixture folder) the output is pointed at."""
    own_kind: str = ""
    """The case whose file is of the kind this output writes (replaced with --force: not run here)."""


def _quit() -> StringIO:
    return StringIO("quit\n")


def _ratings_importing(report: str, option: str) -> Callable[[Path, Path, list[str]], int | None]:
    """``kahuna-ratings`` importing ``report`` (an input) into the fixture's store, with ``option`` at the target."""
    return lambda f, t, x: ratings_main(
        ["--db", str(f / "store.sqlite"), "--import-report", str(f / report), option, str(t), *x]
    )


OUTPUTS = {
    "kahuna-eval --json": Output(
        "kahuna-eval",
        lambda f, t, x: eval_main([str(f / "agent.pt"), "random", "--games", "2", "--json", str(t), *x]),
        {"input": "agent.pt", "store": "store.sqlite", "agent": "opponent.gif", "unrelated": "notes.txt"},
    ),
    "kahuna-eval --json over its --db": Output(
        "kahuna-eval",
        lambda f, t, x: eval_main(["random", "greedy", "--games", "2", "--db", str(t), "--json", str(t), *x]),
        {"input": "store.sqlite", "store": "store.gif", "agent": "agent.pt", "unrelated": "notes.txt"},
    ),
    "kahuna-eval --db": Output(
        "kahuna-eval",
        lambda f, t, x: eval_main([str(f / "agent.pt"), "random", "--games", "2", "--db", str(t), *x]),
        {"input": "agent.pt", "agent": "agent.gif", "unrelated": "notes.txt"},  # a store is added to
    ),
    "kahuna-eval --record": Output(
        "kahuna-eval",
        lambda f, t, x: eval_main([str(f / "agent.pt"), "random", "--games", "2", "--record", str(t), *x]),
        {"input": "agent.pt", "store": "store.sqlite", "agent": "agent.gif", "unrelated": "notes.txt"},
    ),
    "kahuna-ratings --json": Output(
        "kahuna-ratings",
        _ratings_importing("report.json", "--json"),
        {"input": "report.json", "store": "store.gif", "agent": "agent.pt", "unrelated": "notes.txt"},
    ),
    "kahuna-ratings --json over its --db": Output(
        "kahuna-ratings",
        lambda f, t, x: ratings_main(["--db", str(t), "--json", str(t), *x]),
        {"input": "store.sqlite"},
    ),
    "kahuna-ratings --plot": Output(
        "kahuna-ratings",
        _ratings_importing("report.png", "--plot"),
        {"input": "report.png", "store": "store.png", "agent": "agent.png", "unrelated": "notes.png"},
    ),
    "kahuna-play --record": Output(
        "kahuna-play",
        lambda f, t, x: play_main(["--opponent", str(f / "agent.pt"), "--record", str(t), *x], stdin=_quit()),
        {"input": "agent.pt", "store": "store.sqlite", "agent": "agent.gif", "unrelated": "notes.txt"},
    ),
    "kahuna-play --gif": Output(
        "kahuna-play",
        lambda f, t, x: play_main(["--opponent", str(f / "opponent.gif"), "--gif", str(t), *x], stdin=_quit()),
        {"input": "opponent.gif", "store": "store.gif", "agent": "agent.gif", "unrelated": "notes.gif"},
    ),
    "kahuna-replay --gif": Output(
        "kahuna-replay",
        lambda f, t, x: replay_main([str(f / "game.gif"), "--gif", str(t), *x]),
        {"input": "game.gif", "store": "store.gif", "agent": "agent.gif", "unrelated": "notes.gif"},
    ),
    "kahuna-export --out": Output(
        "kahuna-export",
        lambda f, t, x: export_main([str(f / "agent.pt"), "--format", "torchscript", "--out", str(t), *x]),
        {"input": "agent.pt", "store": "store.sqlite", "agent": "agent.gif", "unrelated": "notes.txt"},
        own_kind="agent",
    ),
    "kahuna-ship --out": Output(
        "kahuna-ship",
        lambda f, t, x: ship_main([str(f / "run"), "--out", str(t), *x]),
        {"input": "run/final_agent.pt", "store": "store.sqlite", "agent": "agent.pt", "unrelated": "notes.txt"},
        own_kind="agent",
    ),
    "kahuna-distill --out": Output(
        "kahuna-distill",
        lambda f, t, x: distill_main(
            ["--student", str(f / "distill-input" / "agent.pt"), "--workers", "0", "--out", str(t.parent), *x]
        ),
        {case: f"distill-{case}/agent.pt" for case in CASES},
        own_kind="agent",
    ),
    "kahuna-rllib export OUT": Output(
        "kahuna-rllib",
        lambda f, t, x: rllib_main(["export", str(f / "checkpoint"), str(t), *x]),
        {"input": "checkpoint", "store": "store.sqlite", "agent": "agent.gif", "unrelated": "notes.txt"},
        own_kind="agent",
    ),
    "kahuna-exploit --run-dir": Output(
        "kahuna-exploit",
        lambda f, t, x: exploit_main([str(f / "agent.pt"), "--minutes", "0.1", "--run-dir", str(t)]),
        {"input": "agent.pt", "store": "store.sqlite", "agent": "agent.gif", "unrelated": "notes.txt"},
    ),
    "kahuna-train --run-dir": Output(
        "kahuna-train",
        lambda f, t, x: train_main(["--config", str(f / "config.yaml"), "--run-dir", str(t)]),
        {"input": "config.yaml", "store": "store.sqlite", "agent": "agent.pt", "unrelated": "notes.txt"},
    ),
    "lost_positions --out": Output(
        "lost_positions",
        lambda f, t, x: positions_main([str(f / "game.json"), "--player", "human", "--out", str(t)]),
        {"input": "game.json", "store": "store.sqlite", "agent": "agent.pt", "unrelated": "notes.txt"},
    ),
}
"""Every output option of every command that writes a user-named file."""

RUNS = [
    pytest.param(name, case, force, id=f"{name} -> {case}{' --force' if force else ''}")
    for name, output in OUTPUTS.items()
    for case in CASES
    if case in output.targets
    for force in (False, True)
    if not (force and (case == "unrelated" or case == output.own_kind))
]


@pytest.mark.parametrize(("name", "case", "force"), RUNS)
def test_an_output_never_replaces_an_input_a_store_an_agent_or_an_existing_file(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, case: str, force: bool
) -> None:
    output = OUTPUTS[name]
    before = snapshot(files)
    capsys.readouterr()
    try:
        code = output.run(files, files / output.targets[case], ["--force"] if force else [])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(err) == 1 and err[0].startswith(f"{output.program}: error: "), err
    assert snapshot(files) == before  # every input byte-identical, nothing added


# ---------------------------------------------------------------------------------------------- the commands
def refusal(capsys: pytest.CaptureFixture[str], run: Callable[[], int | None]) -> str:
    """The one error line of a command that must refuse (exit code 2)."""
    with pytest.raises(SystemExit) as stop:
        run()
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_eval_never_writes_its_json_over_the_store_it_writes(tmp_path, capsys):
    # `kahuna-eval A B --db X --json X` exited 0 and the JSON replaced the store it had just written.
    store = tmp_path / "X"
    line = refusal(
        capsys, lambda: eval_main(["random", "greedy", "--games", "2", "--db", str(store), "--json", str(store)])
    )
    assert line == f"kahuna-eval: error: --json {store} is also --db {store}; give another output path"
    assert not store.exists()
    assert eval_main(["random", "greedy", "--games", "2", "--no-progress", "--db", str(store)]) == 0
    before = store.read_bytes()
    arguments = ["random", "greedy", "--games", "2", "--db", str(store), "--json", str(store), "--force"]
    assert "is also --db" in refusal(capsys, lambda: eval_main(arguments))
    assert store.read_bytes() == before


def test_ratings_never_writes_over_its_store_its_report_or_an_agent(tmp_path, capsys):
    store, report, agent, photo = (
        tmp_path / "r.sqlite",
        tmp_path / "rep.json",
        tmp_path / "agent.pt",
        tmp_path / "photo.png",
    )
    assert (
        eval_main(["random", "greedy", "--games", "2", "--no-progress", "--db", str(store), "--json", str(report)]) == 0
    )
    agent_file(agent)
    photo.write_bytes(b"\x89PNG\r\n\x1a\n my photo")
    before = {path: path.read_bytes() for path in (store, report, agent, photo)}
    for arguments, said in (
        (["--json", str(store), "--force"], f"--json {store} is also --db {store}"),
        (
            ["--import-report", str(report), "--json", str(report), "--force"],
            f"--json {report} is also --import-report",
        ),
        (["--json", str(agent), "--force"], f"--json {agent} is an agent file (--json writes a kahuna report)"),
        (["--plot", str(photo)], f"--plot {photo} exists (a PNG image); give another path, or --force"),
    ):
        line = refusal(capsys, lambda arguments=arguments: ratings_main(["--db", str(store), *arguments]))
        assert said in line, line
    assert {path: path.read_bytes() for path in before} == before
    ladder = tmp_path / "ladder.json"
    assert ratings_main(["--db", str(store), "--json", str(ladder)]) == 0
    assert "exists (a kahuna report)" in refusal(
        capsys, lambda: ratings_main(["--db", str(store), "--json", str(ladder)])
    )
    assert ratings_main(["--db", str(store), "--json", str(ladder), "--force"]) == 0  # it has --force now


def test_a_closed_output_pipe_ends_quietly(tmp_path):
    # `kahuna-ratings ... | head -2` ended in a BrokenPipeError traceback.  Here the reader closes at once.
    store = tmp_path / "r.sqlite"
    ResultsStore(store).close()
    argv = [sys.executable, "-m", "kahuna_arena.ratings_cli", "--db", str(store)]
    process = subprocess.Popen(argv, cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=HANG_S) == 141, err  # a shell's status for a command ended by SIGPIPE
    assert err == ""
