"""The recipes of docs/ECOSYSTEM.md, run as written, and what each library records.

Every ``python`` block of docs/ECOSYSTEM.md that starts with ``# recipe: NAME``
is executed here unmodified (in this process, torch on one thread), and its
printed line is checked.  The libraries come with the ``integrations`` extra
(``pip install -e ".[dev,integrations]"``); without it these tests skip,
saying which package is missing.  Marked ``integrations``: ``pytest -m
integrations`` runs them alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import drawn_final_turn_position, final_turns_position

import kahuna_env
from kahuna_env import actions as A
from kahuna_env.engine import KahunaGame
from kahuna_env.env import AGENTS

ECOSYSTEM = Path(__file__).resolve().parent.parent / "docs" / "ECOSYSTEM.md"
RECIPE = re.compile(r"```python\n(# recipe: ([\w-]+)\n.*?)```", re.S)
RECIPES: dict[str, str] = {match.group(2): match.group(1) for match in RECIPE.finditer(ECOSYSTEM.read_text("utf-8"))}
EXTRA = 'the "integrations" extra (pip install -e ".[dev,integrations]")'

pytestmark = pytest.mark.integrations


def needs(*modules: str) -> None:
    """Skip the test unless every module can be imported, naming the first missing one."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: it comes with {EXTRA}")


def run_recipe(name: str) -> str:
    """Execute the recipe ``name`` of docs/ECOSYSTEM.md as written; returns what it printed."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(RECIPES[name], f"docs/ECOSYSTEM.md recipe {name}", "exec"), {"__name__": f"recipe_{name}"})
    return output.getvalue()


def test_every_library_section_has_its_recipe() -> None:
    assert set(RECIPES) == {
        "gymnasium-vector",
        "gymnasium-vector-next-step",
        "sb3",
        "pettingzoo-parallel",
        "tianshou",
        "torchrl",
        "supersuit",
    }


# ---------------------------------------------------------------------------------------------- recipes
def test_gymnasium_vector_recipes() -> None:
    output = run_recipe("gymnasium-vector")
    assert re.search(r"make_vec \(same-step\): 2000 steps, [1-9]\d* episodes", output), output
    output = run_recipe("gymnasium-vector-next-step")
    assert re.search(r"make_vec sync \(next-step\): 600 steps, [1-9]\d* episodes", output), output
    assert re.search(r"make_vec async \(next-step\): 600 steps, [1-9]\d* episodes", output), output


def test_pettingzoo_parallel_recipe() -> None:
    output = run_recipe("pettingzoo-parallel")
    assert re.search(r"parallel_api_test passed; a game of \d+ steps", output), output


def test_sb3_recipe() -> None:
    needs("stable_baselines3", "sb3_contrib")
    with warnings.catch_warnings():
        warnings.simplefilter("error", kahuna_env.IllegalActionWarning)  # MaskablePPO never acts illegally
        output = run_recipe("sb3")
    assert re.search(r"check_env passed; MaskablePPO 512 steps on one env \([1-9]\d* episodes\)", output), output
    assert re.search(r"512 on make_vec_env\(n_envs=2\) \([1-9]\d* episodes\)", output), output


def test_tianshou_recipe() -> None:
    needs("tianshou")
    output = run_recipe("tianshou")
    assert re.search(r"tianshou [\d.]+: \d{4,} env steps \([1-9]\d* games\), [1-9]\d* update steps", output), output


def test_torchrl_recipe() -> None:
    needs("torchrl", "tensordict")
    output = run_recipe("torchrl")
    for name in ("aec", r"aec flat \(info mask\)", "parallel"):
        assert re.search(rf"{name}: check_env_specs passed, 300 masked steps, [1-9]\d* games ended", output), output


def test_supersuit_recipe() -> None:
    needs("supersuit")
    output = run_recipe("supersuit")
    assert "flatten/dtype/normalize/frame_stack on the flat env, observation (492,)" in output, output
    assert re.search(r"300 steps, [1-9]\d* games ended", output), output


# ---------------------------------------------------------------------------------------------- what gets recorded
def _tianshou_rows(closing_step: bool, steps: int) -> list[tuple[list[str], np.ndarray]]:
    """Masked random play through Tianshou's collector; the finished episodes as (agent ids, reward rows)."""
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, ReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv

    def get_env() -> PettingZooEnv:
        return PettingZooEnv(kahuna_env.env(closing_step=closing_step))

    env = get_env()
    players = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in range(2)]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=players, env=env)
    buffer = ReplayBuffer(steps + 10)
    collector = Collector(algorithm, DummyVectorEnv([get_env]), buffer)
    collector.reset(reset_buffer=True, gym_reset_kwargs={"seed": 0})
    # Tianshou's random players draw from numpy's global generator: seed it (and put it back after),
    # so the games are the same on every run.
    global_state = np.random.get_state()
    np.random.seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            collector.collect(n_step=steps)
    finally:
        np.random.set_state(global_state)
    data = buffer[np.arange(len(buffer))]
    episodes, start = [], 0
    for index in np.flatnonzero(data.terminated | data.truncated):
        episodes.append((list(data.obs.agent_id[start : index + 1]), np.asarray(data.rew[start : index + 1])))
        start = index + 1
    return episodes


def test_tianshou_records_each_seats_final_reward_in_its_own_rows_with_closing_step() -> None:
    needs("tianshou")
    episodes = _tianshou_rows(closing_step=True, steps=700)
    assert episodes, "no game finished"
    for agent_ids, rewards in episodes:
        assert agent_ids[-1] != agent_ids[-2]  # the last row is the closing step of the seat that did not end the game
        results = []
        for seat, agent in enumerate(AGENTS):
            own = rewards[[i for i, acting in enumerate(agent_ids) if acting == agent], seat]
            # The seat's return over its own rows is its final result, carried by its last row.
            assert own[-1] in (-1.0, 0.0, 1.0) and own.sum() == own[-1]
            results.append(own[-1])
        assert results[0] == -results[1]
    assert any(rewards.any() for _, rewards in episodes)


def test_tianshou_buffer_stores_a_drawn_game_after_a_decided_one() -> None:
    """The final infos stay storable: Tianshou's buffer builds an int array from the first ``winner``
    it sees and could not store a draw's winner if it were ``None`` (a crash in long runs)."""
    needs("tianshou")
    from tianshou.data import Batch, ReplayBuffer

    from kahuna_env.env import final_info

    decided = KahunaGame.from_dict(final_turns_position(1))
    decided.step(A.PASS)
    drawn = KahunaGame.from_dict(drawn_final_turn_position())
    drawn.step(A.PASS)
    assert decided.winner == 0 and drawn.winner is None
    buffer = ReplayBuffer(8)
    for info in ({}, final_info(decided), {}, final_info(drawn)):
        row = Batch(obs=np.zeros(2), act=0, rew=0.0, terminated=False, truncated=False, obs_next=np.zeros(2), info=info)
        buffer.add(Batch.stack([row]))
    assert np.ravel(buffer.info.winner[[1, 3]]).tolist() == [0, -1]


def test_without_closing_step_tianshou_gives_the_result_to_the_mover_only() -> None:
    needs("tianshou")
    episodes = _tianshou_rows(closing_step=False, steps=700)
    decided = [(ids, rewards) for ids, rewards in episodes if rewards[-1].any()]
    assert decided, "no decided game"
    for agent_ids, rewards in decided:
        other = 1 - AGENTS.index(agent_ids[-1])
        other_rows = [i for i, acting in enumerate(agent_ids) if acting == AGENTS[other]]
        assert rewards[other_rows, other].sum() == 0.0  # the limit closing_step removes
