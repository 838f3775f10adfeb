"""What runs beside RLlib's own PPO: its hooks on the EnvRunners and the driver's pushes to them.

Hooks RLlib calls (installed by :func:`callback_arguments`):

* :class:`SnapshotCallback` (``on_algorithm_init``, ``on_train_result``): the
  snapshot slots of the league start as the initial learner; every
  ``pool.snapshot_every`` iterations the learner is copied into the next slot.
* :func:`check_sampled_actions` (``on_sample_end``): every sampled action
  against the mask it was chosen under (``kahuna_illegal_actions`` must stay 0).
* :func:`log_game_results` (``on_episode_end``): the learner's score per
  opponent kind, and per snapshot slot for the PFSP statistics.

Pushes from the driver to the EnvRunners: :func:`push_modules` (weights),
:func:`push_snapshot_probabilities` (the PFSP odds of the slots) and
:class:`RunnerWatch`, which gives a restarted EnvRunner the whole league back.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from training.rllib.league import (
    LEARNER,
    SLOT_GAMES_METRIC,
    SLOT_SCORE_METRIC,
    SNAPSHOT_PREFIX,
    snapshot_ids,
    snapshot_slot,
)

ILLEGAL_ACTIONS_METRIC = "kahuna_illegal_actions"
ACTIONS_CHECKED_METRIC = "kahuna_actions_checked"
SCORE_METRIC = "kahuna_learner_score_vs_{}"
"""Metric of the learner's score (1 win, 0.5 draw, 0 loss) per opponent kind: ``past``, ``greedy``, ``random``."""
SNAPSHOT_SCORE_METRIC = SCORE_METRIC.format("past")


def callback_arguments(snapshot_every: int, slots: int) -> dict[str, Any]:
    """The arguments of RLlib's ``AlgorithmConfig.callbacks``: this module's hooks for a league of ``slots``."""
    snapshots = SnapshotCallback(snapshot_every, slots)
    return {
        "on_algorithm_init": snapshots,
        "on_train_result": snapshots,
        "on_sample_end": check_sampled_actions,
        "on_episode_end": log_game_results,
    }


# ---------------------------------------------------------------------------------------------- the league's weights
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


# ---------------------------------------------------------------------------------------------- sampled episodes
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
