"""``benchmarks/loss_overlap.py``: the games agents lose on the same deals, and their ensemble."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import benchmark_module

from policy.agent import load_agent
from training.selfplay.quick_eval import evaluate_policy

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def module():
    return benchmark_module("loss_overlap")


def test_overlap_table_counts_common_losses_and_losses_per_game(module):
    table = module.overlap_table({"a": {1, 2, 3}, "b": {3, 4}, "c": {3, 4, 9}}, games=10)
    pairs = {tuple(pair["agents"]): pair for pair in table["pairs"]}
    assert pairs["a", "b"]["both_lost"] == 1 and pairs["a", "b"]["expected_if_independent"] == pytest.approx(0.6)
    assert pairs["b", "c"]["both_lost"] == 2 and pairs["a", "c"]["both_lost"] == 1
    # game 3: all three; game 4: two; games 1, 2, 9: one
    assert table["games_lost_by_k_agents"] == {1: 3, 2: 1, 3: 1}


def test_ensemble_of_one_network_plays_its_moves_and_never_an_illegal_one(module):
    network = load_agent("champion").model
    ensemble = module.MeanLogProbEnsemble([network, network]).eval()
    observation = torch.zeros(3, 246)
    mask = torch.zeros(3, 179, dtype=torch.bool)
    mask[0, [5, 7]] = True
    mask[1, 100] = True
    mask[2, :] = True
    with torch.inference_mode():
        logits, values = ensemble(observation, mask)
        own_logits, own_values = network(observation, mask)
    assert torch.equal(logits.argmax(-1), own_logits.argmax(-1))
    assert bool(mask[torch.arange(3), logits.argmax(-1)].all())
    assert torch.allclose(values, own_values)
    with pytest.raises(ValueError, match="at least one"):
        module.MeanLogProbEnsemble([])


def test_the_script_plays_every_agent_on_the_same_games(module, tmp_path, capsys):
    out = tmp_path / "overlap.json"
    argv = ["champion", "champion-v1", "--opponent", "random", "--games", "6", "--ensemble", "--json", str(out)]
    assert module.main(argv) == 0
    printed = capsys.readouterr().out
    assert "lost by both champion and champion-v1" in printed and "ensemble: vs random" in printed
    report = json.loads(out.read_text())
    assert report["games"] == 6 and set(report["agents"]) == {"champion", "champion-v1"}
    assert report["ensemble"]["members"] == ["champion", "champion-v1"]
    assert set(report["ensemble"]["results"]) == {"ensemble"}
    # the same seed, the same games: the script's tally is evaluate_policy's
    direct = evaluate_policy(load_agent("champion-v1").model, "random", 6, seed=500).to_dict()
    assert report["agents"]["champion-v1"] == direct


def test_opponent_seeds_replay_the_same_deals_with_other_tie_breaks(module, tmp_path, capsys):
    out = tmp_path / "overlap.json"
    assert (
        module.main(
            ["champion-v1", "--opponent", "random", "--games", "8", "--opponent-seeds", "3", "4", "--json", str(out)]
        )
        == 0
    )
    report = json.loads(out.read_text())
    entries = ["champion-v1 (opponent seed 3)", "champion-v1 (opponent seed 4)"]
    assert list(report["agents"]) == entries and report["opponent_seeds"] == [3, 4]
    assert [pair["agents"] for pair in report["pairs"]] == [entries]
    model = load_agent("champion-v1").model
    for name, opponent_seed in zip(entries, (3, 4), strict=True):
        assert (
            report["agents"][name]
            == evaluate_policy(model, "random", 8, seed=500, opponent_seed=opponent_seed).to_dict()
        )
    # the deals are the seed's, the opponent's moves its own: another opponent seed, other games
    moves = [[], []]
    for k, opponent_seed in enumerate((3, 4)):
        evaluate_policy(
            model,
            "random",
            8,
            seed=500,
            opponent_seed=opponent_seed,
            on_game=lambda g, k=k: moves[k].append((g.deal_seed, g.moves)),
        )
    assert [deal for deal, _ in moves[0]] == [deal for deal, _ in moves[1]]
    assert [count for _, count in moves[0]] != [count for _, count in moves[1]]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["champion", "champion"], "an agent is named twice"),
        (["champion", "no-such-agent.pt"], "agent 'no-such-agent.pt'"),
        (["champion", "--games", "5"], "must be even"),
        (["champion", "--opponent", "mcts"], "invalid choice"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(module, capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        module.main(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_json_output_may_not_be_an_agent_file(module, tmp_path, capsys):
    agent = tmp_path / "agent.pt"
    agent.write_bytes((ROOT / "policy" / "agents" / "champion.pt").read_bytes())
    with pytest.raises(SystemExit):
        module.main([str(agent), "--json", str(agent)])
    assert "is one of the agents" in capsys.readouterr().err
    assert agent.read_bytes() == (ROOT / "policy" / "agents" / "champion.pt").read_bytes()


def _checkpoint_with_pool(tmp_path: Path, pool: list) -> Path:
    """champion-v1's agent file with a league pool attached, as a training checkpoint stores one."""
    from policy.agent import read_policy_file, shipped_agent_source

    payload = read_policy_file(shipped_agent_source("champion-v1"))
    payload["pool"] = pool
    path = tmp_path / "latest.pt"
    torch.save(payload, path)
    return path


def test_snapshots_play_every_network_a_checkpoint_stores(module, tmp_path, capsys):
    from policy.agent import read_policy_file, shipped_agent_source

    weights = read_policy_file(shipped_agent_source("champion-v1"))["model_state"]
    noise = torch.Generator().manual_seed(0)
    other = {key: value + 0.05 * torch.randn(value.shape, generator=noise) for key, value in weights.items()}
    pool = [{"update": 5, "model_state": weights}, {"update": 9, "model_state": other}]
    path = _checkpoint_with_pool(tmp_path, pool)
    out = tmp_path / "scan.json"
    argv = [str(path), "--snapshots", "--opponent", "random", "--games", "6", "--json", str(out)]
    assert module.main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    names = [str(path), f"{path}@u5", f"{path}@u9"]
    assert list(report["agents"]) == names
    # update 5 holds the checkpoint's own weights: the same games, the same tally
    assert report["agents"][names[1]] == report["agents"][names[0]]
    direct = evaluate_policy(load_agent("champion-v1").model, "random", 6, seed=500).to_dict()
    assert report["agents"][names[0]] == direct
    assert "games lost over 3 entries: lowest" in printed and "lost by both" in printed


def test_snapshots_leave_the_pairs_out_of_the_printout_beyond_eight_entries(module, tmp_path, capsys):
    from policy.agent import read_policy_file, shipped_agent_source

    weights = read_policy_file(shipped_agent_source("champion-v1"))["model_state"]
    path = _checkpoint_with_pool(tmp_path, [{"update": u, "model_state": weights} for u in range(8)])
    out = tmp_path / "scan.json"
    assert module.main([str(path), "--snapshots", "--opponent", "random", "--games", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lost by both" not in printed and "36 pairs of entries: not printed" in printed
    assert len(json.loads(out.read_text())["pairs"]) == 36


def test_a_snapshot_of_another_architecture_plays_with_its_own_network(module, tmp_path):
    import dataclasses

    from policy.model import ActorCritic, ModelConfig

    config = ModelConfig(hidden_sizes=(32,), architecture="mlp")
    torch.manual_seed(0)
    small = ActorCritic(config)
    entry = {"update": 3, "model_state": small.state_dict(), "model_config": dataclasses.asdict(config)}
    path = _checkpoint_with_pool(tmp_path, [entry])
    [(name, network)] = module.checkpoint_snapshots(str(path))
    assert name == f"{path}@u3" and network.config == config
    assert all(torch.equal(value, small.state_dict()[key]) for key, value in network.state_dict().items())


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (None, "stores no league snapshots"),
        ([], "stores no league snapshots"),
        ([{"update": "5", "model_state": {}}], "league snapshot 0 is not an update number with weights"),
        ([{"update": 5}], "league snapshot 0 is not an update number with weights"),
        ([{"update": 5, "model_state": {"nope": torch.zeros(2)}}], "snapshot 0"),
    ],
)
def test_bad_snapshots_are_one_line_and_exit_2(module, tmp_path, capsys, pool, message):
    path = _checkpoint_with_pool(tmp_path, pool)
    with pytest.raises(SystemExit) as stopped:
        module.main([str(path), "--snapshots", "--opponent", "random", "--games", "2"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_snapshots_of_a_shipped_name_are_refused(module, capsys):
    with pytest.raises(SystemExit) as stopped:
        module.main(["champion", "--snapshots", "--games", "2"])
    assert stopped.value.code == 2
    assert "reads training checkpoints, and champion is not a file" in capsys.readouterr().err
