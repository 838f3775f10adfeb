"""The run's length and what follows it: the learning-rate annealing, the snapshot and evaluation cadences.

A recipe is written in updates (``total_updates``, ``pool.snapshot_every``,
``eval.every``), a budget in minutes (``max_minutes``).  With ``schedule.by:
updates`` the run is ``total_updates`` long and ``max_minutes`` only stops it
(on a slow machine, before the learning rate has annealed).  With
``schedule.by: time`` the run is sized to its budget once, from the speed of
its first updates (:meth:`Schedule.observe`), into a :class:`Plan` of
``P <= total_updates`` updates; every cadence is then read over ``P`` (its
*horizon*) instead of ``total_updates``: the learning rate anneals to its end
at update ``P``, snapshots and evaluations come ``P / total_updates`` as many
updates apart, and the final evaluation follows update ``P``.  The plan is
kept in the checkpoints and in ``schedule.json``, so a resume continues the
same plan; if the run falls behind it (the projected end passes the budget),
the plan is shortened to fit, and the revision is recorded too; if it gets clearly
ahead, it is lengthened.  When other work starts or stops on the machine, the speed
changes at once by far more than it wanders: after :data:`RECENT_UPDATES` updates
each :data:`SPEED_CHANGE` times faster (or slower) than the measured speed, the
schedule measures from the change on and revises the plan in one step, so a plan
made while something else ran does not stay short (:func:`speed_change`).

Reproducibility: with ``by: updates`` the same seed on the same machine gives
the same run, bit for bit, resumed or not.  With ``by: time`` the first
``schedule.measure_updates`` updates are those of ``by: updates``; the plan
depends on the measured wall time, so two runs with the same seed may plan
differently (and then differ from there on); a resume repeats the
uninterrupted run's updates as long as neither shortens the plan.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path
from typing import Any

from training.ppo.config import TrainConfig

SCHEDULE_FILE = "schedule.json"
"""The plan of a time-shaped run, in its run directory (rewritten at each revision)."""
SPEED_WINDOW = 20
"""Fewest updates over which the speed is measured (the most recent ones of this process); see :func:`speed_window`."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """How many updates a time-shaped run plays, and what that was measured from.

    Attributes:
        updates: the planned number of updates (the schedules' horizon), at most ``total_updates``.
        made_after: the update after which the plan was made (or last shortened).
        seconds_per_update: the measured wall seconds of one update (collection, update, evaluation,
            logging, checkpoint) the plan was made with.
        elapsed_seconds: the run's wall time when the plan was made.
        total_updates: the config's ``total_updates`` the plan was made for.
        max_minutes: the config's ``max_minutes`` the plan was made for.
        revisions: how many times the run revised the plan: shortened when it fell behind, lengthened when
            it was clearly ahead (:func:`lengthen_spare`).
    """

    updates: int
    made_after: int
    seconds_per_update: float
    elapsed_seconds: float
    total_updates: int
    max_minutes: float
    revisions: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a checkpoint and ``schedule.json``."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Any) -> Plan:
        """The plan of :meth:`to_dict`'s output; a one-line ``ValueError`` naming the bad field."""
        if not isinstance(values, dict):
            raise ValueError(f"schedule must be a mapping, got {type(values).__name__}")
        fields = {field.name: field.type for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"schedule has unknown keys {', '.join(map(str, unknown))}")
        for name in ("updates", "made_after", "total_updates", "revisions"):
            value = values.get(name, 0 if name == "revisions" else None)
            least = 1 if name == "updates" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"schedule[{name!r}] must be an integer >= {least}, got {value!r:.40}")
        for name in ("seconds_per_update", "elapsed_seconds", "max_minutes"):
            value = values.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"schedule[{name!r}] must be a finite number >= 0, got {value!r:.40}")
        if values["updates"] > values["total_updates"]:
            raise ValueError(f"schedule plans {values['updates']} updates, more than its {values['total_updates']}")
        return cls(**values)

    def fits(self, config: TrainConfig) -> bool:
        """Whether the plan was made for ``config``'s length and budget (a resume may change either)."""
        return self.total_updates == config.total_updates and self.max_minutes == config.max_minutes


def learning_rate(config: TrainConfig, update: int, horizon: int | None = None) -> float:
    """The learning rate of ``update`` (1-based): linear annealing to ``min_lr_fraction * lr`` over ``horizon``.

    ``horizon``: the run's planned length (default ``total_updates``).
    """
    ppo = config.ppo
    if not ppo.anneal_lr:
        return ppo.lr
    remaining = 1.0 - (update - 1) / (horizon or config.total_updates)
    return ppo.lr * (ppo.min_lr_fraction + (1 - ppo.min_lr_fraction) * remaining)


def cadence(every: int, horizon: int, total_updates: int) -> int:
    """``every`` updates of a ``total_updates`` recipe, over a run of ``horizon`` updates (at least 1)."""
    if horizon == total_updates:
        return every
    return max(1, round(every * horizon / total_updates))


def lengthen_spare(config: TrainConfig) -> float:
    """The share of the budget a time-shaped run must be projected to leave unused before it lengthens its plan.

    Twice the plan's headroom (at least 2%): a plan is fitted to end ``headroom`` before the budget, so
    the run is lengthened only when it is clearly ahead, and a speed that wobbles around the plan's does
    not lengthen and shorten it in turn.
    """
    return max(2 * config.schedule.headroom, 0.02)


RECENT_UPDATES = 5
"""How many updates of a new speed make the schedule drop the speed it measured before (:func:`speed_change`)."""
SPEED_CHANGE = 1.5
"""How much faster or slower than the measured speed each of :data:`RECENT_UPDATES` updates must be to be a new one."""


def speed_change(seconds_per_update: float, recent: list[float]) -> int:
    """How many of the last ``recent`` update times, counted back from the last, run at a new speed.

    A new speed: at least :data:`SPEED_CHANGE` times faster than ``seconds_per_update`` (the
    window's), or that much slower, all in the same direction: other work started or stopped on
    the machine.  A speed that only wanders (a noisy machine, longer games) has few such updates
    in a row and stays averaged over the window.
    """
    if seconds_per_update <= 0:
        return 0
    for side in (1.0 / SPEED_CHANGE, SPEED_CHANGE):
        count = 0
        for seconds in reversed(recent):
            if (seconds <= side * seconds_per_update) if side < 1 else (seconds >= side * seconds_per_update):
                count += 1
            else:
                break
        if count:
            return count
    return 0


def speed_window(timed: int) -> int:
    """How many of its most recent updates a process measures its speed over, after timing ``timed`` updates.

    The later half of what it has timed, and at least :data:`SPEED_WINDOW`: a long run on a noisy
    machine reads a steady speed (over 20 updates, a 105-minute run's measured speed wandered
    between 2.4 and 3.7 s per update and it revised its plan 112 times; replayed over the later half, 16),
    while a lasting change of speed still shows within a fraction of the run.
    """
    return max(SPEED_WINDOW, timed // 2)


class Schedule:
    """The run's horizon and cadences, and, with ``schedule.by: time``, the plan that sets them.

    ``plan``: the plan a resumed checkpoint holds (kept when it :meth:`Plan.fits` the config,
    else made again).  :meth:`observe` is called after every update with the run's wall time.
    """

    def __init__(self, config: TrainConfig, plan: Plan | None = None) -> None:
        self.config = config
        self.by_time = config.schedule.by == "time"
        self.plan = plan if self.by_time and plan is not None and plan.fits(config) else None
        self._ends: list[tuple[int, float]] = []  # (update, wall time less evaluations) in this process
        self._evaluations_total = 0.0  # periodic evaluations' wall time in this process
        self._evaluation_seconds = 0.0  # the last periodic evaluation's wall time

    @property
    def horizon(self) -> int:
        """The run's length in updates: the plan's, else ``total_updates``."""
        return self.plan.updates if self.plan is not None else self.config.total_updates

    def learning_rate(self, update: int) -> float:
        """The learning rate of ``update`` over the horizon."""
        return learning_rate(self.config, update, self.horizon)

    def snapshot_due(self, update: int) -> bool:
        """Whether the learner's snapshot joins the pool after ``update`` (``pool.snapshot_every``, scaled)."""
        return update % cadence(self.config.pool.snapshot_every, self.horizon, self.config.total_updates) == 0

    def evaluation_due(self, update: int) -> bool:
        """Whether a periodic evaluation follows ``update`` (``eval.every``, scaled; 0: never)."""
        every = self.config.eval.every
        return bool(every) and update % cadence(every, self.horizon, self.config.total_updates) == 0

    def is_last(self, update: int) -> bool:
        """Whether ``update`` ends the schedule."""
        return update >= self.horizon

    def observe(self, update: int, elapsed_seconds: float, evaluation_seconds: float = 0.0) -> str | None:
        """Record that ``update`` ended at ``elapsed_seconds`` of the run's wall time; plan or shorten the plan.

        ``evaluation_seconds``: the wall time of the periodic evaluation since the previous call
        (counted apart: evaluations come every so many updates, not every update).  Only with
        ``schedule.by: time``.  The speed is the mean wall time per update of this process,
        evaluations aside, over its most recent :func:`speed_window` updates (the later half of those it
        has timed, at least 20) after the first (the warm-up);
        the last evaluation's time is added at the evaluation cadence.  The plan is made once
        ``measure_updates`` updates of this process have ended; after it, when the projected end
        passes the budget, the plan is shortened to fit.  Returns a line to log when the plan is
        made or changed, else None.
        """
        if not self.by_time:
            return None
        if evaluation_seconds > 0:
            self._evaluation_seconds = evaluation_seconds
        self._evaluations_total += evaluation_seconds
        self._ends.append((update, elapsed_seconds - self._evaluations_total))
        if len(self._ends) < 2:
            return None
        window = self._ends[-speed_window(len(self._ends)) - 1 :]
        seconds_per_update = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
        recent = self._ends[-RECENT_UPDATES - 1 :]
        durations = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(recent)]
        changed = speed_change(seconds_per_update, durations) if len(recent) < len(window) else 0
        if changed >= RECENT_UPDATES:  # other work started or stopped: measure from the change on
            self._ends, seconds_per_update = recent, sum(durations) / len(durations)
        elif changed and self.plan is not None:
            return None  # perhaps a new speed: revise once it has lasted RECENT_UPDATES updates
        if self.plan is None:
            if len(self._ends) < self.config.schedule.measure_updates:
                return None
            self.plan = self._fitted(update, elapsed_seconds, seconds_per_update, revisions=0)
            return (
                f"schedule: {seconds_per_update:.2f} s per update over updates {self._ends[0][0] + 1}-{update}, "
                f"so {self.plan.updates} of {self.config.total_updates} updates fit in max_minutes "
                f"{self.config.max_minutes:g}; the learning rate, snapshots and evaluations follow "
                f"{self.plan.updates} updates"
            )
        remaining = self.plan.updates - update
        projected = elapsed_seconds + remaining * self._with_evaluations(seconds_per_update, self.plan.updates)
        budget = self.config.max_minutes * 60
        if remaining <= 0:
            return None
        if projected > budget:
            lengthen = False
        elif projected < budget * (1 - lengthen_spare(self.config)) and self.plan.updates < self.config.total_updates:
            lengthen = True
        else:
            return None
        old = self.plan.updates
        fitted = self._fitted(update, elapsed_seconds, seconds_per_update, revisions=self.plan.revisions + 1)
        if lengthen and fitted.updates <= old:
            return None
        self.plan = fitted
        where, change = ("ahead of the plan", "lengthened") if lengthen else ("behind the plan", "shortened")
        return (
            f"schedule: {where} ({seconds_per_update:.2f} s per update), so the run is {change} from "
            f"{old} to {self.plan.updates} updates"
        )

    def _with_evaluations(self, seconds_per_update: float, horizon: int) -> float:
        """Seconds per update with the last periodic evaluation's time spread over the evaluation cadence."""
        every = self.config.eval.every
        if not every or not self._evaluation_seconds:
            return seconds_per_update
        return seconds_per_update + self._evaluation_seconds / cadence(every, horizon, self.config.total_updates)

    def _fitted(self, update: int, elapsed_seconds: float, seconds_per_update: float, revisions: int) -> Plan:
        """The plan of as many updates as fit in the budget less the headroom (at least ``update``)."""
        usable = self.config.max_minutes * 60 * (1 - self.config.schedule.headroom) - elapsed_seconds
        horizon = self.horizon
        more = 0
        for _ in range(2):  # the evaluation cadence depends on the horizon: refit once
            per_update = self._with_evaluations(seconds_per_update, horizon)
            more = math.floor(usable / per_update) if per_update > 0 else self.config.total_updates
            horizon = min(self.config.total_updates, update + max(0, more))
        return Plan(
            updates=horizon,
            made_after=update,
            seconds_per_update=seconds_per_update,
            elapsed_seconds=elapsed_seconds,
            total_updates=self.config.total_updates,
            max_minutes=float(self.config.max_minutes),
            revisions=revisions,
        )

    def write(self, run_dir: Path) -> None:
        """Write the plan to ``schedule.json`` (nothing before there is one)."""
        if self.plan is not None:
            text = json.dumps(self.plan.to_dict(), indent=2) + "\n"
            (Path(run_dir) / SCHEDULE_FILE).write_text(text, encoding="utf-8")
