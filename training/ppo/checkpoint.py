"""Training checkpoints: everything needed to resume a run exactly, in a file any agent loader can read.

A checkpoint is the agent file format of :mod:`kahuna_policy.model` (so
``training.load_agent(checkpoint)`` plays it) plus these keys, all plain
types and tensors (loaded with ``weights_only=True``):

=====================  =====================================================
key                    value
=====================  =====================================================
``checkpoint_format``  ``"kahuna-checkpoint-v1"``
``config``             the run's :class:`~training.ppo.config.TrainConfig` as a dict
``optimizer_state``    the Adam ``state_dict``
``counters``           ``dict``: ``update``, ``global_step`` (learner decisions), ``actions``, ``games``,
                       ``train_seconds`` (each bounded: :data:`COUNTER_LIMITS`, :data:`MAX_TRAIN_SECONDS`)
``pool``               the opponent pool: ``[{"update": int, "model_state": state_dict, "pfsp_score":
                       float, "pfsp_games": float}, ...]`` (the PFSP counts: absent in older
                       checkpoints, read as 0; ``model_config`` too for a snapshot of another
                       architecture, e.g. the target of ``kahuna-exploit``)
``rng``                ``dict``: ``torch`` (global CPU generator state, a uint8 tensor)
``schedule``           the plan of a run with ``schedule.by: time`` once it is made
                       (:class:`training.ppo.schedule.Plan` as a dict); absent otherwise
=====================  =====================================================

Every random choice of update ``u`` (game deals, sampling, minibatches) is
drawn from generators seeded by ``(seed, u)``, so the counters fix all
future randomness; the global torch state is stored only for completeness.
Files are written to a temporary name and renamed, so a crash never leaves a
half-written ``latest.pt``; a write that fails (read-only directory, full
disk) is an ``OSError`` naming the file, and the previous files stay intact.
Resuming reads ``latest.pt``, or, when it is missing or unreadable, the newest
readable numbered checkpoint (:func:`find_resume_checkpoint` says which).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from kahuna_policy.agent import read_policy_file
from kahuna_policy.model import ActorCritic, agent_payload
from training.league.pool import pool_entry_problem
from training.ppo.config import MAX_UPDATES
from training.ppo.device import on_cpu
from training.ppo.rundir import CHECKPOINTS

CHECKPOINT_FORMAT = "kahuna-checkpoint-v1"
LATEST_CHECKPOINT = "latest.pt"
"""File name of the newest checkpoint of a run (a copy of the last ``update_NNNNNN.pt``)."""
COUNTER_KEYS = ("update", "global_step", "actions", "games")
"""Integer counters of a checkpoint (plus ``train_seconds``, a float)."""
COUNTER_LIMITS = {"update": MAX_UPDATES, "global_step": 2**53, "actions": 2**53, "games": 2**53}
"""Largest value of each counter a checkpoint may hold: no run has more updates than ``total_updates`` may
ask for, and the others stay exact in the float64 of the metrics (``global_step``) long past any real run."""
MAX_TRAIN_SECONDS = 100 * 365 * 24 * 3600.0
"""Largest ``train_seconds`` a checkpoint may hold (a century)."""


def checkpoint_dir(run_dir: str | Path) -> Path:
    """``<run_dir>/checkpoints``."""
    return Path(run_dir) / CHECKPOINTS


def checkpoint_name(update: int) -> str:
    """File name of the numbered checkpoint after ``update`` updates."""
    return f"update_{update:06d}.pt"


def _atomic_save(payload: Mapping[str, Any], path: Path) -> None:
    """Write ``payload`` to ``path`` through a temporary file; an ``OSError`` naming ``path`` if that fails."""
    # Serialised in memory first: torch reports a failed file write as a RuntimeError about its zip
    # internals, while a plain write says what happened (no space left, file too large, read-only).
    buffer = io.BytesIO()
    torch.save(dict(payload), buffer)
    temporary = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(buffer.getbuffer())
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise OSError(error.errno, f"cannot write {path}: {error.strerror or error}", str(path)) from None


def build_checkpoint(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    config: Mapping[str, Any],
    counters: Mapping[str, int | float],
    pool_state: list[dict[str, Any]],
    meta: Mapping[str, Any] | None = None,
    schedule: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The checkpoint dict (agent-format keys plus the training state; ``schedule``: a time-shaped run's plan)."""
    payload = agent_payload(model, meta)
    payload.update(
        checkpoint_format=CHECKPOINT_FORMAT,
        config=dict(config),
        optimizer_state=on_cpu(optimizer.state_dict()),  # resumable on any device (training.ppo.device)
        counters=dict(counters),
        pool=pool_state,
        rng={"torch": torch.get_rng_state()},
    )
    if schedule is not None:
        payload["schedule"] = dict(schedule)
    return payload


def save_checkpoint(run_dir: str | Path, payload: Mapping[str, Any], keep_last: int = 0) -> Path:
    """Write ``update_NNNNNN.pt`` and ``latest.pt``; prune numbered checkpoints beyond ``keep_last`` (0: keep all)."""
    directory = checkpoint_dir(run_dir)
    path = directory / checkpoint_name(int(payload["counters"]["update"]))
    _atomic_save(payload, path)
    _atomic_save(payload, directory / LATEST_CHECKPOINT)
    if keep_last:
        numbered = sorted(directory.glob("update_*.pt"))
        for old in numbered[:-keep_last]:
            try:
                old.unlink()
            except OSError as error:
                raise OSError(error.errno, f"cannot delete {old} (checkpoint.keep_last): {error.strerror}") from None
    return path


def export_agent(path: str | Path, model: ActorCritic, meta: Mapping[str, Any] | None = None) -> Path:
    """Write the agent file (network only) to ``path``."""
    file = Path(path)
    _atomic_save(agent_payload(model, meta), file)
    return file


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a training checkpoint safely: ``FileNotFoundError`` if missing, a one-line ``ValueError`` if damaged.

    Checks the keys, the counters, a time-shaped run's plan, the optimizer state's shape and the pool
    (at most its config's ``pool.max_snapshots`` entries, each with an update
    and finite, non-negative PFSP counts: :func:`pool_entry_problem`); the
    weights are checked against the config when they are loaded.
    """
    payload = read_policy_file(path)
    if payload.get("checkpoint_format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{path} is not a training checkpoint (checkpoint_format {payload.get('checkpoint_format')!r:.40}, "
            f"expected {CHECKPOINT_FORMAT!r}); an exported agent cannot be resumed"
        )
    for key in ("config", "optimizer_state", "counters", "pool", "model_state"):
        if key not in payload:
            raise ValueError(f"{path} is a damaged training checkpoint: missing {key!r}")
    problem = _counters_problem(payload["counters"]) or _state_problem(payload) or _schedule_problem(payload)
    if problem:
        raise ValueError(f"{path} is a damaged training checkpoint: {problem}")
    return payload


def _counters_problem(counters: Any) -> str | None:
    if not isinstance(counters, Mapping):
        return f"counters must be a mapping, got {type(counters).__name__}"
    for key in COUNTER_KEYS:
        value = counters.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= COUNTER_LIMITS[key]:
            return f"counters[{key!r}] must be an integer in [0, {COUNTER_LIMITS[key]:,}], got {value!r:.40}"
    seconds = counters.get("train_seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_TRAIN_SECONDS:
        return f"counters['train_seconds'] must be a number in [0, {MAX_TRAIN_SECONDS:,.0f}], got {seconds!r:.40}"
    return None


def _schedule_problem(payload: Mapping[str, Any]) -> str | None:
    """What is wrong with a time-shaped run's plan (``schedule``), None when it is absent or sound."""
    if "schedule" not in payload:
        return None
    from training.ppo.schedule import Plan

    try:
        Plan.from_dict(payload["schedule"])
    except ValueError as error:
        return str(error)
    return None


def _state_problem(payload: Mapping[str, Any]) -> str | None:
    optimizer = payload["optimizer_state"]
    if not isinstance(optimizer, Mapping) or not {"state", "param_groups"} <= set(optimizer):
        return "optimizer_state must be an optimizer state_dict (with 'state' and 'param_groups')"
    if not isinstance(payload["config"], Mapping):
        return f"config must be a mapping, got {type(payload['config']).__name__}"
    pool = payload["pool"]
    if not isinstance(pool, list) or not all(
        isinstance(entry, Mapping) and isinstance(entry.get("update"), int) and "model_state" in entry for entry in pool
    ):
        return "pool must be a list of {'update': int, 'model_state': state_dict}"
    pool_config = payload["config"].get("pool")
    capacity = pool_config.get("max_snapshots") if isinstance(pool_config, Mapping) else None
    if isinstance(capacity, int) and not isinstance(capacity, bool) and len(pool) > capacity:
        return f"the pool holds {len(pool)} snapshots, more than its config's pool.max_snapshots {capacity}"
    for index, entry in enumerate(pool):
        problem = pool_entry_problem(entry)
        if problem:
            return f"pool[{index}]: {problem}"
    return None


def has_checkpoint(run_dir: str | Path) -> bool:
    """Whether the run has written a checkpoint (``latest.pt`` or a numbered one, readable or not)."""
    directory = checkpoint_dir(run_dir)
    return (directory / LATEST_CHECKPOINT).exists() or any(directory.glob("update_*.pt"))


def find_resume_checkpoint(run_dir: str | Path) -> tuple[Path, dict[str, Any], str | None]:
    """The checkpoint a resume starts from: ``(path, payload, note)``.

    ``latest.pt`` when it is readable; otherwise the newest readable
    ``update_NNNNNN.pt``, with ``note`` saying why (None when ``latest.pt``
    is used).  ``FileNotFoundError`` when the run or every checkpoint is
    missing; the ``ValueError`` of ``latest.pt`` when nothing is readable.
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise FileNotFoundError(f"run directory not found: {run}" if not run.exists() else f"{run} is not a directory")
    directory = checkpoint_dir(run)
    latest = directory / LATEST_CHECKPOINT
    latest_problem = f"{latest} does not exist"
    if latest.is_file():
        try:
            return latest, load_checkpoint(latest), None
        except ValueError as error:
            latest_problem = str(error)
    numbered = sorted(directory.glob("update_*.pt"), reverse=True) if directory.is_dir() else []
    for candidate in numbered:
        try:
            payload = load_checkpoint(candidate)
        except (ValueError, OSError):
            continue
        return candidate, payload, f"{latest_problem}; resuming from {candidate.name}, the newest complete checkpoint"
    if latest.is_file():
        raise ValueError(latest_problem)
    raise FileNotFoundError(f"no checkpoint to resume from: {latest_problem} and no update_*.pt is readable")
