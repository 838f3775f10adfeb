"""Any entrant as a training opponent (issue 77): the league's ``entrant`` kind and ``kahuna-exploit`` targets.

A config names any entrant (``pool.entrant_agent``: an ONNX file, a ``py:`` agent, ...) with a share
(``pool.entrant``); its games are played batched through ``act_batch`` (the same games as asking it game
by game), seeded from the batch's generator; a bad entrant is one line naming the key before anything is
written; every existing config splits its games exactly as before the kind existed.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from test_exploit import TINY
from test_external_agents import onnx_file  # noqa: F401  (the fixture: an ONNX file of the convention)
from test_league import tiny_run_args

from kahuna_env.engine import KahunaConfig
from kahuna_env.gym_env import make_opponent
from kahuna_env.seated import PerGamePolicy, play_seated
from kahuna_env.vector import KahunaBatch
from kahuna_policy.model import ActorCritic, ModelConfig
from training.cli import main as train_main
from training.league.pool import (
    AGENT_KINDS,
    KIND_ENTRANT,
    KIND_MCTS,
    KINDS,
    OpponentPool,
    split_counts,
)
from training.ppo.config import ConfigError, load_config
from training.ppo.metrics import read_metrics
from training.recipes import recipe_path
from training.selfplay.collector import SelfPlayCollector
from training.selfplay.policies import EntrantPolicy
from training.tools.exploit import EXPLOIT_FILE, Target
from training.tools.exploit import main as exploit_main

RANDOM_LEGAL = '''"""A py: agent: a legal action drawn from the generator reset() seeds; it counts what it is asked."""
import numpy as np


class Agent:
    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.calls = 0
        self.decisions = 0

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask):
        return int(self.rng.choice(np.flatnonzero(action_mask)))

    def act_batch(self, observations, masks):
        self.calls += 1
        self.decisions += len(masks)
        return np.array([self.act(row, mask) for row, mask in zip(observations, masks)])
'''

LINEAR = '''"""A py: agent: the legal action of highest score under a fixed linear map of the observation."""
import numpy as np

WEIGHTS = np.random.default_rng(5).normal(size=(246, 179))


def act(observation, action_mask):
    return int(np.argmax(np.where(action_mask != 0, observation @ WEIGHTS, -np.inf)))
'''

TINY_MODEL = ModelConfig(hidden_sizes=(16,))


def _agent_file(folder, text: str, name: str = "agent.py") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------------------------- existing configs
def test_the_kinds_keep_their_codes_and_the_entrant_comes_last():
    assert KINDS[:5] == ("latest", "past", "greedy", "random", "mcts")
    assert KINDS.index("entrant") == KIND_ENTRANT == 5
    assert AGENT_KINDS == (KIND_MCTS, KIND_ENTRANT)


def test_an_existing_config_splits_and_seats_its_games_as_before_the_entrant_kind():
    # Pinned from the code before the kind existed: the smoke recipe's shares, split and a seeded assignment.
    config = load_config(recipe_path("smoke"))
    assert config.pool.shares() == {
        "latest": 0.5, "past": 0.25, "greedy": 0.125, "random": 0.125, "mcts": 0.0, "entrant": 0.0
    }  # fmt: skip
    assert split_counts(12, config.pool.shares()) == {
        "latest": 6, "past": 3, "greedy": 2, "random": 1, "mcts": 0, "entrant": 0
    }  # fmt: skip
    pool = OpponentPool(config.model, 2)
    pool.add(ActorCritic(config.model), 0)
    assignment = pool.assign(12, config.pool.shares(), np.random.default_rng(3))
    assert assignment.kinds.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
    assert assignment.learner_seats[:, 0].astype(int).tolist() == [1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 0]
    assert assignment.learner_seats[:, 1].astype(int).tolist() == [1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1]
    assert assignment.snapshots.tolist() == [-1] * 6 + [0, 0, 0] + [-1] * 3
    for name in ("default", "quick", "champion", "exploit"):
        recipe = load_config(recipe_path(name))
        assert recipe.pool.entrant == 0 and recipe.pool.entrant_agent is None
        assert split_counts(recipe.rollout.num_games, recipe.pool.shares())["entrant"] == 0


# ---------------------------------------------------------------------------------------------- playing an entrant
def test_a_py_entrant_plays_its_share_of_the_games_in_batched_calls(tmp_path):
    spec = f"py:{_agent_file(tmp_path, RANDOM_LEGAL)}:Agent"
    model = ActorCritic(TINY_MODEL).eval()
    pool = OpponentPool(TINY_MODEL, 1)
    rng = np.random.default_rng(0)
    collector = SelfPlayCollector(8, model_config=TINY_MODEL, entrant_agent=spec)
    rollout = collector.collect(model, pool, pool.assign(8, {"latest": 0.5, "entrant": 0.5}, rng), rng)
    assert sum(rollout.stats.results["entrant"]) == 4  # the entrant's share: 4 of the 8 games
    asked = collector.entrant.target
    assert asked.decisions > asked.calls > 0  # several games' decisions in each call


def test_the_entrant_is_seeded_from_the_batch_so_the_same_seed_plays_the_same_games(tmp_path):
    spec = f"py:{_agent_file(tmp_path, RANDOM_LEGAL)}:Agent"
    model = ActorCritic(TINY_MODEL).eval()
    pool = OpponentPool(TINY_MODEL, 1)
    collector = SelfPlayCollector(6, model_config=TINY_MODEL, entrant_agent=spec)

    def actions(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return collector.collect(model, pool, pool.assign(6, {"entrant": 1.0}, rng), rng).actions

    first = actions(4)
    assert np.array_equal(first, actions(4))  # the same agent, reseeded: its earlier games leave no trace
    assert not np.array_equal(first, actions(5))


def test_a_batched_entrant_plays_the_games_it_plays_asked_game_by_game(tmp_path):
    agent = make_opponent(f"py:{_agent_file(tmp_path, LINEAR)}:act")

    def play(policy) -> tuple[list, list, int]:
        games = KahunaBatch(6, KahunaConfig(), seed=0)
        games.reset(game_seeds=list(range(6)))
        played = play_seated(games, [policy], np.zeros((6, 2), dtype=np.intp))
        return games.scores.tolist(), games.winner.tolist(), played

    batched = EntrantPolicy(agent, np.random.default_rng(0))
    assert batched.batched
    assert play(batched) == play(PerGamePolicy(agent, np.random.default_rng(0)))


def test_a_search_entrant_is_asked_game_by_game():
    assert not EntrantPolicy(make_opponent("mcts:2"), np.random.default_rng(0)).batched


def test_an_onnx_entrant_trains_and_its_games_are_in_the_metrics(onnx_file, tmp_path):  # noqa: F811
    run_dir = tmp_path / "run"
    shares = ("pool.latest=0.5", "pool.past=0", "pool.greedy=0", "pool.random=0", "pool.entrant=0.5")
    args = tiny_run_args(run_dir, "total_updates=2", *shares, f"pool.entrant_agent={onnx_file}")
    assert train_main(args) == 0
    records = read_metrics(run_dir / "metrics.jsonl")
    assert len(records) == 2 and all("rollout/win_rate_vs_entrant" in record for record in records)
    assert load_config(run_dir / "config.yaml").pool.entrant_agent == str(onnx_file)


def test_a_py_entrant_is_built_in_each_collection_worker_and_the_run_resumes(tmp_path):
    spec = f"py:{_agent_file(tmp_path, RANDOM_LEGAL)}:Agent"
    run_dir = tmp_path / "run"
    shares = ("pool.latest=0.5", "pool.past=0", "pool.greedy=0", "pool.random=0", "pool.entrant=0.5")
    args = tiny_run_args(run_dir, "total_updates=1", "rollout.workers=1", *shares, f"pool.entrant_agent={spec}")
    assert train_main(args) == 0
    assert train_main(["--resume", str(run_dir), "--set", "total_updates=2", "--set", "rollout.workers=0"]) == 0
    records = read_metrics(run_dir / "metrics.jsonl")
    assert [record["update"] for record in records] == [1, 2]
    assert all("rollout/win_rate_vs_entrant" in record for record in records)


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["pool.entrant=0.2"], "pool.entrant_agent: must name the opponent of the pool.entrant games"),
        (["pool.entrant=0.2", "pool.entrant_agent=x.pt@mcts:0"], "pool.entrant_agent: bad simulation budget"),
        (["pool.entrant_agent=py:no_attribute"], "pool.entrant_agent: bad Python agent 'py:no_attribute'"),
        (["pool.entrant_agent=mcts:abc"], "pool.entrant_agent: bad simulation budget in 'mcts:abc'"),
        (["pool.entrant_agent=''"], "pool.entrant_agent: an entrant must be a non-empty string"),
        (["pool.entrant_agent=[1]"], "pool.entrant_agent: expected str or null"),
        (["pool.entrant=-1", "pool.entrant_agent=greedy"], "pool.entrant: must be >= 0"),
    ],
)
def test_an_entrant_written_wrong_is_one_config_line_at_load(overrides, message):
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=overrides)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("entrant", "message"),
    [
        ("nonesuch", "pool.entrant_agent: opponent unknown entrant 'nonesuch'"),
        ("missing.onnx", "pool.entrant_agent: opponent agent file not found: 'missing.onnx'"),
        ("py:missing_agent.py:act", "pool.entrant_agent: opponent Python agent file not found"),
        ("py:no_such_module_here:act", "No module named 'no_such_module_here'"),
    ],
)
def test_an_entrant_that_cannot_be_built_stops_the_run_before_anything_is_written(
    tmp_path, monkeypatch, capsys, entrant, message
):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    assert train_main(tiny_run_args(run_dir, "pool.entrant=0.2", f"pool.entrant_agent={entrant}")) == 2
    err = capsys.readouterr().err
    assert err.startswith("kahuna-train: error: pool.entrant_agent: ") and err.count("\n") == 1
    assert message in err
    assert not run_dir.exists()


def test_the_rllib_trainer_refuses_an_entrant_share_in_one_line():
    from training.rllib.config import load_rllib_config

    with pytest.raises(ConfigError, match=r"^pool\.entrant: is not supported by the RLlib trainer"):
        load_rllib_config(overrides=["pool.entrant=0.1", "pool.entrant_agent=greedy"])


# ---------------------------------------------------------------------------------------------- kahuna-exploit
def test_a_py_agent_file_is_an_exploitation_target_played_as_the_entrant(tmp_path):
    spec = f"py:{_agent_file(tmp_path, RANDOM_LEGAL)}:Agent"
    target = Target(spec)
    assert (target.kind, target.model) == ("entrant", None) and target.pool(None) is None
    assert f"pool.entrant_agent={json.dumps(spec)}" in target.overrides(0.5)
    run_dir, db = tmp_path / "run", tmp_path / "results.sqlite"
    args = [spec, "--minutes", "5", *TINY, "--set", f"eval.db={db}", "--games", "4", "--run-dir", str(run_dir)]
    assert exploit_main(args) == 0
    report = json.loads((run_dir / EXPLOIT_FILE).read_text())
    assert report["learning_curve_metric"] == "rollout/win_rate_vs_entrant"
    assert [point["update"] for point in report["learning_curve"]] == [1, 2]
    assert report["final"]["games"] == 4
    shares = load_config(run_dir / "config.yaml").pool
    assert (shares.entrant, shares.greedy, shares.entrant_agent) == (0.5, 0.5, spec)
    # The final match's target is keyed in the store as kahuna-eval keys it: by the file's content.
    from kahuna_arena.evaluation import entrant_identity

    with sqlite3.connect(db) as store:
        keys = {key for (key,) in store.execute("SELECT key FROM entrants WHERE kind = 'file'")}
    assert keys == {entrant_identity(spec).key} and next(iter(keys)).startswith("py:sha256:")


def test_kahuna_exploit_sets_an_entrant_target_s_key_itself(tmp_path, capsys):
    spec = f"py:{_agent_file(tmp_path, RANDOM_LEGAL)}:Agent"
    args = [spec, "--minutes", "1", "--set", "pool.entrant_agent=greedy", "--run-dir", str(tmp_path / "run")]
    assert exploit_main(args) == 2
    err = capsys.readouterr().err
    assert "--set pool.entrant_agent: kahuna-exploit sets pool.entrant_agent itself (the entrant is AGENT)" in err
    assert not (tmp_path / "run").exists()
