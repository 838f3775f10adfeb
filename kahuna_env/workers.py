"""Worker processes: the project's one process-pool helper (evaluation games, distillation games, collection).

:class:`Workers` starts ``count`` spawned processes.  Each keeps a state
dict for its whole life: ``setup(state, *setup_args)`` fills it once (load
the entrants, a network), and every task is a module-level function called
as ``function(state, *args)`` in the worker, so what is expensive to build
is built once per worker and handed over once, not per task.  Three ways to
use it:

* :meth:`Workers.map` — the results of ``function`` over items, in order, each
  item given to whichever worker is free (distillation's data games);
* :meth:`Workers.as_completed` — ``(index, result)`` as the results arrive,
  stopping early when the caller stops iterating (an evaluation that stops
  at a decision, like the SPRT);
* :meth:`Workers.send` / :meth:`Workers.receive` — a task for one chosen worker
  (self-play collection, whose workers keep the league's snapshots they were
  sent).

Failures are one line: an exception in ``setup`` or a task becomes
:class:`WorkerFailed` with the worker's message (``setup``'s failure is
reported by the worker's first task, so a worker that cannot start never
makes the pool retry forever); a worker process that dies (killed, out of
memory) is ``WorkerFailed`` too, never a hang.  Workers ignore Ctrl-C: the
parent decides, and :meth:`Workers.close` (or leaving the ``with`` block)
stops them, terminating those still busy.

Standard library only (the workers may import torch inside the tasks).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["WorkerFailed", "Workers", "one_line"]

_CLOSE_SECONDS = 10.0
"""How long :meth:`Workers.close` waits for an idle worker to exit before terminating it."""


class WorkerFailed(RuntimeError):
    """A worker's setup or task raised, or a worker process died; the message is one line."""


def one_line(error: BaseException) -> str:
    """One line for an error: its message, prefixed by its type unless the message speaks for itself."""
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(error, (OSError, ValueError)) and message:
        return message
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _loop(connection: Connection, setup: Callable[..., None] | None, setup_args: tuple[Any, ...]) -> None:
    """A worker: run ``setup`` once, then answer ``(function, args)`` messages until ``None`` arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    state: dict[str, Any] = {}
    failure: str | None = None
    if setup is not None:
        try:
            setup(state, *setup_args)
        except Exception as error:  # reported by every task: the pool never restarts a worker
            failure = f"a worker could not start: {one_line(error)}"
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        function, args = message
        if failure is not None:
            connection.send(("error", failure))
            continue
        try:
            result = function(state, *args)
        except Exception as error:
            connection.send(("error", one_line(error)))
        else:
            connection.send(("ok", result))


class Workers:
    """``count`` spawned worker processes, each with a state built once by ``setup`` (see the module docstring)."""

    def __init__(self, count: int, setup: Callable[..., None] | None = None, setup_args: Sequence[Any] = ()) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"workers must be a positive integer, got {count!r}")
        context = multiprocessing.get_context("spawn")
        self._connections: list[Connection] = []
        self._processes: list[Any] = []
        self._busy: list[bool] = []
        try:
            for _ in range(count):
                parent, child = context.Pipe()
                process = context.Process(target=_loop, args=(child, setup, tuple(setup_args)), daemon=True)
                process.start()
                child.close()
                self._connections.append(parent)
                self._processes.append(process)
                self._busy.append(False)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self._connections)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------- one chosen worker
    def send(self, worker: int, function: Callable[..., Any], *args: Any) -> None:
        """Start ``function(state, *args)`` on worker ``worker`` (which must be idle)."""
        if self._busy[worker]:
            raise RuntimeError(f"worker {worker} is busy: receive its result first")
        try:
            self._connections[worker].send((function, args))
        except (BrokenPipeError, OSError):
            raise WorkerFailed(self._died(worker)) from None
        self._busy[worker] = True

    def receive(self, worker: int) -> Any:
        """The result of worker ``worker``'s task; :class:`WorkerFailed` if it raised or the worker died."""
        try:
            status, payload = self._connections[worker].recv()
        except (EOFError, OSError):
            raise WorkerFailed(self._died(worker)) from None
        finally:
            self._busy[worker] = False
        if status != "ok":
            raise WorkerFailed(payload)
        return payload

    @staticmethod
    def _died(worker: int) -> str:
        return "a worker process died unexpectedly (killed, or out of memory?)"

    # -------------------------------------------------------------------------------- any free worker
    def as_completed(self, function: Callable[..., Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """``(index of the item, function(state, item))`` as the results arrive, each item on a free worker.

        Leaving the loop early starts no further item; the ones running are
        waited for when the workers are next used or closed.
        """
        pending = iter(enumerate(items))
        running: dict[int, int] = {}  # worker -> item index
        self._drain()

        def start(worker: int) -> None:
            for index, item in pending:
                self.send(worker, function, item)
                running[worker] = index
                return

        for worker in range(len(self)):
            start(worker)
        while running:
            ready = wait([self._connections[worker] for worker in running])
            for worker in [w for w in list(running) if self._connections[w] in ready]:
                index = running.pop(worker)
                result = self.receive(worker)
                start(worker)
                yield index, result

    def map(self, function: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        """``[function(state, item) for item in items]``, computed by the workers; in the items' order."""
        results: dict[int, Any] = dict(self.as_completed(function, items))
        return [results[index] for index in range(len(results))]

    def _drain(self) -> None:
        """Collect (and drop) the results of tasks left running by an earlier loop that stopped early."""
        for worker, busy in enumerate(self._busy):
            if busy:
                self.receive(worker)

    # -------------------------------------------------------------------------------- the end
    def close(self) -> None:
        """Stop every worker: idle ones exit, busy or stuck ones are terminated."""
        for worker, connection in enumerate(self._connections):
            try:
                if not self._busy[worker]:
                    connection.send(None)
            except (BrokenPipeError, OSError):
                pass
        for worker, process in enumerate(self._processes):
            if not self._busy[worker]:
                process.join(timeout=_CLOSE_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join(timeout=_CLOSE_SECONDS)
        for connection in self._connections:
            connection.close()
        self._connections, self._processes, self._busy = [], [], []
