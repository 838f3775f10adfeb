"""Training metrics: one JSON line per update (``metrics.jsonl``), TensorBoard scalars, a PNG of learning curves.

Each line of ``metrics.jsonl`` holds ``update``, ``global_step`` (learner
decisions so far) and the scalars of that update under their TensorBoard
names (CleanRL's: ``charts/SPS``, ``charts/episodic_return``,
``charts/learning_rate``, ``losses/policy_loss``, ``losses/value_loss``,
``losses/entropy``, ``losses/approx_kl``, ``losses/clipfrac``, ...; plus
``rollout/*`` training-game results, ``eval/*`` evaluation results,
``league/*`` PFSP diagnostics of the opponent pool and ``elo/*`` Elo estimates).
TensorBoard uses ``global_step`` as its step.  An opponent name in a key is
written with ``:`` as ``_`` (``eval/win_rate_vs_mcts_50``, ``elo/vs_mcts_50``).

Elo estimates: an evaluation against an anchor of :data:`kahuna_arena.stats.ANCHOR_RATINGS`
(seat-balanced games, score ``s`` = (wins + draws / 2) / games) gives
``elo/vs_<anchor> = rating(anchor) + 400 * log10(s / (1 - s))``, with ``s``
clipped to ``[1 / (2 n), 1 - 1 / (2 n)]`` for ``n`` games (so a clean sweep
stays finite); ``elo/mean`` is their mean when there are several.  The anchors
are the ladder's (``kahuna-ratings``, docs/RATINGS.md): one table, so a run's
``elo/*`` curve and the ladder are on the same scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kahuna_arena.stats import ANCHOR_RATINGS, elo_difference

METRICS_FILE = "metrics.jsonl"
PLOT_FILE = "learning_curves.png"
TIME_KEYS = ("charts/SPS", "charts/actions_per_second", "time/")
"""Prefixes of metrics that measure wall time (they differ between otherwise identical runs)."""


def metric_name(opponent: str) -> str:
    """An opponent name as it appears in metric keys (``mcts:50`` -> ``mcts_50``)."""
    return opponent.replace(":", "_")


def elo_estimate(score: float, games: int, anchor_rating: float) -> float:
    """The Elo of a player that scored ``score`` over ``games`` games against an opponent rated ``anchor_rating``.

    ``anchor_rating + 400 * log10(s / (1 - s))`` with ``s`` clipped to ``[1 / (2 games), 1 - 1 / (2 games)]``.
    """
    if games < 1:
        raise ValueError(f"elo_estimate needs at least one game, got {games}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"elo_estimate needs a score in [0, 1], got {score}")
    margin = 0.5 / games
    return anchor_rating + elo_difference(min(max(score, margin), 1.0 - margin))


def elo_scalars(results: Mapping[str, Any]) -> dict[str, float]:
    """``elo/vs_<anchor>`` for each evaluation result (with ``score`` and ``games``) against an anchor; ``elo/mean``."""
    scalars = {
        f"elo/vs_{metric_name(name)}": elo_estimate(result.score, result.games, ANCHOR_RATINGS[name])
        for name, result in results.items()
        if name in ANCHOR_RATINGS
    }
    if len(scalars) > 1:
        scalars["elo/mean"] = sum(scalars.values()) / len(scalars)
    return scalars


def _record(line: bytes) -> dict[str, Any] | None:
    """The metrics record of one line, or ``None`` when it is not one."""
    try:
        record = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        return None
    return record if isinstance(record, dict) and isinstance(record.get("update"), int) else None


def _read_lines(path: str | Path) -> tuple[list[dict[str, Any]], bytes, int]:
    """``(records, torn tail, its line number)`` of a metrics file; a damaged line is a ``ValueError``.

    The torn tail is what a crash in the middle of a write leaves at the end: a last line that
    is not a record and was never finished with its newline, and any NUL bytes after the last
    line (a file extended by the crash but never written).  It is returned, not parsed.
    """
    data = Path(path).read_bytes()
    body = data.rstrip(b"\0 \t\r\n")
    padding = data[len(body) :]
    start = body.rfind(b"\n") + 1
    torn = padding[padding.index(b"\0") :] if b"\0" in padding else b""
    if body[start:] and not padding.startswith(b"\n") and _record(body[start:]) is None:
        torn, body = data[start:], body[:start]  # an unfinished last line
    records = []
    for number, line in enumerate(body.split(b"\n"), start=1):
        if not line.strip():
            continue
        record = _record(line)
        if record is None:
            raise ValueError(f"{path}: line {number} is not a metrics record ({_problem(line)})")
        records.append(record)
    return records, torn, data[: len(data) - len(torn)].count(b"\n") + 1


def _problem(line: bytes) -> str:
    """Why ``line`` is not a metrics record."""
    try:
        json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except ValueError as error:
        return str(error)
    return "no integer 'update'"


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All records of a ``metrics.jsonl`` file; a damaged line is a ``ValueError`` naming the file and line."""
    records, torn, number = _read_lines(path)
    if torn:
        raise ValueError(f"{path}: line {number} is not a metrics record (an unfinished last line)")
    return records


def resume_metrics(path: str | Path, update: int) -> tuple[list[dict[str, Any]], str | None]:
    """The records a run resumed after ``update`` keeps, and a note when a torn tail was dropped.

    A torn tail (see :func:`_read_lines`: a crash in the middle of a write) after the record of
    ``update`` is dropped, as the records after ``update`` are, and the note says so; anywhere
    else, and any damaged line, it is a ``ValueError`` naming the file and the line.
    """
    records, torn, number = _read_lines(path)
    kept = [record for record in records if record["update"] <= update]
    if not torn:
        return kept, None
    if update > 0 and not any(record["update"] >= update for record in records):
        raise ValueError(f"{path}: line {number} is not a metrics record (an unfinished line before update {update}'s)")
    return kept, (
        f"{path}: dropped its torn end from line {number} ({len(torn):,} bytes after update {update}'s record, "
        "left by a crash in the middle of a write)"
    )


class MetricsLogger:
    """Writes each update's scalars to ``metrics.jsonl`` and (optionally) TensorBoard and Weights & Biases.

    With ``wandb=True`` (``logging.wandb``, the ``wandb`` extra) a W&B run named
    after the run directory is started in ``<run_dir>/wandb`` with ``wandb_config``
    as its config; every update's finite scalars are logged at ``global_step``
    under the same names as in TensorBoard.  W&B's own settings apply
    (``WANDB_MODE=offline`` writes locally for a later ``wandb sync``).

    ``resume_update`` (when resuming) drops records after that update from
    ``metrics.jsonl``, and a torn end after its record (:func:`resume_metrics`),
    and purges later TensorBoard steps, so a run resumed from a checkpoint has
    the same history as an uninterrupted one.
    """

    def __init__(
        self,
        run_dir: str | Path,
        tensorboard: bool = True,
        resume_update: int | None = None,
        resume_step: int | None = None,
        wandb: bool = False,
        wandb_config: Mapping[str, Any] | None = None,
        wandb_project: str = "kahuna-rl",
    ) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / METRICS_FILE
        if resume_update is not None and self.path.exists():
            kept, _ = resume_metrics(self.path, resume_update)  # the trainer said what was dropped
            self.path.write_text("".join(json.dumps(record) + "\n" for record in kept), encoding="utf-8")
        elif resume_update is None:
            self.path.write_text("", encoding="utf-8")
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the whole run
        self._writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            purge = None if resume_step is None else resume_step + 1
            self._writer = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=purge)
        self._wandb_run = None
        if wandb:
            import wandb as wandb_module

            self._wandb_run = wandb_module.init(
                project=wandb_project,
                name=self.run_dir.resolve().name,
                dir=str(self.run_dir),
                config=dict(wandb_config or {}),
                resume="allow" if resume_update is not None else None,
            )

    def log(self, update: int, global_step: int, scalars: Mapping[str, float]) -> None:
        """Record the scalars of one update."""
        record: dict[str, Any] = {"update": update, "global_step": global_step}
        for key, value in scalars.items():
            record[key] = float(value)
            if self._writer is not None and math.isfinite(float(value)):
                self._writer.add_scalar(key, float(value), global_step)
        self._handle.write(json.dumps(record) + "\n")
        self._handle.flush()
        if self._wandb_run is not None:
            finite = {key: value for key, value in record.items() if math.isfinite(value)}
            self._wandb_run.log(finite, step=global_step)

    def add_text(self, tag: str, text: str) -> None:
        """A text entry in TensorBoard (e.g. the config)."""
        if self._writer is not None:
            self._writer.add_text(tag, text)

    def close(self) -> None:
        """Flush and close the outputs."""
        self._handle.close()
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
        if self._wandb_run is not None:
            self._wandb_run.finish()
            self._wandb_run = None


_PANELS = (
    ("Evaluation win rate", ("eval/win_rate_vs_",)),
    ("Training games (learner's win rate)", ("rollout/win_rate_vs_",)),
    ("Elo (anchored: " + ", ".join(f"{name} {elo:g}" for name, elo in ANCHOR_RATINGS.items()) + ")", ("elo/",)),
    ("League (PFSP): learner vs snapshots", ("league/min_snapshot_win_rate", "league/mean_snapshot_win_rate")),
    ("Losses", ("losses/policy_loss", "losses/value_loss")),
    ("Entropy and KL", ("losses/entropy", "losses/approx_kl", "losses/clipfrac")),
    ("Episodic return", ("charts/episodic_return",)),
    ("Decisions per second", ("charts/SPS",)),
)
"""Panels of the learning-curve plot: a title and the metric keys it draws (a key ending in ``_`` or ``/``
is a prefix: every metric that starts with it)."""


def _panel_keys(records: list[dict[str, Any]], patterns: tuple[str, ...]) -> list[str]:
    keys: list[str] = []
    for pattern in patterns:
        if pattern.endswith(("_", "/")):
            found = sorted({key for record in records for key in record if key.startswith(pattern)})
        else:
            found = [pattern]
        keys.extend(key for key in found if key not in keys)
    return keys


def plot_learning_curves(metrics_path: str | Path, png_path: str | Path) -> Path:
    """Plot the learning curves of a ``metrics.jsonl`` against learner decisions into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    figure, axes = plt.subplots(2, 4, figsize=(20, 8))
    for axis, (title, patterns) in zip(axes.flat, _PANELS, strict=True):
        for key in _panel_keys(records, patterns):
            points = [(r["global_step"], r[key]) for r in records if key in r and math.isfinite(r[key])]
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(steps, values, marker="o" if len(points) < 30 else None, markersize=3, label=key)
        axis.set_title(title)
        axis.set_xlabel("learner decisions")
        axis.grid(alpha=0.3)
        if axis.lines:
            axis.legend(fontsize=8)
    figure.tight_layout()
    output = Path(png_path)
    figure.savefig(output, dpi=90)
    plt.close(figure)
    return output
