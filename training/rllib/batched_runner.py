"""An RLlib EnvRunner that plays its games on the batched engine (``env_runners.sampler: batched``).

RLlib's own ``MultiAgentEnvRunner`` steps one Python env object per game and
pays its connector pipeline, episode bookkeeping and an RLModule call for
every env step; on Kahuna that overhead, not the game, bounds a runner at
about 1,000-3,000 env steps/s per core.  :class:`KahunaBatchedEnvRunner`
keeps everything RLlib sees of a runner (the RLModules and their weight
syncs, metrics, callbacks, checkpointable state, restarts) and replaces only
``sample()``: it plays whole games with the native trainer's collection
(:func:`training.selfplay.batched_rollout.play_games_batched` on the project's one
seated-play driver, :func:`kahuna_env.seated.play_seated`: all games of a wave in
one :class:`~kahuna_env.vector.KahunaBatch`, one forward pass of the learner
module per tick for every game where a learner seat is to move, one stacked pass
for the snapshot slots in use, ``greedy`` / ``random`` as array work) and hands
RLlib finished ``MultiAgentEpisode`` objects.

What a sample call returns
    Whole games only, never a cut: each learner seat of each game is one
    ``MultiAgentEpisode`` holding that one agent (``player_0`` or
    ``player_1``, mapped to the ``learner`` module), its decisions in order,
    the next observation of a decision being the same seat's next decision
    (the opponent's moves are the environment, as in the env and the native
    trainer), and a final observation with an all-zero mask.  Rewards are the
    env's: ``+win`` / ``-win`` / 0 on the last decision, plus the island
    shaping.  The final info holds ``kahuna_opponent``, ``kahuna_score`` and,
    in a ``past`` game, ``kahuna_snapshot``, so the driver's callbacks and
    PFSP statistics read the same keys as from the env.  Waves of games are
    played until the learner decisions reach the requested number of
    timesteps: each wave has 5% more games than the decisions still wanted take on average, so
    a call overshoots by a few percent and never cuts a game (``num_envs_per_env_runner`` is not
    used).

What counts as an env step
    A learner decision.  A snapshot's moves are played inside the wave (the
    snapshot modules' weights, synced by the driver as for the env runner)
    and are not sent to the learner; the env runner counts them as env steps,
    so the two samplers' ``env_steps`` differ by the snapshot decisions
    (about 5% at the shipped shares).

Opponents, seats, rules
    Read from the runner's own :class:`~training.rllib.env.KahunaMultiAgentEnv`
    (built from ``env_config`` as usual, then only consulted): the pool
    shares, the snapshot slots and their PFSP probabilities (pushed by the
    driver into every env), the rules, ``win``, ``island_shaping`` and
    ``gamma``.  Seat 0 moves first in every game and the learner's seat is
    drawn per game, so the learner plays first and second equally often (the
    env's ``random_first_player``).  Baselines see only their own seat's view:
    :class:`~kahuna_env.agents.batched.BatchedGreedy` reads the public state
    and its own hand.

Randomness
    Deals, opponent draws and sampling come from a generator seeded by
    ``(seed, worker_index)`` of the RLlib config, so a run is reproducible
    for a given number of runners (a restarted runner starts that sequence again).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from training.rllib.errors import require_ray

require_ray()

from ray.rllib.callbacks.utils import make_callback  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner  # noqa: E402
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode  # noqa: E402
from ray.rllib.utils.metrics import (  # noqa: E402
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
    TIME_BETWEEN_SAMPLING,
    WEIGHTS_SEQ_NO,
)

from kahuna_env.engine import KahunaConfig  # noqa: E402
from training.league.pool import KIND_LATEST, KIND_PAST, KINDS  # noqa: E402
from training.rllib.env import KahunaMultiAgentEnv, action_space, observation_space  # noqa: E402
from training.rllib.league import AGENTS, LEARNER, SNAPSHOT_PREFIX  # noqa: E402
from training.selfplay.batched_rollout import play_games_batched  # noqa: E402
from training.selfplay.rollout import GameBatch, PlayedGames, shaping_rewards, trajectory_layout  # noqa: E402

MAX_WAVE_GAMES = 2048
"""At most this many games are played side by side in one wave."""
WAVE_MARGIN = 1.05
"""A wave plays this many times the games that the learner decisions still wanted take on average."""
_FIRST_GUESS_DECISIONS_PER_GAME = 60.0
"""Learner decisions per game assumed before the first wave has measured it."""


def kahuna_env_of(runner: Any) -> KahunaMultiAgentEnv:
    """The first :class:`KahunaMultiAgentEnv` of ``runner``'s (vector) env: the settings of its games."""
    env = runner.env
    for sub_env in getattr(env, "envs", None) or [env]:
        unwrapped = getattr(sub_env, "unwrapped", sub_env)
        if isinstance(unwrapped, KahunaMultiAgentEnv):
            return unwrapped
    raise TypeError(f"the batched sampler needs KahunaMultiAgentEnv envs, got {type(env).__name__}")


def draw_games(env: KahunaMultiAgentEnv, count: int, rng: np.random.Generator) -> GameBatch:
    """``count`` games seated as ``env`` would seat them: opponent kinds, learner seats, snapshot slots, deals."""
    kinds = rng.choice(len(KINDS), size=count, p=env.shares).astype(np.int64)
    learner_seat = rng.integers(2, size=count)
    learner_seats = np.zeros((count, 2), dtype=bool)
    learner_seats[np.arange(count), learner_seat] = True
    learner_seats[kinds == KIND_LATEST] = True
    snapshots = np.full(count, -1, dtype=np.int64)
    past = np.flatnonzero(kinds == KIND_PAST)
    if len(past):
        if env.slot_probabilities is None:
            snapshots[past] = rng.integers(env.snapshot_slots, size=len(past))
        else:
            snapshots[past] = rng.choice(env.snapshot_slots, size=len(past), p=env.slot_probabilities)
    return GameBatch(
        games=np.arange(count, dtype=np.int64),
        seeds=rng.integers(2**63, size=count),
        kinds=kinds,
        learner_seats=learner_seats,
        snapshots=snapshots,
        rng_seed=int(rng.integers(2**63)),
        torch_seed=int(rng.integers(2**63)),
    )


def seat_episodes(
    batch: GameBatch,
    played: PlayedGames,
    env: KahunaMultiAgentEnv,
    mapping_fn: Any,
) -> list[MultiAgentEpisode]:
    """One finished ``MultiAgentEpisode`` per learner seat of the played games (see the module docstring)."""
    rewards = played.rewards.astype(np.float32)
    if env.island_shaping:
        rewards = rewards + shaping_rewards(played.trajectory, played.potentials, env.gamma, env.island_shaping)
    order, _, _, lengths = trajectory_layout(played.trajectory)
    starts = np.r_[0, np.cumsum(lengths)[:-1]] if len(lengths) else np.zeros(0, dtype=np.int64)
    masks = played.masks.astype(np.float32)
    no_moves = np.zeros(masks.shape[1], dtype=np.float32)
    spaces = {agent: (observation_space(), action_space()) for agent in AGENTS}
    episodes = []
    for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
        rows = order[start : start + length]
        trajectory = int(played.trajectory[rows[0]])
        game, seat = divmod(trajectory, 2)
        agent = AGENTS[seat]
        kind = KINDS[int(batch.kinds[game])]
        outcome = round(float(played.rewards[rows[-1]]) / env.win)
        info: dict[str, Any] = {"kahuna_opponent": kind, "kahuna_score": (outcome + 1) / 2}
        if kind == "past":
            info["kahuna_snapshot"] = int(batch.snapshots[game])
        observations = [
            {agent: {"observations": played.observations[row], "action_mask": masks[row]}} for row in rows.tolist()
        ]
        observations.append({agent: {"observations": played.observations[rows[-1]], "action_mask": no_moves}})
        episode = MultiAgentEpisode(
            observations=observations,
            actions=[{agent: int(action)} for action in played.actions[rows].tolist()],
            rewards=[{agent: float(reward)} for reward in rewards[rows].tolist()],
            infos=[{agent: {}} for _ in range(length)] + [{agent: info}],
            extra_model_outputs=[
                {
                    agent: {
                        Columns.ACTION_LOGP: played.log_probs[row],
                        Columns.ACTION_DIST_INPUTS: played.logits[row],
                        Columns.VF_PREDS: played.values[row],
                    }
                }
                for row in rows.tolist()
            ],
            terminateds={agent: True, "__all__": True},
            len_lookback_buffer=0,
            observation_space={agent: spaces[agent][0]},
            action_space={agent: spaces[agent][1]},
            agent_to_module_mapping_fn=mapping_fn,
        )
        episodes.append(episode.to_numpy())
    return episodes


class KahunaBatchedEnvRunner(MultiAgentEnvRunner):
    """A ``MultiAgentEnvRunner`` whose ``sample()`` plays whole games on the batched engine (module docstring)."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._games_rng = np.random.default_rng([int(config.seed or 0), int(self.worker_index or 0)])
        self._decisions_per_game = _FIRST_GUESS_DECISIONS_PER_GAME

    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[MultiAgentEpisode]:
        """Play waves of whole games until ``num_timesteps`` learner decisions (or ``num_episodes`` seat episodes)."""
        if random_actions:
            raise ValueError("the batched sampler plays the learner's policy; random_actions is not supported")
        if explore is False or (explore is None and not self.config.explore):
            raise ValueError("the batched sampler samples from the policy; explore=False is not supported")
        if num_timesteps is not None and num_episodes is not None:
            raise ValueError(f"give num_timesteps or num_episodes, not both: {num_timesteps=}, {num_episodes=}")
        if self._time_after_sampling is not None:
            self.metrics.log_value(key=TIME_BETWEEN_SAMPLING, value=time.perf_counter() - self._time_after_sampling)
        self.metrics.log_value(key=WEIGHTS_SEQ_NO, value=self._weights_seq_no, window=1)
        if num_timesteps is None and num_episodes is None:
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * self.num_envs
        with self.metrics.log_time(SAMPLE_TIMER):
            episodes: list[MultiAgentEpisode] = []
            steps = 0
            while (num_episodes is None and steps < num_timesteps) or (
                num_episodes is not None and len(episodes) < num_episodes
            ):
                if num_episodes is not None:
                    games = max(1, math.ceil((num_episodes - len(episodes)) / 1.5))
                else:  # a little more than enough, so that a second, small (slow per decision) wave is rare
                    games = math.ceil(WAVE_MARGIN * (num_timesteps - steps) / self._decisions_per_game)
                wave, decisions = self._play_wave(min(games, MAX_WAVE_GAMES))
                episodes += wave
                steps += decisions
            make_callback(
                "on_sample_end",
                callbacks_objects=self._callbacks,
                callbacks_functions=self.config.callbacks_on_sample_end,
                kwargs=dict(env_runner=self, metrics_logger=self.metrics, samples=episodes),
            )
        self._time_after_sampling = time.perf_counter()
        return episodes

    def _play_wave(self, games: int) -> tuple[list[MultiAgentEpisode], int]:
        """Play ``games`` games; their seat episodes and the number of learner decisions in them."""
        env = kahuna_env_of(self)
        batch = draw_games(env, games, self._games_rng)
        learner = self.module[LEARNER].net
        snapshots = [self.module[f"{SNAPSHOT_PREFIX}{k}"].net for k in range(env.snapshot_slots)]
        played = play_games_batched(
            batch,
            learner,
            snapshots,
            KahunaConfig(**env.rules),
            env.win,
            record_potentials=env.island_shaping != 0,
            record_logits=True,
        )
        episodes = seat_episodes(batch, played, env, self.config.policy_mapping_fn)
        steps = len(played.actions)
        self._decisions_per_game = max(1.0, steps / games)
        self._log_wave(episodes, steps)
        return episodes, steps

    def _log_wave(self, episodes: list[MultiAgentEpisode], steps: int) -> None:
        """RLlib's sampling counters for finished ``episodes`` (``steps`` decisions), their callbacks, statistics."""
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED, steps, reduce="sum")
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum", with_throughput=True)
        self.metrics.log_value(NUM_EPISODES, len(episodes), reduce="sum")
        self.metrics.log_value(NUM_EPISODES_LIFETIME, len(episodes), reduce="lifetime_sum")
        per_agent = {agent: 0 for agent in AGENTS}
        for episode in episodes:
            for agent, agent_episode in episode.agent_episodes.items():
                per_agent[agent] += len(agent_episode)
        for agent, count in per_agent.items():
            if count:
                self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED, agent), count, reduce="sum")
                self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, agent), count, reduce="lifetime_sum")
        self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED, LEARNER), steps, reduce="sum")
        self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, LEARNER), steps, reduce="lifetime_sum")
        self.num_env_steps_sampled_lifetime += steps
        for episode in episodes:
            make_callback(
                "on_episode_end",
                callbacks_objects=self._callbacks,
                callbacks_functions=self.config.callbacks_on_episode_end,
                kwargs=dict(
                    episode=episode,
                    env_runner=self,
                    metrics_logger=self.metrics,
                    env=self.env.unwrapped,
                    rl_module=self.module,
                    env_index=0,
                    prev_episode_chunks=[],
                ),
            )
        self._done_episodes_for_metrics.extend(episodes)
