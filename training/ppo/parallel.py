"""The update's minibatch in shards: each shard's gradient on a thread of its own, summed in a fixed order.

PyTorch splits one operation at a time across its threads (intra-op parallelism):
on the update's small operations over two cores that bought about 1.5 times one
thread, and its OpenMP threads spin while they wait for each other, so when another
process takes a core each operation waits for a descheduled thread (an update of
4.8 s took 110 s beside one busy process).  :class:`UpdateShards` splits each
minibatch into ``count`` row shards instead; each shard's forward and backward pass
runs on a thread of its own with one torch thread (PyTorch releases the GIL inside
its kernels), and the gradients are summed in shard order.

The sum does not depend on which thread ran which shard or when, so the update's
result is fixed by ``count`` alone: :attr:`UpdateShards.concurrency` (how many shards
run at once) may change at any time, for instance when other work takes the cores
(:class:`training.ppo.cpus.CpuWatch`), without changing a bit of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class UpdateShards:
    """``count`` shards of every minibatch, run on up to ``concurrency`` threads (the calling one included).

    Call :meth:`close` when done (the trainer does at the end of the run).
    """

    def __init__(self, count: int = 1) -> None:
        if count < 1:
            raise ValueError(f"the update needs at least one shard, got {count}")
        self.count = count
        self._concurrency = count
        self._pool: ThreadPoolExecutor | None = None

    @property
    def concurrency(self) -> int:
        """How many shards run at once (1 to :attr:`count`); the results do not depend on it."""
        return self._concurrency

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self._concurrency = max(1, min(self.count, int(value)))

    def map(self, function: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
        """``[function(item) for item in items]``, up to :attr:`concurrency` of them at once, in order."""
        if self._concurrency == 1 or len(items) == 1:
            return [function(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.count - 1, thread_name_prefix="kahuna-update")
        results: list[T] = []
        for start in range(0, len(items), self._concurrency):
            group = items[start : start + self._concurrency]
            others = [self._pool.submit(function, item) for item in group[1:]]
            results.append(function(group[0]))
            results.extend(future.result() for future in others)
        return results

    def close(self) -> None:
        """Stop the threads (a later :meth:`map` starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
