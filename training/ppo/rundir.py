"""The run directory: checks before anything is written, and an exclusive lock while a run uses it.

* A new run needs a directory that does not exist yet or is empty
  (:func:`check_new_run_dir`): a run never overwrites another run's files, nor
  the config file it was started from.
* Before training starts, the run directory and its ``checkpoints/`` are
  checked to be writable (:func:`check_writable`), so a read-only directory
  or a ``--run-dir`` that names a file is one line at the start, not a
  traceback after the first update.
* :class:`RunLock` holds ``fcntl.flock`` on ``<run_dir>/.lock`` for the whole
  run; the kernel releases it when the process ends, however it ends.  The
  file says who holds it (pid, host, start time), so a second
  ``kahuna-train --resume`` of the same run can say so and stop.

Every problem is a :class:`RunDirError`, a ``ValueError`` with a one-line
message naming the path.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import time
from pathlib import Path

LOCK_FILE = ".lock"
"""Name of the lock file inside a run directory."""
CHECKPOINTS = "checkpoints"
"""Name of the folder of a run directory that holds its checkpoints (:func:`training.ppo.checkpoint.checkpoint_dir`)."""


class RunDirError(ValueError):
    """A run directory that cannot be used: not a directory, not writable, not empty, or in use."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def check_new_run_dir(run_dir: Path) -> None:
    """``RunDirError`` unless ``run_dir`` is missing or an empty directory.

    A leftover lock file and an empty ``checkpoints/`` are ignored: they are what a run stopped
    before training began leaves, so the same command starts it again.
    """
    if not run_dir.exists():
        if run_dir.is_symlink():
            raise RunDirError(f"--run-dir {run_dir} is a dangling symbolic link")
        return
    if not run_dir.is_dir():
        raise RunDirError(f"--run-dir {run_dir} is a file, not a directory")
    try:
        entries = sorted(entry.name for entry in run_dir.iterdir() if not _left_before_training(entry))
    except OSError as error:
        raise RunDirError(f"cannot read --run-dir {run_dir}: {_reason(error)}") from None
    if entries:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        hint = f"continue it with --resume {run_dir}" if CHECKPOINTS in entries else "delete or move those files"
        raise RunDirError(f"{run_dir} already holds a run or other files ({shown}); {hint}, or pick another --run-dir")


def _left_before_training(entry: Path) -> bool:
    """Whether ``entry`` of a run directory is the lock file or an empty ``checkpoints/`` (nothing of a run)."""
    if entry.name == LOCK_FILE:
        return True
    if entry.name != CHECKPOINTS or entry.is_symlink() or not entry.is_dir():
        return False
    return next(entry.iterdir(), None) is None


def check_writable(directory: Path) -> None:
    """Create ``directory`` if needed and check that a file can be written in it; ``RunDirError`` otherwise."""
    if directory.exists() and not directory.is_dir():
        raise RunDirError(f"{directory} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor, probe = tempfile.mkstemp(dir=directory, prefix=".write-test-")
        os.close(descriptor)
        os.unlink(probe)
    except OSError as error:
        raise RunDirError(f"cannot write in {directory}: {_reason(error)}") from None


class RunLock:
    """An exclusive, non-blocking ``flock`` on ``<run_dir>/.lock``; use as a context manager.

    The lock belongs to the open file, so it ends with the process even on
    ``SIGKILL``; the file is left in place (removing it would race with a
    process that has just opened it).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise ``RunDirError`` saying who holds it."""
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise RunDirError(f"cannot create the lock file {self.path}: {_reason(error)}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(descriptor, 300).decode("utf-8", errors="replace").strip() or "an unknown process"
            os.close(descriptor)
            raise RunDirError(
                f"{self.path.parent} is in use by another training process ({holder}); "
                "wait for it to end or stop it first"
            ) from None
        started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode())
        self._descriptor = descriptor

    def release(self) -> None:
        """Release the lock (closing the file releases it)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
