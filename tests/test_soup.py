"""``python -m training.tools.soup``: the weighted average of several agents' weights, and its refusals."""

from __future__ import annotations

import re

import pytest
import torch

from policy.agent import load_agent
from policy.model import ActorCritic, ModelConfig, agent_payload
from training.ppo.provenance import weights_key
from training.tools.soup import main, soup, soup_reward


def _small(seed: int, hidden_sizes: tuple[int, ...] = (24, 12)) -> ActorCritic:
    torch.manual_seed(seed)
    model = ActorCritic(ModelConfig(hidden_sizes=hidden_sizes, architecture="board", line_width=8))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return model.eval()


def _write(tmp_path, name: str, model: ActorCritic, reward: dict | None = None):
    path = tmp_path / name
    torch.save(agent_payload(model, {"reward": reward} if reward else {}), path)
    return path


def test_every_weight_is_the_weighted_average():
    a, b, c = _small(0), _small(1), _small(2)
    uniform = soup([a, b, c])
    weighted = soup([a, b], [3.0, 1.0])
    for name, value in uniform.state_dict().items():
        parts = [m.state_dict()[name] for m in (a, b, c)]
        torch.testing.assert_close(value, (parts[0] + parts[1] + parts[2]) / 3)
        torch.testing.assert_close(weighted.state_dict()[name], 0.75 * parts[0] + 0.25 * parts[1])
    assert uniform.config == a.config
    same = soup([a, a])  # the soup of one network with itself is that network
    assert weights_key(same) == weights_key(a)


@pytest.mark.parametrize(
    ("models", "weights", "message"),
    [
        (lambda: [_small(0)], None, "at least two agents, got 1"),
        (lambda: [_small(0), _small(1, (24, 16))], None, "agent 2's network .* differs from agent 1's"),
        (lambda: [_small(0), _small(1)], [1.0], "--weights has 1 values for 2 agents"),
        (lambda: [_small(0), _small(1)], [1.0, 0.0], "--weights must be positive finite numbers"),
        (lambda: [_small(0), _small(1)], [1.0, float("nan")], "--weights must be positive finite numbers"),
    ],
)
def test_bad_ingredients_are_a_value_error(models, weights, message):
    with pytest.raises(ValueError, match=message):
        soup(models(), weights)


def test_reward_settings_must_agree_unless_averaged():
    plain, margin = {"win": 1.0, "island_shaping": 1.0}, {"win": 1.0, "island_shaping": 1.0, "margin": 0.03}
    assert soup_reward([None, None], [1, 1], average=False) is None
    assert soup_reward([plain, None], [1, 1], average=False) == plain  # none recorded = the default settings
    with pytest.raises(ValueError, match=r"different reward settings .* pass --average-rewards"):
        soup_reward([plain, margin], [1, 1], average=False)
    averaged = soup_reward([plain, plain, margin], [1, 1, 1], average=True)
    assert averaged == pytest.approx({"win": 1.0, "island_shaping": 1.0, "margin": 0.01})


def test_the_cli_writes_an_agent_file_with_its_ingredients(tmp_path, capsys):
    a, b = _small(0), _small(1)
    paths = [_write(tmp_path, "a.pt", a), _write(tmp_path, "b.pt", b)]
    out = tmp_path / "soup.pt"
    assert main([*map(str, paths), "--out", str(out), "--weights", "1", "3"]) == 0
    assert "2 agents ->" in capsys.readouterr().out
    agent = load_agent(out)
    expected = soup([a, b], [1.0, 3.0])
    assert weights_key(agent.model) == weights_key(expected)
    assert [entry["agent"] for entry in agent.meta["soup"]] == [str(p) for p in paths]
    assert [entry["weights"] for entry in agent.meta["soup"]] == [weights_key(a), weights_key(b)]
    assert [entry["weight"] for entry in agent.meta["soup"]] == [1.0, 3.0]
    with pytest.raises(SystemExit):  # an existing output is refused, and left as it was
        main([*map(str, paths), "--out", str(out)])
    assert "exists; choose another --out" in capsys.readouterr().err
    assert weights_key(load_agent(out).model) == weights_key(expected)


def test_the_averaged_reward_travels_with_the_file(tmp_path):
    paths = [
        _write(tmp_path, "a.pt", _small(0), {"win": 1.0, "island_shaping": 1.0}),
        _write(tmp_path, "b.pt", _small(1), {"win": 1.0, "island_shaping": 1.0, "margin": 0.04}),
    ]
    out = tmp_path / "soup.pt"
    assert main([*map(str, paths), "--out", str(out), "--average-rewards"]) == 0
    assert load_agent(out).reward == pytest.approx({"win": 1.0, "island_shaping": 1.0, "margin": 0.02})


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        (lambda d: [_write(d, "a.pt", _small(0))], [], "at least two agents, got 1"),
        (
            lambda d: [_write(d, "a.pt", _small(0)), _write(d, "b.pt", _small(1, (24, 16)))],
            [],
            "agent 2's network",
        ),
        (
            lambda d: [
                _write(d, "a.pt", _small(0), {"win": 1.0, "island_shaping": 1.0}),
                _write(d, "b.pt", _small(1), {"win": 1.0, "island_shaping": 1.0, "margin": 0.03}),
            ],
            [],
            "different reward settings",
        ),
        (lambda d: [_write(d, "a.pt", _small(0)), _write(d, "b.pt", _small(1))], ["--weights", "1", "-1"], "positive"),
        (lambda d: [_write(d, "a.pt", _small(0)), d / "missing.pt"], [], "missing.pt"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path, capsys, setup, extra, message):
    paths = setup(tmp_path)
    out = tmp_path / "soup.pt"
    with pytest.raises(SystemExit) as exit_info:
        main([*map(str, paths), "--out", str(out), *extra])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("soup: error: ") and re.search(message, error)
    assert not out.exists()


def test_a_file_that_does_not_load_is_named_without_its_content(tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit) as exit_info:
        main([str(_write(tmp_path, "a.pt", _small(0))), str(bad), "--out", str(tmp_path / "soup.pt")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("soup: error: ") and "bad.pt" in error and "not a checkpoint" not in error
    assert not (tmp_path / "soup.pt").exists()
