"""Crafted and foreign agent files (issue 10, item 7): ``load_agent`` answers each with one ValueError line.

Nothing is built before the file's types and shapes are checked against its
state dict, so a small file that declares a huge network is refused at once.
"""

from __future__ import annotations

import time

import pytest
import torch

from training import load_agent
from training.model import ActorCritic, ModelConfig, agent_payload

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
        ({"model_config": 7}, "model_config must be a mapping of options, got int 7"),
        ({"model_config": {"hidden_sizes": 5}}, "model.hidden_sizes must be a non-empty list of positive integers"),
        (
            {"model_config": {"hidden_sizes": {8: "x"}}},
            "model.hidden_sizes must be a non-empty list of positive integers",
        ),
        ({"model_config": {"hidden_sizes": "8"}}, "model.hidden_sizes must be a non-empty list of positive integers"),
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
    crafted = payload(model_config={"hidden_sizes": [60000, 60000]})
    start = time.perf_counter()
    message = refusal(saved(tmp_path, crafted))
    assert time.perf_counter() - start < 2.0
    assert "does not fit model_config (architecture mlp, hidden_sizes [60000, 60000])" in message
    assert "wrong shape: trunk.0.weight (8, 246) instead of (60000, 246)" in message
    assert "missing: trunk.2.weight, trunk.2.bias" in message


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
    assert "not tensors: value_head.bias" in refusal(saved(tmp_path, payload(model_state=state), "a.pt"))
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
