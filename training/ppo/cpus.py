"""How many cores this process may really use, and how many torch threads to give the update.

``threads: auto`` asks :func:`available_cores`: the CPUs of this process's
affinity mask (``taskset``, ``docker --cpuset-cpus``, Slurm), capped by the
cgroup CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``: ``docker --cpus``, Kubernetes limits), never the bare
``os.cpu_count()``, which counts cores that belong to other jobs.

Collection and the update never overlap: during collection this process and
each of the ``rollout.workers`` worker processes run one thread each; during
the update the workers wait and torch uses ``threads``.  So the update may use
every available core, and collection needs ``workers + 1`` of them.

``ppo.bf16: auto`` asks :func:`native_bfloat16`: bfloat16 autocast speeds the
update up only on CPUs that compute in bfloat16 natively; elsewhere torch
emulates it and the update runs several times slower than in float32.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import torch

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup_v2_quota(root: Path) -> float | None:
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def _cgroup_v1_quota(root: Path) -> float | None:
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """The cgroup CPU quota in cores (v2 ``cpu.max`` first, then v1), or None when there is none."""
    quota = _cgroup_v2_quota(root)
    return quota if quota is not None else _cgroup_v1_quota(root)


def available_cores(root: Path = CGROUP_ROOT) -> int:
    """Cores this process may use: its CPU affinity, capped by the cgroup quota (rounded up), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_limit(root)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def update_threads(threads: int | str, root: Path = CGROUP_ROOT) -> int:
    """torch threads for the update: ``threads`` itself, or for ``"auto"`` :func:`available_cores`."""
    return available_cores(root) if threads == "auto" else int(threads)


def oversubscription_warning(threads: int, workers: int, cores: int) -> str | None:
    """A one-line warning when the run asks for more busy threads than there are cores, else None."""
    problems = []
    if threads > cores:
        problems.append(f"threads={threads}")
    if workers + 1 > cores:
        problems.append(f"rollout.workers={workers} (collection runs {workers + 1} processes)")
    if not problems:
        return None
    return (
        f"only {cores} core(s) available to this process but {' and '.join(problems)}: the processes will "
        "compete for cores and run slower; see docs/TRAINING.md, 'Busy machines'"
    )


@functools.cache
def native_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX tiles), as torch reports it."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


def use_bf16(setting: bool | str) -> bool:
    """``ppo.bf16`` resolved: ``true`` / ``false`` as given, ``"auto"`` as :func:`native_bfloat16`."""
    return native_bfloat16() if setting == "auto" else bool(setting)


def bf16_message(setting: bool | str) -> str | None:
    """The line the trainer logs about ``ppo.bf16``: what ``auto`` chose, or a warning; None for false."""
    native = native_bfloat16()
    if setting == "auto":
        why = "native bfloat16" if native else "no native bfloat16 on this CPU"
        return f"ppo.bf16: auto -> {str(native).lower()} ({why})"
    if setting is True and not native:
        return (
            "warning: ppo.bf16 is true but this CPU has no native bfloat16 (AVX512-BF16 or AMX): the "
            "update will run several times slower than in float32; set ppo.bf16 to auto or false"
        )
    return None
