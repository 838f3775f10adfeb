"""RLlib PPO self-play on Kahuna: :func:`build_ppo_config` and :func:`train`.

The run, top to bottom:

1. :func:`connect_ray` starts a private local Ray instance (``ray.address: null``)
   or joins a cluster (``"auto"``, ``"HOST:PORT"``), failing fast with a
   one-line :class:`~training.rllib.errors.RayConnectionError` when the
   cluster cannot be reached.
2. :func:`build_ppo_config` maps the :class:`~training.rllib.config.RLlibConfig`
   onto RLlib's ``PPOConfig`` on the new API stack (RLModule, Learner,
   EnvRunner with connector v2): env :class:`~training.rllib.env.KahunaMultiAgentEnv`,
   module :class:`~training.rllib.module.KahunaRLModule` (masked logits) for
   every policy, one trained module ``"learner"`` and ``pool.max_snapshots``
   frozen modules ``"snapshot_<k>"`` (when ``pool.past`` > 0).
3. The env draws each game's opponent from ``pool`` (self-play, a snapshot
   slot, or a ``greedy``/``random`` baseline played inside the env) and names
   the agents after their modules; :func:`~training.rllib.league.league_mapping`
   reads the module from the agent id.  :class:`SnapshotCallback` copies the
   learner's weights into the next snapshot slot every ``pool.snapshot_every``
   iterations.  With ``pool.pfsp`` ``hard`` or ``variance`` the slot of a
   ``past`` game is drawn with the native trainer's PFSP odds: the driver keeps
   each slot's decayed results (:class:`~training.rllib.league.SlotStats`, from
   the episodes' metrics) and pushes the odds into every env before each iteration.
4. Every iteration appends a line to ``<run_dir>/metrics.jsonl`` (with the
   native trainer's ``league/*`` PFSP diagnostics); checkpoints
   go to ``<run_dir>/checkpoints/iter_NNNNNN``, the final one to
   ``<run_dir>/checkpoint``, and the learner is exported to
   ``<run_dir>/agent.pt`` (the project's agent format).  ``resume=RUN_DIR``
   continues a run from its newest checkpoint (weights of every module,
   optimizer, iteration and step counters, and the slots' PFSP statistics,
   :data:`LEAGUE_FILE` in the checkpoint directory).
5. Failed EnvRunners are restarted by Ray (``fault_tolerance``); the number of
   restarts is in every metrics line (``env_runner_restarts``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from training.league.pool import PFSP
from training.rllib.config import RLlibConfig, config_to_yaml, load_rllib_config
from training.rllib.errors import RayConnectionError, TrainingError, require_ray
from training.rllib.league import (
    LEARNER,
    SLOT_GAMES_METRIC,
    SLOT_SCORE_METRIC,
    SNAPSHOT_PREFIX,
    SlotStats,
    league_mapping,
    snapshot_ids,
    snapshot_slot,
)

ILLEGAL_ACTIONS_METRIC = "kahuna_illegal_actions"
ACTIONS_CHECKED_METRIC = "kahuna_actions_checked"
SCORE_METRIC = "kahuna_learner_score_vs_{}"
"""Metric of the learner's score (1 win, 0.5 draw, 0 loss) per opponent kind: ``past``, ``greedy``, ``random``."""
SNAPSHOT_SCORE_METRIC = SCORE_METRIC.format("past")
MAX_EMPTY_ITERATIONS = 3
"""Give up after this many consecutive iterations without a sampled env step (env runners keep failing)."""
LEAGUE_FILE = "kahuna_league.json"
"""The snapshot slots' PFSP statistics (:meth:`SlotStats.state`), saved inside every algorithm checkpoint directory."""


# ---------------------------------------------------------------------------------------------- self-play league
def push_modules(algorithm: Any, module_ids: list[str], to_worker_indices: list[int] | None = None) -> None:
    """Set ``module_ids`` on the EnvRunners (all, or ``to_worker_indices``) to the Learner's weights, and wait.

    Not ``EnvRunnerGroup.sync_weights``: an EnvRunner ignores a state whose
    weights sequence number is not newer than the last one it got (PPO's own
    sync of the learner in the same iteration), and the group skips runners
    with a sync still in flight, so snapshot copies sent that way were lost.
    """
    if not module_ids:
        return
    import ray

    weights = ray.put(algorithm.learner_group.get_weights(module_ids=module_ids))

    def set_modules(runner: Any) -> None:
        for module_id, state in ray.get(weights).items():
            runner.module[module_id].set_state(state)

    group = algorithm.env_runner_group
    if to_worker_indices is None and group.local_env_runner is not None:
        set_modules(group.local_env_runner)
    if group.num_remote_env_runners():
        group.foreach_env_runner(set_modules, local_env_runner=False, remote_worker_ids=to_worker_indices)


def copy_learner_to(algorithm: Any, module_ids: list[str]) -> None:
    """Copy the learner's current weights into ``module_ids`` on the Learner(s) and every EnvRunner."""
    if not module_ids:
        return
    weights = algorithm.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    algorithm.learner_group.set_weights({module_id: weights for module_id in module_ids})
    push_modules(algorithm, module_ids)


class SnapshotCallback:
    """``on_algorithm_init``/``on_train_result`` hook: fill all slots at the start, then one slot every ``every``."""

    def __init__(self, every: int, slots: int) -> None:
        self.every = every
        self.slots = slots

    def __call__(self, *, algorithm: Any, result: dict | None = None, **kwargs: Any) -> None:
        if self.slots == 0:
            return
        if result is None:  # on_algorithm_init: every slot starts as the initial policy
            copy_learner_to(algorithm, snapshot_ids(self.slots))
            return
        iteration = int(result.get("training_iteration", algorithm.iteration))
        slot = snapshot_slot(iteration, self.every, self.slots)
        if slot is not None:
            copy_learner_to(algorithm, [f"{SNAPSHOT_PREFIX}{slot}"])


def push_snapshot_probabilities(
    algorithm: Any, probabilities: list[float] | None, timeout_s: float | None = None
) -> None:
    """Set the slot probabilities of ``past`` games (None: uniform) in every env of every EnvRunner."""

    def set_probabilities(runner: Any) -> None:
        for env in getattr(getattr(runner, "env", None), "envs", None) or []:
            env.unwrapped.set_snapshot_probabilities(probabilities)

    group = algorithm.env_runner_group
    if group.local_env_runner is not None:
        set_probabilities(group.local_env_runner)
    if group.num_remote_env_runners():
        group.foreach_env_runner(set_probabilities, local_env_runner=False, timeout_seconds=timeout_s)


def league_metrics(stats: SlotStats) -> dict[str, float]:
    """The native trainer's ``league/*`` diagnostics of the slots (its own function, on the slot statistics)."""
    from training.league.pool import league_scalars

    return league_scalars(stats)  # it reads only len(), win_rates() and probabilities()


def _incarnation(runner: Any) -> tuple[int, str]:
    """``(worker index, token)`` of an EnvRunner process: the token is new in every process Ray (re)starts."""
    token = getattr(runner, "_kahuna_incarnation", None)
    if token is None:
        token = runner._kahuna_incarnation = uuid.uuid4().hex
    return int(runner.worker_index), token


class RunnerWatch:
    """Finds EnvRunner processes that were replaced since the last look, and gives them the whole league.

    RLlib notices a dead EnvRunner only when a call to it fails; one that dies
    between calls is restarted by Ray with the initial weights of every module
    and RLlib never knows: it syncs only the trained module after each update,
    so the snapshot slots of that runner would stay untrained.  Before every
    iteration :meth:`check` asks each runner for its process token; a runner
    with a new token counts as restarted and gets every module's weights from
    the Learner.
    """

    def __init__(self, module_ids: list[str], timeout_s: float) -> None:
        self.module_ids = module_ids
        self.timeout_s = timeout_s
        self.tokens: dict[int, str] = {}
        self.restarts = 0

    def check(self, algorithm: Any) -> list[int]:
        """The worker indices of replaced runners (their league re-synced); counts them in :attr:`restarts`."""
        group = algorithm.env_runner_group
        if group.num_remote_env_runners() == 0:
            return []
        answers = group.foreach_env_runner(_incarnation, local_env_runner=False, timeout_seconds=self.timeout_s)
        replaced = sorted(index for index, token in answers if self.tokens.get(index, token) != token)
        self.tokens.update(dict(answers))
        if replaced:
            self.restarts += len(replaced)
            push_modules(algorithm, self.module_ids, replaced)
        return replaced


def agent_episodes_of(episode: Any) -> list[Any]:
    """The single-agent episodes (chunks) of one sampled episode.

    A ``MultiAgentEpisode`` gives its ``agent_episodes`` -- possibly none: the
    EnvRunner prunes zero-length agent chunks, and a chunk cut one step after
    a reset whose only action ended the player's turn holds no complete step
    of either agent (the action hangs until that agent observes again, in the
    next chunk).  Anything else is already a single-agent episode.
    """
    agent_episodes = getattr(episode, "agent_episodes", None)
    if agent_episodes is None:
        return [episode]
    return list(agent_episodes.values())


def action_masks(observations: Any) -> np.ndarray:
    """``(T, NUM_ACTIONS)`` masks of an agent episode's observations.

    Finalized (numpy) episodes hold a dict of stacked arrays, ongoing ones a list of dicts.
    """
    if isinstance(observations, dict):
        return np.asarray(observations["action_mask"])
    return np.asarray([observation["action_mask"] for observation in observations]).reshape(len(observations), -1)


def count_illegal(samples: Any) -> tuple[int, int]:
    """``(checked, illegal)``: every complete step of every agent chunk in ``samples``, against its mask."""
    checked = illegal = 0
    for episode in samples or []:
        for agent_episode in agent_episodes_of(episode):
            steps = len(agent_episode)
            if steps == 0:
                continue
            masks = action_masks(agent_episode.get_observations(slice(0, steps)))
            actions = np.asarray(agent_episode.get_actions(slice(0, steps))).reshape(-1).astype(np.int64)
            checked += len(actions)
            illegal += int((masks[np.arange(len(actions)), actions] == 0).sum())
    return checked, illegal


def check_sampled_actions(
    *, env_runner: Any = None, metrics_logger: Any = None, samples: Any = None, **kwargs: Any
) -> None:
    """``on_sample_end`` hook: check every sampled action against the mask it was chosen under.

    Logs ``kahuna_actions_checked`` and ``kahuna_illegal_actions`` (sums); the
    latter must stay 0 (the env would also refuse the action).  An action that
    still hangs at the end of a chunk (its agent has not observed again) is
    checked with the next chunk.
    """
    checked, illegal = count_illegal(samples)
    if metrics_logger is not None:
        metrics_logger.log_value(ACTIONS_CHECKED_METRIC, checked, reduce="sum")
        metrics_logger.log_value(ILLEGAL_ACTIONS_METRIC, illegal, reduce="sum")


def log_game_results(*, episode: Any = None, metrics_logger: Any = None, **kwargs: Any) -> None:
    """``on_episode_end`` hook: the learner's score (1 win, 0.5 draw, 0 loss) per opponent kind but self-play.

    Read from the final info dict the env gives each agent (``kahuna_opponent``, ``kahuna_score``).
    """
    if episode is None or metrics_logger is None:
        return
    for agent_episode in agent_episodes_of(episode):
        if agent_episode.module_id != LEARNER or len(agent_episode) == 0:
            continue
        info = agent_episode.get_infos(-1) or {}
        kind = info.get("kahuna_opponent")
        if kind in (None, "latest"):
            continue
        metrics_logger.log_value(SCORE_METRIC.format(kind), float(info["kahuna_score"]), window=200)
        slot = info.get("kahuna_snapshot")
        if kind == "past" and slot is not None:  # the PFSP statistics of the slot (summed per iteration)
            metrics_logger.log_value(SLOT_SCORE_METRIC.format(slot), float(info["kahuna_score"]), reduce="sum")
            metrics_logger.log_value(SLOT_GAMES_METRIC.format(slot), 1, reduce="sum")


# ---------------------------------------------------------------------------------------------- Ray
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS) answers with its SETTINGS."""


def _check_reachable(address: str, timeout_s: float) -> None:
    """Fail fast unless a gRPC server (a Ray head's GCS, or a Ray Client server) answers at ``address``.

    ``ray.init`` on an address where nothing or something else listens waits for minutes; this
    check takes at most ``timeout_s`` (twice: connect, then the protocol answer).
    """
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host:
        host, port = target, "6379"
    host = host.strip("[]")  # [::1]:6379
    try:
        port_number = int(port)
    except ValueError:
        raise RayConnectionError(f"bad ray.address {address!r}: expected 'auto', 'HOST:PORT' or null") from None
    where = f"{host}:{port_number}"
    advice = "start it with `ray start --head` on the head node, or set ray.address: null for a local run"
    try:
        connection = socket.create_connection((host, port_number), timeout=timeout_s)
    except OSError as error:
        reason = "timed out" if isinstance(error, TimeoutError | socket.timeout) else (error.strerror or str(error))
        raise RayConnectionError(
            f"cannot reach the Ray cluster at {where} ({reason} after at most {timeout_s:g}s); {advice}"
        ) from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        connection.close()  # a TLS cluster does not answer plain HTTP/2; let ray.init do the handshake
        return
    answer = b""
    with connection:
        try:
            connection.settimeout(timeout_s)
            connection.sendall(_HTTP2_PREFACE)
            while len(answer) < 9:
                chunk = connection.recv(9 - len(answer))
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
    if len(answer) < 9 or answer[3] != 0x04:  # the first frame of a gRPC server is SETTINGS (type 4)
        raise RayConnectionError(
            f"{where} accepts connections but is not a Ray cluster's head (GCS) port: it did not answer like one "
            f"within {timeout_s:g}s (the head listens on 6379 by default; 8265 is the dashboard); {advice}"
        )


def _resolve_address(address: str) -> str:
    """``"auto"`` -> the ``HOST:PORT`` of the cluster started on this node (``ray start``)."""
    if address != "auto":
        return address
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # private API moved: let ray.init resolve it
        return address
    try:
        return canonicalize_bootstrap_address_or_die("auto")
    except (ConnectionError, ValueError) as error:
        raise RayConnectionError(
            f"ray.address is 'auto' but no running Ray cluster was found on this node ({str(error).splitlines()[0]}); "
            "run `ray start --head` (or `ray start --address=HEAD:6379`) first, or set ray.address: null"
        ) from None


def connect_ray(config: RLlibConfig) -> bool:
    """Start or join Ray for ``config``; returns True when this call did it (so the caller shuts it down).

    An already initialised Ray (e.g. a test fixture's) is reused as it is.
    """
    require_ray()
    import ray

    if ray.is_initialized():
        return False
    address = config.ray.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        needed = config.env_runners.num_env_runners * config.env_runners.num_cpus_per_env_runner
        needed += config.learners.num_learners * config.learners.num_cpus_per_learner
        num_cpus = config.ray.num_cpus or max(1, math.ceil(needed))
        num_gpus = 0 if config.learners.num_gpus_per_learner == 0 else None
        ray.init(
            address="local",  # never silently join a cluster someone started on this machine
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            include_dashboard=False,
            object_store_memory=config.ray.object_store_mb * 1024 * 1024,
            logging_level="WARNING",
            log_to_driver=config.verbose,  # env runner errors reach the console
        )
        return True
    if address.startswith("ray://"):
        _check_reachable(address, config.ray.connect_timeout_s)
    else:
        address = _resolve_address(address)
        if address != "auto":
            _check_reachable(address, config.ray.connect_timeout_s)
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=config.verbose)
    except (ConnectionError, TimeoutError) as error:
        raise RayConnectionError(f"cannot join the Ray cluster at {address}: {str(error).splitlines()[0]}") from None
    return True


# ---------------------------------------------------------------------------------------------- RLlib config
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


def _env_runner_class(sampler: str) -> Any:
    """The EnvRunner class of ``env_runners.sampler`` (None: RLlib's own ``MultiAgentEnvRunner``)."""
    if sampler == "batched":
        from training.rllib.batched_runner import KahunaBatchedEnvRunner

        return KahunaBatchedEnvRunner
    return None


def build_ppo_config(config: RLlibConfig) -> Any:
    """RLlib's ``PPOConfig`` (new API stack) for ``config``."""
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig

    from training.ppo.cpus import use_bf16
    from training.rllib.env import KahunaMultiAgentEnv
    from training.rllib.learner import ADAM_EPS_KEY, BF16_KEY, CLIP_VLOSS_KEY, LOSS_KEY, KahunaPPOLearner

    ppo = config.ppo
    runners = config.env_runners
    learners = config.learners
    slots = config.snapshot_slots
    faults = config.fault_tolerance
    algo = (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .framework("torch")
        .environment(KahunaMultiAgentEnv, env_config=config.env_config(), disable_env_checking=True)
        .env_runners(
            num_env_runners=runners.num_env_runners,
            num_envs_per_env_runner=runners.num_envs_per_env_runner,
            num_cpus_per_env_runner=runners.num_cpus_per_env_runner,
            rollout_fragment_length=runners.rollout_fragment_length or "auto",
            batch_mode=runners.batch_mode,
            custom_resources_per_env_runner=runners.custom_resources(),
            env_runner_cls=_env_runner_class(runners.sampler),
        )
        .learners(
            num_learners=learners.num_learners,
            num_gpus_per_learner=learners.num_gpus_per_learner,
            num_cpus_per_learner=learners.num_cpus_per_learner if learners.num_learners > 0 else "auto",
            learner_class=KahunaPPOLearner,
            learner_config_dict={
                LOSS_KEY: ppo.loss,
                ADAM_EPS_KEY: ppo.adam_eps,
                CLIP_VLOSS_KEY: ppo.clip_vloss,
                BF16_KEY: use_bf16(ppo.bf16),
            },
        )
        .training(
            lr=config.lr_schedule(),
            gamma=ppo.gamma,
            lambda_=ppo.gae_lambda,
            train_batch_size_per_learner=ppo.train_batch_size,
            minibatch_size=ppo.minibatch_size,
            num_epochs=ppo.num_epochs,
            entropy_coeff=ppo.entropy_coeff,
            clip_param=ppo.clip_param,
            vf_loss_coeff=ppo.vf_loss_coeff,
            vf_clip_param=ppo.vf_clip_param,
            grad_clip=ppo.grad_clip,
            use_kl_loss=ppo.kl_coeff > 0,
            kl_coeff=ppo.kl_coeff,
        )
        .multi_agent(
            policies={LEARNER, *snapshot_ids(slots)},
            policy_mapping_fn=league_mapping,
            policies_to_train=[LEARNER],
        )
        .fault_tolerance(
            restart_failed_env_runners=faults.restart_failed_env_runners,
            max_num_env_runner_restarts=faults.max_num_env_runner_restarts,
            delay_between_env_runner_restarts_s=faults.delay_between_env_runner_restarts_s,
            env_runner_health_probe_timeout_s=faults.env_runner_health_probe_timeout_s,
        )
        .rl_module(rl_module_spec=module_spec(config))
        .callbacks(
            on_algorithm_init=SnapshotCallback(config.pool.snapshot_every, slots),
            on_train_result=SnapshotCallback(config.pool.snapshot_every, slots),
            on_sample_end=check_sampled_actions,
            on_episode_end=log_game_results,
        )
        .debugging(seed=config.seed, log_level="WARN")
    )
    return algo


# ---------------------------------------------------------------------------------------------- the run
@dataclasses.dataclass
class RunResult:
    """What :func:`train` produced.

    Attributes:
        run_dir: the run directory.
        checkpoint: the final RLlib checkpoint directory.
        agent: the exported agent file (None when ``checkpoint.export`` is off).
        iterations: iterations done.
        env_steps: env steps (agent decisions) sampled.
        seconds: wall time of the training iterations (without Ray start-up).
        illegal_actions: sampled actions that were illegal under their mask (always 0).
        actions_checked: sampled actions checked against their mask.
        history: one metrics dict per iteration of this call (as in ``metrics.jsonl``).
        env_runner_restarts: EnvRunner processes that were replaced during the run (restarted by
            Ray; each got the whole league back, see :class:`RunnerWatch`).
    """

    run_dir: Path
    checkpoint: Path
    agent: Path | None
    iterations: int
    env_steps: int
    seconds: float
    illegal_actions: int
    actions_checked: int
    history: list[dict[str, Any]]
    env_runner_restarts: int = 0


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


def _format_line(row: dict[str, Any]) -> str:
    def fmt(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    return (
        f"iter {row['iteration']:4d}  steps {row['env_steps']:9d}  {fmt(row['decisions_per_s'], '7.0f')} dec/s  "
        f"episodes {row['episodes']:6d}  len {fmt(row['episode_len_mean'], '5.1f')}  "
        f"vs-snapshot {fmt(row['score_vs_snapshot'], '.2f')}  vs-greedy {fmt(row['score_vs_greedy'], '.2f')}  "
        f"entropy {fmt(row['entropy'], '.3f')}  vf_loss {fmt(row['vf_loss'], '.4f')}  "
        f"restarts {row.get('env_runner_restarts', 0)}"
    )


def make_run_dir(config: RLlibConfig) -> Path:
    """``<output_dir>/<name>-<timestamp>`` (a numeric suffix if it exists), created."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(config.output_dir).expanduser().resolve() / f"{config.name}-{stamp}"
    run_dir, suffix = base, 1
    while run_dir.exists():
        suffix += 1
        run_dir = base.with_name(f"{base.name}-{suffix}")
    run_dir.mkdir(parents=True)
    return run_dir


def train(
    config: RLlibConfig,
    run_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    *,
    restore_from: str | Path | None = None,
    on_iteration: Callable[[Any, dict[str, Any]], None] | None = None,
) -> RunResult:
    """Run RLlib self-play for ``config``: checkpoints, metrics and the exported agent in the run directory.

    Starts (and afterwards shuts down) a local Ray instance or joins the
    configured cluster; an already running Ray is reused and left running.
    ``restore_from`` (an algorithm checkpoint of the same run, see
    :func:`resume`) restores every module, the optimizer and the iteration and
    step counters first; the run then goes on up to ``config.iterations`` in all.
    ``on_iteration(algorithm, row)`` is called after each iteration's metrics line.
    """
    require_ray()
    if log is None:
        log = (lambda line: print(line, flush=True)) if config.verbose else (lambda line: None)
    # 1. Connect: first, so that an unreachable cluster leaves no empty run directory.
    started_ray = connect_ray(config)
    algorithm = None
    failure: BaseException | None = None
    try:
        # 2. Setup: the run directory with its config, and the algorithm.
        run_path = _prepare_run_dir(config, run_dir)
        _log_start(config, run_path, log)
        algorithm = build_ppo_config(config).build_algo()
        if config.env_runners.num_env_runners:
            import ray

            driver = ray.get_runtime_context().get_node_id()
            log(f"kahuna-rllib: driver on node {driver}, env runners on nodes {sorted(runner_nodes(algorithm))}")
        watch = RunnerWatch(
            [LEARNER, *snapshot_ids(config.snapshot_slots)], config.fault_tolerance.env_runner_health_probe_timeout_s
        )
        league = SlotStats(
            PFSP.from_config(config.pool), config.snapshot_slots, config.pool.snapshots_per_update, config.seed
        )
        progress = _Progress(watch, league, config.pool.snapshot_every)
        if restore_from is not None:
            algorithm.restore_from_path(str(Path(restore_from).resolve()))
            push_modules(algorithm, watch.module_ids)  # every runner gets the restored league, whatever its seq no
            load_league(league, Path(restore_from))
            progress.restored(algorithm, run_path / "metrics.jsonl")
            log(
                f"kahuna-rllib: resumed from {restore_from} at iteration {algorithm.iteration}, "
                f"{progress.env_steps} env steps"
            )
        # 3. Train: one iteration per loop, each logged, checked and checkpointed.
        with (run_path / "metrics.jsonl").open("a", encoding="utf-8") as metrics_file:
            while algorithm.iteration < config.iterations:
                row = progress.iterate(algorithm)
                metrics_file.write(json.dumps(row) + "\n")
                metrics_file.flush()
                log(_format_line(row))
                progress.check(row)
                if config.checkpoint.every and row["iteration"] % config.checkpoint.every == 0:
                    save_checkpoint(algorithm, run_path / "checkpoints" / f"iter_{row['iteration']:06d}", league)
                if on_iteration is not None:
                    on_iteration(algorithm, row)
                if config.max_minutes is not None and row["elapsed_s"] >= 60 * config.max_minutes:
                    log(f"kahuna-rllib: max_minutes={config.max_minutes:g} reached after {row['iteration']} iterations")
                    break
        seconds = time.perf_counter() - progress.start
        # 4. Export: the final RLlib checkpoint and the learner in the project's agent format.
        final, agent_path = _export(config, algorithm, run_path, progress)
        restarts = watch.restarts
        log(
            f"kahuna-rllib: {algorithm.iteration} iterations, {progress.env_steps} env steps "
            f"({len(progress.history)} iterations in {seconds:.0f}s here), {restarts} env runner restarts; "
            f"checkpoint {final}" + (f"; agent {agent_path}" if agent_path else "")
        )
        result = RunResult(
            run_path,
            final,
            agent_path,
            algorithm.iteration,
            progress.env_steps,
            seconds,
            progress.illegal,
            progress.checked,
            progress.history,
            restarts,
        )
    except BaseException as error:
        failure = error
    # 5. Clean up outside the handler: Ray logs while stopping actors, and inside the handler those
    # log calls would print this error's traceback again.
    if algorithm is not None:
        algorithm.stop()
    if started_ray:
        import ray

        ray.shutdown()
    if failure is not None:
        raise failure
    return result


def save_checkpoint(algorithm: Any, path: Path, league: SlotStats | None = None) -> Path:
    """Save an algorithm checkpoint at ``path`` atomically: written next to it, then renamed into place.

    ``league``: its PFSP statistics go into the checkpoint too (:data:`LEAGUE_FILE`).
    A run killed while saving leaves a ``*.partial`` directory, never a damaged
    checkpoint that ``--resume`` would pick.
    """
    import shutil

    partial = path.with_name(path.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    algorithm.save_to_path(str(partial))
    if league is not None:
        (partial / LEAGUE_FILE).write_text(json.dumps(league.state()), encoding="utf-8")
    if path.exists():
        shutil.rmtree(path)
    partial.rename(path)
    return path


def load_league(league: SlotStats, checkpoint: Path) -> None:
    """Restore ``league``'s PFSP statistics from an algorithm checkpoint (one without them: fresh statistics)."""
    path = checkpoint / LEAGUE_FILE
    if not path.is_file():
        return
    try:
        league.load_state(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as error:
        raise TrainingError(f"{path}: damaged PFSP statistics ({error})") from None


def latest_checkpoint(run_dir: str | Path) -> Path:
    """The newest complete algorithm checkpoint of a run: ``checkpoint/`` or the highest ``checkpoints/iter_*``."""
    run_path = Path(run_dir)
    candidates = [
        path.parent
        for path in run_path.glob("checkpoints/iter_*/rllib_checkpoint.json")
        if not path.parent.name.endswith(".partial")
    ]
    if (run_path / "checkpoint" / "rllib_checkpoint.json").is_file():
        candidates.append(run_path / "checkpoint")
    if not candidates:
        raise TrainingError(f"{run_path} has no RLlib checkpoint to resume from (checkpoints/iter_* or checkpoint/)")
    return max(candidates, key=lambda path: (path / "rllib_checkpoint.json").stat().st_mtime)


def resume(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = (), **kwargs: Any) -> RunResult:
    """Continue the run in ``run_dir`` from its newest checkpoint, with its ``config.yaml`` plus ``overrides``.

    Every module (learner and snapshot slots: the league), the optimizer, the
    iteration and the env-step counters come back from the checkpoint; lines
    of ``metrics.jsonl`` after the checkpoint's iteration are dropped (they
    will be trained again).  ``model.*`` and the league's shape cannot change.
    """
    run_path = Path(run_dir)
    stored = run_path / "config.yaml"
    if not stored.is_file():
        raise TrainingError(f"{run_path} is not an RLlib run directory (no config.yaml)")
    before = load_rllib_config(stored)
    config = load_rllib_config(stored, list(overrides))
    if config.model != before.model or config.snapshot_slots != before.snapshot_slots:
        raise TrainingError("model.* and the number of snapshot slots cannot change when resuming a run")
    checkpoint = latest_checkpoint(run_path)
    return train(config, run_dir=run_path, restore_from=checkpoint, **kwargs)


def _prepare_run_dir(config: RLlibConfig, run_dir: str | Path | None) -> Path:
    """The run directory (given, or a new timestamped one), created, with ``config.yaml`` written."""
    run_path = Path(run_dir).resolve() if run_dir is not None else make_run_dir(config)
    run_path.mkdir(parents=True, exist_ok=True)
    (run_path / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")
    return run_path


def runner_nodes(algorithm: Any) -> list[str]:
    """The Ray node id of each remote EnvRunner (where the sampling runs)."""
    import ray

    def node_of(runner: Any) -> str:
        return ray.get_runtime_context().get_node_id()

    return list(algorithm.env_runner_group.foreach_env_runner(node_of, local_env_runner=False))


def _log_start(config: RLlibConfig, run_path: Path, log: Callable[[str], None]) -> None:
    import ray

    where = config.ray.address or os.environ.get("RAY_ADDRESS") or "local"
    runners = config.env_runners
    log(
        f"kahuna-rllib: run {run_path} on Ray {ray.__version__} ({where}), "
        f"{runners.num_env_runners} env runners x {runners.num_envs_per_env_runner} envs"
    )


class _UpdateClock:
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


class _Progress:
    """The running totals of a run: env steps, checked and illegal actions, iterations without a step; the league."""

    def __init__(self, watch: RunnerWatch, league: SlotStats, snapshot_every: int) -> None:
        self.watch = watch
        self.league = league
        self.snapshot_every = snapshot_every
        self.history: list[dict[str, Any]] = []
        self.clock = _UpdateClock()
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
        self.watch.check(algorithm)
        probabilities = self.league.env_probabilities(algorithm.iteration + 1)
        if probabilities is not None:  # uniform over every slot: the envs keep their plain draw
            push_snapshot_probabilities(algorithm, probabilities, self.watch.timeout_s)
        self.clock.install(algorithm)
        self.clock.seconds = 0.0
        train_start = time.perf_counter()
        result = algorithm.train()
        train_seconds = time.perf_counter() - train_start
        # RLlib may bring a failed runner back into service during train(): look again now, so the
        # row's restart count agrees with its healthy-runner count and the runner has the league.
        self.watch.check(algorithm)
        row = summarize(result, time.perf_counter() - tick, self.env_steps)
        # The learner's update calls, and the rest of train(): sampling (with the weight syncs around it).
        row["learn_s"] = self.clock.seconds
        row["sample_s"] = train_seconds - self.clock.seconds
        self.league.update(result.get("env_runners", {}), row["iteration"], self.snapshot_every)
        row.update(league_metrics(self.league))
        runners = algorithm.env_runner_group
        row["env_runner_restarts"] = self.watch.restarts
        row["rllib_env_runner_restores"] = runners.num_remote_worker_restarts()
        row["healthy_env_runners"] = runners.num_healthy_remote_workers()
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


def _export(config: RLlibConfig, algorithm: Any, run_path: Path, progress: _Progress) -> tuple[Path, Path | None]:
    """Save the final RLlib checkpoint and (with ``checkpoint.export``) the learner's agent file."""
    from training.rllib.export import export_weights

    final = run_path / "checkpoint"
    save_checkpoint(algorithm, final, progress.league)
    if not config.checkpoint.export:
        return final, None
    weights = algorithm.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    meta = {
        "source": "rllib",
        "run": run_path.name,
        "iterations": algorithm.iteration,
        "env_steps": progress.env_steps,
        "rllib_checkpoint": str(final),
        "module_id": LEARNER,
    }
    return final, export_weights(weights, config.model, run_path / "agent.pt", meta)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `kahuna-rllib --config configs/rllib.yaml`")
