"""``python -m training.tools.widen``: a wider network that plays exactly as the original, and its refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation
from policy.agent import load_agent
from policy.model import ActorCritic, ModelConfig, agent_payload
from training.tools.widen import main, widen


def _positions(games: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(0)
    observations, masks = [], []
    for seed in range(games):
        game = KahunaGame(KahunaConfig(), seed=seed)
        while not game.is_over:
            legal = game.legal_actions()
            observations.append(encode_observation(game, game.current_player))
            mask = np.zeros(179, dtype=bool)
            mask[legal] = True
            masks.append(mask)
            game.step(int(rng.choice(legal)))
    return torch.tensor(np.array(observations)), torch.tensor(np.array(masks))


def _small(architecture: str, seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    model = ActorCritic(ModelConfig(hidden_sizes=(24, 12), architecture=architecture, line_width=8))
    with torch.no_grad():  # no zero heads: every weight of the original must matter
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return model.eval()


@pytest.mark.parametrize("architecture", ["board", "mlp"])
def test_the_wider_network_computes_the_same_logits_and_values(architecture):
    model = _small(architecture)
    wide = widen(model, [40, 20], 16, seed=3)
    assert wide.config.hidden_sizes == (40, 20) and wide.config.architecture == architecture
    assert sum(p.numel() for p in wide.parameters()) > sum(p.numel() for p in model.parameters())
    observations, masks = _positions()
    with torch.no_grad():
        logits, values = model(observations, masks)
        wide_logits, wide_values = wide(observations, masks)
    torch.testing.assert_close(wide_logits, logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(wide_values, values, rtol=0, atol=1e-5)


def test_the_new_units_learn_from_the_first_gradient_step():
    """Zero fan-out, not dead units: the new units' outgoing weights get gradients."""
    wide = widen(_small("board"), [40, 20], 16, seed=3).train()
    observations, masks = _positions(1)
    logits, values = wide(observations, masks)
    (torch.log_softmax(logits, dim=-1).max(dim=-1).values.sum() + values.square().sum()).backward()
    assert wide.trunk[2].weight.grad[:12, 24:].abs().sum() > 0  # old units reading new ones
    assert wide.value_head.weight.grad[:, 8:].abs().sum() > 0  # the value head reading new units
    assert wide.line_head.weight.grad[:, 8:].abs().sum() > 0


@pytest.mark.parametrize(
    ("sizes", "line_width", "message"),
    [
        ([16, 12], 8, r"--hidden-sizes \[16, 12\] is narrower than the network's \[24, 12\]"),
        ([48], 8, "--hidden-sizes has 1 layers; the network has 2"),
        ([48, 24], 4, "--line-width must be even and >= the network's 8, got 4"),
        ([48, 24], 9, "--line-width must be even and >= the network's 8, got 9"),
    ],
)
def test_a_size_that_does_not_widen_is_one_error_line_and_writes_nothing(tmp_path, capsys, sizes, line_width, message):
    source = tmp_path / "agent.pt"
    torch.save(agent_payload(_small("board")), source)
    out = tmp_path / "wide.pt"
    argv = [str(source), "--hidden-sizes", *map(str, sizes), "--line-width", str(line_width), "--out", str(out)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("widen: error: ")
    assert re.search(message, error)
    assert not out.exists()


def test_the_cli_writes_an_agent_file_with_its_provenance(tmp_path, capsys):
    source = tmp_path / "agent.pt"
    model = _small("board")
    torch.save(agent_payload(model, {"reward": {"win": 2.0, "island_shaping": 0.5}}), source)
    out = tmp_path / "wide.pt"
    assert main([str(source), "--hidden-sizes", "32", "16", "--out", str(out)]) == 0
    assert "[24, 12]/8 ->" in capsys.readouterr().out
    agent = load_agent(out)
    assert agent.model.config.hidden_sizes == (32, 16) and agent.model.config.line_width == 8
    assert agent.meta["widened_from"] == str(source)
    assert agent.reward == {"win": 2.0, "island_shaping": 0.5}  # the critic's semantics travel with it
    with pytest.raises(SystemExit):  # an existing output is refused, and left as it was
        main([str(source), "--hidden-sizes", "32", "16", "--out", str(out)])
    assert "exists; choose another --out" in capsys.readouterr().err
    assert load_agent(out).model.config.hidden_sizes == (32, 16)


def test_an_agent_that_does_not_load_is_one_error_line(tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit) as exit_info:
        main([str(bad), "--hidden-sizes", "32", "16", "--out", str(tmp_path / "wide.pt")])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("widen: error: ") and "not a checkpoint" not in lines[-1]
    assert not (tmp_path / "wide.pt").exists()
