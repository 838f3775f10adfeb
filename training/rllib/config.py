"""Typed configuration of RLlib runs: ``configs/rllib.yaml`` maps onto :class:`RLlibConfig`.

The same machinery as the native trainer (:mod:`training.ppo.config`): every key
of the YAML file is a field of a frozen dataclass with a one-line help in the
docstring; an unknown key, a wrong type or a bad value is a
:class:`~training.ppo.config.ConfigError` naming the key (``ppo.lr: must be > 0,
got -1.0``); ``--set section.key=value`` overrides any key, the value parsed
as YAML (``--set env_runners.num_env_runners=8``, ``--set ray.address=auto``).

One PPO vocabulary: the ``ppo:`` keys are kahuna-train's (``ent_coef``,
``clip_coef``, ``update_epochs``, ...), and :data:`PPO_TO_RLLIB` is the one
table that maps them to RLlib's arguments (:func:`rllib_training_arguments`;
:func:`training.rllib.algorithm.build_ppo_config` builds RLlib's whole
``PPOConfig``).

This module needs neither ray nor torch beyond what :mod:`training` already
imports, so a config can be checked without the ``rllib`` extra installed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kahuna_policy.model import ModelConfig

# The typed-config machinery of the native trainer, shared so both configs behave the same.
from training.ppo.config import (
    ConfigError,
    EnvConfig,
    PoolConfig,
    PPOHyperparameters,
    RewardConfig,
    apply_overrides,
    build_section,
    check_value,
    plain_value,
    read_yaml,
)

__all__ = [
    "PPO_TO_RLLIB",
    "RLLIB_PPO_NAMES",
    "ConfigError",
    "EnvRunnersConfig",
    "FaultToleranceConfig",
    "KahunaEnvConfig",
    "LearnersConfig",
    "PoolConfig",
    "RLlibCheckpointConfig",
    "RLlibConfig",
    "RLlibPPOConfig",
    "RayConfig",
    "RewardConfig",
    "config_to_yaml",
    "load_rllib_config",
    "load_run_config",
    "rllib_config_from_dict",
    "rllib_training_arguments",
]


@dataclasses.dataclass(frozen=True)
class RayConfig:
    """Where the run executes.

    Attributes:
        address: null: start a private local Ray instance (unless the ``RAY_ADDRESS``
            environment variable names a cluster, as inside ``ray job submit``);
            ``"auto"``: join the Ray cluster running on this node (``ray start --head``
            or ``ray start --address=...`` ran here); ``"HOST:PORT"``: join the cluster
            whose head listens there (default port 6379).
        connect_timeout_s: give up joining a cluster after this many seconds.
        num_cpus: local instance only: CPUs Ray may schedule (null: what the env runners
            and learners need).
        object_store_mb: local instance only: object store size in MB.
    """

    address: str | None = None
    connect_timeout_s: float = 10.0
    num_cpus: int | None = None
    object_store_mb: int = 200

    def __post_init__(self) -> None:
        check_value(
            self.address is None or bool(self.address.strip()), "ray.address", "must be null or non-empty", self.address
        )
        check_value(self.connect_timeout_s > 0, "ray.connect_timeout_s", "must be > 0", self.connect_timeout_s)
        check_value(self.num_cpus is None or self.num_cpus >= 1, "ray.num_cpus", "must be >= 1 or null", self.num_cpus)
        check_value(
            self.object_store_mb >= 75, "ray.object_store_mb", "must be >= 75 (Ray's minimum)", self.object_store_mb
        )


@dataclasses.dataclass(frozen=True)
class KahunaEnvConfig(EnvConfig):
    """Rule options of the games: kahuna-train's ``env:`` (:class:`training.ppo.config.EnvConfig`) and one more.

    Attributes:
        random_first_player: draw the starting seat of every game at random (otherwise
            ``player_0`` always starts).
    """

    random_first_player: bool = True

    def env_config(self) -> dict[str, Any]:
        """The ``env_config`` dict handed to :class:`training.rllib.env.KahunaMultiAgentEnv`."""
        return dataclasses.asdict(self)


BATCH_MODES = ("truncate_episodes", "complete_episodes")
"""``env_runners.batch_mode`` values (RLlib's)."""
SAMPLERS = ("env", "batched")
"""``env_runners.sampler`` values: RLlib's env runner over the env, or the batched-engine runner."""


@dataclasses.dataclass(frozen=True)
class EnvRunnersConfig:
    """Experience collection (RLlib ``EnvRunner`` actors).

    Attributes:
        num_env_runners: remote EnvRunner actors (0: sample in the driver process).
        num_envs_per_env_runner: games each EnvRunner steps in lockstep (batched forward passes).
        num_cpus_per_env_runner: CPUs Ray reserves for each EnvRunner.
        rollout_fragment_length: env steps per EnvRunner sample call (null: RLlib's
            ``"auto"``, the train batch split over the runners).
        batch_mode: ``"truncate_episodes"`` (RLlib's default: a sample call returns
            exactly ``rollout_fragment_length`` steps per game, cutting games and
            bootstrapping the cut with the value estimate) or ``"complete_episodes"``
            (a sample call plays on until its games end: whole games only, as the
            native trainer learns from).
        custom_resource: name of a Ray custom resource each EnvRunner also needs (null:
            none), e.g. ``kahuna_runner`` to place the runners only on nodes started with
            ``ray start --resources='{"kahuna_runner": 8}'``.
        custom_resource_per_env_runner: how much of ``custom_resource`` each EnvRunner takes.
        sampler: ``"env"`` (RLlib's ``MultiAgentEnvRunner`` stepping one
            :class:`~training.rllib.env.KahunaMultiAgentEnv` per game) or ``"batched"``
            (:class:`~training.rllib.batched_runner.KahunaBatchedEnvRunner`: whole games on the
            batched engine, several times the env steps/s; ``batch_mode`` does not apply, a
            sample call always returns whole games).
    """

    num_env_runners: int = 2
    num_envs_per_env_runner: int = 1
    num_cpus_per_env_runner: float = 1.0
    rollout_fragment_length: int | None = None
    batch_mode: str = "truncate_episodes"
    custom_resource: str | None = None
    custom_resource_per_env_runner: float = 1.0
    sampler: str = "env"

    def __post_init__(self) -> None:
        check_value(self.num_env_runners >= 0, "env_runners.num_env_runners", "must be >= 0", self.num_env_runners)
        check_value(
            self.num_envs_per_env_runner >= 1,
            "env_runners.num_envs_per_env_runner",
            "must be >= 1",
            self.num_envs_per_env_runner,
        )
        check_value(
            self.num_cpus_per_env_runner >= 0,
            "env_runners.num_cpus_per_env_runner",
            "must be >= 0",
            self.num_cpus_per_env_runner,
        )
        check_value(
            self.rollout_fragment_length is None or self.rollout_fragment_length >= 1,
            "env_runners.rollout_fragment_length",
            "must be >= 1 or null",
            self.rollout_fragment_length,
        )
        check_value(
            self.batch_mode in BATCH_MODES,
            "env_runners.batch_mode",
            f"must be one of {', '.join(BATCH_MODES)}",
            self.batch_mode,
        )
        check_value(
            self.custom_resource is None or bool(self.custom_resource.strip()),
            "env_runners.custom_resource",
            "must be null or a resource name",
            self.custom_resource,
        )
        check_value(
            self.custom_resource_per_env_runner > 0,
            "env_runners.custom_resource_per_env_runner",
            "must be > 0",
            self.custom_resource_per_env_runner,
        )
        check_value(
            self.sampler in SAMPLERS, "env_runners.sampler", f"must be one of {', '.join(SAMPLERS)}", self.sampler
        )

    def custom_resources(self) -> dict[str, float]:
        """RLlib's ``custom_resources_per_env_runner``."""
        return {self.custom_resource: self.custom_resource_per_env_runner} if self.custom_resource else {}


@dataclasses.dataclass(frozen=True)
class LearnersConfig:
    """Gradient updates (RLlib ``Learner`` actors).

    Attributes:
        num_learners: remote Learner actors, data-parallel (0: learn in the driver process).
        num_gpus_per_learner: GPUs per Learner (with ``num_learners: 0``, the driver's learner
            uses one GPU when this is > 0).
        num_cpus_per_learner: CPUs Ray reserves for each remote Learner.
    """

    num_learners: int = 0
    num_gpus_per_learner: float = 0.0
    num_cpus_per_learner: float = 1.0

    def __post_init__(self) -> None:
        check_value(self.num_learners >= 0, "learners.num_learners", "must be >= 0", self.num_learners)
        check_value(
            self.num_gpus_per_learner >= 0, "learners.num_gpus_per_learner", "must be >= 0", self.num_gpus_per_learner
        )
        check_value(
            self.num_cpus_per_learner > 0, "learners.num_cpus_per_learner", "must be > 0", self.num_cpus_per_learner
        )


PPO_TO_RLLIB: dict[str, str] = {
    "lr": "lr",
    "gamma": "gamma",
    "gae_lambda": "lambda_",
    "train_batch_size": "train_batch_size_per_learner",
    "minibatch_size": "minibatch_size",
    "update_epochs": "num_epochs",
    "ent_coef": "entropy_coeff",
    "clip_coef": "clip_param",
    "vf_coef": "vf_loss_coeff",
    "vf_clip_param": "vf_clip_param",
    "max_grad_norm": "grad_clip",
    "kl_coeff": "kl_coeff",
}
"""The one mapping of the project's PPO vocabulary onto RLlib's: ``ppo:`` key -> argument of ``PPOConfig.training``.

The ``ppo:`` keys are kahuna-train's (:class:`training.ppo.config.PPOHyperparameters`, CleanRL's names);
``train_batch_size``, ``vf_clip_param`` and ``kl_coeff`` exist only here.  The other ``ppo:`` keys are
not RLlib arguments: ``anneal_lr`` and ``min_lr_fraction`` turn ``lr`` into a schedule
(:meth:`RLlibConfig.lr_schedule`), ``kl_coeff > 0`` also sets ``use_kl_loss``, and ``loss``,
``clip_vloss``, ``adam_eps`` and ``bf16`` go to the project's Learner (``learner_config_dict``).
docs/RLLIB.md shows this table.
"""
RLLIB_PPO_NAMES: dict[str, str] = {rllib: key for key, rllib in PPO_TO_RLLIB.items() if rllib != key}
"""RLlib's name -> the ``ppo:`` key to write instead: a config that uses one is refused (no silent aliasing)."""
PPO_LOSSES = ("native", "rllib")
"""Values of ``ppo.loss`` (``training.rllib.learner``)."""


@dataclasses.dataclass(frozen=True)
class RLlibPPOConfig(PPOHyperparameters):
    """kahuna-rllib's PPO hyperparameters: the shared :class:`training.ppo.config.PPOHyperparameters` and its own.

    :data:`PPO_TO_RLLIB` maps them to RLlib's names.  Under RLlib, ``anneal_lr`` is a learning-rate
    schedule over ``iterations * train_batch_size`` sampled env steps, ``gamma`` discounts per agent
    decision, ``clip_vloss`` applies to ``loss: native`` only, ``adam_eps`` replaces RLlib's own
    default (1e-8) and ``bf16`` runs on a CPU learner only (sampling always runs in float32).

    Attributes:
        train_batch_size: env steps (both seats together) per learner per iteration.
        vf_clip_param: ``loss: rllib`` only: RLlib's cap on the squared value error.
        kl_coeff: initial coefficient of RLlib's adaptive KL penalty (0: no KL loss).
        loss: ``native``: the native trainer's PPO loss (advantages standardized per minibatch,
            ``0.5 * (V - R)^2`` clipped around the sampled values, see ``training.rllib.learner``);
            ``rllib``: RLlib's stock PPO loss.
    """

    train_batch_size: int = 8192
    vf_clip_param: float = 10.0
    kl_coeff: float = 0.0
    loss: str = "native"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_value(self.train_batch_size >= 2, "ppo.train_batch_size", "must be >= 2", self.train_batch_size)
        check_value(
            self.minibatch_size <= self.train_batch_size,
            "ppo.minibatch_size",
            f"must be <= ppo.train_batch_size ({self.train_batch_size})",
            self.minibatch_size,
        )
        check_value(self.vf_clip_param > 0, "ppo.vf_clip_param", "must be > 0", self.vf_clip_param)
        check_value(self.kl_coeff >= 0, "ppo.kl_coeff", "must be >= 0", self.kl_coeff)
        check_value(self.loss in PPO_LOSSES, "ppo.loss", f"must be one of {', '.join(PPO_LOSSES)}", self.loss)


@dataclasses.dataclass(frozen=True)
class FaultToleranceConfig:
    """What happens when an EnvRunner dies (RLlib's ``fault_tolerance`` settings).

    Attributes:
        restart_failed_env_runners: Ray restarts a failed EnvRunner actor and RLlib puts
            it back into service with the current weights of every module (the run goes
            on meanwhile with the healthy ones); false: a failed runner stays out.
        max_num_env_runner_restarts: restarts allowed per EnvRunner.
        delay_between_env_runner_restarts_s: a runner whose code raised waits this long
            before it exits and is restarted (RLlib's default is 60 s).
        env_runner_health_probe_timeout_s: how long a ping of a restarted runner may take.
    """

    restart_failed_env_runners: bool = True
    max_num_env_runner_restarts: int = 1000
    delay_between_env_runner_restarts_s: float = 5.0
    env_runner_health_probe_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        check_value(
            self.max_num_env_runner_restarts >= 0,
            "fault_tolerance.max_num_env_runner_restarts",
            "must be >= 0",
            self.max_num_env_runner_restarts,
        )
        check_value(
            self.delay_between_env_runner_restarts_s >= 0,
            "fault_tolerance.delay_between_env_runner_restarts_s",
            "must be >= 0",
            self.delay_between_env_runner_restarts_s,
        )
        check_value(
            self.env_runner_health_probe_timeout_s > 0,
            "fault_tolerance.env_runner_health_probe_timeout_s",
            "must be > 0",
            self.env_runner_health_probe_timeout_s,
        )


@dataclasses.dataclass(frozen=True)
class RLlibCheckpointConfig:
    """RLlib checkpoints in ``<run_dir>/checkpoints`` and the exported agent.

    Attributes:
        every: write ``checkpoints/iter_NNNNNN`` every this many iterations (0: only the
            final one); the final checkpoint is always ``<run_dir>/checkpoint``.
        export: at the end, also export the learner to ``<run_dir>/agent.pt`` (the
            project's agent format, for ``kahuna-eval``/``kahuna-play``).
    """

    every: int = 10
    export: bool = True

    def __post_init__(self) -> None:
        check_value(self.every >= 0, "checkpoint.every", "must be >= 0", self.every)


@dataclasses.dataclass(frozen=True)
class RLlibConfig:
    """A complete RLlib self-play run.

    Attributes:
        name: run name (the run directory is ``<output_dir>/<name>-<timestamp>``).
        seed: seed of RLlib (env runners, module initialisation) and of the games.
        iterations: RLlib training iterations (each samples ``ppo.train_batch_size`` env steps
            per learner and updates).
        max_minutes: stop after the iteration during which this much wall time has passed
            (null: no limit).
        output_dir: parent directory of run directories (on the node running the driver).
        verbose: print one line per iteration.
        ray: where the run executes.
        env: rule options of the games.
        model: network shape (the same as the native trainer's, so exports load everywhere).
        env_runners: experience collection.
        learners: gradient updates.
        ppo: PPO hyperparameters.
        reward: terminal reward and island shaping: the native trainer's ``reward:`` section
            (:class:`training.ppo.config.RewardConfig`), same keys, same meaning; ``margin`` must stay 0.
        pool: the opponent mix: the native trainer's ``pool:`` section
            (:class:`training.ppo.config.PoolConfig`); ``snapshot_every`` counts iterations,
            ``max_snapshots`` is the number of snapshot modules (slots, round robin);
            ``pfsp`` and ``pfsp_*`` weight the slots of ``past`` games as the native pool
            weights its snapshots (counts decayed once per iteration, a slot's reset when it
            takes a new snapshot); ``snapshots_per_update`` chooses that many slots per
            iteration (as the native pool chooses an update's snapshots) and plays the
            iteration's ``past`` games against them only.
        fault_tolerance: restarts of failed EnvRunners.
        checkpoint: checkpoints and export.
    """

    name: str = "kahuna-rllib"
    seed: int = 1
    iterations: int = 100
    max_minutes: float | None = None
    output_dir: str = "runs"
    verbose: bool = True
    ray: RayConfig = dataclasses.field(default_factory=RayConfig)
    env: KahunaEnvConfig = dataclasses.field(default_factory=KahunaEnvConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    env_runners: EnvRunnersConfig = dataclasses.field(default_factory=EnvRunnersConfig)
    learners: LearnersConfig = dataclasses.field(default_factory=LearnersConfig)
    ppo: RLlibPPOConfig = dataclasses.field(default_factory=RLlibPPOConfig)
    reward: RewardConfig = dataclasses.field(default_factory=RewardConfig)
    pool: PoolConfig = dataclasses.field(default_factory=PoolConfig)
    fault_tolerance: FaultToleranceConfig = dataclasses.field(default_factory=FaultToleranceConfig)
    checkpoint: RLlibCheckpointConfig = dataclasses.field(default_factory=RLlibCheckpointConfig)

    def __post_init__(self) -> None:
        check_value(bool(self.name) and "/" not in self.name, "name", "must be a non-empty name without '/'", self.name)
        check_value(self.seed >= 0, "seed", "must be >= 0", self.seed)
        check_value(self.iterations >= 1, "iterations", "must be >= 1", self.iterations)
        check_value(
            self.max_minutes is None or self.max_minutes > 0, "max_minutes", "must be > 0 or null", self.max_minutes
        )
        check_value(bool(self.output_dir), "output_dir", "must be a non-empty path", self.output_dir)
        check_value(
            self.reward.margin == 0,
            "reward.margin",
            "is not supported by the RLlib trainer (only by kahuna-train); must be 0",
            self.reward.margin,
        )
        check_value(
            self.pool.entrant == 0,
            "pool.entrant",
            "is not supported by the RLlib trainer (only by kahuna-train); must be 0",
            self.pool.entrant,
        )

    @property
    def snapshot_slots(self) -> int:
        """Snapshot modules of the run: ``pool.max_snapshots`` when ``pool.past`` > 0, else none."""
        return self.pool.max_snapshots if self.pool.past > 0 else 0

    def lr_schedule(self) -> float | list[list[float]]:
        """RLlib's ``lr``: a constant, or with ``ppo.anneal_lr`` a linear schedule ``[[env steps, lr], ...]``."""
        ppo = self.ppo
        if not ppo.anneal_lr:
            return ppo.lr
        return [[0, ppo.lr], [self.iterations * ppo.train_batch_size, ppo.lr * ppo.min_lr_fraction]]

    def env_config(self) -> dict[str, Any]:
        """The ``env_config`` of :class:`training.rllib.env.KahunaMultiAgentEnv`: rules, opponent mix, rewards."""
        return {
            **self.env.env_config(),
            "pool": self.pool.shares(),
            "snapshot_slots": self.snapshot_slots,
            "win": self.reward.win,
            "island_shaping": self.reward.island_shaping,
            "gamma": self.ppo.gamma,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (lists instead of tuples), as written to ``<run_dir>/config.yaml``."""
        return plain_value(dataclasses.asdict(self))


def rllib_config_from_dict(values: Mapping[str, Any]) -> RLlibConfig:
    """Build and validate an :class:`RLlibConfig` from a nested mapping (missing keys take defaults).

    A ``ppo:`` key under RLlib's name (``entropy_coeff``) is a :class:`ConfigError` naming the key to
    write instead (``ent_coef``); run directories written before the rename are read by
    :func:`load_run_config`.
    """
    if not isinstance(values, Mapping):
        raise ConfigError(f"a config must be a mapping of sections, got {type(values).__name__}")
    ppo = values.get("ppo")
    for name in ppo if isinstance(ppo, Mapping) else ():
        if name in RLLIB_PPO_NAMES:
            raise ConfigError(
                f"ppo.{name}: RLlib's name; write ppo.{RLLIB_PPO_NAMES[name]} (the ppo: keys are kahuna-train's; "
                "docs/RLLIB.md maps them to RLlib's)"
            )
    return build_section(RLlibConfig, values)


def load_rllib_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> RLlibConfig:
    """Load ``path`` (or the defaults when None), apply ``key=value`` overrides, validate."""
    values = read_yaml(path) if path is not None else {}
    return rllib_config_from_dict(apply_overrides(values, overrides))


def load_run_config(path: str | Path, overrides: Sequence[str] = ()) -> RLlibConfig:
    """Load a run directory's own ``config.yaml``, written by this or an earlier version, plus ``overrides``.

    Runs written before the ``ppo:`` keys took kahuna-train's names stored RLlib's
    (``num_epochs``, ``entropy_coeff``, ...): the stored file is read in today's names
    (:data:`RLLIB_PPO_NAMES`).  The overrides are the user's and must use today's names.
    """
    values = read_yaml(path)
    ppo = values.get("ppo")
    if isinstance(ppo, dict):
        for old, new in RLLIB_PPO_NAMES.items():
            if old in ppo and new not in ppo:
                ppo[new] = ppo.pop(old)
    return rllib_config_from_dict(apply_overrides(values, overrides))


def config_to_yaml(config: RLlibConfig) -> str:
    """The config as YAML text (loads back to an equal config)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def rllib_training_arguments(config: RLlibConfig) -> dict[str, Any]:
    """The arguments of RLlib's ``PPOConfig.training``: the ``ppo:`` keys renamed by :data:`PPO_TO_RLLIB`."""
    ppo = config.ppo
    arguments = {rllib: getattr(ppo, key) for key, rllib in PPO_TO_RLLIB.items()}
    arguments[PPO_TO_RLLIB["lr"]] = config.lr_schedule()
    arguments["use_kl_loss"] = ppo.kl_coeff > 0
    return arguments
