"""The bot queue: at most a few agent computations at a time, a short line behind them, 503 beyond.

Searching agents (``mcts:N``, ``SOURCE@mcts:N``) think in the queue's own
worker threads, never in the server's shared thread pool, so that no number
of requests can occupy every thread: a request that finds ``workers``
computations running and ``waiting`` more in line is answered 503 at once.
Every job is run (a cancelled one returns at once: its game's
:class:`~kahuna_web.sessions.CancelFlag` is set), so whoever submitted it
always gets an answer.  :meth:`BotQueue.stop` lets the line drain and ends
the workers.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kahuna_web.validate import WebError

DEFAULT_WORKERS = 2
"""Agent computations at a time (Python threads: more would only share the same cores)."""
DEFAULT_WAITING = 8
"""Computations that may wait for a worker; the next is refused with 503."""


class BotQueue:
    """Worker threads running submitted jobs in order, with a bounded line (see the module docstring)."""

    def __init__(self, workers: int = DEFAULT_WORKERS, waiting: int = DEFAULT_WAITING) -> None:
        if workers < 1 or waiting < 0:
            raise ValueError(f"a bot queue needs at least one worker and a line >= 0, got {workers}, {waiting}")
        self.workers = workers
        self.waiting = waiting
        self._line: queue.Queue[tuple[Callable[[], Any], Future] | None] = queue.Queue()
        self._admitted = 0  # jobs running or waiting
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, job: Callable[[], Any]) -> Future:
        """Run ``job`` in a worker; its future holds the result.  :class:`WebError` 503 when the line is full."""
        with self._lock:
            if self._stopped:
                raise WebError("the server is stopping", 503)
            if self._admitted >= self.workers + self.waiting:
                raise WebError(
                    f"the server is busy: {self.workers + self.waiting} agent moves are being computed or waiting; "
                    "try again in a moment",
                    503,
                )
            self._admitted += 1
            if not self._threads:
                for number in range(self.workers):
                    thread = threading.Thread(target=self._work, name=f"kahuna-bot-{number}", daemon=True)
                    thread.start()
                    self._threads.append(thread)
            future: Future = Future()
            self._line.put((job, future))
        return future

    def _work(self) -> None:
        while True:
            item = self._line.get()
            if item is None:
                return
            job, future = item
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        result = job()
                    except BaseException as error:  # handed to the request that submitted it
                        future.set_exception(error)
                    else:
                        future.set_result(result)
            finally:
                with self._lock:
                    self._admitted -= 1

    def busy(self) -> int:
        """Jobs running or waiting now."""
        with self._lock:
            return self._admitted

    def stop(self, timeout: float = 2.0) -> None:
        """Refuse new jobs, let the line drain (cancelled jobs return at once) and end the workers."""
        with self._lock:
            self._stopped = True
            threads = list(self._threads)
        for _ in threads:
            self._line.put(None)
        for thread in threads:
            thread.join(timeout)
