"""Prioritized fictitious self-play in the RLlib league (issue 16: the native ``pool.pfsp`` keys).

The driver keeps each snapshot slot's decayed results (:class:`training.rllib.league.SlotStats`,
the native pool's counts and formulas), records every iteration's ``past`` games from the
episode metrics, resets a slot that takes a new snapshot, pushes the slot probabilities into
every env and saves the statistics with each checkpoint.  The unit tests compare the slot
statistics with :class:`training.league.pool.OpponentPool` fed the same games; the env tests draw
slots with pushed probabilities; one tiny run with ``pool.pfsp=hard`` checks the whole loop,
the ``league/*`` metrics and ``resume``.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import local_algorithm
from test_rllib import OLD_STORED_PPO_NAMES

from kahuna_policy.model import ActorCritic, ModelConfig
from training.league.pool import KINDS, PFSP, GameAssignment, OpponentPool
from training.ppo.config import PoolConfig
from training.rllib.config import ConfigError, load_rllib_config
from training.rllib.errors import INSTALL_HINT
from training.rllib.league import (
    SLOT_GAMES_METRIC,
    SLOT_SCORE_METRIC,
    SlotStats,
    slot_results,
    snapshot_slot,
)

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
)
TINY_MODEL = ModelConfig(hidden_sizes=(4,))


def native_pool(pfsp: PFSP, slots: int) -> OpponentPool:
    """The native trainer's pool with ``slots`` (tiny) snapshots."""
    pool = OpponentPool(TINY_MODEL, slots, pfsp=pfsp)
    for update in range(slots):
        pool.add(ActorCritic(TINY_MODEL), update)
    return pool


def native_pool_with(state: dict, pfsp: PFSP) -> OpponentPool:
    """A native pool whose snapshots hold the counts of a saved :meth:`SlotStats.state`."""
    pool = native_pool(pfsp, len(state["pfsp_games"]))
    pool.scores, pool.games = list(state["pfsp_score"]), list(state["pfsp_games"])
    return pool


def random_update(rng: np.random.Generator, slots: int, games: int) -> tuple[GameAssignment, np.ndarray]:
    """One native update's ``past`` games (and a few others) with random slots and outcomes (1, 0, -1)."""
    kinds = rng.choice([1, 1, 1, 2], size=games)  # mostly past, some greedy
    snapshots = np.where(kinds == 1, rng.integers(slots, size=games), -1)
    seats = np.zeros((games, 2), dtype=bool)
    seats[np.arange(games), rng.integers(2, size=games)] = True
    return GameAssignment(kinds, seats, snapshots), rng.choice([-1, 0, 1], size=games, p=[0.5, 0.1, 0.4])


def per_slot(assignment: GameAssignment, outcomes: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """What the EnvRunners' metrics sum per slot: the learner's score (1, 1/2, 0) and its number of games."""
    past = assignment.snapshots >= 0
    scores = np.bincount(assignment.snapshots[past], weights=(outcomes[past] + 1) / 2, minlength=slots)
    return scores, np.bincount(assignment.snapshots[past], minlength=slots).astype(np.float64)


# ---------------------------------------------------------------------------------------------- config
def test_pfsp_settings_are_the_native_keys():
    pool = PoolConfig(pfsp="variance", pfsp_exponent=3.0, pfsp_prior=0.3, pfsp_prior_games=2.0, pfsp_decay=0.9)
    assert PFSP.from_config(pool) == PFSP(weighting="variance", exponent=3.0, prior=0.3, prior_games=2.0, decay=0.9)
    assert PFSP.from_config(PoolConfig()) == PFSP()
    config = load_rllib_config(CONFIG, ["pool.pfsp=hard", "pool.pfsp_exponent=1.5"])
    assert PFSP.from_config(config.pool) == PFSP(weighting="hard", exponent=1.5)
    with pytest.raises(ConfigError, match=r"pool\.pfsp: must be 'uniform', 'hard' or 'variance'"):
        load_rllib_config(CONFIG, ["pool.pfsp=easy"])


# ---------------------------------------------------------------------------------------------- slot statistics
@pytest.mark.parametrize("weighting", ["hard", "variance", "uniform"])
def test_slot_weights_from_recorded_outcomes_are_the_native_pools(weighting):
    pfsp = PFSP(weighting=weighting, exponent=2.5, prior=0.4, prior_games=3.0, decay=0.9)
    slots = 4
    pool, stats = native_pool(pfsp, slots), SlotStats(pfsp, slots)
    rng = np.random.default_rng(7)
    for _ in range(6):
        assignment, outcomes = random_update(rng, slots, 12)
        pool.record(assignment, outcomes)
        stats.record(*per_slot(assignment, outcomes, slots))
        np.testing.assert_allclose(stats.scores, pool.scores)
        np.testing.assert_allclose(stats.games, pool.games)
        np.testing.assert_allclose(stats.win_rates(), pool.win_rates())
        np.testing.assert_allclose(stats.probabilities(), pool.probabilities())
    assert len(stats) == slots
    if weighting == "uniform":
        assert stats.env_probabilities() is None  # the envs keep their plain uniform draw
        return
    probabilities = np.array(stats.env_probabilities())
    np.testing.assert_allclose(probabilities, pool.probabilities())
    assert probabilities.max() > probabilities.min() + 0.01  # the results moved the odds away from uniform
    weights = pfsp.weights(pool.win_rates())
    np.testing.assert_allclose(probabilities, weights / weights.sum())


def test_hard_weighting_favours_the_slot_the_learner_loses_to():
    stats = SlotStats(PFSP(weighting="hard", decay=1.0), 3)
    stats.record([0.0, 5.0, 10.0], [10.0, 10.0, 10.0])  # loses every game to slot 0, wins every game against 2
    probabilities = stats.env_probabilities()
    assert probabilities is not None and np.argmax(probabilities) == 0 and np.argmin(probabilities) == 2


# ---------------------------------------------------------------------------------------------- snapshots per update
def test_snapshots_per_update_plays_each_iteration_against_that_many_slots_uniformly():
    stats = SlotStats(PFSP(), 5, snapshots_per_update=2, seed=3)
    chosen_sets = set()
    for iteration in range(1, 41):
        odds = np.array(stats.env_probabilities(iteration))
        chosen = np.flatnonzero(odds)
        assert len(chosen) == 2 and np.allclose(odds[chosen], 0.5)
        assert stats.env_probabilities(iteration) == odds.tolist()  # the same for the same iteration (resumes)
        chosen_sets.add(tuple(chosen))
    assert len(chosen_sets) > 3 and set().union(*chosen_sets) == set(range(5))
    assert SlotStats(PFSP(), 5, snapshots_per_update=9, seed=3).env_probabilities(1) == [0.2] * 5  # all of them
    assert SlotStats(PFSP(), 5, seed=3).env_probabilities(1) is None  # without the key: the plain uniform draw


def test_snapshots_per_update_with_pfsp_renormalises_the_chosen_slots_odds_as_the_native_pool():
    pfsp = PFSP(weighting="hard", decay=1.0)
    stats = SlotStats(pfsp, 4, snapshots_per_update=2, seed=0)
    stats.record([0.0, 2.0, 6.0, 8.0], [8.0, 8.0, 8.0, 8.0])
    probabilities = stats.probabilities()
    counts, mean_odds = np.zeros(4), np.zeros(4)
    for iteration in range(1, 401):
        odds = np.array(stats.env_probabilities(iteration))
        chosen = np.flatnonzero(odds)
        assert len(chosen) == 2
        np.testing.assert_allclose(odds[chosen], probabilities[chosen] / probabilities[chosen].sum())
        counts[chosen] += 1
        mean_odds += odds / 400
    # Chosen without replacement with the PFSP probabilities: slot 0, the hardest, most often.
    assert counts[0] == counts.max() and counts[3] == counts.min()
    # Each game's slot then has the native pool's odds (its games over many updates of 2 snapshots each).
    native = native_pool(pfsp, 4)
    native.scores, native.games = list(stats.scores), list(stats.games)
    rng = np.random.default_rng(1)
    draws = np.concatenate(
        [native.assign(10, {"past": 1.0}, rng, snapshots_per_update=2).snapshots for _ in range(400)]
    )
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / len(draws), mean_odds, atol=0.04)


def test_counts_decay_once_per_iteration():
    stats = SlotStats(PFSP(weighting="hard", decay=0.8, prior=0.5, prior_games=4.0), 2)
    stats.record([3.0, 0.0], [4.0, 2.0])
    for _ in range(3):
        stats.record([0.0, 0.0], [0.0, 0.0])  # iterations without games against either slot
    np.testing.assert_allclose(stats.scores, [3.0 * 0.8**3, 0.0])
    np.testing.assert_allclose(stats.games, [4.0 * 0.8**3, 2.0 * 0.8**3])
    # Forgetting pulls the estimates back towards the prior.
    fresh = SlotStats(PFSP(weighting="hard", decay=0.8), 2)
    fresh.record([3.0, 0.0], [4.0, 2.0])
    assert abs(stats.win_rates()[0] - 0.5) < abs(fresh.win_rates()[0] - 0.5)


def test_snapshot_slots_follow_the_snapshot_callback():
    assert [snapshot_slot(i, 1, 3) for i in range(1, 8)] == [0, 1, 2, 0, 1, 2, 0]
    assert [snapshot_slot(i, 2, 2) for i in range(1, 9)] == [None, 0, None, 1, None, 0, None, 1]
    assert snapshot_slot(4, 2, 0) is None


def test_a_slot_that_takes_a_snapshot_gets_fresh_statistics():
    pfsp = PFSP(weighting="hard", decay=0.9)
    stats = SlotStats(pfsp, 3)
    metrics = {SLOT_SCORE_METRIC.format(k): 1.0 + k for k in range(3)} | {
        SLOT_GAMES_METRIC.format(k): 4.0 for k in range(3)
    }
    stats.update(metrics, iteration=1, every=2)  # no snapshot after iteration 1
    assert stats.games == [4.0, 4.0, 4.0] and stats.scores == [1.0, 2.0, 3.0]
    stats.update(metrics, iteration=2, every=2)  # slot 0 takes the learner after iteration 2
    assert stats.scores[0] == stats.games[0] == 0.0
    np.testing.assert_allclose(stats.scores[1:], [2.0 * 0.9 + 2.0, 3.0 * 0.9 + 3.0])
    np.testing.assert_allclose(stats.games[1:], [4.0 * 0.9 + 4.0] * 2)
    # Like a new snapshot of the native pool: no counts, the prior win rate.
    assert stats.win_rates()[0] == pytest.approx(pfsp.prior)


def test_slot_results_read_the_summed_episode_metrics():
    metrics = {
        SLOT_SCORE_METRIC.format(0): 2.5,
        SLOT_GAMES_METRIC.format(0): 4,
        SLOT_SCORE_METRIC.format(1): float("nan"),  # RLlib's value of a sum nobody logged this iteration
        SLOT_GAMES_METRIC.format(1): float("nan"),
        "episode_len_mean": 70.0,
    }
    scores, games = slot_results(metrics, 3)
    np.testing.assert_array_equal(scores, [2.5, 0.0, 0.0])
    np.testing.assert_array_equal(games, [4.0, 0.0, 0.0])


def test_statistics_state_round_trip_and_shape_check():
    stats = SlotStats(PFSP(weighting="variance"), 2)
    stats.record([1.0, 0.5], [2.0, 1.0])
    state = json.loads(json.dumps(stats.state()))
    restored = SlotStats(PFSP(weighting="variance"), 2)
    restored.load_state(state)
    assert restored.scores == stats.scores and restored.games == stats.games
    with pytest.raises(ValueError, match="PFSP statistics of 2 slots, but the league has 3"):
        SlotStats(PFSP(), 3).load_state(state)


# ---------------------------------------------------------------------------------------------- env
def old_uniform_slots(seeds: range, slots: int) -> list[int]:
    """The slots the env drew before PFSP (``pool`` all ``past``): its generator's calls, replayed."""
    drawn = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        rng.integers(2)  # first player
        rng.integers(2**63)  # deal
        rng.choice(len(KINDS), p=[float(kind == "past") for kind in KINDS])  # opponent kind
        rng.integers(2)  # learner's seat
        drawn.append(int(rng.integers(slots)))
    return drawn


@needs_ray
def test_env_draws_slots_with_the_pushed_probabilities():
    from training.rllib.env import KahunaMultiAgentEnv

    env = KahunaMultiAgentEnv({"pool": {"past": 1.0}, "snapshot_slots": 3})
    env.set_snapshot_probabilities([0.0, 1.0, 3.0])  # normalised: 0, 1/4, 3/4
    env.reset(seed=11)
    slots = Counter()
    for _ in range(2000):
        env.reset()
        slots[env.slot] += 1
        (snapshot,) = [agent for agent in env.seats if "@" in agent]
        assert snapshot.endswith(f"@snapshot_{env.slot}")  # the agent id names the drawn slot
    assert slots[0] == 0  # probability 0: never drawn
    assert abs(slots[2] / 2000 - 0.75) < 0.04 and slots[1] + slots[2] == 2000
    # Back to uniform: exactly the draws of the env before PFSP existed.
    env.set_snapshot_probabilities(None)
    drawn = []
    for seed in range(50):
        env.reset(seed=seed)
        drawn.append(env.slot)
    assert drawn == old_uniform_slots(range(50), 3)
    assert set(drawn) == {0, 1, 2}


@needs_ray
def test_env_rejects_bad_slot_probabilities():
    from training.rllib.env import KahunaMultiAgentEnv

    env = KahunaMultiAgentEnv({"pool": {"past": 1.0}, "snapshot_slots": 2})
    for bad in ([1.0], [0.5, -0.1], [0.0, 0.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="slot probabilities"):
            env.set_snapshot_probabilities(bad)


@needs_ray
def test_pushed_probabilities_reach_the_runners_envs_and_the_slot_metrics():
    """In-process EnvRunner: push the odds, sample, read the per-slot sums the driver records."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from training.rllib.algorithm import build_ppo_config
    from training.rllib.callbacks import push_snapshot_probabilities

    config = load_rllib_config(
        CONFIG,
        [
            "model.architecture=mlp",
            "model.hidden_sizes=[16]",
            "env_runners.num_envs_per_env_runner=2",
            "pool.latest=0",
            "pool.past=1",
            "pool.greedy=0",
            "pool.max_snapshots=3",
            "pool.pfsp=hard",
        ],
    )
    runner = MultiAgentEnvRunner(config=build_ppo_config(config))

    try:
        push_snapshot_probabilities(local_algorithm(runner), [0.0, 0.5, 0.5])
        envs = [env.unwrapped for env in runner.env.envs]
        assert len(envs) == 2
        for env in envs:
            np.testing.assert_allclose(env.slot_probabilities, [0.0, 0.5, 0.5])
        episodes = runner.sample(num_episodes=8)
        metrics = runner.get_metrics()
    finally:
        runner.stop()
    values = {key: value.peek() if hasattr(value, "peek") else value for key, value in metrics.items()}
    scores, games = slot_results(values, 3)
    modules = Counter(
        episode.module_for(agent) for episode in episodes for agent in episode.agent_episodes if "@" in agent
    )
    assert modules["snapshot_0"] == 0 and modules["snapshot_1"] + modules["snapshot_2"] >= 8
    assert games[0] == 0 and games.sum() >= 8  # one count per finished past game (some may finish early)
    assert ((scores >= 0) & (scores <= games)).all()


# ---------------------------------------------------------------------------------------------- a tiny run
RUN = [
    "iterations=2",
    "seed=5",
    "verbose=false",
    "ray.num_cpus=1",
    "env_runners.num_env_runners=1",
    "env_runners.num_envs_per_env_runner=2",
    "ppo.train_batch_size=1024",
    "ppo.minibatch_size=512",
    "ppo.update_epochs=1",
    "model.architecture=mlp",
    "model.hidden_sizes=[16]",
    "pool.latest=0.1",
    "pool.past=0.8",
    "pool.greedy=0.1",
    "pool.max_snapshots=2",
    "pool.snapshot_every=2",
    "pool.pfsp=hard",
    "pool.pfsp_decay=0.7",
    "checkpoint.every=1",
    "checkpoint.export=false",
]


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for this module's runs, started as :data:`RUN`'s own run would start it.

    A run reuses an initialised Ray and leaves it up (``training.rllib.connect.connect_ray``), so the
    runs and the resume below start their actors in it instead of starting and stopping a Ray each.
    That a run starts and shuts down its own Ray is tests/test_rllib.py's.
    """
    import ray

    from training.rllib.connect import _start_local

    assert not ray.is_initialized()
    _start_local(load_rllib_config(CONFIG, RUN))
    try:
        yield
    finally:
        ray.shutdown()


def runner_slot_odds(algorithm) -> list:
    """The slot odds of every env of every remote EnvRunner (``[runner][env][slot]``)."""
    return algorithm.env_runner_group.foreach_env_runner(
        lambda runner: [env.unwrapped.slot_probabilities.tolist() for env in runner.env.envs],
        local_env_runner=False,
    )


LEAGUE_KEYS = ("league/min_snapshot_win_rate", "league/mean_snapshot_win_rate", "league/max_snapshot_probability")


@needs_ray
def test_a_pfsp_run_records_pushes_logs_and_resumes_its_statistics(tmp_path, monkeypatch, local_ray):
    import training.rllib.loop as train_module
    from training.league.pool import league_scalars

    updates: list[dict] = []

    class RecordingStats(SlotStats):
        """The driver's statistics, with every update's before/after state and the results it read."""

        def update(self, runner_metrics, iteration, every):
            before = self.state()
            super().update(runner_metrics, iteration, every)
            scores, games = slot_results(runner_metrics, len(self))
            updates.append(
                {"iteration": iteration, "before": before, "after": self.state(), "scores": scores, "games": games}
            )

    pushed: dict[int, list] = {}

    def on_iteration(algorithm, row):  # the odds the envs drew this iteration's slots with
        pushed[row["iteration"]] = runner_slot_odds(algorithm)

    monkeypatch.setattr(train_module, "SlotStats", RecordingStats)
    config = load_rllib_config(CONFIG, RUN)
    pfsp = PFSP.from_config(config.pool)
    run_dir = tmp_path / "run"
    train_module.train(config, run_dir=run_dir, on_iteration=on_iteration)
    assert [update["iteration"] for update in updates] == [1, 2]

    # The driver's recursion: decay, add the iteration's games, reset the slot that took a snapshot (slot 0 after 2).
    for update in updates:
        expected_scores = 0.7 * np.array(update["before"]["pfsp_score"]) + update["scores"]
        expected_games = 0.7 * np.array(update["before"]["pfsp_games"]) + update["games"]
        if update["iteration"] == 2:
            expected_scores[0] = expected_games[0] = 0.0
        np.testing.assert_allclose(update["after"]["pfsp_score"], expected_scores)
        np.testing.assert_allclose(update["after"]["pfsp_games"], expected_games)
        assert ((update["scores"] >= 0) & (update["scores"] <= update["games"])).all()
    assert updates[0]["games"].sum() >= 2 and updates[1]["games"].sum() >= 2  # past games were counted
    assert updates[0]["after"]["pfsp_games"][0] + updates[1]["games"][0] > 0  # slot 0 had games to forget

    # The envs drew iteration i's slots with the odds of the statistics after iteration i - 1.
    assert pushed[1] == [[[0.5, 0.5]] * 2]  # no results yet: every slot at the prior
    expected = native_pool_with(updates[0]["after"], pfsp).probabilities().tolist()
    np.testing.assert_allclose(np.array(pushed[2][0]), [expected, expected])

    # metrics.jsonl: the native league metrics of the statistics after each iteration.
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    for row, update in zip(rows, updates, strict=True):
        native = league_scalars(native_pool_with(update["after"], pfsp))
        assert set(LEAGUE_KEYS) <= set(row)
        for key in LEAGUE_KEYS:
            assert row[key] == pytest.approx(native[key])
    # Each checkpoint holds the statistics after its iteration.
    for name, update in (("checkpoints/iter_000001", updates[0]), ("checkpoints/iter_000002", updates[1])):
        saved = json.loads((run_dir / name / train_module.LEAGUE_FILE).read_text())
        np.testing.assert_allclose(saved["pfsp_score"], update["after"]["pfsp_score"])
        np.testing.assert_allclose(saved["pfsp_games"], update["after"]["pfsp_games"])

    # Resume: the third iteration starts from the saved statistics and its envs draw with their odds.
    # The run's config.yaml is rewritten as runs before issue 35 stored it (RLlib's ppo: names): it still resumes.
    stored = yaml.safe_load((run_dir / "config.yaml").read_text())
    renamed = {new: old for old, new in OLD_STORED_PPO_NAMES.items()}
    stored["ppo"] = {renamed.get(key, key): value for key, value in stored["ppo"].items()}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored, sort_keys=False))
    train_module.resume(run_dir, ["iterations=3"], on_iteration=on_iteration)
    assert load_rllib_config(run_dir / "config.yaml") == load_rllib_config(CONFIG, [*RUN, "iterations=3"])
    assert [update["iteration"] for update in updates] == [1, 2, 3]
    assert updates[2]["before"] == updates[1]["after"]  # not fresh statistics
    expected = native_pool_with(updates[1]["after"], pfsp).probabilities().tolist()
    np.testing.assert_allclose(np.array(pushed[3][0]), [expected, expected])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2, 3]
    native = league_scalars(native_pool_with(updates[2]["after"], pfsp))
    assert rows[2]["league/mean_snapshot_win_rate"] == pytest.approx(native["league/mean_snapshot_win_rate"])


@needs_ray
def test_a_run_with_snapshots_per_update_plays_each_iteration_against_the_slots_it_chose(
    tmp_path, monkeypatch, local_ray
):
    import training.rllib.loop as train_module

    games_per_slot: dict[int, np.ndarray] = {}

    class RecordingStats(SlotStats):
        def update(self, runner_metrics, iteration, every):
            games_per_slot[iteration] = slot_results(runner_metrics, len(self))[1]
            super().update(runner_metrics, iteration, every)

    odds_seen: dict[int, list] = {}

    def on_iteration(algorithm, row):  # the odds the envs drew this iteration's slots with
        odds_seen[row["iteration"]] = runner_slot_odds(algorithm)

    monkeypatch.setattr(train_module, "SlotStats", RecordingStats)
    settings = [*RUN, "pool.pfsp=uniform", "pool.max_snapshots=3", "pool.snapshots_per_update=1", "seed=6"]
    train_module.train(load_rllib_config(CONFIG, settings), run_dir=tmp_path / "run", on_iteration=on_iteration)
    expected = SlotStats(PFSP(), 3, snapshots_per_update=1, seed=6)
    assert sorted(odds_seen) == sorted(games_per_slot) == [1, 2]
    for iteration, odds in odds_seen.items():
        chosen = expected.env_probabilities(iteration)
        assert sorted(chosen) == [0.0, 0.0, 1.0]
        np.testing.assert_allclose(np.array(odds), [[chosen] * 2])
        games, slot = games_per_slot[iteration], int(np.argmax(chosen))
        assert games[slot] >= 1 and games.sum() == games[slot]  # every past game against the chosen slot
