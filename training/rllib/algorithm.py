"""RLlib's ``PPOConfig`` (new API stack) for a typed :class:`~training.rllib.config.RLlibConfig`.

:func:`build_ppo_config` calls each of RLlib's config sections with the
arguments of one part of the typed config: ``env_runners`` from
``env_runners:``, ``learners`` from ``learners:`` and the Learner's own
``ppo:`` keys, ``training`` from the other ``ppo:`` keys renamed by the one
table :data:`~training.rllib.config.PPO_TO_RLLIB`, ``fault_tolerance`` from
``fault_tolerance:``, the modules and the league from ``model:`` and ``pool:``,
the hooks from :mod:`training.rllib.callbacks`.
"""

from __future__ import annotations

from typing import Any

from training.rllib.callbacks import callback_arguments
from training.rllib.config import EnvRunnersConfig, FaultToleranceConfig, RLlibConfig, rllib_training_arguments
from training.rllib.errors import require_ray
from training.rllib.league import LEARNER, league_mapping, snapshot_ids


def build_ppo_config(config: RLlibConfig) -> Any:
    """RLlib's ``PPOConfig`` (new API stack) for ``config``: each RLlib section from its own part of ``config``.

    Env :class:`~training.rllib.env.KahunaMultiAgentEnv`, module
    :class:`~training.rllib.module.KahunaRLModule` (masked logits) for every policy: one
    trained module ``"learner"`` and ``pool.max_snapshots`` frozen modules ``"snapshot_<k>"``
    (when ``pool.past`` > 0), the hooks of :mod:`training.rllib.callbacks`.
    """
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig

    from training.rllib.env import KahunaMultiAgentEnv

    return (
        RLlibPPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .framework("torch")
        .environment(KahunaMultiAgentEnv, env_config=config.env_config(), disable_env_checking=True)
        .env_runners(**_env_runner_arguments(config.env_runners))
        .learners(**_learner_arguments(config))
        .training(**rllib_training_arguments(config))
        .multi_agent(
            policies={LEARNER, *snapshot_ids(config.snapshot_slots)},
            policy_mapping_fn=league_mapping,
            policies_to_train=[LEARNER],
        )
        .fault_tolerance(**_fault_tolerance_arguments(config.fault_tolerance))
        .rl_module(rl_module_spec=module_spec(config))
        .callbacks(**callback_arguments(config.pool.snapshot_every, config.snapshot_slots))
        .debugging(seed=config.seed, log_level="WARN")
    )


def _env_runner_arguments(runners: EnvRunnersConfig) -> dict[str, Any]:
    """The arguments of RLlib's ``env_runners`` (``sampler: batched``: the batched-engine EnvRunner class)."""
    runner_class = None  # RLlib's own MultiAgentEnvRunner
    if runners.sampler == "batched":
        from training.rllib.batched_runner import KahunaBatchedEnvRunner

        runner_class = KahunaBatchedEnvRunner
    return {
        "num_env_runners": runners.num_env_runners,
        "num_envs_per_env_runner": runners.num_envs_per_env_runner,
        "num_cpus_per_env_runner": runners.num_cpus_per_env_runner,
        "rollout_fragment_length": runners.rollout_fragment_length or "auto",
        "batch_mode": runners.batch_mode,
        "custom_resources_per_env_runner": runners.custom_resources(),
        "env_runner_cls": runner_class,
    }


def _learner_arguments(config: RLlibConfig) -> dict[str, Any]:
    """The arguments of RLlib's ``learners``: the project's Learner with its own ``ppo:`` keys."""
    from training.ppo.cpus import use_bf16
    from training.rllib.learner import ADAM_EPS_KEY, BF16_KEY, CLIP_VLOSS_KEY, LOSS_KEY, KahunaPPOLearner

    learners, ppo = config.learners, config.ppo
    return {
        "num_learners": learners.num_learners,
        "num_gpus_per_learner": learners.num_gpus_per_learner,
        "num_cpus_per_learner": learners.num_cpus_per_learner if learners.num_learners > 0 else "auto",
        "learner_class": KahunaPPOLearner,
        "learner_config_dict": {
            LOSS_KEY: ppo.loss,
            ADAM_EPS_KEY: ppo.adam_eps,
            CLIP_VLOSS_KEY: ppo.clip_vloss,
            BF16_KEY: use_bf16(ppo.bf16),
        },
    }


def _fault_tolerance_arguments(faults: FaultToleranceConfig) -> dict[str, Any]:
    """The arguments of RLlib's ``fault_tolerance`` (the section's keys are RLlib's own)."""
    return {
        "restart_failed_env_runners": faults.restart_failed_env_runners,
        "max_num_env_runner_restarts": faults.max_num_env_runner_restarts,
        "delay_between_env_runner_restarts_s": faults.delay_between_env_runner_restarts_s,
        "env_runner_health_probe_timeout_s": faults.env_runner_health_probe_timeout_s,
    }


def module_spec(config: RLlibConfig) -> Any:
    """The ``MultiRLModuleSpec``: the learner and the snapshot slots, all :class:`KahunaRLModule`."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from training.rllib.env import action_space, observation_space
    from training.rllib.module import KahunaRLModule, module_model_config

    model = module_model_config(config.model)
    specs = {
        module_id: RLModuleSpec(
            module_class=KahunaRLModule,
            observation_space=observation_space(),
            action_space=action_space(),
            model_config=model,
        )
        for module_id in [LEARNER, *snapshot_ids(config.snapshot_slots)]
    }
    return MultiRLModuleSpec(rl_module_specs=specs)
