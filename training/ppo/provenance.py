"""Where a run started: the record of its ``init_from`` agent, written when the run begins.

A run started from an agent (``init_from: champion``) names it by a name that can
change meaning later: once the run's own agent is shipped as ``champion``, the name
holds the run's final network, not its start. So a fresh run with ``init_from``
writes ``init_from.json`` beside ``config.yaml`` before its first update: the name,
the start network's weights key (:func:`weights_key`), the start agent's provenance
and its whole training so far. ``kahuna-ship`` reads the record instead of the name,
so shipping the run again later gives the same provenance; ``--resume`` keeps it.

A run directory from before the record (no ``init_from.json``) is shipped from the
name as it resolves at shipping time, and refused in one line when that name now
holds the run's own final network.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

START_FILE = "init_from.json"
"""The run directory's record of the agent the run started from."""

MAX_RECORD_BYTES = 4 * 1024 * 1024
"""The largest ``init_from.json`` read (a real one holds a config and a few counters: a few KB)."""

START_KEYS = ("name", "run", "commit", "config", "training", "init_from")
"""The start agent's ``meta`` keys a shipped agent's ``init_from`` carries: its run's provenance."""

COUNTERS = ("learner_decisions", "train_seconds")
"""The whole-chain training counters a record keeps (and ``total_training`` sums)."""


def weights_key(model: torch.nn.Module) -> str:
    """``sha256:`` of a network's parameter names and bytes: the results store's key of a learner."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode("utf-8"))
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return f"sha256:{digest.hexdigest()}"


def whole_training(meta: Mapping[str, Any]) -> Any:
    """An agent's training over its whole chain: ``total_training`` when it started from another agent,
    else its own run's ``training``; ``{}`` when its ``meta`` has neither."""
    return meta.get("total_training") or meta.get("training") or {}


def start_record(name: str, model: torch.nn.Module, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The record of a start agent: its name, weights key, provenance and whole training (plain JSON)."""
    chain = whole_training(meta)
    counters = {key: chain.get(key, 0) if isinstance(chain, Mapping) else 0 for key in COUNTERS}
    record = {
        "agent": name,
        "weights": weights_key(model),
        "provenance": {key: meta[key] for key in START_KEYS if key in meta},
        "training": counters,
    }
    return json.loads(json.dumps(record, default=str))


def write_start_record(run_dir: Path, record: Mapping[str, Any]) -> None:
    """Write ``init_from.json`` (an ``OSError`` naming the file when the write fails)."""
    path = Path(run_dir) / START_FILE
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read_start_record(run_dir: Path, init_from: str) -> dict[str, Any] | None:
    """The run's ``init_from.json``, checked against the config's ``init_from``; ``None`` when there is none.

    A record larger than :data:`MAX_RECORD_BYTES`, not valid JSON, lacking a field, or naming another
    agent than ``init_from`` is a one-line ``ValueError``.
    """
    path = Path(run_dir) / START_FILE
    if not path.is_file():
        return None
    size = path.stat().st_size
    if size > MAX_RECORD_BYTES:
        limit = f"{MAX_RECORD_BYTES:,}"
        raise ValueError(f"{START_FILE} of the run is {size:,} bytes, more than a record may have ({limit})")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{START_FILE} of the run cannot be read: {type(error).__name__}") from None
    problem = _record_problem(record)
    if problem is not None:
        raise ValueError(f"{START_FILE} of the run is damaged: {problem}")
    if record["agent"] != init_from:
        raise ValueError(
            f"{START_FILE} says the run started from {record['agent']!r}, but config.yaml's init_from is {init_from!r}"
        )
    return record


def _record_problem(record: Any) -> str | None:
    """What is wrong with a parsed record, or ``None``."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if not isinstance(record.get("agent"), str) or not record["agent"]:
        return "agent must be a name"
    if not isinstance(record.get("weights"), str) or not record["weights"].startswith("sha256:"):
        return "weights must be a sha256: key"
    if not isinstance(record.get("provenance"), dict):
        return "provenance must be an object"
    training = record.get("training")
    if not isinstance(training, dict) or set(training) != set(COUNTERS):
        return f"training must hold exactly {', '.join(COUNTERS)}"
    for key in COUNTERS:
        value = training[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return f"training.{key} must be a number >= 0"
    return None
