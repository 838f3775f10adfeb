"""Shipped agents: ``load_agent("champion")``, provenance, ``training.tools.ship``, the wheel, the ratings command."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
import yaml

import kahuna_env  # noqa: F401  (registers Kahuna-v0)
from kahuna_arena.match import play_task, schedule
from kahuna_env.agents import make_agent
from kahuna_env.gym_env import KahunaSingleAgentEnv
from kahuna_policy.agent import SHIPPED_AGENTS, PolicyAgent, load_agent, shipped_agent_source
from kahuna_policy.model import ActorCritic, ModelConfig
from training.ppo.checkpoint import build_checkpoint, export_agent, save_checkpoint
from training.tools import ship as ship_module

ROOT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py: no OpenMP spinning on a busy machine


# ------------------------------------------------------------------------------------------------ load by name
def test_champion_loads_by_name_with_its_provenance() -> None:
    agent = load_agent("champion")
    assert isinstance(agent, PolicyAgent)
    assert agent.name == "champion" and agent.deterministic
    meta = agent.meta
    assert meta["name"] == "champion"
    assert isinstance(meta["run"], str) and meta["run"]
    assert isinstance(meta["config"], dict) and "model" in meta["config"]
    assert isinstance(meta["commit"], str) and meta["commit"]
    assert meta["training"]["learner_decisions"] > 0 and meta["training"]["train_seconds"] > 0
    assert {"greedy", "random"} <= set(meta["final_eval"])
    # The config the run trained with is the network the file holds.
    assert meta["config"]["model"]["hidden_sizes"] == list(agent.model.config.hidden_sizes)


def test_the_shipped_file_is_small_and_weights_only() -> None:
    path = shipped_agent_source("champion")
    assert path.stat().st_size < 2_000_000
    payload = torch.load(path, map_location="cpu", weights_only=True)
    assert "optimizer_state" not in payload and "pool" not in payload


def test_a_bare_name_means_the_shipped_agent_even_with_a_local_file_of_that_name(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "champion").write_text("not an agent")
    assert load_agent("champion").name == "champion"
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_agent("./champion")  # the local file, explicitly


def test_an_unknown_bare_name_lists_the_shipped_agents(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as caught:
        load_agent("champ")
    message = str(caught.value)
    assert "\n" not in message and "'champ'" in message and "champion" in message
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_agent("missing/agent.pt")  # a path stays a path


def test_champion_samples_with_its_seed() -> None:
    first, second = load_agent("champion", deterministic=False, seed=3), load_agent("champion", False, seed=3)
    env = KahunaSingleAgentEnv(opponent="random", observation="flat")
    observation, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert [first.act(observation, mask) for _ in range(5)] == [second.act(observation, mask) for _ in range(5)]


def test_champion_beats_greedy_in_a_small_seat_balanced_match() -> None:
    agents = [load_agent("champion"), make_agent("greedy")]
    points = 0.0
    tasks = schedule(["champion", "greedy"], games=20, seed=11)
    for task in tasks:
        result = play_task([agents[task.seats[0]], agents[task.seats[1]]], task)
        if result.winner is None:
            points += 0.5
        elif task.seats[result.winner] == 0:
            points += 1.0
    assert sum(task.seats[0] == 0 for task in tasks) == 10  # each seat 10 times
    assert points / len(tasks) > 0.5


@pytest.mark.parametrize("make", ["class", "gymnasium.make"])
def test_champion_is_an_opponent_of_the_gymnasium_wrapper(make: str) -> None:
    champion = load_agent("champion")
    env = KahunaSingleAgentEnv(opponent=champion) if make == "class" else gymnasium.make("Kahuna-v0", opponent=champion)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=5)
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, reward, terminated, truncated, info = env.step(action)
        steps += 1
    assert terminated and reward in (-1.0, 0.0, 1.0) and steps > 5
    env.close()


# ---------------------------------------------------------------------------------------------- the ship tool
def make_run(
    directory: Path,
    update: int = 3,
    agent_update: int | None = None,
    model: ActorCritic | None = None,
    env: dict | None = None,
) -> Path:
    """A small finished run directory: config.yaml, final_agent.pt, checkpoints/latest.pt, final_eval.json."""
    model = model if model is not None else ActorCritic(ModelConfig(hidden_sizes=(8,)))
    config = {"name": "tiny", "seed": 1, "model": {"hidden_sizes": [8], "architecture": "mlp"}}
    if env is not None:
        config["env"] = env
    (directory).mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    counters = {"update": update, "global_step": 1234, "actions": 2000, "games": 40, "train_seconds": 12.5}
    optimizer = torch.optim.Adam(model.parameters())
    save_checkpoint(directory, build_checkpoint(model, optimizer, config, counters, [], {"run": "tiny"}))
    meta = {"run": "tiny", "update": update if agent_update is None else agent_update, "global_step": 1234}
    export_agent(directory / "final_agent.pt", model, meta)
    final_eval = {"greedy": {"opponent": "greedy", "games": 10, "wins": 6, "draws": 0, "losses": 4, "score": 0.6}}
    (directory / "final_eval.json").write_text(json.dumps(final_eval))
    return directory


def test_ship_writes_the_agent_with_its_provenance(tmp_path) -> None:
    run = make_run(tmp_path / "tiny-run")
    from kahuna_arena.eval_cli import main as eval_main

    assert eval_main(["random", "greedy", "--games", "2", "--no-progress", "--json", str(tmp_path / "eval.json")]) == 0
    report = json.loads((tmp_path / "eval.json").read_text())
    out = ship_module.ship(run, name="champion", eval_json=tmp_path / "eval.json", out=tmp_path / "c.pt", commit="abc")
    agent = load_agent(out)
    meta = agent.meta
    assert meta["name"] == "champion" and meta["run"] == "tiny-run" and meta["commit"] == "abc"
    assert meta["config"]["name"] == "tiny" and meta["source_meta"]["update"] == 3
    assert meta["training"] == {
        "updates": 3,
        "learner_decisions": 1234,
        "actions": 2000,
        "games": 40,
        "train_seconds": 12.5,
    }
    assert meta["final_eval"]["greedy"]["wins"] == 6 and meta["evaluation"] == [report]
    payload = torch.load(out, weights_only=True)
    assert "optimizer_state" not in payload and out.stat().st_size < 50_000


def test_ship_cli_writes_and_reports(tmp_path, capsys) -> None:
    run = make_run(tmp_path / "run")
    assert ship_module.main([str(run), "--out", str(tmp_path / "agent.pt")]) == 0
    assert "written to" in capsys.readouterr().out
    assert load_agent(tmp_path / "agent.pt").meta["evaluation"] == []


def test_git_commit_is_unknown_outside_a_checkout(tmp_path) -> None:
    assert ship_module.git_commit(tmp_path) == "unknown"
    commit = ship_module.git_commit(ROOT)
    assert commit == "unknown" or len(commit) == 40


def _remove(name: str):
    return lambda run: (run / name).unlink()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda run: shutil.rmtree(run), "run directory not found"),
        (_remove("config.yaml"), "incomplete: no config.yaml"),
        (_remove("final_agent.pt"), "incomplete: no final_agent.pt"),
        (_remove("checkpoints/latest.pt"), "incomplete: no checkpoints/latest.pt"),
        (_remove("final_eval.json"), "incomplete: no final_eval.json"),
        (lambda run: (run / "config.yaml").write_text("- a list"), "is not a run config"),
        (lambda run: (run / "config.yaml").write_text("a: [1"), "is not readable YAML"),
        (lambda run: (run / "final_eval.json").write_text("{"), "is not a readable JSON file"),
        (lambda run: (run / "final_eval.json").write_text("[1]"), "is not a final evaluation"),
        (lambda run: (run / "final_agent.pt").write_text("junk"), "not a readable checkpoint"),
        (lambda run: (run / "checkpoints/latest.pt").write_bytes(b"PK\x03\x04junk"), "not a readable checkpoint"),
    ],
)
def test_ship_refuses_a_missing_or_incomplete_run_in_one_line(tmp_path, capsys, damage, message) -> None:
    run = make_run(tmp_path / "run")
    damage(run)
    out = tmp_path / "agent.pt"
    with pytest.raises(SystemExit) as caught:
        ship_module.main([str(run), "--out", str(out)])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("kahuna-ship: error: ") and error.count("\n") == 1 and message in error
    assert not out.exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--name", "nobody"],
            "'nobody' is not a registered shipped agent (champion, champion-v5)",
        ),
        (["--name", "a/b", "--out", "x.pt"], "--name must be letters"),
        (["--eval-json", "missing.json", "--out", "x.pt"], "--eval-json file not found"),
        (["--eval-json", "bad.json", "--out", "x.pt"], "is not a complete kahuna-eval --json report"),
        (["--out", "."], "--out . is a directory"),
        (["--out", "bad.json/x.pt"], "is not a directory"),
    ],
)
def test_ship_refuses_bad_arguments_in_one_line(tmp_path, capsys, monkeypatch, arguments, message) -> None:
    monkeypatch.chdir(tmp_path)
    run = make_run(tmp_path / "run")
    (tmp_path / "bad.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(SystemExit) as caught:
        ship_module.main([str(run), *arguments])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error, error
    assert not (tmp_path / "x.pt").exists()


def test_ship_refuses_an_agent_and_counters_from_different_updates(tmp_path) -> None:
    run = make_run(tmp_path / "run", update=3, agent_update=2)
    with pytest.raises(ValueError, match="different points of the run"):
        ship_module.ship(run, out=tmp_path / "x.pt")


def test_ship_write_failure_is_one_line_exit_1(tmp_path, capsys, monkeypatch) -> None:
    run = make_run(tmp_path / "run")

    def full_disk(path, model, meta=None):
        raise OSError(28, f"cannot write {path}: No space left on device", str(path))

    monkeypatch.setattr("training.ppo.checkpoint.export_agent", full_disk)
    with pytest.raises(SystemExit) as caught:
        ship_module.main([str(run), "--out", str(tmp_path / "agent.pt")])
    assert caught.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("kahuna-ship: error: ") and "No space left" in error and error.count("\n") == 1


def test_the_arena_knows_every_shipped_name() -> None:
    from kahuna_arena.entrants import NAMED_AGENTS, resolve_entrant

    assert set(NAMED_AGENTS) == set(SHIPPED_AGENTS)
    for name in SHIPPED_AGENTS:
        assert resolve_entrant(name, seed=0).name == name


def test_every_registered_name_is_shipped() -> None:
    for name in SHIPPED_AGENTS:
        assert shipped_agent_source(name).is_file(), name
        assert load_agent(name).meta["name"] == name


# ---------------------------------------------------------------------------------- the wheel, installed copy
def test_a_wheel_holds_the_champion_and_it_loads_from_a_non_editable_install(tmp_path) -> None:
    pytest.importorskip("setuptools")
    source = tmp_path / "source"  # a copy, so the build writes nothing into the checkout
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("kahuna_env", "kahuna_policy", "training", "kahuna_arena", "kahuna_web"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*build, "-q", "--no-index"], check=True, capture_output=True, timeout=120)
    (wheel,) = wheels.glob("kahuna_rl-*.whl")
    listing = zipfile.ZipFile(wheel).namelist()
    assert "kahuna_policy/agents/champion.pt" in listing
    page = {"kahuna_web/static/index.html", "kahuna_web/static/app.js", "kahuna_web/static/RULEBOOK.md"}
    assert page <= set(listing)  # kahuna-serve's page and its rules panel

    target = tmp_path / "installed"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target)]
    subprocess.run([*install, str(wheel)], check=True, capture_output=True, timeout=120)
    # -S: no site-packages processing, so the checkout's editable install cannot answer the import; the
    # installed copy comes first on sys.path, then the site-packages that hold torch, numpy, ...
    paths = [str(target), *site.getsitepackages()]
    code = (
        f"import sys; sys.path[:0] = {paths!r}; "
        "from kahuna_policy.agent import load_agent; import training; "
        "agent = load_agent('champion'); print(training.__file__); print(agent.meta['name'])"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=elsewhere,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    module_file, name = done.stdout.split()
    assert Path(module_file).is_relative_to(target) and name == "champion"


# ------------------------------------------------------------------------------------------ the ratings command
def test_the_ratings_command_runs_the_documented_round_robin() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks/ratings.sh"), "--print", "runs/x/final_agent.pt"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,  # generous: a bash script that prints a line; a busy machine must not fail it
    )
    command = done.stdout.split()
    assert command[:9] == [
        "kahuna-eval",
        "random",
        "greedy",
        "mcts:50",
        "mcts",
        "mcts:1000",
        "runs/x/final_agent.pt",
        "champion",
        "champion@mcts:50",
    ]
    assert command[command.index("--games") + 1] == "100"
    assert "--json" in command and "--workers" in command and "--seed" in command


def test_the_ratings_command_needs_the_default_agent() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks/ratings.sh")], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "usage" in done.stderr
