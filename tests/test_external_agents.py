"""Any agent in the arena (issue 77): Python agents, ONNX files, SB3 checkpoints, TorchScript, plugins.

Each kind is evaluated, rated and played through the one spec reader and
builder; illegal actions are refused, never played; a guided search needs a
value; a crafted checkpoint runs no code; the games never depend on how an
agent's path is written.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from kahuna_arena.entrants import resolve_entrant
from kahuna_arena.eval_cli import main as eval_main
from kahuna_env.agents.external import PythonAgent, agent_file_kind
from kahuna_env.engine import KahunaGame

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "agents"


LAST_LEGAL = '''"""A py: agent: the last legal action, after checking what it is handed."""
import numpy as np

def act(observation, action_mask):
    assert observation.shape == (246,) and observation.dtype == np.float32
    assert action_mask.shape == (179,)
    return int(np.flatnonzero(action_mask)[-1])
'''


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory) -> Path:
    """A MaskablePPO checkpoint trained for 1,024 steps on the native vector env (the README's recipe)."""
    pytest.importorskip("sb3_contrib")
    import gymnasium
    from sb3_contrib import MaskablePPO

    import kahuna_env  # noqa: F401  (registers Kahuna-v0)
    from kahuna_env.sb3 import VecEnv

    envs = gymnasium.make_vec("Kahuna-v0", num_envs=8, opponent="random", observation="flat")
    model = MaskablePPO("MlpPolicy", VecEnv(envs), n_steps=64, batch_size=64, seed=0, device="cpu")
    model.learn(1_024)
    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def onnx_file(tmp_path_factory) -> Path:
    """An ONNX file of a plain torch module that follows the convention (observation, mask in; logits, value out)."""
    pytest.importorskip("onnxruntime")
    import sys

    sys.path.insert(0, str(EXAMPLES))
    try:
        from torch_module import PolicyNet
    finally:
        sys.path.remove(str(EXAMPLES))

    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(1)
            self.net = PolicyNet()

        def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits, value = self.net(observation)
            return logits.masked_fill(action_mask == 0, -1e9), value

    path = tmp_path_factory.mktemp("onnx") / "agent.onnx"
    torch.onnx.export(
        Exported().eval(),
        (torch.zeros(1, 246), torch.ones(1, 179, dtype=torch.int8)),
        str(path),
        input_names=["observation", "action_mask"],
        output_names=["logits", "value"],
        dynamic_axes={name: {0: "batch"} for name in ("observation", "action_mask", "logits", "value")},
        dynamo=False,
    )
    return path


def _evaluate(tmp_path: Path, *argv: str) -> dict:
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*.json')))}.json"
    assert eval_main([*argv, "--no-progress", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_an_sb3_checkpoint_is_evaluated_against_the_baselines(sb3_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(sb3_model, "model.zip")
    report = _evaluate(tmp_path, "model.zip", "greedy", "random", "--games", "20")
    assert report["entrants"] == ["model.zip", "greedy", "random"]
    assert [pairing["games"] for pairing in report["pairings"]] == [20, 20, 20]


def test_an_sb3_checkpoint_plays_as_sb3_itself_predicts(sb3_model):
    from sb3_contrib import MaskablePPO

    agent = resolve_entrant(str(sb3_model))
    model = MaskablePPO.load(sb3_model, device="cpu")
    for seed in range(6):
        game = KahunaGame(seed=seed)
        for _ in range(seed * 3):
            game.step(game.legal_actions()[0])
        from kahuna_env.observation import encode_observation

        observation = encode_observation(game, game.current_player)
        mask = game.action_mask().astype(np.int8)
        expected, _ = model.predict(observation, action_masks=mask.astype(bool), deterministic=True)
        assert agent.act(observation, mask) == int(expected)
        values = model.policy.predict_values(torch.as_tensor(observation[None]))
        assert agent.value(observation) == pytest.approx(float(values[0, 0]), abs=1e-5)


def test_each_external_kind_plays_only_legal_actions_over_a_thousand_decisions(
    sb3_model, onnx_file, tmp_path, monkeypatch
):
    """The SB3, ONNX and py: entrants play whole games; every action each chooses is checked legal as it is played."""
    from collections import Counter

    from kahuna_env.agents import external

    checked = Counter()
    check = external._legal

    def counted(name, action, action_mask):
        legal = check(name, action, action_mask)  # raises for an illegal action: the evaluation would fail
        assert action_mask[legal]
        checked[name] += 1
        return legal

    monkeypatch.setattr(external, "_legal", counted)
    agent_file = tmp_path / "last_legal.py"
    agent_file.write_text(LAST_LEGAL)
    entrants = [str(sb3_model), str(onnx_file), f"py:{agent_file}:act"]
    _evaluate(tmp_path, *entrants, "random", "--games", "24")
    assert set(checked) == {*entrants[:2], f"py:{agent_file}:act"}
    assert min(checked.values()) >= 1_000, checked


def test_an_illegal_action_of_an_external_agent_ends_the_evaluation_in_one_line(tmp_path, capsys):
    cheat = tmp_path / "cheat.py"
    cheat.write_text("def act(observation, action_mask):\n    return 0\n")
    with pytest.raises(SystemExit) as exit_info:
        eval_main([f"py:{cheat}:act", "random", "--games", "2", "--no-progress"])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err
    assert "chose action 0, which is not legal here" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "spec",
    [
        "py:examples/agents/rule_based.py:act",
        "py:examples/agents/torch_module.py:TorchAgent",
        "py:examples/agents/torch_module.py:TorchAgent@mcts:8",
        "py:examples/agents/tianshou_agent.py:Agent",
    ],
)
def test_the_documented_example_agents_run_in_kahuna_eval(spec, tmp_path, monkeypatch):
    if "tianshou" in spec:
        pytest.importorskip("tianshou")
    monkeypatch.chdir(EXAMPLES.parent.parent)
    report = _evaluate(tmp_path, spec, "random", "--games", "2")
    assert report["entrants"] == [spec, "random"]


def test_the_trusted_sb3_route_loads_with_sb3_itself(sb3_model, tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent.parent)
    monkeypatch.setenv("KAHUNA_SB3_MODEL", str(sb3_model))
    report = _evaluate(tmp_path, "py:examples/agents/sb3_trusted.py:Agent", str(sb3_model), "--games", "4")
    assert report["pairings"][0]["draws"] + report["pairings"][0]["wins"] + report["pairings"][0]["losses"] == 4


def test_an_onnx_file_is_an_entrant_and_guides_a_search_with_its_value(onnx_file, tmp_path):
    assert agent_file_kind(onnx_file) == "onnx"
    report = _evaluate(tmp_path, str(onnx_file), f"{onnx_file}@mcts:8", "--games", "2")
    assert len(report["pairings"]) == 1


def test_an_onnx_file_of_another_shape_is_one_line(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "other.onnx"
    torch.onnx.export(torch.nn.Linear(3, 2), (torch.zeros(1, 3),), str(path), input_names=["x"], dynamo=False)
    with pytest.raises(SystemExit):
        eval_main([str(path), "random", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not follow the Kahuna ONNX convention" in err


def test_a_torchscript_export_is_an_entrant(tmp_path):
    from training.tools.export import main as export_main

    path = tmp_path / "champion-script.pt"
    assert export_main(["champion", "--format", "torchscript", "--out", str(path), "--samples", "8"]) == 0
    assert agent_file_kind(path) == "torchscript"
    champion = resolve_entrant("champion")
    scripted = resolve_entrant(str(path))
    game = KahunaGame(seed=5)
    from kahuna_env.observation import encode_observation

    observation = encode_observation(game, game.current_player)
    mask = game.action_mask().astype(np.int8)
    assert scripted.act(observation, mask) == champion.act(observation, mask)


def test_a_search_guided_by_an_agent_without_a_value_is_refused_in_one_line(tmp_path, capsys):
    agent = tmp_path / "plain.py"
    agent.write_text("def act(observation, action_mask):\n    return int(action_mask.nonzero()[0][0])\n")
    with pytest.raises(SystemExit):
        eval_main([f"py:{agent}:act@mcts:16", "random", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gives no value" in err


def test_a_dqn_checkpoint_plays_masked_but_guides_no_search(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    import gymnasium
    from stable_baselines3 import DQN

    import kahuna_env  # noqa: F401

    env = gymnasium.make("Kahuna-v0", opponent="random", observation="flat")
    model = DQN("MlpPolicy", env, learning_starts=0, buffer_size=500, seed=0, device="cpu")
    model.learn(64)
    path = tmp_path / "dqn.zip"
    model.save(path)
    report = _evaluate(tmp_path, str(path), "random", "--games", "4")
    assert report["pairings"][0]["games"] == 4
    with pytest.raises(SystemExit):
        eval_main([f"{path}@mcts:16", "random", "--games", "2", "--no-progress"])
    assert "gives no value" in capsys.readouterr().err


def _crafted_sb3_zip(path: Path, marker: Path) -> None:
    """An SB3-shaped zip whose pickled parts would create ``marker`` if anything unpickled them."""

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    serialized = base64.b64encode(pickle.dumps(Payload())).decode()
    data = {
        "policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": serialized},
        "observation_space": {":type:": "<class 'gymnasium.spaces.box.Box'>", ":serialized:": serialized},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", pickle.dumps({"action_net.weight": Payload()}))
        archive.writestr("_stable_baselines3_version", "2.4.0")


def test_a_crafted_sb3_checkpoint_runs_no_code(tmp_path, capsys):
    marker = tmp_path / "ran"
    crafted = tmp_path / "crafted.zip"
    _crafted_sb3_zip(crafted, marker)
    assert agent_file_kind(crafted) == "sb3"
    with pytest.raises(SystemExit):
        eval_main([str(crafted), "random", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "crafted.zip" in err
    assert not marker.exists()


def test_the_spelling_of_an_agent_file_never_changes_its_games(tmp_path, monkeypatch):
    """``x.pt``, ``./x.pt`` and a renamed copy play byte-identical games for the same seed (records compared)."""
    from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload

    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(8,)))), "x.pt")
    shutil.copy("x.pt", "copy.pt")
    results = []
    for spec in ("x.pt", "./x.pt", "copy.pt"):
        report = _evaluate(tmp_path, spec, "greedy", "--games", "6", "--seed", "3", "--record", f"games-{len(results)}")
        records = sorted(Path(f"games-{len(results)}").glob("*.json"))
        results.append(
            (
                [{k: v for k, v in json.loads(p.read_text()).items() if k != "players"} for p in records],
                {k: v for k, v in report["pairings"][0].items() if k not in ("a", "seconds", "games_per_second")}
                | {"seconds_per_move": None},
            )
        )
    assert results[0] == results[1] == results[2]
    assert len(results[0][0]) == 6


def test_ratings_rate_an_sb3_entrant_among_the_baselines(sb3_model, tmp_path):
    from kahuna_arena.ratings_cli import main as ratings_main

    db = tmp_path / "r.sqlite"
    json_out = tmp_path / "ladder.json"
    assert eval_main(["random", "greedy", "--games", "2", "--no-progress", "--db", str(db)]) == 0
    argv = ["--db", str(db), "--entrant", str(sb3_model), "--schedule", "2", "--play", "--games", "2"]
    assert ratings_main([*argv, "--no-progress", "--json", str(json_out)]) == 0
    assert str(sb3_model) in json_out.read_text()


def test_kahuna_play_takes_an_sb3_checkpoint_as_the_opponent(sb3_model, tmp_path, monkeypatch, capsys):
    from kahuna_arena.play import main as play_main

    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("quit\n"))
    code = play_main(["--opponent", str(sb3_model), "--seed", "1"])
    out = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in out.err


def test_a_plugin_named_agent_is_an_entrant_of_every_tool(monkeypatch, tmp_path):
    """A package's entry point in the kahuna_env.opponents group names an agent the arena and the env build."""
    import importlib.metadata

    import kahuna_arena.entrants
    from kahuna_env.agents import external

    class Entry:
        name = "first-legal"
        value = "tests.test_external_agents:first_legal_factory"

        def load(self):
            return first_legal_factory

    real = importlib.metadata.entry_points

    def entry_points(group=None, **kwargs):
        if group == external.PLUGINS:
            return [*real(group=group), Entry()]
        return real(group=group, **kwargs)

    monkeypatch.setattr(external, "entry_points", entry_points)
    monkeypatch.setattr(kahuna_arena.entrants, "NAMED_AGENTS", (*kahuna_arena.entrants.NAMED_AGENTS, "first-legal"))
    agent = resolve_entrant("first-legal")
    assert isinstance(agent, PythonAgent)
    report = _evaluate(tmp_path, "first-legal", "random", "--games", "2")
    assert report["entrants"] == ["first-legal", "random"]


def first_legal_factory(name: str):
    """A plugin's factory: an agent of the protocol playing the first legal action."""

    class First:
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    return First()


# ---------------------------------------------------------------------------------------------- the web server
def _web_client(**options):
    pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
    pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')
    from starlette.testclient import TestClient

    from kahuna_web.app import create_app

    return TestClient(create_app(**options), base_url="http://127.0.0.1", cookies={"kahuna_owner": "x" * 32})


def _play_out(client, game: dict, moves: int) -> dict:
    """Play ``moves`` of the person's moves (the first legal one) against the server's agent."""
    for _ in range(moves):
        if game["state"]["over"]:
            break
        action = game["state"]["legal"][0]["id"]
        response = client.post(f"/api/games/{game['id']}/move", json={"action": action})
        assert response.status_code == 200, response.text
        game = response.json()
    return game


def test_the_web_plays_an_sb3_checkpoint_of_its_agents_folder_and_lists_it(sb3_model, tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(sb3_model, folder / "mine.zip")
    with _web_client(agents_dir=folder) as client:
        assert "mine.zip" in client.get("/api/board").json()["agent_files"]
        response = client.post("/api/games", json={"opponent": "mine.zip", "seat": 1, "seed": 3})
        assert response.status_code == 201, response.text
        game = _play_out(client, response.json(), 30)
        assert len(game["state"]["log"]) > 30  # the agent answered every move


def test_the_web_plays_a_python_agent_only_when_its_operator_named_it(tmp_path):
    from kahuna_web.opponents import operator_entrant

    spec = f"py:{EXAMPLES / 'rule_based.py'}:act"
    with _web_client() as client:  # not named: a page cannot make the server run code
        response = client.post("/api/games", json={"opponent": spec, "seat": 0, "seed": 1})
        assert response.status_code in (400, 403) and "\n" not in response.json()["error"]
    named = dict([operator_entrant(f"mine={spec}")])
    with _web_client(entrants=named) as client:
        assert "mine" in client.get("/api/board").json()["opponents"]
        response = client.post("/api/games", json={"opponent": "mine", "seat": 0, "seed": 1})
        assert response.status_code == 201, response.text
        game = _play_out(client, response.json(), 30)
        assert game["opponent"] == "mine" and len(game["state"]["log"]) > 30
        # Its name with a search: a Python agent without value() guides none (one line, 400).
        response = client.post("/api/games", json={"opponent": "mine@mcts:5", "seat": 0, "seed": 1})
        assert response.status_code == 400 and "\n" not in response.json()["error"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("mine", "--entrant must be NAME=SPEC"),
        ("greedy=random", "--entrant greedy: 'greedy' is already an entrant's name"),
        ("x.pt=random", "--entrant must be NAME=SPEC"),
        ("mine=py:no_such_module_here:act", "--entrant mine: "),
        ("mine=missing.zip", "--entrant mine: "),
    ],
)
def test_a_bad_operator_entrant_ends_kahuna_serve_in_one_line_before_it_listens(capsys, given, message):
    pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')
    from kahuna_web.server import main as serve_main

    with pytest.raises(SystemExit) as stop:
        serve_main(["--port", "0", "--entrant", given])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"kahuna-serve: error: {message}") and "\n" not in error


def test_an_sb3_network_the_reader_does_not_know_is_one_line(sb3_model, tmp_path):
    """A features extractor with weights (a CNN, say) is refused by name, not guessed at."""
    import io

    changed = tmp_path / "cnn.zip"
    with zipfile.ZipFile(sb3_model) as source, zipfile.ZipFile(changed, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "policy.pth":
                weights = torch.load(io.BytesIO(data), weights_only=True)
                weights["features_extractor.cnn.0.weight"] = torch.zeros(4, 4)
                buffer = io.BytesIO()
                torch.save(weights, buffer)
                data = buffer.getvalue()
            target.writestr(item, data)
    with pytest.raises(ValueError, match="features extractor or recurrent layers") as refused:
        resolve_entrant(str(changed))
    assert "\n" not in str(refused.value)
