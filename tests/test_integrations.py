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
import tempfile
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
    """Execute the recipe ``name`` of docs/ECOSYSTEM.md as written; returns what it printed.

    It runs in an empty working directory, which it must leave empty: a recipe a
    user pastes should not leave logs or checkpoints behind (skrl, for one, writes
    both under ``./runs`` unless told not to).
    """
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    output = io.StringIO()
    with tempfile.TemporaryDirectory() as cwd, contextlib.chdir(cwd):
        with contextlib.redirect_stdout(output), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(RECIPES[name], f"docs/ECOSYSTEM.md recipe {name}", "exec"), {"__name__": f"recipe_{name}"})
        left = sorted(str(path.relative_to(cwd)) for path in Path(cwd).rglob("*"))
    assert not left, f"recipe {name} left files in its working directory: {left}"
    return output.getvalue()


def test_every_library_section_has_its_recipe() -> None:
    assert set(RECIPES) == {
        "gymnasium-vector",
        "gymnasium-vector-next-step",
        "sb3",
        "sb3-native-vector",
        "pettingzoo-registry",
        "pettingzoo-parallel",
        "tianshou",
        "tianshou-single-agent",
        "torchrl",
        "torchrl-native-vector",
        "supersuit",
        "skrl",
        "onnxruntime",
    }


def test_every_recipe_has_its_output_line_in_the_docs() -> None:
    text = ECOSYSTEM.read_text("utf-8")
    assert "OUTPUT-" not in text, "a recipe's output line is missing in docs/ECOSYSTEM.md"


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


def test_sb3_on_the_native_vector_env_recipe() -> None:
    needs("stable_baselines3", "sb3_contrib")
    with warnings.catch_warnings():
        warnings.simplefilter("error", kahuna_env.IllegalActionWarning)
        output = run_recipe("sb3-native-vector")
    assert re.search(r"MaskablePPO 1024 steps on KahunaVectorEnv \(8 games at once\), [1-9]\d* episodes", output), (
        output
    )


def test_the_sb3_adapter_refuses_next_step_autoreset_in_one_line() -> None:
    needs("stable_baselines3")
    import gymnasium

    from kahuna_env.sb3 import VecEnv

    envs = gymnasium.make_vec("Kahuna-v0", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="must use same-step auto-reset") as error:
        VecEnv(envs)
    assert "\n" not in str(error.value)
    envs.close()


def test_the_sb3_adapter_reports_final_infos_and_seeds_like_sb3() -> None:
    needs("stable_baselines3")
    import gymnasium

    from kahuna_env.sb3 import VecEnv

    def play(seed: int) -> tuple[list[np.ndarray], list[dict]]:
        vec = VecEnv(gymnasium.make_vec("Kahuna-v0", num_envs=2, opponent="greedy", observation="flat"))
        vec.seed(seed)
        observations, finals = [vec.reset()], []
        rng = np.random.default_rng(seed)
        while len(finals) < 2:
            masks = vec.env_method("action_masks")
            observations_, _, dones, infos = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
            observations.append(observations_)
            finals += [info for done, info in zip(dones, infos, strict=True) if done]
        return observations, finals

    first, finals = play(5)
    again, _ = play(5)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))  # seed(s): the same games
    for info in finals:
        assert info["terminal_observation"].shape == (246,) and info["winner"] in (-1, 0, 1)
        assert info["TimeLimit.truncated"] is False


def test_pettingzoo_registry_recipe() -> None:
    output = run_recipe("pettingzoo-registry")
    assert re.search(
        r"pass api_test, parallel_api_test, seed_test; max_cycles=60 truncated the game after 60 steps: True", output
    ), output


def test_tianshou_single_agent_recipe() -> None:
    needs("tianshou")
    output = run_recipe("tianshou-single-agent")
    assert re.search(
        r"single-agent: \d{3,} env steps \([1-9]\d* games\) against random, [1-9]\d* update steps", output
    ), output


def test_torchrl_on_the_native_vector_env_recipe() -> None:
    needs("torchrl", "tensordict")
    output = run_recipe("torchrl-native-vector")
    assert re.search(r"GymWrapper\(KahunaVectorEnv\): 4 x 200 masked steps, [1-9]\d* games ended", output), output


def test_torchrl_gymenv_builds_its_own_vector_env_of_the_wrapper() -> None:
    needs("torchrl", "tensordict")
    torch = pytest.importorskip("torch")
    from torchrl.envs import GymEnv

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = GymEnv("kahuna_env:Kahuna-v0", num_envs=2, observation="flat")
        try:
            assert tuple(env.batch_size) == (2,)
            assert env.rollout(3)["observation"].shape[-1] == 246
        finally:
            env.close()


def test_gymnasiums_vector_wrappers_apply_to_the_native_env() -> None:
    import gymnasium
    from gymnasium.wrappers.vector import NormalizeReward, RecordEpisodeStatistics

    envs = NormalizeReward(RecordEpisodeStatistics(gymnasium.make_vec("Kahuna-v0", num_envs=4, opponent="greedy")))
    assert type(envs.unwrapped).__name__ == "KahunaVectorEnv"
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(300):
        masks = envs.unwrapped.action_masks()
        *_, infos = envs.step([rng.choice(np.flatnonzero(mask)) for mask in masks])
        if "episode" in infos:
            episodes += int(infos["_episode"].sum())
            assert set(np.abs(infos["episode"]["r"][infos["_episode"]])) <= {0.0, 1.0}  # raw results, not normalized
    assert episodes >= 4


def test_skrl_recipe() -> None:
    needs("skrl")
    output = run_recipe("skrl")
    assert "PPO, 128 steps x 4 games of the native vector env, mask-less" in output, output


def test_onnxruntime_recipe() -> None:
    needs("onnx", "onnxruntime")
    output = run_recipe("onnxruntime")
    assert re.search(r"max abs difference logits \S+, value \S+; same greedy action", output), output
    assert re.search(r"the exported champion \(player_0\) vs random: winner (-1|0|1), scores \[\d+, \d+\]", output), (
        output
    )


def test_wandb_logging_offline_records_the_metrics_and_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs("wandb")
    from training.cli import main as train_main

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "cache"))
    smoke = Path(__file__).resolve().parent.parent / "configs" / "smoke.yaml"
    run_dir = tmp_path / "wandb-smoke"
    settings = ["logging.wandb=true", "total_updates=2", "logging.tensorboard=false", "logging.plot=false"]
    arguments = ["--config", str(smoke), "--run-dir", str(run_dir)]
    for setting in settings:
        arguments += ["--set", setting]
    assert train_main(arguments) == 0
    import wandb

    # The run's records reach its file through W&B's service process; a CI run once read the file
    # before they did (only its header). Stopping the service closes the file.
    wandb.teardown()
    run_files = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(run_files) == 1
    data = run_files[0].read_bytes()
    for name in (b"losses/value_loss", b"charts/episodic_return", b"global_step", b"island_shaping"):
        assert name in data, name  # the TensorBoard metric names and the config reached the W&B run


def test_wandb_without_the_package_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util as util

    from training.ppo.config import ConfigError, LoggingConfig

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *args: None if name == "wandb" else real(name, *args))
    with pytest.raises(
        ConfigError, match=r'logging.wandb: true needs the wandb package: pip install "kahuna-rl\[wandb\]"'
    ):
        LoggingConfig(wandb=True)
    with pytest.raises(ConfigError, match=r"logging\.wandb_project"):
        LoggingConfig(wandb_project="a/b")


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
