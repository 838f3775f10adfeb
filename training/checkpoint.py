"""Training checkpoints: everything needed to resume a run exactly, in a file any agent loader can read.

A checkpoint is the agent file format of :mod:`training.model` (so
``training.load_agent(checkpoint)`` plays it) plus these keys, all plain
types and tensors (loaded with ``weights_only=True``):

=====================  =====================================================
key                    value
=====================  =====================================================
``checkpoint_format``  ``"kahuna-checkpoint-v1"``
``config``             the run's :class:`~training.config.TrainConfig` as a dict
``optimizer_state``    the Adam ``state_dict``
``counters``           ``dict``: ``update``, ``global_step`` (learner decisions), ``actions``, ``games``,
                       ``train_seconds``
``pool``               the opponent pool: ``[{"update": int, "model_state": state_dict}, ...]``
``rng``                ``dict``: ``torch`` (global CPU generator state, a uint8 tensor)
=====================  =====================================================

Every random choice of update ``u`` (game deals, sampling, minibatches) is
drawn from generators seeded by ``(seed, u)``, so the counters fix all
future randomness; the global torch state is stored only for completeness.
Files are written to a temporary name and renamed, so a crash never leaves a
half-written ``latest.pt``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from training.agent import read_policy_file
from training.model import ActorCritic, agent_payload

CHECKPOINT_FORMAT = "kahuna-checkpoint-v1"
LATEST = "latest.pt"


def checkpoint_dir(run_dir: str | Path) -> Path:
    """``<run_dir>/checkpoints``."""
    return Path(run_dir) / "checkpoints"


def checkpoint_name(update: int) -> str:
    """File name of the numbered checkpoint after ``update`` updates."""
    return f"update_{update:06d}.pt"


def _atomic_save(payload: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    torch.save(dict(payload), temporary)
    os.replace(temporary, path)


def build_checkpoint(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    config: Mapping[str, Any],
    counters: Mapping[str, int | float],
    pool_state: list[dict[str, Any]],
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The checkpoint dict (agent-format keys plus the training state)."""
    payload = agent_payload(model, meta)
    payload.update(
        checkpoint_format=CHECKPOINT_FORMAT,
        config=dict(config),
        optimizer_state=optimizer.state_dict(),
        counters=dict(counters),
        pool=pool_state,
        rng={"torch": torch.get_rng_state()},
    )
    return payload


def save_checkpoint(run_dir: str | Path, payload: Mapping[str, Any], keep_last: int = 0) -> Path:
    """Write ``update_NNNNNN.pt`` and ``latest.pt``; prune numbered checkpoints beyond ``keep_last`` (0: keep all)."""
    directory = checkpoint_dir(run_dir)
    path = directory / checkpoint_name(int(payload["counters"]["update"]))
    _atomic_save(payload, path)
    _atomic_save(payload, directory / LATEST)
    if keep_last:
        numbered = sorted(directory.glob("update_*.pt"))
        for old in numbered[:-keep_last]:
            old.unlink()
    return path


def export_agent(path: str | Path, model: ActorCritic, meta: Mapping[str, Any] | None = None) -> Path:
    """Write the agent file (network only) to ``path``."""
    file = Path(path)
    _atomic_save(agent_payload(model, meta), file)
    return file


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a training checkpoint safely: ``FileNotFoundError`` if missing, ``ValueError`` if anything is wrong."""
    payload = read_policy_file(path)
    if payload.get("checkpoint_format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{path} is not a training checkpoint (checkpoint_format {payload.get('checkpoint_format')!r}, "
            f"expected {CHECKPOINT_FORMAT!r}); an exported agent cannot be resumed"
        )
    for key in ("config", "optimizer_state", "counters", "pool", "model_state"):
        if key not in payload:
            raise ValueError(f"{path} is a damaged training checkpoint: missing {key!r}")
    return payload


def latest_checkpoint(run_dir: str | Path) -> Path:
    """``<run_dir>/checkpoints/latest.pt``; ``FileNotFoundError`` with a clear message when there is none."""
    run = Path(run_dir)
    if not run.is_dir():
        raise FileNotFoundError(f"run directory not found: {run}")
    path = checkpoint_dir(run) / LATEST
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint to resume from: {path} does not exist")
    return path
