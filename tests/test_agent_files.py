"""Crafted and foreign agent files (issue 10 item 7, issue 34 item 4): ``load_agent`` refuses each in one line.

The declared architecture is bounded (layers, widths, parameters) before any
network is built, and the file's types, layouts and shapes are checked
against its state dict, so a small file that declares a huge network is
refused at once.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time

import pytest
import torch

from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.play import main as play_main
from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload
from training import load_agent

SMALL = ModelConfig(hidden_sizes=(8,))


def saved(tmp_path, payload, name="agent.pt"):
    path = tmp_path / name
    torch.save(payload, path)
    return path


def refusal(path) -> str:
    """The message of ``load_agent(path)``'s ValueError (asserted to be one line naming the file)."""
    with pytest.raises(ValueError) as error:
        load_agent(path)
    message = str(error.value)
    assert "\n" not in message and str(path) in message, message
    return message


def payload(**changes):
    values = agent_payload(ActorCritic(SMALL))
    values.update(changes)
    return values


@pytest.mark.parametrize(
    "content",
    [
        b"update,win_rate\n1,0.5\n2,0.6\n",
        b"just some notes\n",
        b"",
        b"\x80\x02}q\x00.",  # a tiny pickle, not a zip
        b"PK\x03\x04" + b"\x00" * 60,  # a broken zip header
    ],
)
def test_text_csv_and_garbage_files_are_one_line(tmp_path, content):
    path = tmp_path / "foreign.pt"
    path.write_bytes(content)
    assert "is not a readable checkpoint" in refusal(path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_config": 7}, "model_config must be a mapping of options, got int"),
        ({"model_config": {"hidden_sizes": 5}}, "model.hidden_sizes must be a non-empty list of integers in [1, 8192]"),
        (
            {"model_config": {"hidden_sizes": {8: "x"}}},
            "model.hidden_sizes must be a non-empty list of integers in [1, 8192]",
        ),
        (
            {"model_config": {"hidden_sizes": "8"}},
            "model.hidden_sizes must be a non-empty list of integers in [1, 8192]",
        ),
        ({"model_config": {"activation": ["relu"]}}, "model.activation must be one of"),
        ({"model_config": {"depth": 3}}, "unknown model option(s) ['depth']"),
        ({"model_state": "weights"}, "model_state must be a mapping of parameter names to tensors"),
        ({"model_state": [1, 2]}, "model_state must be a mapping of parameter names to tensors"),
        ({"format": 7}, "is not a Kahuna agent file (format 7"),
        ({"observation_size": "246"}, "was made for observations of size '246'"),
    ],
)
def test_wrong_types_are_one_line(tmp_path, changes, message):
    assert message in refusal(saved(tmp_path, payload(**changes)))


def test_a_file_declaring_a_huge_network_is_refused_at_once(tmp_path):
    crafted = payload(model_config={"hidden_sizes": [6000, 6000]})
    start = time.perf_counter()
    message = refusal(saved(tmp_path, crafted))
    assert time.perf_counter() - start < 60  # generous: it takes milliseconds; nothing is allocated
    assert "does not fit model_config (architecture mlp, hidden_sizes [6000, 6000])" in message
    assert "wrong shape: trunk.0.weight (8, 246) instead of (6000, 246)" in message
    assert "missing: trunk.2.weight, trunk.2.bias" in message


class _NothingBuilt:
    """Stands in for ActorCritic: a refused file must not build any network, not even a shape-only one."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a network was built for a file that should be refused from its declaration alone")


@pytest.mark.parametrize(
    ("model_config", "message"),
    [
        ({"hidden_sizes": [2] * 60000}, "model.hidden_sizes declares 60000 layers; at most 16 allowed"),
        ({"hidden_sizes": [60000, 60000]}, "model.hidden_sizes must be a non-empty list of integers in [1, 8192]"),
        ({"hidden_sizes": [8192] * 4}, "the network declares 204,849,332 parameters; at most 50,000,000 allowed"),
        ({"architecture": "board", "line_width": 10**12}, "model.line_width must be an integer in [2, 8192]"),
        ({"architecture": "board", "line_width": 2**40 + 1}, "model.line_width must be an integer in [2, 8192]"),
    ],
)
def test_a_declared_architecture_beyond_the_bounds_is_refused_before_anything_is_built(
    tmp_path, monkeypatch, model_config, message
):
    # Issue 34, item 4: [2] * 60000 took 41 s and 672 MB; line_width 10**12 was a RuntimeError traceback.
    import kahuna_policy.model

    path = saved(tmp_path, payload(model_config=model_config))
    monkeypatch.setattr(kahuna_policy.model, "ActorCritic", _NothingBuilt)
    text = refusal(path)
    assert message in text
    assert len(text) < 300  # the 60,000 sizes are not echoed


def test_the_parameter_bound_is_computed_exactly_without_building_the_network():
    from kahuna_policy.model import MAX_PARAMETERS, parameter_count

    for config in (
        ModelConfig(hidden_sizes=(8,)),
        ModelConfig(hidden_sizes=(256, 128), architecture="board", line_width=32),
        ModelConfig(hidden_sizes=(7, 9, 11), architecture="board", line_width=3, activation="relu"),
    ):
        assert parameter_count(config) == sum(p.numel() for p in ActorCritic(config).parameters())
    with pytest.raises(ValueError, match="at most 50,000,000 allowed"):
        ModelConfig(hidden_sizes=(8192, 8192))
    assert parameter_count(ModelConfig(hidden_sizes=(4096, 4096))) < MAX_PARAMETERS  # still allowed


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
def test_a_sparse_weight_is_one_line_not_a_traceback(tmp_path, layout):
    state = dict(payload()["model_state"])
    weight = state["trunk.0.weight"]
    state["trunk.0.weight"] = weight.to_sparse() if layout == "sparse_coo" else weight.to_sparse_csr()
    assert "not dense tensors: trunk.0.weight" in refusal(saved(tmp_path, payload(model_state=state)))


def test_a_foreign_file_is_refused_without_echoing_its_bytes(tmp_path):
    path = tmp_path / "secret.pt"
    path.write_bytes(b"password=hunter2\n")
    message = refusal(path)
    assert "hunter2" not in message and "password" not in message


@pytest.mark.parametrize("program", ["kahuna-eval", "kahuna-play"])
def test_crafted_files_are_one_line_in_the_command_line_tools(tmp_path, program, capsys):
    from kahuna_arena.eval_cli import main as eval_main
    from kahuna_arena.play import main as play_main

    crafted = [
        payload(model_config={"hidden_sizes": [2] * 60000}),
        payload(model_config={"architecture": "board", "line_width": 10**12}),
    ]
    state = dict(payload()["model_state"])
    state["trunk.0.weight"] = state["trunk.0.weight"].to_sparse()
    crafted.append(payload(model_state=state))
    for index, values in enumerate(crafted):
        path = saved(tmp_path, values, f"crafted{index}.pt")
        with pytest.raises(SystemExit) as stop:
            if program == "kahuna-eval":
                eval_main(["random", str(path), "--games", "2", "--no-progress"])
            else:
                play_main(["--opponent", str(path), "--seed", "1"], stdin=__import__("io").StringIO("quit\n"))
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{program}: error: {path}") and err.count("\n") == 1, err


def test_state_dict_mismatches_name_the_keys(tmp_path):
    state = dict(payload()["model_state"])
    del state["value_head.bias"]
    state["extra.weight"] = torch.zeros(2)
    state["policy_head.weight"] = torch.zeros(3, 3)
    message = refusal(saved(tmp_path, payload(model_state=state)))
    assert "missing: value_head.bias" in message
    assert "unexpected: extra.weight" in message
    assert "wrong shape: policy_head.weight (3, 3) instead of (179, 8)" in message


def test_non_tensor_and_integer_weights_are_refused(tmp_path):
    state = dict(payload()["model_state"])
    state["value_head.bias"] = [0.0]
    assert "not dense tensors: value_head.bias" in refusal(saved(tmp_path, payload(model_state=state), "a.pt"))
    state["value_head.bias"] = torch.zeros(1, dtype=torch.int64)
    assert "holds torch.int64 values" in refusal(saved(tmp_path, payload(model_state=state), "b.pt"))


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_agents_with_non_finite_weights_are_refused(tmp_path, bad):
    state = dict(payload()["model_state"])
    state["policy_head.weight"] = state["policy_head.weight"].clone()
    state["policy_head.weight"][0, 0] = bad
    message = refusal(saved(tmp_path, payload(model_state=state)))
    assert "model_state['policy_head.weight'] holds NaN or infinite weights" in message


def test_a_valid_file_still_loads_and_samples_only_legal_actions(tmp_path):
    import numpy as np

    from kahuna_env.agents import choose_action
    from kahuna_env.engine import KahunaGame

    agent = load_agent(saved(tmp_path, payload()), deterministic=False, seed=0)
    game = KahunaGame(seed=1)
    for _ in range(40):
        action = choose_action(agent, game, np.random.default_rng(0))
        assert action in game.legal_actions()
        game.step(action)


# ---------------------------------------------------------------------------------------------- value semantics
def _guided(path, **options):
    from kahuna_policy.search import load_guided_agent

    return load_guided_agent(path, simulations=4, seed=0, **options)


def test_the_guided_search_reads_the_reward_settings_the_file_records(tmp_path):
    # Issue 34, item 6: values were always mapped with the default island shaping.
    from kahuna_env.engine import KahunaGame

    path = tmp_path / "shaped.pt"
    values = payload(meta={"reward": {"win": 2.0, "island_shaping": 0.5}})
    torch.save(values, path)
    assert load_agent(path).reward == {"win": 2.0, "island_shaping": 0.5}
    evaluator = _guided(path).evaluator
    assert (evaluator.win_reward, evaluator.island_shaping) == (2.0, 0.5)
    assert _guided(path, island_shaping=0.0).evaluator.island_shaping == 0.0  # an explicit option wins
    # The same network with the default settings values the same positions differently.
    default = tmp_path / "default.pt"
    unshaped = {"reward": {"win": 1.0, "island_shaping": 1.0}}
    torch.save(payload(meta=unshaped, model_state=values["model_state"]), default)
    game = KahunaGame(seed=5)
    for _ in range(12):
        game.step(game.legal_actions()[0])
    states, legal = [game], [game.legal_actions()]
    assert evaluator.evaluate(states, legal)[1] != _guided(default).evaluator.evaluate(states, legal)[1]


def test_a_checkpoint_records_its_reward_settings_in_its_config():
    from kahuna_policy.agent import recorded_reward

    config = {"reward": {"win": 1.0, "island_shaping": 0.25}}
    assert recorded_reward({"config": config}) == {"win": 1.0, "island_shaping": 0.25}
    assert recorded_reward({"meta": {"source_meta": {"reward": {"win": 3.0}}}}) == {"win": 3.0, "island_shaping": 0.0}
    assert recorded_reward({"meta": {"run": "old"}}) is None


def test_an_old_file_gets_the_documented_default_said_once(tmp_path, capsys, monkeypatch):
    from kahuna_policy.search import _WARNED_ENVIRONMENT

    monkeypatch.delenv(_WARNED_ENVIRONMENT, raising=False)  # restored after the test
    path = saved(tmp_path, payload(meta={"run": "old"}), "old.pt")
    assert load_agent(path).reward is None
    first, second = _guided(path), _guided(path)
    assert first.evaluator.island_shaping == second.evaluator.island_shaping == 1.0
    assert first.evaluator.win_reward == 1.0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "does not record the reward settings" in lines[0] and str(path) in lines[0]


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        ({"win": "x"}, "the recorded reward.win is not a finite number"),
        ({"win": 0.0}, "the recorded reward.win must be > 0"),
        ({"island_shaping": float("nan")}, "the recorded reward.island_shaping is not a finite number"),
        ([1, 2], "the recorded reward settings are a list, not a mapping"),
    ],
)
def test_crafted_reward_settings_are_one_line(tmp_path, reward, message):
    assert message in refusal(saved(tmp_path, payload(meta={"reward": reward})))


def test_the_shipped_agents_read_their_reward_settings_from_their_run_config():
    for name in ("champion", "champion-v5"):
        assert load_agent(name).reward == {"win": 1.0, "island_shaping": 1.0}


def test_the_default_reward_warning_is_said_once_across_an_evaluations_workers(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from kahuna_policy.search import _WARNED_ENVIRONMENT

    path = saved(tmp_path, payload(meta={"run": "old"}), "old.pt")
    environment = {key: value for key, value in os.environ.items() if key != _WARNED_ENVIRONMENT}
    command = [
        sys.executable,
        "-m",
        "kahuna_arena.eval_cli",
        f"{path}@mcts:2",
        "random",
        "--games",
        "2",
        "--workers",
        "2",
    ]
    done = subprocess.run(
        [*command, "--no-progress"],
        cwd=Path(__file__).resolve().parent.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,  # generous: two tiny games in two spawned workers
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("does not record the reward settings") == 1, done.stderr


# ---------------------------------------------------------------------------------------------- issue 76
@contextlib.contextmanager
def never_blocking(fifo):
    """While inside: a writer waits on ``fifo``, so a reader that opens it (a regression) reads an empty file
    and fails, instead of hanging the test.  On leaving, the writer is released (and joined) either way."""
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return if nobody read
        writer.join()
        os.close(reader)


def fifo_at(path):
    os.mkfifo(path)
    return path


def test_an_agent_file_that_is_a_fifo_is_refused_before_it_is_opened(tmp_path):
    fifo = fifo_at(tmp_path / "fifo.pt")
    with never_blocking(fifo):
        message = refusal(fifo)
    assert message == f"{fifo} is not a regular file (a device, pipe or socket), not an agent file"


@pytest.mark.parametrize(
    ("program", "run"),
    [
        ("kahuna-eval", lambda: eval_main(["./fifo.pt", "random", "--games", "2"])),
        ("kahuna-play", lambda: play_main(["--opponent", "./fifo.pt"], stdin=io.StringIO("quit\n"))),
    ],
)
def test_the_tools_refuse_a_fifo_agent_in_one_line(tmp_path, monkeypatch, capsys, program, run):
    # `mkfifo fifo.pt; kahuna-eval ./fifo.pt random` and `kahuna-play --opponent ./fifo.pt` hung until killed.
    monkeypatch.chdir(tmp_path)
    fifo = fifo_at(tmp_path / "fifo.pt")
    with never_blocking(fifo), pytest.raises(SystemExit) as stop:
        run()
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: error: ") and "not a regular file" in lines[0]


def test_a_truncated_agent_file_is_one_short_line(tmp_path, capsys):
    # Its error line was ~600 characters of torch's advice about its zip reader.
    whole = saved(tmp_path, payload(), "whole.pt").read_bytes()
    cut = tmp_path / "cut.pt"
    for size in (len(whole) // 2, len(whole) - 10):
        cut.write_bytes(whole[:size])
        message = refusal(cut)
        assert message == f"{cut} is not a readable checkpoint: truncated or corrupt (an incomplete zip archive)"
    with pytest.raises(SystemExit):
        eval_main([str(cut), "random", "--games", "2"])
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and len(line) < len(str(cut)) + 120 and "truncated or corrupt" in line
