"""What the baseline scripts share: the command line, the run folder and its ``progress.json``, the clock.

Every script of ``benchmarks/baselines/`` trains one library's agent for a
wall-clock budget and is called the same way::

    python benchmarks/baselines/SCRIPT.py --out runs/baselines/NAME --seed 0 --minutes 30

A run folder holds ``progress.json`` (:data:`PROGRESS_FORMAT`, written
whole at every change), the snapshots (``snap-05min.*``, ``snap-10min.*``,
``snap-20min.*`` at the marks of :data:`MARK_MINUTES` below the budget, then
``final.*`` at the budget), each an entrant ``kahuna-eval`` plays, and what
the library needs to resume.  ``progress.json`` lists every snapshot:
``name``, ``mark_minutes``, ``minutes`` (training time when it was taken:
the first check at or past its mark), ``decisions`` (the learner's decisions
consumed, or the env steps a script says it counts), ``path`` (relative to
the folder).  A script run again with the same ``--out`` goes on from its
last snapshot (the clock carried over); a folder of another library, another
seed, another ``--minutes`` or ``--max-steps``, or no baseline run at all is
refused in one line, and no snapshot is ever written over.

``evaluate.py`` adds ``curve.json`` (:data:`CURVE_FORMAT`) and ``protocol.json``
to the folder; ``table.py`` reads them all.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import importlib.metadata
import io
import json
import math
import shlex
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kahuna_arena.protocol import machine
from kahuna_env.cli import OneLineParser, Terminated, exit_with_error, signals_as_interrupt, write_text_atomic

MARK_MINUTES = (5, 10, 20, 30)
"""Training minutes at which a snapshot is taken (those below the budget; the budget's is ``final``)."""
PROGRESS_FILE = "progress.json"
"""A run folder's ledger: the run's identity, its sessions and its snapshots."""
PROGRESS_FORMAT = "kahuna-baseline-progress-v1"
"""The ``format`` of ``progress.json`` (its first key: the tools recognise it as a kahuna report)."""
CURVE_FILE = "curve.json"
"""The run's learning curve against ``greedy`` (``evaluate.py``)."""
CURVE_FORMAT = "kahuna-baseline-curve-v1"
"""The ``format`` of ``curve.json``."""
PROTOCOL_FILE = "protocol.json"
"""The final snapshot's Kahuna-v1 result (``kahuna-eval --protocol kahuna-v1 --json``)."""
FINAL = "final"
"""The name of the snapshot taken at the budget."""
SCRIPTS = Path("benchmarks") / "baselines"
"""Where the scripts are, from the repository root (the commands that ``progress.json`` records)."""


class BaselineError(ValueError):
    """A one-line problem with a run folder or its files (the scripts print it as ``PROG: error: ...``)."""


@dataclasses.dataclass(frozen=True)
class Mark:
    """A snapshot to take: its file name stem, its mark in training minutes, whether it ends the run."""

    name: str
    minutes: float
    final: bool


# ---------------------------------------------------------------------------------------------- command line
def baseline_parser(description: str | None, max_steps: bool = True) -> OneLineParser:
    """The command line every baseline script takes (``--max-steps`` where the script can count steps)."""
    parser = OneLineParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="the run folder (new, empty, or this run's to resume)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--minutes", type=float, default=30.0, help="training wall time, may be fractional (30)")
    if max_steps:
        parser.add_argument(
            "--max-steps", type=int, help="also end once this many decisions are consumed (tests: a budget of work)"
        )
    return parser


def parse_baseline_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse and check the common options; a bad value is ``parser.error``'s one line."""
    args = parser.parse_args(argv)
    if not math.isfinite(args.minutes) or args.minutes <= 0:
        parser.error(f"--minutes must be a positive number of minutes, got {args.minutes:g}")
    if not 0 <= args.seed < 2**31:
        parser.error(f"--seed must be in [0, 2**31), got {args.seed}")
    if getattr(args, "max_steps", None) is not None and args.max_steps < 1:
        parser.error(f"--max-steps must be at least 1, got {args.max_steps}")
    if not hasattr(args, "max_steps"):
        args.max_steps = None
    return args


# ---------------------------------------------------------------------------------------------- files
def read_json(path: Path, expected_format: str, what: str) -> dict[str, Any]:
    """``path``'s JSON object with ``format`` ``expected_format``; ``BaselineError`` (one line) otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BaselineError(f"{path} is not readable as {what}: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict) or data.get("format") != expected_format:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise BaselineError(f"{path} is not {what} (format {found!r:.60}, expected {expected_format!r})")
    return data


def read_progress(folder: Path) -> dict[str, Any]:
    """The ``progress.json`` of the run in ``folder``; ``BaselineError`` (one line) for another file."""
    return read_json(folder / PROGRESS_FILE, PROGRESS_FORMAT, "a baseline run's progress")


def read_curve(folder: Path) -> dict[str, Any] | None:
    """The ``curve.json`` of the run in ``folder`` (None before ``evaluate.py``); ``BaselineError`` for another file."""
    path = folder / CURVE_FILE
    return read_json(path, CURVE_FORMAT, "a baseline learning curve") if path.exists() else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole (a temporary file renamed into place: never half written)."""
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def now() -> str:
    """The time of day, UTC, as ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def env_seed(seed: int, session: int) -> int:
    """The seed of a session's games: ``(seed, session)`` hashed (``numpy.random.SeedSequence``).

    Sub-environment ``i`` of a vector env seeded ``s`` plays seed ``s + i``; a hash keeps the runs of seeds 0
    and 1, and the sessions of one run, from sharing deals.
    """
    import numpy as np

    return int(np.random.SeedSequence([seed, session]).generate_state(1)[0] >> 1)


def mark_name(minutes: float) -> str:
    """``snap-05min`` for a mark of 5 minutes."""
    return f"snap-{minutes:02g}min"


# ---------------------------------------------------------------------------------------------- the run
class Run:
    """A run folder and its ``progress.json`` (see the module docstring); :meth:`open` makes or checks it."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def open(cls, args: argparse.Namespace, script: str, library: str, algorithm: str, counts: str) -> Run:
        """The run of ``--out``: a new one (folder created, ``progress.json`` written), or the same run again.

        ``library`` names the run's kind, ``counts`` what its ``decisions`` are.  ``BaselineError`` (one line,
        nothing written) for a file, a folder that holds other things, or a run of another library, seed,
        budget or step budget.
        """
        out: Path = args.out
        progress = out / PROGRESS_FILE
        if out.exists() and not out.is_dir():
            raise BaselineError(f"--out {out} is a file; give a run folder")
        if progress.exists():
            data = read_progress(out)
            given = {"library": library, "seed": args.seed, "minutes": args.minutes, "max_steps": args.max_steps}
            for key, value in given.items():
                if data.get(key) != value:
                    option = "--" + key.replace("_", "-")
                    held = f"a {data.get(key)!r:.60} run" if key == "library" else f"{option} {data.get(key)!r:.60}"
                    raise BaselineError(
                        f"--out {out} holds {held} ({data.get('command', '?')}); give another folder"
                        + ("" if key == "library" else f" or the same {option}")
                    )
            run = cls(out, data)
            for mark in run.pending_marks():
                for stray in sorted(out.glob(f"{mark.name}.*")):
                    run.new_file(mark, stray.name[len(mark.name) :])  # refuses: a file the run would write
            return run
        if out.exists() and any(out.iterdir()):
            raise BaselineError(f"--out {out} is not empty and holds no {PROGRESS_FILE}; give a new or empty folder")
        command = ["python", str(SCRIPTS / script), "--out", str(out), "--seed", str(args.seed)]
        command += ["--minutes", f"{args.minutes:g}"]
        if args.max_steps is not None:
            command += ["--max-steps", str(args.max_steps)]
        data = {
            "format": PROGRESS_FORMAT,
            "library": library,
            "algorithm": algorithm,
            "seed": args.seed,
            "minutes": args.minutes,
            "max_steps": args.max_steps,
            "decisions_are": counts,
            "command": shlex.join(command),
            "sessions": [],
            "snapshots": [],
            "finished": False,
        }
        out.mkdir(parents=True, exist_ok=True)
        run = cls(out, data)
        run.save()
        return run

    def save(self) -> None:
        """Write ``progress.json``."""
        write_json(self.path / PROGRESS_FILE, self.data)

    def begin_session(self, **details: Any) -> None:
        """Record that a process starts (or resumes) training here: when, on what machine, ``details``."""
        self.data["sessions"].append({"started": now(), "machine": machine(), **details})
        self.save()

    @property
    def minutes(self) -> float:
        """The budget in training minutes."""
        return float(self.data["minutes"])

    @property
    def max_steps(self) -> int | None:
        """The budget in decisions, if any."""
        return self.data["max_steps"]

    @property
    def snapshots(self) -> list[dict[str, Any]]:
        """The snapshots taken so far, in order."""
        return self.data["snapshots"]

    @property
    def finished(self) -> bool:
        """Whether the final snapshot is taken."""
        return bool(self.data["finished"])

    @property
    def last(self) -> dict[str, Any] | None:
        """The newest snapshot (where a resumed run starts from), or None."""
        return self.snapshots[-1] if self.snapshots else None

    @property
    def train_seconds(self) -> float:
        """Training seconds at the newest snapshot (0 before the first)."""
        return float(self.last["train_seconds"]) if self.last else 0.0

    def pending_marks(self) -> list[Mark]:
        """The snapshots still to take, in order: the marks below the budget, then the final one."""
        taken = {snapshot["name"] for snapshot in self.snapshots}
        marks = [Mark(mark_name(m), m, False) for m in MARK_MINUTES if m < self.minutes]
        marks.append(Mark(FINAL, self.minutes, True))
        return [mark for mark in marks if mark.name not in taken]

    def due(self, seconds: float, decisions: int) -> Mark | None:
        """The snapshot due after ``seconds`` of training and ``decisions``: the earliest passed mark, or None."""
        for mark in self.pending_marks():
            over_steps = mark.final and self.max_steps is not None and decisions >= self.max_steps
            if seconds >= 60 * mark.minutes or over_steps:
                return mark
        return None

    def new_file(self, mark: Mark, suffix: str) -> Path:
        """The path of a file of ``mark`` (``snap-05min.onnx``); ``BaselineError`` if it exists (never replaced)."""
        path = self.path / f"{mark.name}{suffix}"
        if path.exists() or path.is_symlink():
            raise BaselineError(
                f"{path} exists but {PROGRESS_FILE} does not list it (a run stopped while writing it?); "
                "move it away to go on"
            )
        return path

    def record(self, mark: Mark, seconds: float, decisions: int, path: Path, **extra: Any) -> dict[str, Any]:
        """Add the snapshot of ``mark`` (taken at ``seconds``, ``decisions``, written to ``path``) and save."""
        entry = {
            "name": mark.name,
            "mark_minutes": mark.minutes,
            "minutes": round(seconds / 60, 4),
            "train_seconds": round(seconds, 3),
            "decisions": int(decisions),
            "path": path.relative_to(self.path).as_posix(),
            "written": now(),
            **extra,
        }
        self.snapshots.append(entry)
        self.data["finished"] = self.data["finished"] or mark.final
        self.save()
        print(
            f"{self.path}: {mark.name} at {seconds / 60:.2f} min, {decisions:,} decisions "
            f"({decisions / max(seconds, 1e-9):,.0f}/s): {path.name}",
            flush=True,
        )
        return entry


def script_main(
    description: str | None,
    file: str,
    library: str,
    algorithm: str,
    train: Callable[[Run, int], None],
    *,
    counts: str = "learner decisions",
    trainer: bool = False,
    packages: tuple[str, ...] = ("torch",),
) -> None:
    """A baseline script's ``main``: the command line, the run folder (:meth:`Run.open`), then ``train(run, seed)``.

    ``file`` is the script's ``__file__``; ``packages``: the libraries whose versions each session records;
    ``trainer``: the script runs one of the project's trainers, which resumes from its own checkpoints and
    counts no steps (no ``--max-steps``).  A bad option or folder ends it in one line; a finished run says so
    and ends; Ctrl-C, ``SIGTERM`` or ``SIGHUP`` end it in one line saying how it goes on, status 130.
    """
    parser = baseline_parser(description, max_steps=not trainer)
    args = parse_baseline_args(parser, None)
    try:
        run = Run.open(args, Path(file).name, library, algorithm, counts)
    except (BaselineError, OSError) as error:
        exit_with_error(parser.prog, str(error))
    if run.finished:
        final = run.last or {}
        print(f"{parser.prog}: {run.path} is finished ({final.get('path')}, {final.get('minutes')} min); nothing to do")
        return
    versions = {package: importlib.metadata.version(package) for package in packages}
    run.begin_session(resumed_from=run.last["name"] if run.last else None, versions=versions)
    try:
        with signals_as_interrupt(signal.SIGTERM, signal.SIGHUP):
            train(run, args.seed)
    except KeyboardInterrupt:
        where = "the trainer's newest checkpoint" if trainer else "its newest snapshot"
        exit_with_error(parser.prog, f"stopped; run the same command again to go on from {where}", 130)
    except BaselineError as error:
        exit_with_error(parser.prog, str(error), 1)


def tool(name: str) -> str:
    """The path of the project's command ``name`` (``kahuna-train``): beside this Python first, then on ``PATH``."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        raise BaselineError(f"{name} is not installed (pip install -e . in the repository)")
    return found


def run_trainer(command: list[str], watch: Callable[[], None], every: float = 5.0) -> None:
    """Run a trainer's ``command`` to its end, calling ``watch()`` every ``every`` seconds and once after.

    Its output goes to this process's.  Stopped by ``SIGTERM`` or ``SIGHUP`` (:class:`Terminated`), this
    process passes ``SIGTERM`` on (the trainer saves and stops, as on Ctrl-C); on Ctrl-C the trainer, in the
    same process group, got the ``SIGINT`` itself.  Either way it is waited for.  A trainer that fails is a
    ``BaselineError``.
    """
    print("$ " + shlex.join(command), flush=True)
    trainer = subprocess.Popen(command)
    try:
        while trainer.poll() is None:
            watch()
            with contextlib.suppress(subprocess.TimeoutExpired):
                trainer.wait(every)
    except KeyboardInterrupt as error:
        if isinstance(error, Terminated):
            trainer.send_signal(signal.SIGTERM)
        trainer.wait()
        raise
    watch()
    if trainer.returncode != 0:
        raise BaselineError(f"{Path(command[0]).name} ended with status {trainer.returncode}; run again to resume")


class TrainingClock:
    """Training seconds: those of earlier sessions plus this one's, less the time :meth:`paused` (snapshot writing)."""

    def __init__(self, earlier_seconds: float = 0.0) -> None:
        self.earlier = earlier_seconds
        self.start = time.perf_counter()
        self.paused_seconds = 0.0

    def seconds(self) -> float:
        """Training seconds so far."""
        return self.earlier + time.perf_counter() - self.start - self.paused_seconds

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Inside: the clock stands still."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.paused_seconds += time.perf_counter() - start


def onnx_bytes(module: Any, value: bool) -> bytes:
    """``module`` (``(observation, action_mask) -> logits`` or ``(logits, value)``) as an ONNX entrant's bytes.

    The convention of docs/AGENTS.md (``kahuna-export``'s names and opset): inputs ``observation`` (batch, 246)
    float32 and ``action_mask`` (batch, 179) int8, outputs ``logits`` and, with ``value``, ``value``.
    """
    import torch

    from kahuna_env.actions import NUM_ACTIONS
    from kahuna_env.observation import OBSERVATION_SIZE
    from training.tools.export import INPUT_NAMES, ONNX_OPSET, OUTPUT_NAMES

    outputs = list(OUTPUT_NAMES if value else OUTPUT_NAMES[:1])
    example = (torch.zeros(2, OBSERVATION_SIZE), torch.ones(2, NUM_ACTIONS, dtype=torch.int8))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation notice, as kahuna-export
        torch.onnx.export(
            module.eval(),
            example,
            buffer,
            input_names=list(INPUT_NAMES),
            output_names=outputs,
            dynamic_axes={name: {0: "batch"} for name in (*INPUT_NAMES, *outputs)},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
    return buffer.getvalue()
