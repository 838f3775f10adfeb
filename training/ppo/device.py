"""Where the network runs: ``device: auto | cpu | cuda`` (the batched engine always plays on the CPU).

``auto`` is CUDA when torch sees a GPU, else the CPU.  On CUDA the update and the
learner's forward passes during collection run on the GPU: the rollout goes there
once per update through pinned memory, without blocking; each tick's observations
go there and the logits come back, so the sampling noise is drawn on the CPU from
the same generators as on a CPU run.  Float32 matrix products use TF32 on GPUs that
have it, and ``ppo.bf16: auto`` means bfloat16 autocast on GPUs with bfloat16.
The collection workers (``rollout.workers``), the snapshots and the evaluation's
baselines stay on the CPU.  Checkpoints and agent files hold CPU tensors, and are
read to the CPU first, so a run resumes on another device than the one that saved it.
"""

from __future__ import annotations

from typing import Any

import torch

DEVICES = ("auto", "cpu", "cuda")
"""The values of the ``device`` setting."""


def resolve_device(setting: str) -> torch.device:
    """The device ``setting`` names on this machine; a one-line ``ValueError`` for ``cuda`` without a GPU."""
    if setting not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {setting!r:.40}")
    if setting == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if setting == "cuda":
            raise ValueError(
                "device: cuda, but torch sees no CUDA GPU (a CPU-only build of torch, or no GPU visible to "
                "this process); set device to auto or cpu"
            )
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def prepare_device(device: torch.device) -> str:
    """Set the device's float32 matrix-product precision; returns the line the trainer logs about it."""
    if device.type != "cuda":
        return "device: cpu"
    torch.backends.cuda.matmul.allow_tf32 = True  # TF32 products on GPUs that have them (Ampere and later)
    torch.backends.cudnn.allow_tf32 = True
    return f"device: {device} ({torch.cuda.get_device_name(device)}); the batched engine plays on the CPU"


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``: itself when it is there; from the CPU to a GPU through pinned memory, not blocking."""
    if tensor.device == device:
        return tensor
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def on_cpu(value: Any) -> Any:
    """``value`` with every tensor in it (nested in dicts, lists, tuples) copied to the CPU where it is not there."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {key: on_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(on_cpu(item) for item in value)
    return value
