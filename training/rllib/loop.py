"""The run: :func:`train` (connect, set up, iterate, export, clean up), :func:`resume`, checkpoints.

Every iteration appends a line to ``<run_dir>/metrics.jsonl`` (with the native
trainer's ``league/*`` PFSP diagnostics); checkpoints go to
``<run_dir>/checkpoints/iter_NNNNNN``, the final one to ``<run_dir>/checkpoint``,
and the learner is exported to ``<run_dir>/agent.pt`` (the project's agent
format).  ``resume=RUN_DIR`` continues a run from its newest checkpoint (weights
of every module, optimizer, iteration and step counters, and the slots' PFSP
statistics, :data:`LEAGUE_FILE` in the checkpoint directory).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from training.league.pool import PFSP
from training.rllib.algorithm import build_ppo_config
from training.rllib.callbacks import RunnerWatch, push_modules
from training.rllib.config import RLlibConfig, config_to_yaml, load_run_config
from training.rllib.connect import connect_ray
from training.rllib.errors import TrainingError, require_ray
from training.rllib.league import LEARNER, SlotStats, snapshot_ids
from training.rllib.progress import Progress, format_line

LEAGUE_FILE = "kahuna_league.json"
"""The snapshot slots' PFSP statistics (:meth:`SlotStats.state`), saved inside every algorithm checkpoint directory."""


@dataclasses.dataclass
class RunResult:
    """What :func:`train` produced.

    Attributes:
        run_dir: the run directory.
        checkpoint: the final RLlib checkpoint directory.
        agent: the exported agent file (None when ``checkpoint.export`` is off).
        iterations: iterations done.
        env_steps: env steps (agent decisions) sampled.
        seconds: wall time of the training iterations (without Ray start-up).
        illegal_actions: sampled actions that were illegal under their mask (always 0).
        actions_checked: sampled actions checked against their mask.
        history: one metrics dict per iteration of this call (as in ``metrics.jsonl``).
        env_runner_restarts: EnvRunner processes that were replaced during the run (restarted by
            Ray; each got the whole league back, see :class:`~training.rllib.callbacks.RunnerWatch`).
    """

    run_dir: Path
    checkpoint: Path
    agent: Path | None
    iterations: int
    env_steps: int
    seconds: float
    illegal_actions: int
    actions_checked: int
    history: list[dict[str, Any]]
    env_runner_restarts: int = 0


# ---------------------------------------------------------------------------------------------- the run
def train(
    config: RLlibConfig,
    run_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    *,
    restore_from: str | Path | None = None,
    on_iteration: Callable[[Any, dict[str, Any]], None] | None = None,
) -> RunResult:
    """Run RLlib self-play for ``config``: checkpoints, metrics and the exported agent in the run directory.

    Starts (and afterwards shuts down) a local Ray instance or joins the
    configured cluster; an already running Ray is reused and left running.
    ``restore_from`` (an algorithm checkpoint of the same run, see
    :func:`resume`) restores every module, the optimizer and the iteration and
    step counters first; the run then goes on up to ``config.iterations`` in all.
    ``on_iteration(algorithm, row)`` is called after each iteration's metrics line.
    """
    require_ray()
    if log is None:
        log = (lambda line: print(line, flush=True)) if config.verbose else (lambda line: None)
    # 1. Connect: first, so that an unreachable cluster leaves no empty run directory.
    started_ray = connect_ray(config)
    algorithm = None
    failure: BaseException | None = None
    try:
        # 2. Set up: the run directory with its config, the algorithm, the league's statistics; or restore them.
        run_path = _prepare_run_dir(config, run_dir)
        _log_start(config, run_path, log)
        algorithm = build_ppo_config(config).build_algo()
        progress = _start_progress(config, algorithm, log)
        if restore_from is not None:
            _restore(algorithm, progress, Path(restore_from), run_path, log)
        # 3. Train: one iteration per loop, each logged, checked and checkpointed.
        _iterate(config, algorithm, progress, run_path, log, on_iteration)
        # 4. Export: the final RLlib checkpoint and the learner in the project's agent format.
        result = _finish(config, algorithm, progress, run_path, log)
    except BaseException as error:
        failure = error
    # 5. Clean up outside the handler: Ray logs while stopping actors, and inside the handler those
    # log calls would print this error's traceback again.
    _shut_down(algorithm, started_ray)
    if failure is not None:
        raise failure
    return result


def _start_progress(config: RLlibConfig, algorithm: Any, log: Callable[[str], None]) -> Progress:
    """The run's :class:`Progress`: a watch on the EnvRunners and fresh PFSP statistics of the slots."""
    if config.env_runners.num_env_runners:
        import ray

        driver = ray.get_runtime_context().get_node_id()
        log(f"kahuna-rllib: driver on node {driver}, env runners on nodes {sorted(runner_nodes(algorithm))}")
    watch = RunnerWatch(
        [LEARNER, *snapshot_ids(config.snapshot_slots)], config.fault_tolerance.env_runner_health_probe_timeout_s
    )
    league = SlotStats(
        PFSP.from_config(config.pool), config.snapshot_slots, config.pool.snapshots_per_update, config.seed
    )
    return Progress(watch, league, config.pool.snapshot_every)


def _restore(algorithm: Any, progress: Progress, checkpoint: Path, run_path: Path, log: Callable[[str], None]) -> None:
    """Continue from ``checkpoint``: every module (pushed to every runner), the counters, the PFSP statistics."""
    algorithm.restore_from_path(str(checkpoint.resolve()))
    push_modules(algorithm, progress.watch.module_ids)  # every runner gets the restored league, whatever its seq no
    load_league(progress.league, checkpoint)
    progress.restored(algorithm, run_path / "metrics.jsonl")
    log(f"kahuna-rllib: resumed from {checkpoint} at iteration {algorithm.iteration}, {progress.env_steps} env steps")


def _iterate(
    config: RLlibConfig,
    algorithm: Any,
    progress: Progress,
    run_path: Path,
    log: Callable[[str], None],
    on_iteration: Callable[[Any, dict[str, Any]], None] | None,
) -> None:
    """Train up to ``config.iterations`` (or ``max_minutes``): each iteration's row written, checked, checkpointed."""
    with (run_path / "metrics.jsonl").open("a", encoding="utf-8") as metrics_file:
        while algorithm.iteration < config.iterations:
            row = progress.iterate(algorithm)
            metrics_file.write(json.dumps(row) + "\n")
            metrics_file.flush()
            log(format_line(row))
            progress.check(row)
            if config.checkpoint.every and row["iteration"] % config.checkpoint.every == 0:
                save_checkpoint(algorithm, run_path / "checkpoints" / f"iter_{row['iteration']:06d}", progress.league)
            if on_iteration is not None:
                on_iteration(algorithm, row)
            if config.max_minutes is not None and row["elapsed_s"] >= 60 * config.max_minutes:
                log(f"kahuna-rllib: max_minutes={config.max_minutes:g} reached after {row['iteration']} iterations")
                break


def _finish(
    config: RLlibConfig, algorithm: Any, progress: Progress, run_path: Path, log: Callable[[str], None]
) -> RunResult:
    """Save the final checkpoint and export the agent; the run's :class:`RunResult`, logged."""
    seconds = time.perf_counter() - progress.start
    final, agent_path = _export(config, algorithm, run_path, progress)
    restarts = progress.watch.restarts
    log(
        f"kahuna-rllib: {algorithm.iteration} iterations, {progress.env_steps} env steps "
        f"({len(progress.history)} iterations in {seconds:.0f}s here), {restarts} env runner restarts; "
        f"checkpoint {final}" + (f"; agent {agent_path}" if agent_path else "")
    )
    return RunResult(
        run_path,
        final,
        agent_path,
        algorithm.iteration,
        progress.env_steps,
        seconds,
        progress.illegal,
        progress.checked,
        progress.history,
        restarts,
    )


def _shut_down(algorithm: Any, started_ray: bool) -> None:
    """Stop the algorithm's actors, and Ray when this run started it."""
    if algorithm is not None:
        algorithm.stop()
    if started_ray:
        import ray

        ray.shutdown()


def _export(config: RLlibConfig, algorithm: Any, run_path: Path, progress: Progress) -> tuple[Path, Path | None]:
    """Save the final RLlib checkpoint and (with ``checkpoint.export``) the learner's agent file."""
    from training.rllib.export import export_weights

    final = run_path / "checkpoint"
    save_checkpoint(algorithm, final, progress.league)
    if not config.checkpoint.export:
        return final, None
    weights = algorithm.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    meta = {
        "source": "rllib",
        "run": run_path.name,
        "iterations": algorithm.iteration,
        "env_steps": progress.env_steps,
        "rllib_checkpoint": str(final),
        "module_id": LEARNER,
    }
    return final, export_weights(weights, config.model, run_path / "agent.pt", meta)


# ---------------------------------------------------------------------------------------------- resume
def resume(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = (), **kwargs: Any) -> RunResult:
    """Continue the run in ``run_dir`` from its newest checkpoint, with its ``config.yaml`` plus ``overrides``.

    Every module (learner and snapshot slots: the league), the optimizer, the
    iteration and the env-step counters come back from the checkpoint; lines
    of ``metrics.jsonl`` after the checkpoint's iteration are dropped (they
    will be trained again).  ``model.*`` and the league's shape cannot change.
    A ``config.yaml`` written with RLlib's ``ppo:`` names (before issue 35) is
    read in today's (:func:`~training.rllib.config.load_run_config`), and
    rewritten in them when the run goes on.
    """
    run_path = Path(run_dir)
    stored = run_path / "config.yaml"
    if not stored.is_file():
        raise TrainingError(f"{run_path} is not an RLlib run directory (no config.yaml)")
    before = load_run_config(stored)
    config = load_run_config(stored, list(overrides))
    if config.model != before.model or config.snapshot_slots != before.snapshot_slots:
        raise TrainingError("model.* and the number of snapshot slots cannot change when resuming a run")
    checkpoint = latest_checkpoint(run_path)
    return train(config, run_dir=run_path, restore_from=checkpoint, **kwargs)


def latest_checkpoint(run_dir: str | Path) -> Path:
    """The newest complete algorithm checkpoint of a run: ``checkpoint/`` or the highest ``checkpoints/iter_*``."""
    run_path = Path(run_dir)
    candidates = [
        path.parent
        for path in run_path.glob("checkpoints/iter_*/rllib_checkpoint.json")
        if not path.parent.name.endswith(".partial")
    ]
    if (run_path / "checkpoint" / "rllib_checkpoint.json").is_file():
        candidates.append(run_path / "checkpoint")
    if not candidates:
        raise TrainingError(f"{run_path} has no RLlib checkpoint to resume from (checkpoints/iter_* or checkpoint/)")
    return max(candidates, key=lambda path: (path / "rllib_checkpoint.json").stat().st_mtime)


# ---------------------------------------------------------------------------------------------- files
def save_checkpoint(algorithm: Any, path: Path, league: SlotStats | None = None) -> Path:
    """Save an algorithm checkpoint at ``path`` atomically: written next to it, then renamed into place.

    ``league``: its PFSP statistics go into the checkpoint too (:data:`LEAGUE_FILE`).
    A run killed while saving leaves a ``*.partial`` directory, never a damaged
    checkpoint that ``--resume`` would pick.
    """
    partial = path.with_name(path.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    algorithm.save_to_path(str(partial))
    if league is not None:
        (partial / LEAGUE_FILE).write_text(json.dumps(league.state()), encoding="utf-8")
    if path.exists():
        shutil.rmtree(path)
    partial.rename(path)
    return path


def load_league(league: SlotStats, checkpoint: Path) -> None:
    """Restore ``league``'s PFSP statistics from an algorithm checkpoint (one without them: fresh statistics)."""
    path = checkpoint / LEAGUE_FILE
    if not path.is_file():
        return
    try:
        league.load_state(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as error:
        raise TrainingError(f"{path}: damaged PFSP statistics ({error})") from None


def make_run_dir(config: RLlibConfig) -> Path:
    """``<output_dir>/<name>-<timestamp>`` (a numeric suffix if it exists), created."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(config.output_dir).expanduser().resolve() / f"{config.name}-{stamp}"
    run_dir, suffix = base, 1
    while run_dir.exists():
        suffix += 1
        run_dir = base.with_name(f"{base.name}-{suffix}")
    run_dir.mkdir(parents=True)
    return run_dir


def _prepare_run_dir(config: RLlibConfig, run_dir: str | Path | None) -> Path:
    """The run directory (given, or a new timestamped one), created, with ``config.yaml`` written."""
    run_path = Path(run_dir).resolve() if run_dir is not None else make_run_dir(config)
    run_path.mkdir(parents=True, exist_ok=True)
    (run_path / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    return run_path


# ---------------------------------------------------------------------------------------------- where it runs
def runner_nodes(algorithm: Any) -> list[str]:
    """The Ray node id of each remote EnvRunner (where the sampling runs)."""
    import ray

    def node_of(runner: Any) -> str:
        return ray.get_runtime_context().get_node_id()

    return list(algorithm.env_runner_group.foreach_env_runner(node_of, local_env_runner=False))


def _log_start(config: RLlibConfig, run_path: Path, log: Callable[[str], None]) -> None:
    import ray

    where = config.ray.address or os.environ.get("RAY_ADDRESS") or "local"
    runners = config.env_runners
    log(
        f"kahuna-rllib: run {run_path} on Ray {ray.__version__} ({where}), "
        f"{runners.num_env_runners} env runners x {runners.num_envs_per_env_runner} envs"
    )
