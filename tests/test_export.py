"""``kahuna-export`` (training/tools/export.py), the scriptable network, examples/onnx_play.py, and the versions."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

torch = pytest.importorskip("torch")

import kahuna_env  # noqa: E402
from kahuna_env.cli import AGENT, file_kind  # noqa: E402
from kahuna_policy.agent import shipped_agent_source  # noqa: E402
from kahuna_policy.model import ActorCritic, ModelConfig  # noqa: E402
from training.tools import export as export_module  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text("utf-8")
BLOCK_TORCH = """\
import sys


class _BlockTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"{name} is blocked in this test")
        return None


sys.meta_path.insert(0, _BlockTorch())
"""


def needs_onnx() -> None:
    """Skip unless the ``export`` extra (onnx, onnxruntime) is installed."""
    for module in ("onnx", "onnxruntime"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f'{module} is not installed: it comes with the "export" extra (pip install -e ".[export]")')


# ---------------------------------------------------------------------------------------------- TorchScript
@pytest.mark.parametrize(
    "config",
    [ModelConfig(hidden_sizes=(16,), architecture="mlp"), ModelConfig(hidden_sizes=(32, 16), line_width=8)],
    ids=["mlp", "board"],
)
def test_torch_jit_script_of_the_network_gives_bit_identical_outputs(config: ModelConfig) -> None:
    torch.manual_seed(0)
    model = ActorCritic(config).eval()
    scripted = torch.jit.script(model)
    observation = torch.rand(6, 246, generator=torch.Generator().manual_seed(1))
    mask = torch.rand(6, 179, generator=torch.Generator().manual_seed(2)) > 0.5
    for rows in (slice(None), 0):  # a batch and a single observation
        expected, got = model(observation[rows], mask[rows]), scripted(observation[rows], mask[rows].to(torch.int8))
        assert torch.equal(expected[0], got[0]) and torch.equal(expected[1], got[1])


# ---------------------------------------------------------------------------------------------- kahuna-export
def test_torchscript_export_is_verified_and_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "champion.ts"
    assert export_module.main(["champion", "--format", "torchscript", "--out", str(out), "--samples", "16"]) == 0
    line = capsys.readouterr().out
    assert re.search(
        r"verified with torch.jit.load on 16 sampled observations: max abs difference logits 0, value 0", line
    )
    assert file_kind(out) is AGENT
    loaded = torch.jit.load(str(out))
    observations, masks = export_module.sample_inputs(4, seed=3)
    logits, values = loaded(torch.from_numpy(observations), torch.from_numpy(masks))
    assert logits.shape == (4, 179) and values.shape == (4,)
    assert bool((logits[torch.from_numpy(masks) == 0] == -1e9).all())


def test_onnx_export_is_verified_with_onnxruntime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    needs_onnx()
    out = tmp_path / "champion.onnx"
    assert export_module.main(["champion", "--format", "onnx", "--out", str(out), "--samples", "16"]) == 0
    line = capsys.readouterr().out
    found = re.search(
        r"verified with onnxruntime on 16 sampled observations: max abs difference logits (\S+), value (\S+);", line
    )
    assert found, line
    assert float(found.group(1)) <= 1e-3 and float(found.group(2).rstrip(";")) <= 1e-3
    assert file_kind(out) is AGENT  # recognised by its mark, the producer kahuna-export
    # Its own earlier file is replaced only with --force, as any existing file.
    with pytest.raises(SystemExit):
        export_module.main(["champion", "--format", "onnx", "--out", str(out), "--samples", "4"])
    assert "exists (an agent file); give another path, or --force" in capsys.readouterr().err
    assert export_module.main(["champion", "--format", "onnx", "--out", str(out), "--samples", "4", "--force"]) == 0


def test_an_existing_file_is_kept_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "notes.ts"
    out.write_text("my notes")
    with pytest.raises(SystemExit) as exit_info:
        export_module.main(["champion", "--format", "torchscript", "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"--out {out} exists; give another path, or --force to replace it" in error
    assert out.read_text() == "my notes"
    assert (
        export_module.main(["champion", "--format", "torchscript", "--out", str(out), "--samples", "4", "--force"]) == 0
    )
    assert file_kind(out) is AGENT


def test_the_output_is_never_the_agent_it_exports_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 76: `kahuna-export ./agent.pt --format torchscript --out agent.pt --force` replaced its own input.
    agent = tmp_path / "agent.pt"
    agent.write_bytes(shipped_agent_source("champion").read_bytes())
    before = agent.read_bytes()
    for name in (str(agent), "champion"):
        target = agent if name != "champion" else shipped_agent_source("champion")
        with pytest.raises(SystemExit) as exit_info:
            export_module.main([name, "--format", "torchscript", "--out", str(target), "--force"])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"--out {target} is one of the inputs" in error
    assert agent.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such-agent", "--format", "torchscript"], "no agent 'no-such-agent'"),
        (["champion", "--format", "tflite"], "invalid choice: 'tflite'"),
        (["champion", "--format", "torchscript", "--samples", "0"], "expected a positive integer"),
        (["champion", "--format", "torchscript", "--tolerance", "nan"], "--tolerance must be a finite number"),
    ],
)
def test_bad_arguments_are_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "out.bin"
    with pytest.raises(SystemExit) as exit_info:
        export_module.main([*argv, "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("kahuna-export: error: ") and error.count("\n") == 1 and message in error
    assert not out.exists()


def test_onnx_without_the_export_extra_says_which_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "_importable", lambda module: module != "onnxruntime")
    with pytest.raises(SystemExit):
        export_module.main(["champion", "--format", "onnx", "--out", str(tmp_path / "a.onnx")])
    assert 'needs onnxruntime: pip install "kahuna-rl[export]"' in capsys.readouterr().err
    assert not (tmp_path / "a.onnx").exists()


def test_a_verification_failure_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = export_module._run_torchscript

    def off_by_one(data, observations, masks):
        logits, values = real(data, observations, masks)
        return logits, values + 1.0

    monkeypatch.setattr(export_module, "_run_torchscript", off_by_one)
    with pytest.raises(RuntimeError, match=r"differs from torch .* value 1 .*nothing written"):
        export_module.export("champion", "torchscript", tmp_path / "a.ts", samples=4)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- onnx_play without torch
def test_the_onnx_example_plays_a_game_without_torch(tmp_path: Path) -> None:
    needs_onnx()
    model = tmp_path / "champion.onnx"
    export_module.export("champion", "onnx", model, samples=4)
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_TORCH)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    check = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, env=environment, timeout=120
    )
    assert check.returncode != 0 and "blocked in this test" in check.stderr  # the blocker works
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "onnx_play.py"), str(model), "--games", "2", "--opponent", "random"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"the onnx agent won [0-2] of 2 games vs random", result.stdout), result.stdout
    assert "game 1: onnx agent as player_1" in result.stdout


# ---------------------------------------------------------------------------------------------- versions
def test_every_package_has_the_version_of_pyproject() -> None:
    version = re.search(r'^version\s*=\s*"([^"]+)"', PYPROJECT, re.M).group(1)
    for package in ("kahuna_env", "kahuna_policy", "training", "kahuna_arena", "kahuna_web"):
        assert importlib.import_module(package).__version__ == version, package
    assert kahuna_env.__version__ == version


def test_every_console_script_answers_version(capsys: pytest.CaptureFixture[str]) -> None:
    declared = tomllib.loads(PYPROJECT)["project"]["scripts"]  # the console scripts, not other entry points
    scripts = {name: target.split(":") for name, target in declared.items()}
    assert {"kahuna-train", "kahuna-eval", "kahuna-export", "kahuna-serve"} <= set(scripts)
    for program, (module, function) in scripts.items():
        if program == "kahuna-rllib" and importlib.util.find_spec("ray") is None:
            continue
        main = getattr(importlib.import_module(module), function)
        try:
            status = main(["--version"])  # some mains return their status instead of exiting
        except SystemExit as stop:
            status = stop.code
        assert status == 0, program
        assert capsys.readouterr().out.strip() == f"{program} {kahuna_env.__version__}", program


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_exported_file_has_the_mode_the_umask_gives(tmp_path: Path, umask: int, mode: int) -> None:
    out = tmp_path / "champion.ts"
    previous = os.umask(umask)
    try:
        assert export_module.main(["champion", "--format", "torchscript", "--out", str(out), "--samples", "4"]) == 0
    finally:
        os.umask(previous)
    assert out.stat().st_mode & 0o777 == mode
