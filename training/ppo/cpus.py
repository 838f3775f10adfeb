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

import dataclasses
import functools
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def use_bf16(setting: bool | str, device: torch.device | None = None) -> bool:
    """``ppo.bf16`` resolved for ``device`` (default the CPU): ``true`` / ``false`` as given, ``"auto"`` where
    the device computes in bfloat16 natively (:func:`native_bfloat16` on the CPU; a GPU with bfloat16)."""
    if setting != "auto":
        return bool(setting)
    if device is not None and device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return native_bfloat16()


def bf16_message(setting: bool | str, device: torch.device | None = None) -> str | None:
    """The line the trainer logs about ``ppo.bf16``: what ``auto`` chose, or a warning; None for false."""
    if device is not None and device.type == "cuda":
        return f"ppo.bf16: {setting} -> {str(use_bf16(setting, device)).lower()} (on {device})"
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


# ------------------------------------------------------------------ the CPU a run actually gets
PROC = Path("/proc")


@dataclasses.dataclass(frozen=True)
class PhaseCpu:
    """What the CPU gave this process during one phase of an update (collection, or the update itself).

    Attributes:
        wall: the phase's wall seconds.
        cpu: CPU seconds of this process's threads (``time.process_time``).
        waited: seconds this process's threads were ready to run but waited for a CPU (Linux
            ``/proc/self/task/*/schedstat``); None where the system does not say.
        idle: idle seconds of the CPUs this process may run on (``/proc/stat``); None where unknown.
    """

    wall: float
    cpu: float
    waited: float | None
    idle: float | None

    def cores(self) -> float:
        """Cores this process used on average."""
        return self.cpu / self.wall if self.wall > 0 else 0.0

    def waiting(self) -> float | None:
        """Cores' worth of this process's threads that waited for a CPU on average (None: unknown)."""
        return None if self.waited is None or self.wall <= 0 else self.waited / self.wall

    def idle_cores(self) -> float | None:
        """Cores of this process's CPUs that sat idle on average (None: unknown)."""
        return None if self.idle is None or self.wall <= 0 else self.idle / self.wall


def _thread_wait_seconds(proc: Path = PROC) -> float | None:
    """Seconds all threads of this process have waited on a run queue (None where schedstat is unavailable)."""
    total = 0
    try:
        tasks = list((proc / "self" / "task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
            total += int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that just ended
    return total / 1e9 if tasks else None


def _idle_seconds(cpus: set[int], proc: Path = PROC) -> float | None:
    """Idle seconds (idle + iowait) of ``cpus`` since boot, from ``/proc/stat``; None where unreadable."""
    try:
        lines = (proc / "stat").read_text().splitlines()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total, seen = 0, 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit() or int(name[3:]) not in cpus:
            continue
        values = rest.split()
        if len(values) < 5:
            return None
        total += int(values[3]) + int(values[4])
        seen += 1
    return total / ticks if seen else None


class CpuWatch:
    """Measures the CPU this process gets per phase: :meth:`start`, then :meth:`stop` returns a :class:`PhaseCpu`.

    ``clock``, ``cpu_clock``, ``waited`` and ``idle`` read the wall clock, the process's CPU time,
    its threads' run-queue wait and its CPUs' idle time (the defaults read the system; tests inject
    their own).
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.process_time,
        waited: Callable[[], float | None] = _thread_wait_seconds,
        idle: Callable[[], float | None] | None = None,
    ) -> None:
        if idle is None:
            try:
                cpus = set(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                cpus = set(range(os.cpu_count() or 1))
            idle = functools.partial(_idle_seconds, cpus)
        self._readers = (clock, cpu_clock, waited, idle)
        self._start: tuple[float | None, ...] = (0.0, 0.0, None, None)

    def _read(self) -> tuple[float | None, ...]:
        return tuple(reader() for reader in self._readers)

    def start(self) -> None:
        """Begin a phase."""
        self._start = self._read()

    def stop(self) -> PhaseCpu:
        """End the phase begun by :meth:`start`; what it got."""
        end = self._read()
        spans = [None if a is None or b is None else max(0.0, b - a) for a, b in zip(self._start, end, strict=True)]
        return PhaseCpu(wall=spans[0] or 0.0, cpu=spans[1] or 0.0, waited=spans[2], idle=spans[3])


CONTENDED_WAITING = 0.3
"""Cores' worth of run-queue wait during a phase (threads ready to run, no CPU free) that means other work."""
CONTENDED_SHARE = 0.65
"""Without run-queue figures: a phase whose threads got less than this share of a core each means other work."""
FREE_IDLE = 0.6
"""Idle cores (of this process's CPUs) during the update, on fewer threads, that mean the cores are free again."""


class ContentionGuard:
    """Runs the update's shards on fewer threads while other work takes the cores, and on all of them after.

    :meth:`observe` takes each update's two phases (:class:`PhaseCpu`): a phase whose threads
    waited for a CPU (:data:`CONTENDED_WAITING`), or got too little of one (:data:`CONTENDED_SHARE`)
    where the wait is unknown, means other work; the shards then run on as many threads as cores
    the update got (``shards.concurrency``; the results do not change) and one warning line is
    returned.  While on fewer threads, an update during which :data:`FREE_IDLE` cores sat idle means
    the cores are free again (where idle time is unknown, the guard tries all threads again after a
    while); after a relapse it waits twice as long before trying again.
    """

    def __init__(self, shards: Any, patience: int = 2) -> None:
        self.shards = shards
        self.patience = patience
        self.contended = False
        self._free_updates = 0
        self._since_reduced = 0

    @staticmethod
    def contention(phase: PhaseCpu, threads: int) -> bool:
        """Whether other work took the cores from this phase's ``threads`` busy threads."""
        if phase.wall <= 0:
            return False
        waiting = phase.waiting()
        if waiting is not None:
            return waiting >= CONTENDED_WAITING
        return threads > 1 and phase.cores() < CONTENDED_SHARE * threads

    def observe(self, collect: PhaseCpu, update: PhaseCpu) -> str | None:
        """Adapt the update's threads to one update's phases; a line to log when something changed."""
        count, threads = self.shards.count, self.shards.concurrency
        if self.contention(update, threads) or self.contention(collect, 1):
            self._free_updates = 0
            if threads > 1:
                self.shards.concurrency = max(1, round(update.cores()))
            if self.contended:
                return None
            self.contended, self._since_reduced = True, 0
            waiting = update.waiting()
            waited = "" if waiting is None else f", its threads waiting for a CPU {waiting:.1f} cores' worth"
            action = (
                f"the update runs its {count} shards on {self.shards.concurrency} thread(s) until the cores are "
                "free again, with the same results"
                if count > 1
                else "the run slows down with it"
            )
            return (
                f"warning: other work is taking this machine's cores (the update got {update.cores():.1f} "
                f"cores{waited}): {action}; see docs/MACHINES.md"
            )
        if not self.contended:
            return None
        self._since_reduced += 1
        idle = update.idle_cores()
        free = idle >= FREE_IDLE if idle is not None and threads < count else self._since_reduced >= 4 * self.patience
        self._free_updates = self._free_updates + 1 if free else 0
        if self._free_updates < self.patience:
            return None
        self.contended, self._free_updates = False, 0
        self.patience = min(2 * self.patience, 32)  # a relapse waits longer next time
        self.shards.concurrency = count
        return f"the cores are free again: the update runs its {count} shards on {count} threads"
