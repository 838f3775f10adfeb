"""One training iteration as the driver sees it: the call, its metrics row, the running totals and the checks.

:class:`Progress` runs each ``algorithm.train()`` between the league's chores
(re-syncing restarted EnvRunners, pushing the slots' PFSP odds), turns RLlib's
nested result into one flat row of ``metrics.jsonl`` (:func:`summarize`, plus
the learner/sampler split timed by :class:`UpdateClock` and the native
``league/*`` diagnostics), keeps the run's totals and stops a run that sampled
an illegal action or whose env runners keep failing.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from training.rllib.callbacks import (
    ACTIONS_CHECKED_METRIC,
    ILLEGAL_ACTIONS_METRIC,
    SCORE_METRIC,
    SNAPSHOT_SCORE_METRIC,
    RunnerWatch,
    push_snapshot_probabilities,
)
from training.rllib.errors import TrainingError
from training.rllib.league import LEARNER, SlotStats

MAX_EMPTY_ITERATIONS = 3
"""Give up after this many consecutive iterations without a sampled env step (env runners keep failing)."""


def league_metrics(stats: SlotStats) -> dict[str, float]:
    """The native trainer's ``league/*`` diagnostics of the slots (its own function, on the slot statistics)."""
    from training.league.pool import league_scalars

    return league_scalars(stats)  # it reads only len(), win_rates() and probabilities()


def _get(result: dict, *path: str, default: Any = None) -> Any:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def summarize(result: dict, seconds: float, env_steps_before: int) -> dict[str, Any]:
    """The metrics of one iteration (the line written to ``metrics.jsonl``)."""
    runners = result.get("env_runners", {})
    env_steps = int(_get(result, "env_runners", "num_env_steps_sampled_lifetime", default=0) or 0)
    learner = _get(result, "learners", LEARNER, default={}) or {}
    return {
        "iteration": int(result.get("training_iteration", 0)),
        "env_steps": env_steps,
        "decisions_per_s": (env_steps - env_steps_before) / seconds if seconds > 0 else None,
        "iteration_s": seconds,
        "episodes": int(_number(runners.get("num_episodes_lifetime")) or 0),
        "episode_len_mean": _number(runners.get("episode_len_mean")),
        "score_vs_snapshot": _number(runners.get(SNAPSHOT_SCORE_METRIC)),
        "score_vs_greedy": _number(runners.get(SCORE_METRIC.format("greedy"))),
        "score_vs_random": _number(runners.get(SCORE_METRIC.format("random"))),
        "illegal_actions": int(_number(runners.get(ILLEGAL_ACTIONS_METRIC)) or 0),
        "actions_checked": int(_number(runners.get(ACTIONS_CHECKED_METRIC)) or 0),
        "policy_loss": _number(learner.get("policy_loss")),
        "vf_loss": _number(learner.get("vf_loss")),
        "entropy": _number(learner.get("entropy")),
        "mean_kl": _number(learner.get("mean_kl_loss")),
        "lr": _number(learner.get("default_optimizer_learning_rate")),
    }


def format_line(row: dict[str, Any]) -> str:
    """The console line of an iteration's metrics row."""

    def fmt(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    return (
        f"iter {row['iteration']:4d}  steps {row['env_steps']:9d}  {fmt(row['decisions_per_s'], '7.0f')} dec/s  "
        f"episodes {row['episodes']:6d}  len {fmt(row['episode_len_mean'], '5.1f')}  "
        f"vs-snapshot {fmt(row['score_vs_snapshot'], '.2f')}  vs-greedy {fmt(row['score_vs_greedy'], '.2f')}  "
        f"entropy {fmt(row['entropy'], '.3f')}  vf_loss {fmt(row['vf_loss'], '.4f')}  "
        f"restarts {row.get('env_runner_restarts', 0)}"
    )


class UpdateClock:
    """The wall time the algorithm's learner group spends in ``update`` (its ``update`` method, wrapped)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._group: Any = None

    def install(self, algorithm: Any) -> None:
        """Time ``algorithm.learner_group.update`` from now on (once per learner group)."""
        group = algorithm.learner_group
        if group is self._group:
            return
        update = group.update

        def timed_update(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return update(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        group.update = timed_update
        self._group = group


class Progress:
    """The running totals of a run: env steps, checked and illegal actions, iterations without a step; the league."""

    def __init__(self, watch: RunnerWatch, league: SlotStats, snapshot_every: int) -> None:
        self.watch = watch
        self.league = league
        self.snapshot_every = snapshot_every
        self.history: list[dict[str, Any]] = []
        self.clock = UpdateClock()
        self.start = time.perf_counter()
        self.env_steps = self.illegal = self.checked = self.empty = 0

    def restored(self, algorithm: Any, metrics_path: Path) -> None:
        """Continue the counters of a restored algorithm; drop metrics lines after its iteration."""
        self.env_steps = int(algorithm.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"), default=0) or 0)
        if metrics_path.is_file():
            kept = [
                line
                for line in metrics_path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("iteration", 0) <= algorithm.iteration
            ]
            metrics_path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")

    def iterate(self, algorithm: Any) -> dict[str, Any]:
        """One ``algorithm.train()`` call; returns its metrics row (with ``elapsed_s`` and the restarts)."""
        tick = time.perf_counter()
        # 1. Before: restarted runners get the league, the envs the slots' PFSP odds.
        self.watch.check(algorithm)
        probabilities = self.league.env_probabilities(algorithm.iteration + 1)
        if probabilities is not None:  # uniform over every slot: the envs keep their plain draw
            push_snapshot_probabilities(algorithm, probabilities, self.watch.timeout_s)
        # 2. The iteration, its learner updates timed apart from the rest (sampling, with the weight syncs).
        self.clock.install(algorithm)
        self.clock.seconds = 0.0
        train_start = time.perf_counter()
        result = algorithm.train()
        train_seconds = time.perf_counter() - train_start
        # RLlib may bring a failed runner back into service during train(): look again now, so the
        # row's restart count agrees with its healthy-runner count and the runner has the league.
        self.watch.check(algorithm)
        # 3. The row: RLlib's metrics, the timings, the league's statistics and the runners' health.
        row = summarize(result, time.perf_counter() - tick, self.env_steps)
        row["learn_s"] = self.clock.seconds
        row["sample_s"] = train_seconds - self.clock.seconds
        self.league.update(result.get("env_runners", {}), row["iteration"], self.snapshot_every)
        row.update(league_metrics(self.league))
        runners = algorithm.env_runner_group
        row["env_runner_restarts"] = self.watch.restarts
        row["rllib_env_runner_restores"] = runners.num_remote_worker_restarts()
        row["healthy_env_runners"] = runners.num_healthy_remote_workers()
        # 4. The run's totals.
        self.empty = self.empty + 1 if row["env_steps"] == self.env_steps else 0
        self.env_steps = row["env_steps"]
        self.illegal += row["illegal_actions"]
        self.checked += row["actions_checked"]
        row["elapsed_s"] = time.perf_counter() - self.start
        self.history.append(row)
        return row

    def check(self, row: dict[str, Any]) -> None:
        """:class:`TrainingError` if the iteration sampled an illegal action or the env runners keep failing."""
        if row["illegal_actions"]:
            raise TrainingError(
                f"iteration {row['iteration']} sampled {row['illegal_actions']} illegal actions: "
                "the action masking of the RLModule is broken"
            )
        if self.empty >= MAX_EMPTY_ITERATIONS:
            raise TrainingError(
                f"no env step was sampled in {self.empty} consecutive iterations: the env runners keep "
                "failing (run with verbose: true to see their errors, or read the Ray logs in "
                "/tmp/ray/session_latest/logs)"
            )
