"""A time budget shapes the schedule (``schedule.by: time``): a slower machine runs the whole recipe, compressed.

The slow machines are simulated: the run's wall time is a function of the
updates played (an injected clock), never measured, except in one tiny real
run whose assertions hold at any speed.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
from pathlib import Path

import pytest

from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import ConfigError, load_config
from training.ppo.metrics import read_metrics
from training.ppo.schedule import RECENT_UPDATES, SCHEDULE_FILE, Plan, Schedule, cadence, learning_rate
from training.ppo.trainer import FINAL_EVAL, _Session, train

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
DEFAULT = CONFIGS / "default.yaml"
SMOKE = CONFIGS / "smoke.yaml"


def simulate(config, seconds_per_update, start_seconds=5.0, evaluation_seconds=0.0):
    """Play the schedule on a simulated machine: ``seconds_per_update(u)`` is update ``u``'s wall time.

    A periodic evaluation takes ``evaluation_seconds`` (the final one is not part of the budget).

    Returns ``(last update, how it ended, schedule, learning rates, snapshot updates, evaluation updates)``,
    the end being ``"schedule"`` (the plan's last update) or ``"budget"`` (``max_minutes`` passed first).
    """
    schedule = Schedule(config)
    elapsed = start_seconds
    rates, snapshots, evaluations = [], [], []
    evaluated = 0.0
    for update in range(1, schedule.horizon + 1):
        rates.append(schedule.learning_rate(update))
        elapsed += seconds_per_update(update)
        if schedule.snapshot_due(update):
            snapshots.append(update)
        schedule.observe(update, elapsed, evaluated)
        evaluated = 0.0
        if schedule.is_last(update):
            return update, "schedule", schedule, rates, snapshots, evaluations
        if elapsed / 60 >= config.max_minutes:
            return update, "budget", schedule, rates, snapshots, evaluations
        if schedule.evaluation_due(update):
            evaluations.append(update)
            evaluated = evaluation_seconds
            elapsed += evaluated
    return update, "schedule", schedule, rates, snapshots, evaluations


def default_config(*overrides):
    return load_config(DEFAULT, ["model.hidden_sizes=[16]", *overrides])


def test_the_default_config_is_sized_by_its_time_budget():
    config = load_config(DEFAULT)
    assert config.schedule.by == "time" and config.max_minutes is not None


def test_on_a_machine_half_as_fast_the_time_schedule_completes_within_the_budget():
    # The slow machine: 381 of 900 updates (the default then) in 29.9 min, about 4.7 s per update.
    config = default_config()
    last, end, schedule, rates, snapshots, evaluations = simulate(config, lambda update: 4.7, evaluation_seconds=3)
    assert end == "schedule" and last == schedule.plan.updates == schedule.horizon
    assert 350 <= last < 450 and schedule.plan.revisions == 0
    # The learning rate annealed over the planned updates, to the schedule's last step.
    assert rates[-1] == pytest.approx(learning_rate(config, last, last))
    assert rates[-1] < learning_rate(config, config.total_updates - 10)
    assert all(later < earlier for earlier, later in itertools.pairwise(rates))
    # Snapshots and evaluations come as often, relative to the run, as in the written recipe.
    assert len(snapshots) == pytest.approx(config.total_updates / config.pool.snapshot_every, abs=6)
    assert len(evaluations) == pytest.approx(config.total_updates / config.eval.every - 1, abs=1)


def test_slow_evaluations_unknown_at_planning_shorten_the_plan_once_timed():
    config = default_config()
    planned = simulate(config, lambda update: 4.7)[2].plan.updates
    last, end, schedule, rates, _, _ = simulate(config, lambda update: 4.7, evaluation_seconds=30)
    assert end == "schedule" and schedule.plan.revisions >= 1 and last == schedule.plan.updates
    # The periodic evaluations come as often, relative to the run, as in the written recipe (about
    # total_updates / eval.every - 1 of them): 30 s each, updates of 4.7 s lost to them.
    lost = (config.total_updates / config.eval.every - 1) * 30 / 4.7
    assert planned - lost - 15 <= last <= planned - lost + 10
    assert rates[-1] == pytest.approx(learning_rate(config, last, last), rel=0.05)


def test_on_the_same_slow_machine_the_update_schedule_is_cut_by_the_budget():
    config = default_config("schedule.by=updates")
    last, end, _, rates, _, _ = simulate(config, lambda update: 4.7)
    assert end == "budget" and last < config.total_updates
    assert rates[-1] > 0.5 * config.ppo.lr  # far from annealed (the run)


def test_a_fast_machine_plays_the_written_recipe_and_no_more():
    config = default_config()
    last, end, schedule, rates, snapshots, _ = simulate(config, lambda update: 0.5)
    assert end == "schedule" and last == config.total_updates == schedule.plan.updates
    assert rates == [learning_rate(config, update) for update in range(1, last + 1)]
    assert snapshots == list(range(10, config.total_updates + 1, 10))


def test_a_run_that_slows_down_shortens_its_plan_and_still_completes():
    config = default_config()
    slow_after = 200
    last, end, schedule, _, _, _ = simulate(config, lambda update: 2.0 if update < slow_after else 4.0)
    assert end == "schedule" and schedule.plan.revisions >= 1
    assert last == schedule.plan.updates < 800


def test_a_run_that_speeds_up_lengthens_its_plan_and_uses_its_budget():
    # Issue 40: a plan that only ever shortened left minutes of the budget unused.
    config = default_config()

    def seconds(update):
        return 4.0 if update <= 100 else 2.5

    first_plan = simulate(config, lambda update: 4.0)[2].plan.updates
    last, end, schedule, rates, _, _ = simulate(config, seconds)
    assert end == "schedule" and last == schedule.plan.updates and schedule.plan.revisions >= 1
    assert last > first_plan + 100
    used = 5.0 + sum(seconds(update) for update in range(1, last + 1))
    assert 0.93 * config.max_minutes * 60 <= used <= config.max_minutes * 60
    assert rates[-1] == pytest.approx(learning_rate(config, last, last), rel=0.05)


def test_a_plan_made_beside_other_work_recovers_at_once_when_the_work_stops():
    # Issue 69: measured while another process took the cores, a run planned 55 of 1150 updates and kept
    # a short plan after the other work stopped.  Here updates take 45 s for the first 20 (planned then)
    # and 6 s after: the plan is lengthened once the new speed has lasted RECENT_UPDATES updates, in one step.
    config = default_config()
    slow_until = 20

    def seconds(update):
        return 45.0 if update <= slow_until else 6.0

    schedule, elapsed, horizons = Schedule(config), 5.0, {}
    for update in itertools.count(1):
        elapsed += seconds(update)
        schedule.observe(update, elapsed)
        horizons[update] = schedule.horizon
        if schedule.is_last(update) or elapsed / 60 >= config.max_minutes:
            break
    budget = config.max_minutes * 60 * (1 - config.schedule.headroom)
    fits = slow_until + int((budget - 5.0 - 45.0 * slow_until) // 6.0)  # what fits once the speed is known
    assert horizons[config.schedule.measure_updates] < 0.3 * fits  # planned at the slow speed
    assert horizons[slow_until + RECENT_UPDATES - 1] == horizons[slow_until]  # a few fast updates: no revision yet
    assert horizons[slow_until + RECENT_UPDATES] == pytest.approx(fits, rel=0.02)  # then the whole way at once
    assert update == schedule.plan.updates and schedule.plan.revisions == 1
    assert elapsed >= 0.95 * budget


def test_a_plan_made_in_a_quiet_spell_shortens_at_once_when_other_work_starts():
    config = default_config()

    def seconds(update):
        return 6.0 if update <= 100 else 20.0

    last, end, schedule, _, _, _ = simulate(config, seconds)
    used = 5.0 + sum(seconds(update) for update in range(1, last + 1))
    assert end == "schedule" and last == schedule.plan.updates and schedule.plan.revisions == 1
    assert 0.93 * config.max_minutes * 60 <= used <= config.max_minutes * 60


def test_a_speed_that_wobbles_around_the_plans_ends_the_schedule_within_the_budget():
    config = default_config()

    def seconds(update):
        return 4.7 * (1.0 + 0.04 * ((update // 37) % 2 * 2 - 1))  # 4% faster and slower by turns

    last, end, schedule, _, _, _ = simulate(config, seconds)
    assert end == "schedule" and last == schedule.plan.updates
    assert schedule.plan.revisions <= 3
    used = 5.0 + sum(seconds(update) for update in range(1, last + 1))
    assert 0.9 * config.max_minutes * 60 <= used <= config.max_minutes * 60


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_long_run_on_a_noisy_machine_revises_its_plan_rarely_and_ends_on_it(seed):
    # A long champion sitting: the fourth champion's run (105 minutes) saw its speed wander between 2.4 and
    # 3.7 s per update, and a 20-update speed window revised the plan 112 times.
    config = load_config(CONFIGS / "champion.yaml", ["model.hidden_sizes=[16]"])
    rng = random.Random(seed)
    speeds = [rng.uniform(2.4, 3.7) for _ in range(200)]  # a new speed every 30 updates

    def seconds(update):
        return speeds[(update // 30) % len(speeds)]

    last, end, schedule, rates, _, _ = simulate(config, seconds, start_seconds=0.0)
    assert end == "schedule" and last == schedule.plan.updates
    assert schedule.plan.revisions <= 25
    used = sum(seconds(update) for update in range(1, last + 1))
    assert 0.93 * config.max_minutes * 60 <= used <= config.max_minutes * 60
    assert rates[-1] == pytest.approx(learning_rate(config, last, last), rel=0.05)


def test_the_plan_waits_for_the_measured_updates_and_skips_the_warm_up():
    config = default_config("schedule.measure_updates=4")
    schedule = Schedule(config)
    times = {1: 60.0, 2: 62.0, 3: 64.0}  # a slow first update (the warm-up), then 2 s each
    for update, seconds in times.items():
        assert schedule.observe(update, seconds) is None and schedule.plan is None
    note = schedule.observe(4, 66.0)
    assert schedule.plan.seconds_per_update == 2.0 and schedule.plan.made_after == 4
    budget = config.max_minutes * 60 * (1 - config.schedule.headroom)
    assert schedule.plan.updates == min(config.total_updates, 4 + int((budget - 66.0) // 2.0))
    assert f"{schedule.plan.updates} of {config.total_updates} updates" in note


def test_the_update_schedule_ignores_the_clock():
    config = default_config("schedule.by=updates")
    schedule = Schedule(config)
    for update in range(1, 20):
        assert schedule.observe(update, 1000.0 * update) is None
    assert schedule.horizon == config.total_updates and schedule.plan is None
    assert [u for u in range(1, 101) if schedule.snapshot_due(u)] == list(range(10, 101, 10))


def test_cadences_scale_with_the_horizon():
    assert cadence(10, 900, 900) == 10
    assert cadence(10, 450, 900) == 5
    assert cadence(100, 381, 900) == 42
    assert cadence(10, 30, 900) == 1  # never 0


def test_a_plan_round_trips_and_a_damaged_one_is_one_line():
    plan = Plan(400, 5, 4.5, 25.0, 900, 29.5, revisions=1)
    assert Plan.from_dict(plan.to_dict()) == plan
    for change, message in [
        ({"updates": 0}, r"schedule\['updates'\] must be an integer >= 1"),
        ({"updates": 901}, "plans 901 updates, more than its 900"),
        ({"seconds_per_update": float("nan")}, r"schedule\['seconds_per_update'\] must be a finite number"),
        ({"made_after": True}, r"schedule\['made_after'\] must be an integer >= 0"),
        ({"surprise": 1}, "unknown keys surprise"),
    ]:
        with pytest.raises(ValueError, match=message):
            Plan.from_dict({**plan.to_dict(), **change})
    with pytest.raises(ValueError, match="schedule must be a mapping"):
        Plan.from_dict([1, 2])


def test_a_plan_made_for_another_budget_is_made_again():
    config = default_config()
    plan = Plan(400, 5, 4.5, 25.0, config.total_updates, config.max_minutes)
    assert Schedule(config, plan).plan == plan
    assert Schedule(default_config("max_minutes=60"), plan).plan is None
    assert Schedule(default_config("total_updates=1000"), plan).plan is None
    assert Schedule(default_config("schedule.by=updates"), plan).horizon == config.total_updates


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["schedule.by=time", "max_minutes=null"], "schedule.by: 'time' sizes the run to max_minutes"),
        (["schedule.by=clock"], "schedule.by: must be 'updates' or 'time', got 'clock'"),
        (["schedule.measure_updates=1"], r"schedule.measure_updates: must be in \[2, 1000\], got 1"),
        (["schedule.headroom=0.5"], r"schedule.headroom: must be in \[0, 0.5\), got 0.5"),
        (["schedule.pace=2"], "schedule.pace: unknown key"),
    ],
)
def test_bad_schedule_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(DEFAULT, overrides)


SLOW = [
    "total_updates=20",
    "max_minutes=10",
    "schedule.by=time",
    "schedule.measure_updates=3",
    "eval.every=10",
    "pool.snapshot_every=4",
    "checkpoint.every=1",
]


def _a_minute_per_update(session: _Session) -> float:
    """The run's clock on the slow machine: every update takes a simulated minute."""
    return session.earlier_seconds + 60.0 * session.updates


@pytest.fixture
def slow_machine(monkeypatch):
    """A machine where every update takes a simulated minute (the run's clock counts updates)."""
    monkeypatch.setattr(_Session, "train_seconds", _a_minute_per_update)


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    """The smoke config with :data:`SLOW`, trained on the slow machine: its directory, summary and log lines.

    Shared by the tests that read it; a test that resumes it works on a copy.
    """
    run_dir = tmp_path_factory.mktemp("slow") / "run"
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Session, "train_seconds", _a_minute_per_update)
        summary = train(load_config(SMOKE, SLOW), run_dir, log=lines.append)
    return run_dir, summary, lines


def test_a_smoke_run_on_a_slow_machine_finishes_its_planned_schedule(slow_run):
    config = load_config(SMOKE, SLOW)
    run_dir, summary, lines = slow_run
    plan = json.loads((run_dir / SCHEDULE_FILE).read_text())
    # Planned after update 3 at 180 s: (600 * 0.97 - 180) // 60 = 6 more updates fit.
    assert plan["updates"] == 9 and plan["made_after"] == 3 and plan["seconds_per_update"] == 60.0
    assert summary.updates == 9 and any("9 of 20 updates fit" in line for line in lines)
    records = read_metrics(run_dir / "metrics.jsonl")
    rates = [record["charts/learning_rate"] for record in records]
    assert rates[-1] == pytest.approx(learning_rate(config, 9, 9))
    # eval.every 10 of 20 becomes every 4 of 9 once planned (round(4.5) = 4); the final one after update 9.
    evaluated = [record["update"] for record in records if "eval/win_rate_vs_greedy" in record]
    assert evaluated == [4, 8, 9]
    assert (run_dir / FINAL_EVAL).exists()
    pool = load_checkpoint(run_dir / "checkpoints" / "latest.pt")["pool"]
    assert [entry["update"] for entry in pool][-1] == 8  # snapshot_every 4 of 20 is 2 of 9 (max_snapshots 2)
    assert load_checkpoint(run_dir / "checkpoints" / "latest.pt")["schedule"] == plan


def test_the_same_slow_run_by_updates_is_stopped_by_the_budget(tmp_path, slow_machine):
    config = load_config(SMOKE, [*SLOW, "schedule.by=updates"])
    summary = train(config, tmp_path / "run", log=lambda line: None)
    assert summary.updates == 10 and not (tmp_path / "run" / SCHEDULE_FILE).exists()
    rates = [record["charts/learning_rate"] for record in read_metrics(tmp_path / "run" / "metrics.jsonl")]
    assert rates[-1] == pytest.approx(learning_rate(config, 10))  # half-way down the 20-update anneal


def test_a_resumed_time_shaped_run_continues_its_plan_exactly(tmp_path, slow_run, slow_machine):
    run_dir = slow_run[0]
    resumed = tmp_path / "resumed"
    shutil.copytree(run_dir, resumed)
    checkpoints = resumed / "checkpoints"
    shutil.copy(checkpoints / "update_000006.pt", checkpoints / "latest.pt")
    for update in range(7, 10):
        (checkpoints / f"update_{update:06d}.pt").unlink()
    summary = train(load_config(SMOKE, SLOW), resumed, resume=True, log=lambda line: None)
    assert summary.updates == 9
    original = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
    again = load_checkpoint(checkpoints / "latest.pt")
    assert again["schedule"] == original["schedule"] and again["counters"]["update"] == 9
    assert all((again["model_state"][k] == v).all() for k, v in original["model_state"].items())


def test_a_tiny_real_run_with_a_low_budget_plans_from_its_speed_and_ends_evaluated(tmp_path):
    # Real time: the plan depends on this machine's speed (and load), so only what holds at any speed is checked.
    settings = ["total_updates=30", "max_minutes=0.5", "schedule.by=time", "schedule.measure_updates=2"]
    config = load_config(SMOKE, [*settings, "schedule.headroom=0.3", "eval.every=0"])
    lines = []
    summary = train(config, tmp_path / "run", log=lines.append)
    plan = json.loads((tmp_path / "run" / SCHEDULE_FILE).read_text())
    assert plan["made_after"] >= 2 and plan["made_after"] <= plan["updates"] <= 30
    assert summary.updates <= plan["updates"] and any("updates fit in max_minutes 0.5" in line for line in lines)
    assert (tmp_path / "run" / FINAL_EVAL).exists()
    rates = [record["charts/learning_rate"] for record in read_metrics(tmp_path / "run" / "metrics.jsonl")]
    assert rates[:2] == pytest.approx([learning_rate(config, 1), learning_rate(config, 2)])  # measured: as written
    assert all(later <= earlier for earlier, later in itertools.pairwise(rates))
    assert all(rate <= learning_rate(config, update) for update, rate in enumerate(rates, start=1))
