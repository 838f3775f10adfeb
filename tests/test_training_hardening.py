"""kahuna-train under hostile or careless input (issue 10): every problem one line, nothing overwritten or lost.

Each test reproduces one failure of the audit: a resume that changes the
architecture, non-finite values, a run directory that is used, read-only, a
file or full, a second process on the same run, damaged checkpoints, and the
core count under CPU limits.  Crafted agent files are in tests/test_agent_files.py.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

import pytest
import torch

from training.cli import main
from training.ppo import cpus
from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import ConfigError, TrainConfig, load_config
from training.ppo.cpus import available_cores, cgroup_cpu_limit, oversubscription_warning, update_threads
from training.ppo.metrics import read_metrics
from training.ppo.rundir import RunLock

REPOSITORY = Path(__file__).resolve().parent.parent
SMOKE = REPOSITORY / "configs" / "smoke.yaml"
# The smoke recipe, two updates, a checkpoint after each, nothing slow.
QUICK = [
    "total_updates=2",
    "checkpoint.every=1",
    "eval.every=0",
    "eval.final_games=0",
    "logging.tensorboard=false",
    "logging.plot=false",
]


def quick_args(run_dir: Path, *extra: str) -> list[str]:
    overrides = [item for key in [*QUICK, *extra] for item in ("--set", key)]
    return ["--config", str(SMOKE), *overrides, "--run-dir", str(run_dir)]


def one_error_line(capsys) -> str:
    """The single stderr line of a failed command (asserts there is exactly one)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("kahuna-train: error: "), lines
    return lines[0]


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` but the lock file, with its bytes (to prove nothing changed)."""
    files = sorted(path for path in directory.rglob("*") if path.is_file() and path.name != ".lock")
    return {str(path.relative_to(directory)): path.read_bytes() for path in files}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A two-update run with checkpoints update_000001.pt, update_000002.pt and latest.pt."""
    run_dir = tmp_path_factory.mktemp("hardening") / "run"
    assert main(quick_args(run_dir)) == 0
    return run_dir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    (copy / ".lock").unlink(missing_ok=True)
    return copy


# ----------------------------------------------------------------------------- item 4: resume changing the network
@pytest.mark.parametrize(
    "override", ["model.hidden_sizes=[64]", "model.architecture=mlp", "model.activation=tanh", "model.line_width=16"]
)
def test_resume_that_changes_the_architecture_is_one_line_and_changes_nothing(run_copy, capsys, override):
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", override, "--set", "total_updates=3"]) == 2
    line = one_error_line(capsys)
    assert f"{override.split('=')[0]} cannot change when resuming" in line
    assert snapshot(run_copy) == before


# ----------------------------------------------------------------------------- item 5: NaN and inf
def float_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    """Every float-valued key of the config (``ppo.lr``, ``reward.win``, ``max_minutes``, ...)."""
    keys = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        annotation = hints[field.name]
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(annotation):
            keys += float_keys(annotation, f"{key}.")
        elif annotation is float or float in typing.get_args(annotation):
            keys.append(key)
    return keys


def test_every_float_key_is_found():
    keys = float_keys()
    assert {"ppo.lr", "reward.win", "reward.island_shaping", "pool.latest", "max_minutes"} <= set(keys)


@pytest.mark.parametrize("key", float_keys())
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1e400"])
def test_non_finite_floats_are_rejected_for_every_key(key, value):
    with pytest.raises(ConfigError, match=rf"^{key}: must be a finite number"):
        load_config(None, [f"{key}={value}"])


def test_cli_rejects_a_nan_reward_before_training(tmp_path, capsys):
    assert main(quick_args(tmp_path / "run", "reward.island_shaping=.nan")) == 2
    assert one_error_line(capsys).endswith("reward.island_shaping: must be a finite number, got nan")
    assert not (tmp_path / "run").exists()


def test_a_run_whose_weights_become_nan_stops_and_keeps_the_last_good_checkpoint(tmp_path, capsys, monkeypatch):
    import training.ppo.trainer

    real_update = training.ppo.trainer.ppo_update

    def diverging_update(model, optimizer, rollout, ppo, generator, **options):
        stats = real_update(model, optimizer, rollout, ppo, generator, **options)
        if optimizer.param_groups[0]["lr"] < ppo.lr:  # update 2 (the learning rate anneals)
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))
        return stats

    monkeypatch.setattr(training.ppo.trainer, "ppo_update", diverging_update)
    run_dir = tmp_path / "run"
    assert main(quick_args(run_dir)) == 1
    line = one_error_line(capsys)
    assert "update 2: weights trunk.0.weight became NaN or infinite" in line
    assert f"the last good checkpoint is {run_dir / 'checkpoints' / 'update_000001.pt'}" in line
    latest = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
    assert latest["counters"]["update"] == 1
    assert all(torch.isfinite(value).all() for value in latest["model_state"].values())
    assert not (run_dir / "checkpoints" / "update_000002.pt").exists()
    assert not (run_dir / "final_agent.pt").exists()


# ----------------------------------------------------------------------------- item 6: new run into a used directory
def test_new_run_into_its_own_config_directory_is_refused_and_the_config_kept(tmp_path, capsys):
    experiment = tmp_path / "exp"
    experiment.mkdir()
    config = experiment / "config.yaml"
    config.write_text(SMOKE.read_text(encoding="utf-8"), encoding="utf-8")
    before = snapshot(experiment)
    assert main(["--config", str(config), "--run-dir", str(experiment)]) == 2
    line = one_error_line(capsys)
    assert f"{experiment} already holds a run or other files (config.yaml)" in line
    assert snapshot(experiment) == before


def test_new_run_into_a_finished_run_points_to_resume(run_copy, capsys):
    before = snapshot(run_copy)
    assert main(quick_args(run_copy)) == 2
    assert f"continue it with --resume {run_copy}" in one_error_line(capsys)
    assert snapshot(run_copy) == before


# ----------------------------------------------------------------------------- item 8: environment faults
def test_run_dir_naming_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("keep me\n")
    assert main(quick_args(target)) == 2
    assert one_error_line(capsys).endswith(f"--run-dir {target} is a file, not a directory")
    assert target.read_text() == "keep me\n"


def refuse_writes_in(monkeypatch, directory: Path) -> None:
    """Make ``directory`` read-only for the write probe (chmod does not stop root, who runs the CI)."""
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if Path(kwargs.get("dir", "")) == directory:
            raise PermissionError(13, "Permission denied", str(directory))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_read_only_run_directory_is_one_line_before_training(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if os.geteuid() != 0:
        run_dir.chmod(0o500)
    else:
        refuse_writes_in(monkeypatch, run_dir)
    try:
        assert main(quick_args(run_dir)) == 2
    finally:
        run_dir.chmod(0o700)
    assert one_error_line(capsys).endswith(f"cannot write in {run_dir}: Permission denied")
    assert list(run_dir.iterdir()) == []


def test_read_only_checkpoints_directory_is_one_line_and_nothing_changes(run_copy, capsys, monkeypatch):
    checkpoints = run_copy / "checkpoints"
    refuse_writes_in(monkeypatch, checkpoints)
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    assert one_error_line(capsys).endswith(f"cannot write in {checkpoints}: Permission denied")
    assert snapshot(run_copy) == before


def test_full_disk_stops_with_one_line_naming_the_file(tmp_path):
    # RLIMIT_FSIZE makes every write past 8 KB fail with EFBIG, as a full disk fails with ENOSPC.
    run_dir = tmp_path / "run"
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))\n"
        "from training.cli import main\n"
        f"sys.exit(main({quick_args(run_dir)!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPOSITORY, capture_output=True, text=True, timeout=300, check=False
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"kahuna-train: error: cannot write {run_dir / 'checkpoints'}/update_000001.pt: ")
    # The first checkpoint failed: no message may claim earlier ones; the way on is a restart.
    assert lines[0].endswith(
        f"File too large; no checkpoint was written yet: --resume {run_dir} starts it again from update 0 "
        "(same config and seed)"
    )
    assert not list((run_dir / "checkpoints").glob("*.tmp"))


# ----------------------------------------------------------------------------- item 9: the run directory lock
def test_second_process_on_a_locked_run_says_who_holds_it(run_copy, capsys):
    before = snapshot(run_copy)
    with RunLock(run_copy):
        holder = (run_copy / ".lock").read_text()
        assert holder.startswith(f"pid {os.getpid()} on ")
        assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
        line = one_error_line(capsys)
    assert f"{run_copy} is in use by another training process ({holder.strip()})" in line
    assert snapshot(run_copy) == before


def test_lock_held_by_another_process_is_released_when_it_ends(tmp_path):
    script = (
        "import sys, time\nfrom training.ppo.rundir import RunLock\n"
        f"lock = RunLock({str(tmp_path)!r}); lock.acquire(); print('held', flush=True); sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPOSITORY, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match=rf"in use by another training process \(pid {holder.pid} on "):
            RunLock(tmp_path).acquire()
    finally:
        holder.communicate("\n", timeout=120)  # generous: the holder exits at once, on a busy machine too
    with RunLock(tmp_path):  # free again once the holder is gone
        pass


# ----------------------------------------------------------------------------- item 10: smaller tracebacks
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("seed=99999999999999999999999", r"seed: must be in \[0, 9223372036854775807\]"),
        ("eval.seed=-1", r"eval\.seed: must be in \[0, 9223372036854775807\]"),
        ("pool.latest=.inf", r"pool\.latest: must be a finite number, got inf"),
        ("name=a/b", r"name: must be a non-empty printable name"),
        ("name=..", r"name: must be a non-empty printable name"),
        ("threads=0", r"threads: must be an integer in \[1, 256\] or 'auto'"),
        # Issue 34, item 5: budgets and sizes without an upper bound were accepted and hung the run.
        ("pool.mcts_simulations=99999999999999999999999", r"pool\.mcts_simulations: must be in \[1, 100000\]"),
        ("eval.opponents=[mcts:99999999999999999999999]", r"eval\.opponents: entries must be .* 1 <= N <= 100000"),
        ("eval.opponents=[mcts:1" + "0" * 5000 + "]", r"eval\.opponents: entries must be"),
        ("rollout.num_games=10000000", r"rollout\.num_games: must be in \[2, 1000000\]"),
        ("total_updates=100000000000", r"total_updates: must be in \[1, 10000000\]"),
        ("threads=100000", r"threads: must be an integer in \[1, 256\]"),
        ("max_minutes=1e12", r"max_minutes: must be in \(0, 5256000\] or null"),
        ("eval.games=10000000", r"eval\.games: must be in \[2, 1000000\]"),
        ("eval.final_games=10000000", r"eval\.final_games: must be in \[0, 1000000\]"),
        ("ppo.update_epochs=1000000", r"ppo\.update_epochs: must be in \[1, 10000\]"),
        ("ppo.minibatch_size=1000000000000", r"ppo\.minibatch_size: must be in \[1, 100000000\]"),
        ("pool.max_snapshots=1000000", r"pool\.max_snapshots: must be in \[1, 10000\]"),
        ("pool.snapshots_per_update=1000000", r"pool\.snapshots_per_update: must be in \[1, 10000\] or null"),
        ("model.hidden_sizes=[100000]", r"model\.hidden_sizes must be a non-empty list of integers in \[1, 8192\]"),
        ("model.line_width=1000000000000", r"model\.line_width must be an integer in \[2, 8192\]"),
        ("model.hidden_sizes={0: x, 2: y}", r"model\.hidden_sizes: expected a list of int"),
        ("eval.opponents={0: x, 2: y}", r"eval\.opponents: expected a list of str"),
    ],
)
def test_bad_values_are_rejected_with_bounds(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_rollout_workers_are_bounded_even_with_many_games():
    with pytest.raises(ConfigError, match=r"rollout\.workers: must be <= 256, got 1000"):
        load_config(None, ["rollout.num_games=10000", "rollout.workers=1000"])


def test_an_unbounded_search_budget_is_one_line_before_training(tmp_path, capsys):
    # The command: accepted, then the run hung in its first mcts game.
    run_dir = tmp_path / "run"
    args = quick_args(run_dir, "pool.mcts=0.2", "pool.mcts_simulations=99999999999999999999999")
    assert main(args) == 2
    assert "pool.mcts_simulations: must be in [1, 100000], got 99999999999999999999999" in one_error_line(capsys)
    assert not run_dir.exists()


def test_nul_in_the_run_name_is_rejected(tmp_path):
    config = tmp_path / "nul.yaml"
    config.write_text('name: "run\\0x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="name: must be a non-empty printable name"):
        load_config(config)


def test_non_utf8_config_error_names_the_file(tmp_path, capsys):
    config = tmp_path / "latin1.yaml"
    config.write_bytes("name: caf\xe9\n".encode("latin-1"))
    assert main(["--config", str(config), "--run-dir", str(tmp_path / "run")]) == 2
    assert one_error_line(capsys).endswith(f"{config}: not a UTF-8 text file (byte 9: invalid continuation byte)")


def damage(run_dir: Path, key: str, value) -> None:
    """Replace ``key`` of the run's latest.pt with ``value``."""
    path = run_dir / "checkpoints" / "latest.pt"
    payload = torch.load(path, weights_only=True)
    payload[key] = value
    torch.save(payload, path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("counters", {"update": "two"}, "counters['update'] must be an integer in [0, 10,000,000], got 'two'"),
        ("counters", [1, 2], "counters must be a mapping, got list"),
        ("optimizer_state", {"lr": 1}, "optimizer_state must be an optimizer state_dict"),
        ("optimizer_state", "damaged", "optimizer_state must be an optimizer state_dict"),
        ("schedule", {"updates": "many"}, "schedule['updates'] must be an integer >= 1, got 'many'"),
        ("schedule", [400], "schedule must be a mapping, got list"),
    ],
)
def test_resume_with_damaged_counters_or_optimizer_state_is_one_line(run_copy, capsys, key, value, message):
    damage_every_checkpoint(run_copy, key, value)
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    assert message in one_error_line(capsys)
    assert snapshot(run_copy) == before


def damage_every_checkpoint(run_dir: Path, key: str, value) -> None:
    """:func:`damage` latest.pt, copy it over update_000002.pt, remove update_000001.pt: nothing to fall back on."""
    damage(run_dir, key, value)
    shutil.copy(run_dir / "checkpoints" / "latest.pt", run_dir / "checkpoints" / "update_000002.pt")
    (run_dir / "checkpoints" / "update_000001.pt").unlink()


@pytest.mark.parametrize(
    ("counter", "value", "bound"),
    [
        ("update", 10**30, "counters['update'] must be an integer in [0, 10,000,000], got 10000000"),
        ("global_step", 2**60, "counters['global_step'] must be an integer in [0, 9,007,199,254,740,992], got 1152"),
        ("train_seconds", 1e300, "counters['train_seconds'] must be a number in [0, 3,153,600,000], got 1e+300"),
    ],
)
def test_counters_out_of_bounds_are_refused_and_nothing_to_do_writes_nothing(run_copy, capsys, counter, value, bound):
    counters = torch.load(run_copy / "checkpoints" / "latest.pt", weights_only=True)["counters"]
    damage_every_checkpoint(run_copy, "counters", {**counters, counter: value})
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy)]) == 2  # total_updates 2: "nothing to do" would export final_agent.pt
    line = one_error_line(capsys)
    assert line.startswith(f"kahuna-train: error: {run_copy / 'checkpoints' / 'latest.pt'} is a damaged training ")
    assert bound in line
    assert snapshot(run_copy) == before


def _pool_entry(run_dir: Path, **changes) -> dict:
    """A pool entry of the run's latest.pt (its first snapshot) with ``changes``."""
    payload = torch.load(run_dir / "checkpoints" / "latest.pt", weights_only=True)
    return {**payload["pool"][0], **changes}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # Issue 34, item 7: [1] was a TypeError traceback on --resume, 'abc' a line without the file's name,
        # NaN and negative counts were accepted and skewed the PFSP draw.
        ({"pfsp_score": [1]}, "pool[0]: pfsp_score must be a number, got list"),
        ({"pfsp_score": "abc"}, "pool[0]: pfsp_score must be a number, got str"),
        ({"pfsp_games": float("nan")}, "pool[0]: pfsp_games must be a finite number >= 0, got nan"),
        ({"pfsp_score": -1.0}, "pool[0]: pfsp_score must be a finite number >= 0, got -1.0"),
        ({"pfsp_score": 5.0, "pfsp_games": 2.0}, "pool[0]: pfsp_score 5.0 exceeds pfsp_games 2.0"),
        ({"update": -3}, "pool[0]: update must be an integer >= 0"),
    ],
)
def test_resume_with_damaged_pool_counts_is_one_line_naming_the_file(run_copy, capsys, changes, message):
    damage(run_copy, "pool", [_pool_entry(run_copy, **changes)])
    for numbered in (run_copy / "checkpoints").glob("update_*.pt"):
        shutil.copy(run_copy / "checkpoints" / "latest.pt", numbered)
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    line = one_error_line(capsys)
    assert message in line and str(run_copy / "checkpoints" / "latest.pt") in line, line
    assert snapshot(run_copy) == before


def test_resume_with_a_pool_larger_than_max_snapshots_is_one_line(run_copy, capsys):
    # The smoke config keeps at most 2 snapshots.
    damage(run_copy, "pool", [_pool_entry(run_copy, update=update) for update in range(3)])
    for numbered in (run_copy / "checkpoints").glob("update_*.pt"):
        shutil.copy(run_copy / "checkpoints" / "latest.pt", numbered)
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    line = one_error_line(capsys)
    assert "the pool holds 3 snapshots, more than its config's pool.max_snapshots 2" in line
    assert str(run_copy / "checkpoints" / "latest.pt") in line
    assert snapshot(run_copy) == before


def test_resume_lowering_max_snapshots_below_the_pool_is_one_line(run_copy, capsys):
    before = snapshot(run_copy)
    assert len(torch.load(run_copy / "checkpoints" / "latest.pt", weights_only=True)["pool"]) == 2
    assert main(["--resume", str(run_copy), "--set", "total_updates=3", "--set", "pool.max_snapshots=1"]) == 2
    line = one_error_line(capsys)
    assert "the pool holds 2 snapshots, more than pool.max_snapshots 1" in line and "latest.pt" in line
    assert snapshot(run_copy) == before


def test_resume_with_optimizer_moments_of_the_wrong_shape_is_one_line(run_copy, capsys):
    state = load_checkpoint(run_copy / "checkpoints" / "latest.pt")["optimizer_state"]
    state["state"][0]["exp_avg"] = torch.zeros(3)
    damage(run_copy, "optimizer_state", state)
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    assert "optimizer_state: exp_avg has shape (3,), not (32, 246)" in one_error_line(capsys)
    assert snapshot(run_copy) == before


def test_resume_without_latest_uses_the_newest_complete_checkpoint(run_copy, capsys):
    checkpoints = run_copy / "checkpoints"
    (checkpoints / "latest.pt").unlink()
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 0
    out = capsys.readouterr().out
    assert "latest.pt does not exist; resuming from update_000002.pt, the newest complete checkpoint" in out
    assert load_checkpoint(checkpoints / "latest.pt")["counters"]["update"] == 3


def test_resume_past_a_truncated_latest_uses_the_newest_complete_checkpoint(run_copy, capsys):
    latest = run_copy / "checkpoints" / "latest.pt"
    latest.write_bytes(latest.read_bytes()[:1000])
    (run_copy / "checkpoints" / "update_000002.pt").unlink()
    assert main(["--resume", str(run_copy)]) == 0
    assert "resuming from update_000001.pt, the newest complete checkpoint" in capsys.readouterr().out
    assert load_checkpoint(latest)["counters"]["update"] == 2


# ----------------------------------------------------------------------------- item 11: cores actually available
def fake_cgroup(tmp_path: Path, v2: str | None = None, v1: tuple[int, int] | None = None) -> Path:
    if v2 is not None:
        (tmp_path / "cpu.max").write_text(v2 + "\n")
    if v1 is not None:
        (tmp_path / "cpu").mkdir()
        (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(f"{v1[0]}\n")
        (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(f"{v1[1]}\n")
    return tmp_path


def test_cgroup_v2_quota_caps_the_available_cores(tmp_path):
    root = fake_cgroup(tmp_path, v2="50000 100000")
    assert cgroup_cpu_limit(root) == 0.5
    assert available_cores(root) == 1
    assert update_threads("auto", root) == 1


def test_cgroup_v1_quota_is_read_when_there_is_no_v2(tmp_path):
    root = fake_cgroup(tmp_path, v1=(100000, 100000))
    assert cgroup_cpu_limit(root) == 1.0 and available_cores(root) == 1


def test_without_a_quota_auto_uses_the_affinity_mask(tmp_path):
    root = fake_cgroup(tmp_path, v2="max 100000", v1=(-1, 100000))
    assert cgroup_cpu_limit(root) is None
    assert available_cores(root) == len(os.sched_getaffinity(0))
    assert update_threads(3, root) == 3


def test_auto_threads_follow_the_affinity_mask_of_the_process():
    script = (
        "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "from training.ppo.cpus import update_threads; print(update_threads('auto'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPOSITORY, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "1"


def test_oversubscription_is_reported():
    assert oversubscription_warning(threads=2, workers=0, cores=2) is None
    warning = oversubscription_warning(threads=2, workers=1, cores=1)
    assert "only 1 core(s)" in warning and "threads=2" in warning and "rollout.workers=1" in warning


@pytest.fixture
def cpu_bfloat16(monkeypatch):
    """Set whether the CPU "has" native bfloat16: ``cpu_bfloat16(True)``; the probe's cache is cleared."""

    def fake(native: bool) -> None:
        cpus.native_bfloat16.cache_clear()
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)

    yield fake
    cpus.native_bfloat16.cache_clear()


@pytest.mark.parametrize("native", [True, False])
def test_bf16_auto_follows_the_cpu_and_true_on_an_emulating_cpu_is_a_warning(cpu_bfloat16, native):
    cpu_bfloat16(native)
    assert cpus.use_bf16("auto") is native and cpus.use_bf16(True) is True and cpus.use_bf16(False) is False
    assert cpus.bf16_message("auto") == f"ppo.bf16: auto -> {str(native).lower()} (" + (
        "native bfloat16)" if native else "no native bfloat16 on this CPU)"
    )
    warning = cpus.bf16_message(True)
    assert (warning is None) if native else warning.startswith("warning: ppo.bf16 is true but this CPU has no native")
    assert cpus.bf16_message(False) is None


def test_the_trainer_logs_what_bf16_auto_chose(tmp_path, capsys, cpu_bfloat16):
    cpu_bfloat16(False)
    assert main(quick_args(tmp_path / "run", "total_updates=1", "ppo.bf16=auto")) == 0
    assert "ppo.bf16: auto -> false (no native bfloat16 on this CPU)" in capsys.readouterr().out


def test_resume_with_a_damaged_metrics_file_is_one_line_and_changes_nothing(run_copy, capsys):
    metrics = run_copy / "metrics.jsonl"
    metrics.write_text(metrics.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    assert f"{metrics}: line 3 is not a metrics record (Expecting property name" in one_error_line(capsys)
    assert snapshot(run_copy) == before


# ----------------------------------------------------------------------------- issue 66, item 7: a torn metrics tail
@pytest.mark.parametrize(
    ("tail", "line"),
    [(b'{"update": 3, "global_step": 1', 3), (b"\0" * 4096, 3), (b'{"update": 3, "glo\0\0\0\0', 3), (b"\n\0\0\0", 4)],
    ids=["half_a_line", "nul_bytes", "half_a_line_then_nul_bytes", "nul_bytes_after_a_blank_line"],
)
def test_resume_drops_a_torn_metrics_tail_after_the_checkpoints_record_and_says_so(run_copy, capsys, tail, line):
    metrics = run_copy / "metrics.jsonl"
    complete = metrics.read_bytes()
    metrics.write_bytes(complete + tail)
    assert main(["--resume", str(run_copy)]) == 0  # nothing to do after update 2: the metrics are rewritten
    notes = [text for text in capsys.readouterr().out.splitlines() if "torn end" in text]
    torn_bytes = len(tail.lstrip(b"\n"))  # from the first byte that is not a record's own newline
    assert notes == [
        f"kahuna-train: {metrics}: dropped its torn end from line {line} ({torn_bytes:,} bytes after update 2's "
        "record, left by a crash in the middle of a write)"
    ]
    assert metrics.read_bytes() == complete


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda complete: random.Random(0).randbytes(4096), "line 1 is not a metrics record (not UTF-8 text)"),
        (lambda complete: b"\xff" * 64, "line 1 is not a metrics record (an unfinished line before update 2's)"),
        (
            lambda complete: complete.splitlines(keepends=True)[0] + b'{"update": 2, "glo',
            "line 2 is not a metrics record (an unfinished line before update 2's)",
        ),
    ],
    ids=["random_bytes", "one_line_of_garbage", "torn_before_the_checkpoints_record"],
)
def test_a_metrics_file_that_is_not_just_torn_is_one_line_naming_the_file(run_copy, capsys, content, message):
    metrics = run_copy / "metrics.jsonl"
    metrics.write_bytes(content(metrics.read_bytes()))
    before = snapshot(run_copy)
    assert main(["--resume", str(run_copy), "--set", "total_updates=3"]) == 2
    assert one_error_line(capsys).startswith(f"kahuna-train: error: {metrics}: {message}")
    assert snapshot(run_copy) == before


# ----------------------------------------------------------------------------- issue 66, item 2: stopped early
def interrupt_update(monkeypatch, number: int) -> None:
    """Make the ``number``-th PPO update raise ``KeyboardInterrupt`` (as Ctrl-C would, there)."""
    import training.ppo.trainer

    real_update = training.ppo.trainer.ppo_update
    calls = []

    def update(*args, **kwargs):
        calls.append(None)
        if len(calls) == number:
            raise KeyboardInterrupt
        return real_update(*args, **kwargs)

    monkeypatch.setattr(training.ppo.trainer, "ppo_update", update)


@pytest.mark.parametrize(
    ("every", "how_to_go_on"),
    [
        (1, "continue later with --resume {run} (from its last checkpoint)"),
        (5, "no checkpoint was written yet: --resume {run} starts it again from update 0 (same config and seed)"),
    ],
    ids=["after_a_checkpoint", "before_the_first_checkpoint"],
)
def test_ctrl_c_says_how_the_run_goes_on_and_claims_no_checkpoint_it_lacks(
    tmp_path, capsys, monkeypatch, every, how_to_go_on
):
    interrupt_update(monkeypatch, 2)
    run_dir = tmp_path / "run"
    assert main(quick_args(run_dir, "total_updates=3", f"checkpoint.every={every}")) == 130
    assert capsys.readouterr().err.splitlines() == [f"kahuna-train: interrupted; {how_to_go_on.format(run=run_dir)}"]


def test_sigterm_before_the_first_checkpoint_is_ctrl_c_and_resume_starts_the_run_again(finished_run, tmp_path, capsys):
    from test_training_run import without_timing

    run_dir = tmp_path / "run"
    arguments = quick_args(run_dir, "total_updates=1000", "checkpoint.every=1000")
    script = f"import sys\nfrom training.cli import main\nsys.exit(main({arguments!r}))\n"
    process = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        metrics = run_dir / "metrics.jsonl"
        for _ in range(3000):  # a hang guard of 5 minutes: the first update takes a second or two
            if process.poll() is not None or (metrics.exists() and metrics.stat().st_size):
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert err.splitlines() == [
        f"kahuna-train: interrupted; no checkpoint was written yet: --resume {run_dir} starts it again from update 0 "
        "(same config and seed)"
    ]
    assert not list((run_dir / "checkpoints").iterdir())
    # --resume starts it again: with the finished run's length it is the finished run, update for update.
    assert main(["--resume", str(run_dir), "--set", "total_updates=2", "--set", "checkpoint.every=1"]) == 0
    restart = (
        f"kahuna-train: {run_dir} has no checkpoint yet: starting again from update 0 with its config.yaml (seed 7)"
    )
    assert restart in capsys.readouterr().out.splitlines()
    records = [
        [without_timing(record) for record in read_metrics(run / "metrics.jsonl")] for run in (run_dir, finished_run)
    ]
    assert records[0] == records[1]
    weights = [load_checkpoint(run / "checkpoints" / "latest.pt")["model_state"] for run in (run_dir, finished_run)]
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[1])


def test_a_run_stopped_during_its_warm_up_starts_again_on_resume(tmp_path, capsys, monkeypatch):
    # The warm-up (a first run's compile, about 20 s) came before config.yaml: a Ctrl-C there
    # left a folder that --resume and --run-dir both refused, to be deleted by hand.
    import training.ppo.trainer

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(training.ppo.trainer, "_warm_up", stopped)
        run_dir = tmp_path / "run"
        assert main(quick_args(run_dir)) == 130
    assert capsys.readouterr().err.splitlines() == [
        f"kahuna-train: interrupted; no checkpoint was written yet: --resume {run_dir} starts it again from update 0 "
        "(same config and seed)"
    ]
    assert main(["--resume", str(run_dir), "--set", "total_updates=1"]) == 0
    restart = f"kahuna-train: {run_dir} has no checkpoint yet: starting again from update 0 with its config.yaml"
    assert f"{restart} (seed 7)" in capsys.readouterr().out.splitlines()
    assert (run_dir / "checkpoints" / "latest.pt").is_file()


def test_resume_of_a_run_stopped_before_training_began_names_the_way_out(tmp_path, capsys):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)  # what the run directory check leaves
    assert main(["--resume", str(run_dir)]) == 2
    assert one_error_line(capsys) == (
        f"kahuna-train: error: no checkpoint to resume from: {run_dir} stopped before training began (no checkpoint, "
        f"no config.yaml); start it again with --config FILE --run-dir {run_dir}"
    )
    (run_dir / ".lock").touch()  # and the lock file it leaves: --run-dir takes the folder as empty
    assert main(quick_args(run_dir)) == 0
    assert (run_dir / "checkpoints" / "latest.pt").is_file()


def test_a_run_dir_with_anything_of_a_run_is_refused_by_a_new_run(tmp_path, capsys):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "update_000001.pt").write_bytes(b"x")
    assert main(quick_args(run_dir)) == 2
    assert one_error_line(capsys) == (
        f"kahuna-train: error: {run_dir} already holds a run or other files (checkpoints); "
        f"continue it with --resume {run_dir}, or pick another --run-dir"
    )


def test_a_failed_write_after_a_checkpoint_says_the_earlier_checkpoints_are_intact(tmp_path, capsys, monkeypatch):
    import training.ppo.trainer

    real_save = training.ppo.trainer.save_checkpoint
    saved = []

    def save(run_dir, payload, **options):
        if saved:
            raise OSError(errno.ENOSPC, f"cannot write {run_dir}/checkpoints/update_000002.pt: No space left on device")
        saved.append(real_save(run_dir, payload, **options))
        return saved[-1]

    monkeypatch.setattr(training.ppo.trainer, "save_checkpoint", save)
    run_dir = tmp_path / "run"
    assert main(quick_args(run_dir)) == 1
    assert one_error_line(capsys).endswith("No space left on device; earlier checkpoints are intact")
    assert saved == [run_dir / "checkpoints" / "update_000001.pt"]
