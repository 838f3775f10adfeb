"""RLlib integration (issue 6): config, env adapter, masked RLModule, local training, export, clear errors.

The tests that need ray are skipped when the ``rllib`` extra is not installed
(``pip install -e ".[rllib]"``); the config and "extra missing" tests always run.
One module-scoped fixture trains two tiny iterations on a private local Ray
instance with 2 env runners; the export tests reuse its checkpoint.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pickle
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation
from kahuna_policy.model import ModelConfig
from training.ppo.config import ConfigError
from training.ppo.config import load_config as load_training_config
from training.rllib.cli import main
from training.rllib.config import RLlibConfig, config_to_yaml, load_rllib_config
from training.rllib.errors import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
HAS_RAY = importlib.util.find_spec("ray") is not None
_MODEL_FIELDS = {field.name for field in dataclasses.fields(ModelConfig)}
needs_ray = pytest.mark.skipif(not HAS_RAY, reason=f"the rllib extra is not installed ({INSTALL_HINT})")

TINY_RUN = [
    "iterations=2",
    "seed=3",
    "verbose=false",
    "ray.num_cpus=2",
    "env_runners.num_env_runners=2",
    "env_runners.num_envs_per_env_runner=1",
    "ppo.train_batch_size=256",
    "ppo.minibatch_size=128",
    "ppo.update_epochs=1",
    "model.architecture=mlp",
    "model.hidden_sizes=[32,32]",
    "model.activation=tanh",
    "pool.snapshot_every=1",
    "pool.max_snapshots=3",
    "pool.latest=0.3",
    "pool.past=0.4",
    "pool.greedy=0.3",
    "checkpoint.every=1",
]


def random_states(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the player to move along random games."""
    rng = np.random.default_rng(seed)
    observations, masks = [], []
    game = KahunaGame(seed=seed)
    while len(observations) < count:
        if game.is_over:
            game = KahunaGame(seed=int(rng.integers(2**31)))
        observations.append(encode_observation(game, game.current_player))
        masks.append(game.action_mask().astype(np.float32))
        legal = game.legal_actions()
        game.step(legal[rng.integers(len(legal))])
    return np.stack(observations), np.stack(masks)


# ---------------------------------------------------------------------------------------------- config
def test_shipped_config_loads_with_every_section():
    config = load_rllib_config(CONFIG)
    assert isinstance(config, RLlibConfig)
    assert config.ray.address is None
    assert config.env_runners.num_env_runners >= 1
    assert config.learners.num_learners == 0
    # The native trainer's quick recipe (configs/quick.yaml): board network, island shaping, greedy opponents.
    native = load_training_config(ROOT / "configs" / "quick.yaml")
    assert config.model == native.model
    assert config.reward == native.reward
    assert config.pool.shares() == native.pool.shares()
    assert config.snapshot_slots >= 1
    assert config.fault_tolerance.restart_failed_env_runners


def test_overrides_set_any_key():
    config = load_rllib_config(
        CONFIG,
        [
            "env_runners.num_env_runners=8",
            "learners.num_gpus_per_learner=1",
            "ray.address=auto",
            "ppo.lr=1e-4",
            "model.hidden_sizes=[64]",
            "max_minutes=10",
        ],
    )
    assert config.env_runners.num_env_runners == 8
    assert config.learners.num_gpus_per_learner == 1.0
    assert config.ray.address == "auto"
    assert config.ppo.lr == pytest.approx(1e-4)
    assert config.model.hidden_sizes == (64,)
    assert config.max_minutes == 10.0


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("ppo.learning_rate=0.1", "ppo.learning_rate: unknown key"),
        ("env_runner.num_env_runners=2", "env_runner: unknown key"),
        ("ppo.lr=-1", "ppo.lr: must be > 0"),
        ("ppo.minibatch_size=100000", "ppo.minibatch_size: must be <= ppo.train_batch_size"),
        ("env_runners.num_env_runners=two", "env_runners.num_env_runners: expected int"),
        ("pool.greedy=-1", "pool.greedy: must be >= 0"),
        ("pool.snapshots_per_update=0", "pool.snapshots_per_update: must be in [1, 10000] or null, got 0"),
        ("snapshots.share=0.5", "snapshots: unknown key"),
        ("env.variant=chess", "env: variant must be one of"),
        ("ray.object_store_mb=10", "ray.object_store_mb"),
        ("env_runners.batch_mode=whole", "env_runners.batch_mode: must be one of truncate_episodes, complete_episodes"),
    ],
)
def test_config_errors_name_the_key(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_rllib_config(CONFIG, [override])


def test_unknown_key_in_file_is_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("ppo:\n  lr: 1.0e-4\n  epochs: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"ppo\.epochs: unknown key"):
        load_rllib_config(path)


def test_printed_config_loads_back_equal(tmp_path, capsys):
    assert main(["--config", str(CONFIG), "--set", "seed=9", "--print-config"]) == 0
    path = tmp_path / "printed.yaml"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    assert load_rllib_config(path) == load_rllib_config(CONFIG, ["seed=9"])
    assert yaml.safe_load(config_to_yaml(load_rllib_config(path)))["seed"] == 9


def test_cli_config_error_is_one_line_exit_2(capsys):
    assert main(["--config", str(CONFIG), "--set", "ppo.nope=1"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert "ppo.nope: unknown key" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- one PPO vocabulary
RLLIB_ONLY_PPO_KEYS = {"train_batch_size", "vf_clip_param", "kl_coeff", "loss"}
"""``ppo:`` keys with no kahuna-train counterpart (RLlib's batch, its value cap and KL penalty, the loss choice)."""
OLD_STORED_PPO_NAMES = {
    "num_epochs": "update_epochs",
    "entropy_coeff": "ent_coef",
    "clip_param": "clip_coef",
    "vf_loss_coeff": "vf_coef",
    "grad_clip": "max_grad_norm",
}
"""The ``ppo:`` keys a run directory's ``config.yaml`` held before issue 35 (RLlib's names), and today's."""


def test_ppo_keys_are_kahuna_trains_names():
    from training.ppo.config import PPOConfig as NativePPOConfig
    from training.rllib.config import PPO_TO_RLLIB, RLlibPPOConfig

    rllib_keys = {field.name for field in dataclasses.fields(RLlibPPOConfig)}
    native_keys = {field.name for field in dataclasses.fields(NativePPOConfig)}
    assert rllib_keys - RLLIB_ONLY_PPO_KEYS <= native_keys  # every shared knob under the native name
    assert set(PPO_TO_RLLIB) <= rllib_keys
    assert {"update_epochs", "ent_coef", "clip_coef", "vf_coef", "max_grad_norm", "gae_lambda"} <= rllib_keys
    assert not rllib_keys & set(OLD_STORED_PPO_NAMES)


@pytest.mark.parametrize(("old", "new"), sorted(OLD_STORED_PPO_NAMES.items()))
def test_a_ppo_key_under_rllibs_name_is_refused_naming_the_new_key(tmp_path, old, new):
    message = f"ppo.{old}: RLlib's name; write ppo.{new} "
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_rllib_config(CONFIG, [f"ppo.{old}=1"])
    path = tmp_path / "old.yaml"
    path.write_text(f"ppo:\n  {old}: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_rllib_config(path)


def test_rllibs_own_argument_names_are_refused_too():
    with pytest.raises(ConfigError, match=re.escape("ppo.lambda_: RLlib's name; write ppo.gae_lambda ")):
        load_rllib_config(CONFIG, ["ppo.lambda_=0.9"])
    with pytest.raises(ConfigError, match=re.escape("write ppo.train_batch_size ")):
        load_rllib_config(CONFIG, ["ppo.train_batch_size_per_learner=512"])


def test_cli_rllib_name_is_one_line_exit_2(capsys):
    assert main(["--config", str(CONFIG), "--set", "ppo.entropy_coeff=0.01", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert "ppo.entropy_coeff: RLlib's name; write ppo.ent_coef" in err


def _old_run_dir(tmp_path: Path, settings: list[str]) -> Path:
    """A run directory whose ``config.yaml`` is written as before issue 35: RLlib's names under ``ppo:``."""
    values = load_rllib_config(CONFIG, settings).to_dict()
    values["ppo"] = {
        next((old for old, new in OLD_STORED_PPO_NAMES.items() if new == key), key): value
        for key, value in values["ppo"].items()
    }
    assert set(OLD_STORED_PPO_NAMES) <= set(values["ppo"])
    run_dir = tmp_path / "old-run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
    return run_dir


def test_a_run_directory_stored_with_rllibs_names_is_read_in_todays(tmp_path):
    from training.rllib.config import load_run_config
    from training.rllib.errors import TrainingError
    from training.rllib.loop import resume

    run_dir = _old_run_dir(tmp_path, ["ppo.update_epochs=3", "ppo.ent_coef=0.02", "ppo.max_grad_norm=0.7"])
    stored = load_run_config(run_dir / "config.yaml")
    assert stored == load_rllib_config(CONFIG, ["ppo.update_epochs=3", "ppo.ent_coef=0.02", "ppo.max_grad_norm=0.7"])
    assert load_run_config(run_dir / "config.yaml", ["ppo.clip_coef=0.1"]).ppo.clip_coef == 0.1
    # resume reads it: it gets as far as looking for a checkpoint.
    with pytest.raises(TrainingError, match="has no RLlib checkpoint to resume from"):
        resume(run_dir)
    # The overrides are the user's: today's names only.
    with pytest.raises(ConfigError, match=re.escape("ppo.num_epochs: RLlib's name; write ppo.update_epochs")):
        resume(run_dir, ["ppo.num_epochs=2"])
    with pytest.raises(ConfigError, match=re.escape("ppo.num_epochs: RLlib's name")):
        load_rllib_config(run_dir / "config.yaml")  # a config file (not a run's own) gets no translation


def test_the_mapping_to_rllibs_names_is_the_table_in_the_docs():
    from training.rllib.config import PPO_TO_RLLIB

    text = (ROOT / "docs" / "RLLIB.md").read_text(encoding="utf-8")
    section = text.split("### One PPO vocabulary", 1)[1].split("\n#", 1)[0]
    rows = dict(re.findall(r"^\| `ppo\.(\w+)` \| `(\w+)` \|", section, flags=re.MULTILINE))
    assert rows == PPO_TO_RLLIB


@needs_ray
def test_rllibs_ppo_config_takes_each_ppo_key_under_rllibs_name():
    from training.rllib.algorithm import build_ppo_config

    settings = {
        "ppo.lr": 2e-3,
        "ppo.gamma": 0.99,
        "ppo.gae_lambda": 0.9,
        "ppo.train_batch_size": 512,
        "ppo.minibatch_size": 128,
        "ppo.update_epochs": 3,
        "ppo.ent_coef": 0.02,
        "ppo.clip_coef": 0.3,
        "ppo.vf_coef": 0.7,
        "ppo.vf_clip_param": 5.0,
        "ppo.max_grad_norm": 0.9,
        "ppo.kl_coeff": 0.1,
    }
    config = load_rllib_config(CONFIG, [*(f"{key}={value}" for key, value in settings.items()), "ppo.anneal_lr=false"])
    algo = build_ppo_config(config)
    assert (algo.lr, algo.gamma, algo.lambda_) == (2e-3, 0.99, 0.9)
    assert (algo.train_batch_size_per_learner, algo.minibatch_size, algo.num_epochs) == (512, 128, 3)
    assert (algo.entropy_coeff, algo.clip_param, algo.vf_loss_coeff) == (0.02, 0.3, 0.7)
    assert (algo.vf_clip_param, algo.grad_clip, algo.kl_coeff, algo.use_kl_loss) == (5.0, 0.9, 0.1, True)
    assert build_ppo_config(load_rllib_config(CONFIG)).use_kl_loss is False  # kl_coeff: 0


# ---------------------------------------------------------------------------------------------- extra missing
def test_the_command_ends_with_its_status_and_its_output_flushed_without_the_interpreters_teardown():
    # A finished job's driver once crashed in the teardown of Ray's native threads after its last line, and
    # Ray reported the job FAILED: run as the command, after Ray was used, kahuna-rllib ends the process itself.
    script = (
        "import sys, atexit, ray\n"
        "atexit.register(lambda: print('teardown ran', flush=True))\n"
        f"sys.argv = ['kahuna-rllib', '--config', {str(CONFIG)!r}, '--print-config']\n"
        "from training.rllib.cli import main\n"
        "main()\n"
        "print('main returned')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "env_runners:" in done.stdout  # the printed config reached the pipe before the process ended
    assert "main returned" not in done.stdout and "teardown ran" not in done.stdout
    failed = subprocess.run(
        [sys.executable, "-c", script.replace("'--print-config'", "'--print-config', '--set', 'no_such_key=1'")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert failed.returncode == 2 and "no_such_key" in failed.stderr.strip().splitlines()[-1], failed.stderr
    assert "teardown ran" not in failed.stdout


def test_missing_ray_is_a_clear_error_naming_the_install_command():
    # A fresh interpreter in which `import ray` fails, as without the extra.
    script = (
        "import sys, json\n"
        "sys.modules['ray'] = None\n"
        "import training, training.rllib\n"
        "from training.rllib.cli import main\n"
        f"printed = main(['--config', {str(CONFIG)!r}, '--print-config'])\n"
        f"trained = main(['--config', {str(CONFIG)!r}])\n"
        "exported = main(['export', 'some/checkpoint', 'out.pt'])\n"
        "print(json.dumps([printed, trained, exported]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[0, 2, 2]"  # 2, like kahuna-serve without its extra
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 2 and "Traceback" not in done.stderr
    for line in errors:
        assert line.startswith("kahuna-rllib: error: Ray RLlib is not installed")
        assert INSTALL_HINT in line


# ---------------------------------------------------------------------------------------------- unreachable cluster
SLACK_S = 30.0
"""What a fail-fast check may take beyond its own timeouts on a busy machine (the imports are done before the
clock starts).  Without the check, ``ray.init`` waits for minutes, so the bound still tells the two apart."""


def _fail_fast_budget(timeout_s: float) -> float:
    """The wall-clock budget of a check with ``timeout_s``: at most two waits (connect, then the answer) plus slack."""
    import training.rllib.train  # noqa: F401  (imported before the clock starts: on a busy machine, seconds)

    return 2 * timeout_s + SLACK_S


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@needs_ray
def test_unreachable_cluster_fails_fast_with_one_line(capsys):
    import ray

    assert not ray.is_initialized()
    budget = _fail_fast_budget(2)
    start = time.perf_counter()
    status = main(
        ["--config", str(CONFIG), "--set", f"ray.address=127.0.0.1:{_free_port()}", "--set", "ray.connect_timeout_s=2"]
    )
    assert time.perf_counter() - start < budget
    assert status == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert "cannot reach the Ray cluster at 127.0.0.1" in err
    assert not ray.is_initialized()


@needs_ray
def test_a_port_that_is_not_a_ray_head_fails_fast(capsys):
    # Something listens (accepts, never answers): ray.init would wait for minutes here.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        budget = _fail_fast_budget(1)
        start = time.perf_counter()
        status = main(["--set", f"ray.address=127.0.0.1:{port}", "--set", "ray.connect_timeout_s=1"])
        assert time.perf_counter() - start < budget
    finally:
        listener.close()
        for connection in accepted:
            connection.close()
    assert status == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert f"127.0.0.1:{port} accepts connections but is not a Ray cluster's head (GCS) port" in err


@needs_ray
def test_silent_cluster_address_times_out():
    from training.rllib.connect import check_reachable
    from training.rllib.errors import RayConnectionError

    budget = _fail_fast_budget(1.0)
    start = time.perf_counter()
    # TEST-NET-1 (RFC 5737): never answers; the check must give up after the timeout.
    with pytest.raises(RayConnectionError, match=r"cannot reach the Ray cluster at 192\.0\.2\.1:6379"):
        check_reachable("192.0.2.1:6379", 1.0)
    assert time.perf_counter() - start < budget


# ---------------------------------------------------------------------------------------------- env adapter
@needs_ray
def test_env_only_the_player_to_move_observes_and_acts():
    from training.rllib.env import AGENTS, KahunaMultiAgentEnv

    env = KahunaMultiAgentEnv({"random_first_player": False})
    observations, _ = env.reset(seed=5)
    assert list(observations) == ["player_0"]
    observation = observations["player_0"]
    assert observation["observations"].shape == (OBSERVATION_SIZE,)
    assert observation["action_mask"].shape == (NUM_ACTIONS,)
    assert env.observation_spaces["player_0"].contains(observation)
    with pytest.raises(ValueError, match="expected an action for 'player_0' only"):
        env.step({"player_1": 0})
    illegal = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=f"illegal action {illegal}"):
        env.step({"player_0": illegal})
    assert AGENTS == ("player_0", "player_1")


@needs_ray
def test_env_game_ends_with_zero_sum_rewards_and_final_observations_for_both():
    from training.rllib.env import KahunaMultiAgentEnv

    env = KahunaMultiAgentEnv()
    rng = np.random.default_rng(1)
    observations, _ = env.reset(seed=11)
    steps, turn_changes, previous = 0, 0, next(iter(observations))
    while True:
        (agent,) = observations
        turn_changes += agent != previous
        previous = agent
        action = int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
        observations, rewards, terminated, truncated, _ = env.step({agent: action})
        steps += 1
        if terminated["__all__"]:
            break
        assert len(observations) == 1 and not truncated["__all__"]
    assert set(observations) == set(rewards) == {"player_0", "player_1"}
    assert sum(rewards.values()) == 0
    winner = env.game.winner
    expected = {0: {"player_0": 1.0, "player_1": -1.0}, 1: {"player_0": -1.0, "player_1": 1.0}}.get(winner)
    assert rewards == (expected or {"player_0": 0.0, "player_1": 0.0})
    assert steps > turn_changes > 2  # turns of several actions by the same agent


@needs_ray
def test_league_mapping_reads_the_module_from_the_agent_id():
    from training.rllib.league import LEARNER, agent_ids, league_mapping

    assert league_mapping("player_0") == league_mapping("player_1") == LEARNER
    assert league_mapping("player_1@snapshot_2", episode=object()) == "snapshot_2"
    assert agent_ids(2) == [
        "player_0",
        "player_1",
        "player_0@snapshot_0",
        "player_1@snapshot_0",
        "player_0@snapshot_1",
        "player_1@snapshot_1",
    ]


# ---------------------------------------------------------------------------------------------- masked module
@needs_ray
def test_masked_module_never_samples_or_picks_an_illegal_action():
    import torch
    from ray.rllib.core.columns import Columns

    from training.rllib.env import action_space, observation_space
    from training.rllib.module import KahunaRLModule

    module = KahunaRLModule(
        observation_space=observation_space(),
        action_space=action_space(),
        model_config={"hidden_sizes": [32, 32], "activation": "tanh"},
    )
    with torch.no_grad():  # make the unmasked policy prefer illegal actions strongly
        module.net.policy_head.bias.copy_(torch.linspace(50.0, -50.0, NUM_ACTIONS))
    observations, masks = random_states(400)
    batch = {Columns.OBS: {"observations": torch.from_numpy(observations), "action_mask": torch.from_numpy(masks)}}
    legal = torch.from_numpy(masks).bool()

    exploration = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    distribution = module.get_exploration_action_dist_cls().from_logits(exploration)
    for _ in range(50):
        actions = distribution.sample()
        assert legal[torch.arange(len(actions)), actions].all()
    assert torch.allclose(distribution.to_deterministic().sample(), exploration.argmax(-1))
    inference = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    greedy = module.get_inference_action_dist_cls().from_logits(inference).to_deterministic().sample()
    assert legal[torch.arange(len(greedy)), greedy].all()
    probabilities = torch.softmax(module.forward_train(batch)[Columns.ACTION_DIST_INPUTS], dim=-1)
    assert (probabilities[~legal] == 0).all()
    # Without the mask the biased head would have chosen illegal actions: the test can fail.
    unmasked = module.net.policy_head(module.net.trunk(batch[Columns.OBS]["observations"])).argmax(-1)
    assert not legal[torch.arange(len(unmasked)), unmasked].all()


@needs_ray
@pytest.mark.skipif(
    "architecture" not in _MODEL_FIELDS,
    reason="kahuna_policy.model has a single architecture",
)
def test_module_with_the_board_network_masks_and_exports_exactly(tmp_path):
    import torch
    from ray.rllib.core.columns import Columns

    from training import load_agent
    from training.rllib.env import action_space, observation_space
    from training.rllib.export import export_weights
    from training.rllib.module import KahunaRLModule, module_model_config

    small = {"hidden_sizes": (32,), "architecture": "board", "line_width": 16, "context_width": 8}
    model_config = ModelConfig(**{k: v for k, v in small.items() if k in _MODEL_FIELDS})  # the model is evolving
    module = KahunaRLModule(
        observation_space=observation_space(),
        action_space=action_space(),
        model_config=module_model_config(model_config),
    )
    observations, masks = random_states(100, seed=4)
    batch = {Columns.OBS: {"observations": torch.from_numpy(observations), "action_mask": torch.from_numpy(masks)}}
    logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    actions = module.get_exploration_action_dist_cls().from_logits(logits).sample()
    assert torch.from_numpy(masks).bool()[torch.arange(len(actions)), actions].all()
    agent = load_agent(export_weights(module.get_state(), model_config, tmp_path / "board.pt"))
    assert agent.model.config == model_config
    exported, _ = agent.model(torch.from_numpy(observations), torch.from_numpy(masks))
    assert torch.allclose(exported, logits, atol=1e-6)


@needs_ray
def test_module_rejects_other_observation_sizes():
    import gymnasium as gym

    from training.rllib.env import action_space
    from training.rllib.module import KahunaRLModule

    space = gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(0.0, 1.0, (OBSERVATION_SIZE + 1,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        }
    )
    with pytest.raises(ValueError, match=f"this version of kahuna_env uses \\({OBSERVATION_SIZE},\\)"):
        KahunaRLModule(observation_space=space, action_space=action_space(), model_config={"hidden_sizes": [8]})


# ---------------------------------------------------------------------------------------------- local training
@pytest.fixture(scope="module", params=["batched", "env"])
def trained_run(request, tmp_path_factory):
    """A tiny run with each sampler: the batched-engine EnvRunner (the shipped config's) and RLlib's own."""
    if not HAS_RAY:
        pytest.skip(f"the rllib extra is not installed ({INSTALL_HINT})")
    from training.rllib.train import train

    config = load_rllib_config(CONFIG, [*TINY_RUN, f"env_runners.sampler={request.param}"])
    return train(config, run_dir=tmp_path_factory.mktemp("rllib") / "run")


def _module_state(checkpoint: Path, module_id: str) -> dict[str, np.ndarray]:
    path = checkpoint / "learner_group" / "learner" / "rl_module" / module_id / "module_state.pkl"
    with path.open("rb") as file:
        return pickle.load(file)


@needs_ray
def test_training_runs_on_local_ray_with_two_env_runners(trained_run):
    import ray

    assert not ray.is_initialized()  # the run shut down the Ray instance it started
    assert trained_run.iterations == 2
    assert trained_run.env_steps >= 2 * 256
    history = trained_run.history
    assert [row["iteration"] for row in history] == [1, 2]
    assert all(row["entropy"] is not None and row["vf_loss"] is not None for row in history)
    assert all(row["sample_s"] > 0 and row["learn_s"] > 0 for row in history)  # RLlib's timers of the two phases
    # ppo.anneal_lr: RLlib's schedule over iterations x train_batch_size env steps, down to 0.2 x lr.
    assert 2e-4 - 1e-9 <= history[1]["lr"] <= history[0]["lr"] < 1e-3
    if trained_run.env_steps < 2 * 256 * 1.5:  # the batched sampler's whole games may overshoot the whole schedule
        assert history[1]["lr"] < history[0]["lr"]
    lines = (trained_run.run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    sampler = load_rllib_config(trained_run.run_dir / "config.yaml").env_runners.sampler
    assert load_rllib_config(trained_run.run_dir / "config.yaml") == load_rllib_config(
        CONFIG, [*TINY_RUN, f"env_runners.sampler={sampler}"]
    )
    for name in ("iter_000001", "iter_000002"):
        assert (trained_run.run_dir / "checkpoints" / name / "rllib_checkpoint.json").is_file()


@needs_ray
def test_every_sampled_action_was_legal_under_its_mask(trained_run):
    # check_sampled_actions (on_sample_end) compared every sampled action with its mask.
    assert trained_run.illegal_actions == 0
    assert trained_run.actions_checked >= 0.9 * trained_run.env_steps


@needs_ray
def test_snapshot_slots_hold_frozen_past_learners(trained_run):
    learner = _module_state(trained_run.checkpoint, "learner")
    snapshots = [_module_state(trained_run.checkpoint, f"snapshot_{k}") for k in range(3)]

    def same(a, b):
        return all(np.array_equal(a[key], b[key]) for key in a)

    # pool.snapshot_every=1: slot 0 took the learner after iteration 1, slot 1 after iteration 2 (the
    # final learner), slot 2 still holds the initial learner copied in at start-up.
    assert same(snapshots[1], learner)
    assert not same(snapshots[0], learner)
    assert not same(snapshots[2], learner)
    assert not same(snapshots[0], snapshots[2])
    # The snapshots are never trained: the iteration-1 checkpoint's learner is slot 0 now.
    assert same(_module_state(trained_run.run_dir / "checkpoints" / "iter_000001", "learner"), snapshots[0])


# ---------------------------------------------------------------------------------------------- export
@needs_ray
def test_export_gives_the_same_policy_as_the_rllib_module(trained_run, tmp_path):
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    from training import load_agent
    from training.rllib.export import export_checkpoint

    out = export_checkpoint(trained_run.checkpoint, tmp_path / "agent.pt")
    agent = load_agent(out)
    assert agent.model.config.hidden_sizes == (32, 32)
    module = RLModule.from_checkpoint(trained_run.checkpoint / "learner_group" / "learner" / "rl_module" / "learner")
    observations, masks = random_states(64, seed=3)
    batch = {Columns.OBS: {"observations": torch.from_numpy(observations), "action_mask": torch.from_numpy(masks)}}
    rllib_logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    exported_logits, _ = agent.model(torch.from_numpy(observations), torch.from_numpy(masks))
    assert torch.allclose(rllib_logits, exported_logits, atol=1e-5)
    # The agent written at the end of the run is the same policy.
    final = load_agent(trained_run.agent)
    for key, value in agent.model.state_dict().items():
        assert torch.equal(value, final.model.state_dict()[key])


@needs_ray
def test_exported_agent_plays_legal_games_against_random_in_kahuna_eval(trained_run, tmp_path, capsys):
    from kahuna_arena.eval_cli import main as kahuna_eval
    from kahuna_arena.evaluation import run_evaluation

    out = tmp_path / "agent.pt"
    assert main(["export", str(trained_run.checkpoint), str(out)]) == 0
    # kahuna-eval's code path: seat-balanced games; any illegal action would raise in game.step.
    report = run_evaluation([str(out), "random"], games=8, seed=5)
    (pairing,) = report.pairings
    assert pairing.games == pairing.wins + pairing.draws + pairing.losses == 8
    assert pairing.seat_games == (4, 4)
    assert pairing.decisions[0] > 8 * 20  # the exported policy chose many moves in every game
    assert kahuna_eval([str(out), "random", "--games", "4", "--no-progress"]) == 0
    assert "random" in capsys.readouterr().out


@needs_ray
def test_cli_export_flag_and_other_module(trained_run, tmp_path, capsys):
    import torch

    out = tmp_path / "snapshot.pt"
    assert main(["--export", str(trained_run.checkpoint), str(out), "--module", "snapshot_1"]) == 0
    payload = torch.load(out, weights_only=True)
    assert payload["format"] == "kahuna-agent-v1" and payload["meta"]["module_id"] == "snapshot_1"
    assert "exported module 'snapshot_1'" in capsys.readouterr().out


@needs_ray
def test_export_of_a_missing_module_lists_the_modules(trained_run, tmp_path, capsys):
    assert main(["export", str(trained_run.checkpoint), str(tmp_path / "x.pt"), "--module", "champion"]) == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert "has no module 'champion'" in err and "'learner', 'snapshot_0'" in err
    assert not (tmp_path / "x.pt").exists()


@needs_ray
def test_export_rejects_a_module_with_another_observation_size(trained_run, tmp_path):
    from training.rllib.errors import IncompatibleCheckpointError
    from training.rllib.export import export_checkpoint

    # A checkpoint of an older/newer Kahuna setup: observations of 200 features.
    module_dir = tmp_path / "old" / "learner_group" / "learner" / "rl_module" / "learner"
    module_dir.mkdir(parents=True)
    source = trained_run.checkpoint / "learner_group" / "learner" / "rl_module" / "learner"
    with (source / "class_and_ctor_args.pkl").open("rb") as file:
        ctor = pickle.load(file)
    import gymnasium as gym

    ctor["ctor_args_and_kwargs"][1]["observation_space"] = gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(0.0, 1.0, (200,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        }
    )
    with (module_dir / "class_and_ctor_args.pkl").open("wb") as file:
        pickle.dump(ctor, file)
    (module_dir / "module_state.pkl").write_bytes((source / "module_state.pkl").read_bytes())
    with pytest.raises(IncompatibleCheckpointError, match=r"observations have shape \(200,\)"):
        export_checkpoint(tmp_path / "old", tmp_path / "x.pt")


@needs_ray
def test_export_rejects_a_foreign_rllib_module(tmp_path):
    import gymnasium as gym
    from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from training.rllib.errors import IncompatibleCheckpointError
    from training.rllib.export import export_checkpoint

    module = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        catalog_class=PPOCatalog,
        observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={"fcnet_hiddens": [8]},
    ).build()
    module.save_to_path(str(tmp_path / "cartpole" / "learner_group" / "learner" / "rl_module" / "learner"))
    with pytest.raises(IncompatibleCheckpointError, match="not made by a compatible Kahuna run"):
        export_checkpoint(tmp_path / "cartpole", tmp_path / "x.pt")


@needs_ray
def test_export_of_a_directory_that_is_no_checkpoint(tmp_path, capsys):
    assert main(["export", str(tmp_path), str(tmp_path / "x.pt")]) == 1
    assert "is not an RLlib algorithm checkpoint" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing"), str(tmp_path / "x.pt")]) == 1
    assert "RLlib checkpoint not found" in capsys.readouterr().err
