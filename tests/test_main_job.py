"""The main job on the user's machine (issue 69): float32 speed, other work on the cores, the first run, the device.

* the "board" network's fast forward pass (gathered features, the per-line layers in place, their
  backward written out) is the generic pass's function and gradient, and the shipped agents play
  the same moves with it;
* the update's minibatch in shards: one gradient whatever the threads that compute it;
* beside other work the run measures what the CPU gives it and runs the shards on fewer threads
  (same results), then on all of them again; torch's threads wait passively;
* a first run announces the engine's compile and keeps it out of its budget;
* ``device``: validated, ``cuda`` refused in one line without a GPU, checkpoints portable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

import kahuna_policy.model
from kahuna_env import kernels
from kahuna_policy.agent import load_agent
from kahuna_policy.model import _OWN_WEIGHTS, ActorCritic, ModelConfig
from training.cli import main
from training.launch import WAIT_POLICY, passive_threads
from training.league.pool import OpponentPool
from training.ppo import trainer
from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import ConfigError, PPOConfig, load_config
from training.ppo.cpus import ContentionGuard, CpuWatch, PhaseCpu
from training.ppo.device import resolve_device
from training.ppo.parallel import UpdateShards
from training.ppo.schedule import SCHEDULE_FILE
from training.selfplay.collector import SelfPlayCollector

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "smoke.yaml"
QUIET = ["logging.progress=false", "logging.tensorboard=false", "logging.plot=false"]


def board(activation: str = "relu") -> ActorCritic:
    """A small board network with weights far from their initialisation, so that every layer matters."""
    torch.manual_seed(5)
    model = ActorCritic(ModelConfig(hidden_sizes=(24,), activation=activation, architecture="board", line_width=8))
    for parameter in model.parameters():
        torch.nn.init.normal_(parameter, std=0.3)
    return model


@pytest.fixture(scope="module")
def played():
    """A real rollout of 6 games (the learner against itself and the baselines): observations, masks, arrays."""
    model = board().eval()
    pool = OpponentPool(model.config, max_snapshots=1)
    pool.add(model, update=0)
    shares = {"latest": 0.5, "past": 1 / 6, "greedy": 1 / 6, "random": 1 / 6}
    rng = np.random.default_rng(2)
    collector = SelfPlayCollector(num_games=6, model_config=model.config)
    return collector.collect(model, pool, pool.assign(6, shares, rng), rng)


def outputs_and_gradients(model: ActorCritic, observations: torch.Tensor, masks: torch.Tensor, generic: bool):
    model.zero_grad()
    logits, values = model._forward(observations, masks, _OWN_WEIGHTS) if generic else model(observations, masks)
    legal = torch.log_softmax(logits, dim=-1).masked_fill(~masks, 0.0)
    (legal.sin().sum() + (values**2).sum()).backward()
    return logits.detach(), values.detach(), [parameter.grad.clone() for parameter in model.parameters()]


@pytest.mark.parametrize("chunk", [None, 128])
@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_the_fast_board_pass_is_the_generic_pass_with_the_same_gradients(played, activation, chunk, monkeypatch):
    if chunk is not None:  # 300 positions in three chunks (128, 128, 44) instead of the default's one
        monkeypatch.setattr(kahuna_policy.model, "LINE_CHUNK", chunk)
    model = board(activation).double()
    observations = torch.from_numpy(played.observations[:300]).double()
    masks = torch.from_numpy(played.masks[:300])
    fast = outputs_and_gradients(model, observations, masks, generic=False)
    generic = outputs_and_gradients(model, observations, masks, generic=True)
    assert torch.equal(fast[0] == -1e9, ~masks)  # exactly the masked value where illegal
    torch.testing.assert_close(fast[0], generic[0], rtol=1e-12, atol=1e-9)
    torch.testing.assert_close(fast[1], generic[1], rtol=1e-12, atol=1e-9)
    for mine, theirs in zip(fast[2], generic[2], strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-10)
    # A single position (no batch dimension) and an empty batch keep their shapes.
    single = model(observations[0], masks[0])
    assert single[0].shape == (179,) and single[1].shape == ()
    assert model(observations[:0], masks[:0])[0].shape == (0, 179)


def test_the_shipped_champion_plays_the_same_moves_with_the_fast_pass(played):
    agent = load_agent("champion")
    observations, masks = torch.from_numpy(played.observations), torch.from_numpy(played.masks)
    with torch.no_grad():
        fast, fast_values = agent.model(observations, masks)
        generic, generic_values = agent.model._forward(observations, masks, _OWN_WEIGHTS)
    torch.testing.assert_close(fast, generic, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(fast_values, generic_values, rtol=1e-5, atol=1e-5)
    assert torch.equal(fast.argmax(dim=1), generic.argmax(dim=1))


def update_weights(rollout, shards: UpdateShards | None) -> tuple[torch.Tensor, dict[str, float]]:
    model = board()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # the weights move by the gradient itself
    # One minibatch of all the decisions: one step, whose gradient the shards sum (later steps would
    # magnify rounding through the ReLUs' kinks and the clip's edges).
    ppo = PPOConfig(update_epochs=1, minibatch_size=len(rollout), bf16=False)
    stats = trainer.ppo_update(model, optimizer, rollout, ppo, torch.Generator().manual_seed(0), shards=shards)
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach(), stats


def test_sharded_gradients_are_the_minibatch_gradient_whatever_runs_them(played):
    one, one_stats = update_weights(played, None)
    shards = UpdateShards(3)
    try:
        parallel, parallel_stats = update_weights(played, shards)
        shards.concurrency = 1  # other work took the cores: one thread runs the three shards in turn
        serial, _ = update_weights(played, shards)
    finally:
        shards.close()
    assert torch.equal(parallel, serial)  # the shard count fixes the result, not the threads
    torch.testing.assert_close(parallel, one, rtol=0, atol=1e-6)  # the same gradient, summed in pieces
    for key, value in one_stats.items():
        assert parallel_stats[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key


def phase(wall=1.0, cpu=1.0, waited=None, idle=None) -> PhaseCpu:
    return PhaseCpu(wall=wall, cpu=cpu, waited=waited, idle=idle)


def test_the_guard_runs_fewer_threads_beside_other_work_and_all_of_them_after():
    shards = UpdateShards(2)
    guard = ContentionGuard(shards, patience=2)
    quiet = phase(cpu=1.8, waited=0.02, idle=0.1)
    assert guard.observe(phase(waited=0.0), quiet) is None and shards.concurrency == 2
    # Another process took a core: the two update threads waited for a CPU a core's worth of the time.
    warning = guard.observe(phase(waited=0.1), phase(cpu=1.0, waited=0.95, idle=0.0))
    assert warning.startswith("warning: other work is taking this machine's cores") and "\n" not in warning
    assert shards.concurrency == 1 and "same results" in warning
    assert guard.observe(phase(), phase(cpu=1.0, waited=0.0, idle=0.0)) is None  # one warning, and no flapping
    assert shards.concurrency == 1
    # It stopped: a core sat idle during two updates on one thread.
    assert guard.observe(phase(), phase(cpu=1.0, waited=0.0, idle=0.95)) is None
    assert guard.observe(phase(), phase(cpu=1.0, waited=0.0, idle=0.97)) == (
        "the cores are free again: the update runs its 2 shards on 2 threads"
    )
    assert shards.concurrency == 2 and guard.patience == 4  # a relapse waits longer next time


def test_without_run_queue_figures_the_guard_reads_the_cores_the_update_got():
    guard = ContentionGuard(UpdateShards(2))
    assert not guard.contention(phase(cpu=1.7), threads=2)
    assert guard.contention(phase(cpu=1.0), threads=2)
    assert not guard.contention(phase(cpu=0.4), threads=1)  # one thread cannot tell without the wait


def test_the_cpu_watch_reads_a_phase_from_its_clocks():
    readings = {"wall": iter([10.0, 12.0]), "cpu": iter([3.0, 5.5]), "wait": iter([1.0, 1.5]), "idle": iter([7, 7])}
    watch = CpuWatch(*(lambda name=name: next(readings[name]) for name in ("wall", "cpu", "wait", "idle")))
    watch.start()
    got = watch.stop()
    assert got == PhaseCpu(wall=2.0, cpu=2.5, waited=0.5, idle=0.0)
    assert (got.cores(), got.waiting(), got.idle_cores()) == (1.25, 0.25, 0.0)
    real = CpuWatch()  # this machine's readers answer (or say they cannot)
    real.start()
    sum(range(10**5))
    assert real.stop().wall > 0


def test_the_launcher_sets_a_passive_wait_policy_before_torch_loads_and_respects_the_users():
    environ: dict[str, str] = {}
    assert passive_threads(environ) and environ == {WAIT_POLICY: "PASSIVE"}
    environ = {WAIT_POLICY: "ACTIVE"}
    assert not passive_threads(environ) and environ == {WAIT_POLICY: "ACTIVE"}
    # The console script's own path: what the environment said when torch was imported.
    probe = (
        "import os, sys\n"
        "seen = []\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch':\n"
        "            seen.append(os.environ.get('OMP_WAIT_POLICY'))\n"
        "        return None\n"
        "sys.meta_path.insert(0, Spy())\n"
        "from training.launch import train\n"
        "train(['--help'])\n"
        "print(seen[0])\n"
    )
    environment = {key: value for key, value in os.environ.items() if key != WAIT_POLICY}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "PASSIVE"


class FakeTime(types.SimpleNamespace):
    """The trainer's ``time`` module with a wall clock that moves only when told (and a little per reading)."""

    def __init__(self) -> None:
        super().__init__(now=0.0)

    def perf_counter(self) -> float:
        self.now += 0.001
        return self.now

    def __getattr__(self, name: str):
        import time

        return getattr(time, name)


def test_a_first_run_announces_the_engines_compile_and_keeps_it_out_of_its_budget(tmp_path, monkeypatch):
    clock = FakeTime()
    monkeypatch.setattr(trainer, "time", clock)

    def cold_cache() -> bool:
        clock.now += 1000.0  # compiling takes (fake) 1000 s, longer than the whole budget
        return False

    monkeypatch.setattr(kernels, "cache_is_warm", cold_cache)
    settings = ["total_updates=6", "max_minutes=10", "schedule.by=time", "schedule.measure_updates=2", *QUIET]
    lines: list[str] = []
    summary = trainer.train(load_config(SMOKE, settings), tmp_path / "run", log=lines.append)
    announced = lines.index(f"compiling the engine's kernels, first run only, ~{trainer.COMPILE_SECONDS} s")
    assert lines[announced + 1].startswith("compiled in ")
    plan = json.loads((tmp_path / "run" / SCHEDULE_FILE).read_text())
    assert plan["elapsed_seconds"] < 10 and plan["seconds_per_update"] < 1  # the compile is not in the plan
    assert summary.updates == 6  # nor in max_minutes: the whole recipe fits


def test_a_warm_cache_is_not_announced(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "cache_is_warm", lambda: True)
    lines: list[str] = []
    trainer.train(load_config(SMOKE, ["total_updates=1", *QUIET]), tmp_path / "run", log=lines.append)
    assert not any("compiling" in line for line in lines)


def test_the_compile_check_counts_only_cache_entries_compiled_for_this_cpu(monkeypatch):
    from kahuna_env.vector import KahunaBatch

    batch = KahunaBatch(2, seed=0)  # the loops every game plays: compiled, or loaded from numba's cache
    batch.step(np.argmax(batch.legal_masks(), axis=1))
    batch.observations()
    assert kernels.cache_is_warm() is True
    step = kernels.step
    elsewhere = types.SimpleNamespace(magic_tuple=lambda: ("x86_64-unknown-linux-gnu", "another-cpu", "+avx2"))
    moved = types.SimpleNamespace(targetctx=types.SimpleNamespace(codegen=lambda: elsewhere), _cache=step._cache)
    assert kernels._cached_for_this_cpu(step) and not kernels._cached_for_this_cpu(moved)
    monkeypatch.setattr(kernels, "step", moved)  # a cache written on another CPU only: this one compiles
    assert kernels.cache_is_warm() is False


def test_device_is_validated_and_auto_means_cuda_only_with_a_gpu(monkeypatch):
    assert load_config(SMOKE, ["device=cpu"]).device == "cpu"
    assert load_config(SMOKE).device == "auto"
    with pytest.raises(ConfigError, match=r"^device: must be one of auto, cpu, cuda, got 'tpu'$"):
        load_config(SMOKE, ["device=tpu"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu") == resolve_device("cpu")
    with pytest.raises(ValueError, match=r"^device: cuda, but torch sees no CUDA GPU"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert resolve_device("auto") == torch.device("cuda", 0)


def test_device_cuda_without_a_gpu_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run_dir = tmp_path / "run"
    assert main(["--config", str(SMOKE), "--set", "device=cuda", "--run-dir", str(run_dir)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("kahuna-train: error: device: cuda, but torch sees no CUDA GPU") and error.count("\n") == 1
    assert not run_dir.exists() or not any(run_dir.iterdir())


def test_a_checkpoint_written_on_a_gpu_resumes_on_the_cpu(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    config = load_config(SMOKE, ["total_updates=2", "checkpoint.every=1", *QUIET])
    trainer.train(config, run_dir, log=lambda line: None)
    latest = run_dir / "checkpoints" / "latest.pt"
    payload = load_checkpoint(latest)
    # Rewrite it as a CUDA run saves it: every storage tagged cuda:0 (loading it without map_location
    # needs a GPU); the trainer reads checkpoints to the CPU first.
    monkeypatch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
    torch.save(payload, latest)
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(latest, weights_only=True)
    config = trainer.resume_config(run_dir, ["total_updates=3"])
    resumed = trainer.train(config, run_dir, resume=True, log=lambda line: None)
    assert resumed.updates == 3
    state = load_checkpoint(latest)
    assert all(tensor.device.type == "cpu" for tensor in state["model_state"].values())
