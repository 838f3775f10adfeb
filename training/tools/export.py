"""``kahuna-export``: an agent's network for deployment, as ONNX or TorchScript, verified before it is kept.

Usage::

    kahuna-export AGENT --format onnx --out champion.onnx
    kahuna-export AGENT --format torchscript --out champion.pt

``AGENT`` is a shipped agent's name (``champion``) or a policy file.  Both
formats take the same two inputs and give the same two outputs as the network
(:class:`kahuna_policy.model.ActorCritic`):

==================  ===================================  =============================================
name                shape, type                          what
==================  ===================================  =============================================
``observation``     ``(batch, 246)`` float32             the player's observation (``obs["observation"]``)
``action_mask``     ``(batch, 179)`` int8                nonzero where legal (``obs["action_mask"]``)
``logits``          ``(batch, 179)`` float32             the policy's logits, illegal ones at -1e9
``value``           ``(batch,)`` float32                 the value (expected result for the player)
==================  ===================================  =============================================

The greedy action is ``argmax(logits)``; sampling is a softmax over the logits.
Before the file is kept, the command runs it on observations sampled from
seeded random games (``--samples``) against the torch network and prints the
largest absolute differences: ONNX through onnxruntime (the ``export`` extra:
``pip install "kahuna-rl[export]"``), TorchScript through ``torch.jit.load``
(``torch.jit.script`` of the network; its outputs are bit-identical).  A
difference above ``--tolerance`` is an error and nothing is written.
``examples/onnx_play.py`` plays a game from the ONNX file with onnxruntime and
numpy alone.

The file is written to a temporary name and renamed.  ``--out`` follows the
rule of every tool (:func:`kahuna_env.cli.check_output_file`): never the
agent's own file (refused even with ``--force``), never a protected file of
another kind (a results store, a game record, a report), and an existing
file is replaced only with ``--force``.  Bad input is one line ``kahuna-export: error: ...``, exit code
2; a failed verification or write is exit code 1.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_env.cli import (
    AGENT,
    EXPORT_PRODUCER,
    OneLineParser,
    add_force_argument,
    check_output_file,
    exit_with_error,
    first_line,
    positive_int,
    write_bytes_atomic,
)
from kahuna_env.version import __version__

PROGRAM = "kahuna-export"
FORMATS: tuple[str, ...] = ("onnx", "torchscript")
"""Values of ``--format``."""
PRODUCER = EXPORT_PRODUCER
"""The mark this tool leaves in its files: the ONNX ``producer_name``, a TorchScript extra file's ``producer``."""
TORCHSCRIPT_EXTRA = "kahuna_export.json"
"""The extra file of a TorchScript export: the producer, the version and the agent's name."""
INPUT_NAMES = ("observation", "action_mask")
OUTPUT_NAMES = ("logits", "value")
ONNX_OPSET = 17


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = OneLineParser(
        prog=PROGRAM, description="Export an agent's network as ONNX or TorchScript, verified against torch."
    )
    parser.add_argument("agent", metavar="AGENT", help="a shipped agent's name (champion) or a policy file")
    parser.add_argument("--format", required=True, choices=FORMATS, help="onnx or torchscript")
    parser.add_argument("--out", required=True, type=Path, metavar="FILE", help="the file to write")
    add_force_argument(parser)
    parser.add_argument(
        "--samples", type=positive_int, default=256, help="sampled observations to verify on (default 256)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampled games (default 0)")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-3,
        help="largest absolute difference to torch allowed on legal logits and values (default 1e-3)",
    )
    return parser


# ---------------------------------------------------------------------------------------------- samples
def sample_inputs(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` observations (float32) and masks (int8) of the player to act in seeded random games.

    Each game's seed is drawn from a generator seeded with ``seed``, and the games are played by
    the scalar loop, :func:`kahuna_env.match.play`, with uniformly random legal actions (drawn from
    a second generator seeded with ``seed``).
    """
    from kahuna_env.engine import KahunaGame
    from kahuna_env.match import play
    from kahuna_env.observation import encode_observation

    deals = np.random.default_rng(seed)
    rng = np.random.default_rng(seed)
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []

    def sample(game: KahunaGame) -> int | None:
        """Record what the player to move sees, then play a random legal action; ``None`` once enough."""
        if len(observations) == count:
            return None
        mask = game.action_mask().astype(np.int8)
        observations.append(encode_observation(game, game.current_player))
        masks.append(mask)
        return int(rng.choice(np.flatnonzero(mask)))

    while len(observations) < count:
        play(KahunaGame(seed=int(deals.integers(2**63))), (sample, sample))
    return np.stack(observations), np.stack(masks)


def max_differences(
    expected: tuple[np.ndarray, np.ndarray], got: tuple[np.ndarray, np.ndarray], masks: np.ndarray
) -> tuple[float, float]:
    """Largest absolute differences of the legal logits and of the values (NaN counts as infinite)."""
    legal = masks.astype(bool)
    logits = np.abs(np.asarray(got[0], np.float64) - np.asarray(expected[0], np.float64))[legal]
    values = np.abs(np.asarray(got[1], np.float64) - np.asarray(expected[1], np.float64))
    worst = [float(np.nan_to_num(part, nan=np.inf).max(initial=0.0)) for part in (logits, values)]
    illegal_ok = np.array_equal(np.asarray(got[0])[~legal], np.asarray(expected[0])[~legal])
    return (worst[0] if illegal_ok else float("inf")), worst[1]


# ---------------------------------------------------------------------------------------------- writers
def _onnx_bytes(model: Any, observations: np.ndarray, masks: np.ndarray) -> bytes:
    import torch

    buffer = io.BytesIO()
    batch = {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation notice
        torch.onnx.export(
            model,
            (torch.from_numpy(observations[:2]), torch.from_numpy(masks[:2])),
            buffer,
            input_names=list(INPUT_NAMES),
            output_names=list(OUTPUT_NAMES),
            dynamic_axes={name: batch for name in (*INPUT_NAMES, *OUTPUT_NAMES)},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
    import onnx

    proto = onnx.load_from_string(buffer.getvalue())
    proto.producer_name = PRODUCER
    proto.producer_version = __version__
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def _run_onnx(data: bytes, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    logits, values = session.run(list(OUTPUT_NAMES), {"observation": observations, "action_mask": masks})
    return logits, values


def _torchscript_bytes(model: Any, name: str) -> bytes:
    import torch

    scripted = torch.jit.script(model)
    buffer = io.BytesIO()
    extra = json.dumps({"producer": PRODUCER, "version": __version__, "agent": name})
    torch.jit.save(scripted, buffer, _extra_files={TORCHSCRIPT_EXTRA: extra})
    return buffer.getvalue()


def _run_torchscript(data: bytes, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import torch

    loaded = torch.jit.load(io.BytesIO(data))
    with torch.no_grad():
        logits, values = loaded(torch.from_numpy(observations), torch.from_numpy(masks))
    return logits.numpy(), values.numpy()


def _require_export_extra() -> None:
    missing = [module for module in ("onnx", "onnxruntime") if not _importable(module)]
    if missing:
        raise ValueError(
            f'--format onnx needs {" and ".join(missing)}: pip install "kahuna-rl[export]" (the export extra)'
        )


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def export(
    agent: str,
    fmt: str,
    out: str | Path,
    *,
    force: bool = False,
    samples: int = 256,
    seed: int = 0,
    tolerance: float = 1e-3,
) -> dict[str, Any]:
    """Export ``agent``'s network to ``out`` in format ``fmt`` after verifying it; returns what was checked.

    ``ValueError`` (one line) for bad input, before anything is written; ``RuntimeError`` when the
    exported network differs from torch by more than ``tolerance`` (nothing is kept); ``OSError`` for
    a failed write.  In phases: check the arguments, load the agent, convert, verify, write.
    """
    path = Path(out)
    _check_arguments(fmt, tolerance, path, force, agent)
    model = _load_network(agent)
    observations, masks = sample_inputs(samples, seed)
    data, checker, expected, got = _convert_and_run(model, fmt, agent, observations, masks)
    logits_difference, value_difference = max_differences(expected, got, masks)
    if not (logits_difference <= tolerance and value_difference <= tolerance):
        raise RuntimeError(
            f"the exported network differs from torch on {samples} sampled observations: max abs difference "
            f"logits {logits_difference:.3g}, value {value_difference:.3g} (tolerance {tolerance:g}); nothing written"
        )
    _write_atomically(path, data)
    return {
        "path": path,
        "bytes": len(data),
        "checker": checker,
        "samples": samples,
        "logits": logits_difference,
        "value": value_difference,
        "same_greedy": float(np.mean(np.argmax(got[0], axis=1) == np.argmax(expected[0], axis=1))),
    }


def _check_arguments(fmt: str, tolerance: float, path: Path, force: bool, agent: str) -> None:
    """One-line ``ValueError`` for a bad format, tolerance or output, or a missing ``export`` extra."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {list(FORMATS)}, got {fmt!r}")
    if not np.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"--tolerance must be a finite number >= 0, got {tolerance!r}")
    from kahuna_policy.agent import agent_file

    check_output_file("--out", path, AGENT, inputs=[agent_file(agent)], force=force)
    if fmt == "onnx":
        _require_export_extra()


def _load_network(agent: str) -> Any:
    """The agent's network in evaluation mode; a one-line ``ValueError`` for an unreadable agent."""
    from kahuna_policy.agent import load_agent

    try:
        policy = load_agent(agent)
    except (OSError, ValueError) as error:
        raise ValueError(first_line(error)) from None
    return policy.model.eval()


def _convert_and_run(
    model: Any, fmt: str, agent: str, observations: np.ndarray, masks: np.ndarray
) -> tuple[bytes, str, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``(exported bytes, checker, torch's outputs, the exported network's outputs)`` on the samples."""
    import torch

    with torch.no_grad():
        expected = tuple(tensor.numpy() for tensor in model(torch.from_numpy(observations), torch.from_numpy(masks)))
    if fmt == "onnx":
        data = _onnx_bytes(model, observations, masks)
        return data, "onnxruntime", expected, _run_onnx(data, observations, masks)
    data = _torchscript_bytes(model, agent)
    return data, "torch.jit.load", expected, _run_torchscript(data, observations, masks)


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        write_bytes_atomic(path, data)
    except OSError as error:
        raise OSError(f"cannot write --out {path}: {first_line(error)}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kahuna-export``."""
    args = build_parser().parse_args(argv)
    try:
        result = export(
            args.agent,
            args.format,
            args.out,
            force=args.force,
            samples=args.samples,
            seed=args.seed,
            tolerance=args.tolerance,
        )
    except ValueError as error:
        exit_with_error(PROGRAM, str(error))
    except (RuntimeError, OSError) as error:
        exit_with_error(PROGRAM, str(error), code=1)
    print(
        f"{args.agent}: {args.format} written to {result['path']} ({result['bytes']:,} bytes); "
        f"verified with {result['checker']} on {result['samples']} sampled observations: max abs difference "
        f"logits {result['logits']:.2g}, value {result['value']:.2g}; same greedy action {result['same_greedy']:.1%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
