"""Kahuna as an RLlib ``MultiAgentEnv`` (the adapter RLlib's EnvRunners step).

=====================  =====================================================================
agents                 ``"player_0"``, ``"player_1"`` (seats 0 and 1 of :class:`KahunaGame`)
                       for the learner; ``"player_<seat>@snapshot_<k>"`` for a seat played by
                       snapshot slot ``k`` (the policy-mapping function reads the module from
                       the agent id); a baseline seat (``greedy``, ``random``) is played
                       inside the env and is no RLlib agent at all
who acts               only the player to move: the observation dict holds exactly that
                       agent, and ``step`` expects exactly its action; a turn is several
                       consecutive actions by the same agent
observation            ``Dict(observations=Box(0, 1, (246,), float32),
                       action_mask=Box(0, 1, (179,), float32))`` —
                       :func:`kahuna_env.observation.encode_observation` from the agent's side
                       and the legal-action mask (1 where legal)
action                 ``Discrete(179)`` (:mod:`kahuna_env.actions`)
rewards                at the end ``+win`` for the winner, ``-win`` for the loser, 0 each for
                       a draw; with ``island_shaping`` c > 0 also the native trainer's
                       potential-based shaping (:func:`training.selfplay.rollout.island_potentials`,
                       :func:`training.selfplay.rollout.shaping_rewards`): ``c * (gamma * phi(next
                       decision) - phi(decision))`` per seat, ``phi = 0`` after the end; every
                       agent receives a final observation (with an all-zero mask) so each
                       seat's last decision gets its reward
opponents              each game draws its opponent kind from ``pool`` (``latest``: both seats
                       are the learner; ``past``: one seat a snapshot slot, drawn uniformly or
                       with the PFSP odds the driver pushed (:meth:`set_snapshot_probabilities`);
                       ``greedy``/``random``: one seat that baseline, asked through
                       :func:`kahuna_env.agents.choose_action`, which shows it only what its
                       seat may see); the learner's seat is drawn per game
illegal action         :class:`kahuna_env.engine.IllegalActionError` (the masked RLModule
                       never produces one, so this is a bug, not a training signal)
=====================  =====================================================================

``env_config`` keys: the rule options of
:data:`training.ppo.config.TRAINING_RULE_OPTIONS` (``variant``, ``discard_rule``; see
:class:`kahuna_env.engine.KahunaConfig`), ``random_first_player`` (default
True), ``max_actions`` (truncate a game after this many actions, a safety
net; default 2000), ``pool`` (shares by opponent kind, normalised; default
all ``latest``), ``snapshot_slots`` (number of snapshot modules; default 0),
``win`` (default 1.0), ``island_shaping`` (default 0.0) and ``gamma``
(default 1.0).  Games, opponent kinds and baselines are drawn from the env's
own generator, seeded by ``reset(seed=...)``.  The final info dict of each
learner agent holds ``kahuna_opponent`` (the game's opponent kind),
``kahuna_score`` (1 win, 0.5 draw, 0 loss, from that seat) and, in a
``past`` game, ``kahuna_snapshot`` (the slot it played).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from training.rllib.errors import require_ray

require_ray()

import gymnasium as gym  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402

from kahuna_env.actions import NUM_ACTIONS  # noqa: E402
from kahuna_env.agents import make_agent  # noqa: E402
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame  # noqa: E402
from kahuna_env.match import agent_chooser, play  # noqa: E402
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation  # noqa: E402
from kahuna_policy.reward import island_potentials  # noqa: E402
from training.league.pool import KINDS  # noqa: E402
from training.ppo.config import TRAINING_RULE_OPTIONS  # noqa: E402
from training.rllib.league import AGENTS, agent_ids, snapshot_agent  # noqa: E402
from training.selfplay.rollout import shaping_rewards  # noqa: E402

BASELINES = ("greedy", "random")
"""Opponent kinds played inside the env (never RLlib agents)."""

_ENV_OPTIONS = (
    *TRAINING_RULE_OPTIONS,
    "random_first_player",
    "max_actions",
    "pool",
    "snapshot_slots",
    "win",
    "island_shaping",
    "gamma",
)


def shaping_step(previous: float, following: float | None, gamma: float, coefficient: float) -> float:
    """The native trainer's shaping reward of one decision whose potential is ``previous``.

    ``following`` is the potential at the same seat's next decision (None: the game
    ended, potential 0); computed by :func:`training.selfplay.rollout.shaping_rewards` itself
    on that two-decision (or last-decision) trajectory.
    """
    potentials = np.array([previous] if following is None else [previous, following], dtype=np.float64)
    return float(shaping_rewards(np.zeros(len(potentials), np.int64), potentials, gamma, coefficient)[0])


def observation_space() -> gym.spaces.Dict:
    """The observation space of one agent (the RLModule's input space)."""
    return gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(0.0, 1.0, (OBSERVATION_SIZE,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        }
    )


def action_space() -> gym.spaces.Discrete:
    """The action space of one agent."""
    return gym.spaces.Discrete(NUM_ACTIONS)


class KahunaMultiAgentEnv(MultiAgentEnv):
    """Two-player Kahuna for RLlib; see the module docstring for the conventions."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        options = dict(config or {})
        unknown = sorted(set(options) - set(_ENV_OPTIONS))
        if unknown:
            raise ValueError(f"unknown Kahuna env_config key(s) {unknown}; known: {list(_ENV_OPTIONS)}")
        # The rule options given (KahunaConfig's defaults for the others), checked now, not at the first reset.
        self.rules = {name: options[name] for name in TRAINING_RULE_OPTIONS if name in options}
        KahunaConfig(**self.rules)
        self.random_first_player = bool(options.get("random_first_player", True))
        self.max_actions = int(options.get("max_actions", 2000))
        self.snapshot_slots = int(options.get("snapshot_slots", 0))
        pool = dict(options.get("pool") or {"latest": 1.0})
        bad = sorted(set(pool) - set(KINDS))
        if bad:
            raise ValueError(f"unknown opponent kind(s) {bad} in pool; known: {list(KINDS)}")
        if pool.get("mcts", 0) > 0:
            raise ValueError("pool.mcts is not supported by the RLlib env (a search per move); use kahuna-train")
        if pool.get("past", 0) > 0 and self.snapshot_slots < 1:
            raise ValueError("pool.past > 0 needs snapshot_slots >= 1")
        shares = np.array([float(pool.get(kind, 0.0)) for kind in KINDS])
        if (shares < 0).any() or shares.sum() <= 0:
            raise ValueError(f"pool shares must be >= 0 with a positive sum, got {pool}")
        self.shares = shares / shares.sum()
        self.win = float(options.get("win", 1.0))
        self.island_shaping = float(options.get("island_shaping", 0.0))
        self.gamma = float(options.get("gamma", 1.0))
        self.possible_agents = agent_ids(self.snapshot_slots)
        self.agents = list(AGENTS)
        self.observation_spaces = {agent: observation_space() for agent in self.possible_agents}
        self.action_spaces = {agent: action_space() for agent in self.possible_agents}
        self._rng = np.random.default_rng()
        self.slot_probabilities: np.ndarray | None = None  # None: the slots are drawn uniformly
        self.slot = -1  # the snapshot slot of this game (-1: not a ``past`` game)
        self._baselines = {name: make_agent(name, seed=0) for name in BASELINES}
        self.game: KahunaGame | None = None
        self.kind = "latest"
        self.seats: list[str | None] = list(AGENTS)  # agent id per seat; None: a baseline plays it
        self._potentials: list[float | None] = [None, None]  # each seat's potential at its last decision
        self._actions = 0

    # ------------------------------------------------------------------------------------------ helpers
    def _observe(self, player: int, terminal: bool = False) -> dict[str, np.ndarray]:
        assert self.game is not None
        mask = np.zeros(NUM_ACTIONS, np.float32) if terminal else self.game.action_mask().astype(np.float32)
        return {"observations": encode_observation(self.game, player), "action_mask": mask}

    def set_snapshot_probabilities(self, probabilities: Sequence[float] | None) -> None:
        """Draw the slot of each later ``past`` game with ``probabilities`` (normalised; None: uniformly).

        The driver sets the PFSP odds of the slots here before every iteration
        (:class:`training.rllib.league.SlotStats`).
        """
        if probabilities is None:
            self.slot_probabilities = None
            return
        values = np.asarray(probabilities, dtype=np.float64)
        if values.shape != (self.snapshot_slots,) or not np.isfinite(values).all() or (values < 0).any():
            raise ValueError(f"expected {self.snapshot_slots} finite slot probabilities >= 0, got {values.tolist()}")
        if not values.sum() > 0:
            raise ValueError(f"slot probabilities must have a positive sum, got {list(probabilities)}")
        self.slot_probabilities = values / values.sum()

    def _draw_slot(self) -> int:
        """The snapshot slot of a ``past`` game: uniform, or by :attr:`slot_probabilities`."""
        if self.slot_probabilities is None:
            return int(self._rng.integers(self.snapshot_slots))
        return int(self._rng.choice(self.snapshot_slots, p=self.slot_probabilities))

    def _draw_seats(self) -> None:
        """Draw this game's opponent kind and who plays each seat."""
        self.kind = KINDS[int(self._rng.choice(len(KINDS), p=self.shares))]
        self.slot = -1
        if self.kind == "latest":
            self.seats = list(AGENTS)
            return
        learner = int(self._rng.integers(2))
        self.seats = [None, None]
        self.seats[learner] = AGENTS[learner]
        if self.kind == "past":
            self.slot = self._draw_slot()
            self.seats[1 - learner] = snapshot_agent(1 - learner, self.slot)
        else:
            self._baselines[self.kind] = make_agent(self.kind, seed=int(self._rng.integers(2**63)))

    def _play_baseline(self) -> None:
        """Play the baseline seat's moves until an RLlib agent is to move or the game ends."""
        assert self.game is not None
        choosers = [  # an RLlib agent's seat has no chooser: the loop stops at its turn
            None if agent is not None else agent_chooser(self._baselines[self.kind], self._rng) for agent in self.seats
        ]
        self._actions += len(play(self.game, choosers))

    def _decision(self, rewards: dict[str, float]) -> dict[str, dict[str, np.ndarray]]:
        """The observation of the agent to move; its shaping reward for its previous decision into ``rewards``."""
        assert self.game is not None
        player = self.game.current_player
        agent = self.seats[player]
        assert agent is not None
        observation = self._observe(player)
        if self.island_shaping:
            potential = float(island_potentials(observation["observations"][None])[0])
            previous = self._potentials[player]
            if previous is not None:
                rewards[agent] = rewards.get(agent, 0.0) + shaping_step(
                    previous, potential, self.gamma, self.island_shaping
                )
            self._potentials[player] = potential
        return {agent: observation}

    def _final(self, rewards: dict[str, float], with_outcome: bool) -> tuple[dict, dict]:
        """Final observations, rewards and infos of every agent in the game."""
        assert self.game is not None
        winner = self.game.winner if with_outcome else None
        observations, infos = {}, {}
        for seat, agent in enumerate(self.seats):
            if agent is None:
                continue
            outcome = 0 if winner is None else (1 if winner == seat else -1)
            reward = rewards.get(agent, 0.0) + (self.win * outcome if with_outcome else 0.0)
            previous = self._potentials[seat]
            if self.island_shaping and previous is not None:
                reward += shaping_step(previous, None, self.gamma, self.island_shaping)
            rewards[agent] = reward
            observations[agent] = self._observe(seat, terminal=True)
            infos[agent] = {"kahuna_opponent": self.kind, "kahuna_score": (outcome + 1) / 2}
            if self.slot >= 0:
                infos[agent]["kahuna_snapshot"] = self.slot
        return observations, infos

    # ------------------------------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal a new game; returns the observation of the (RLlib) agent to move."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        first = int(self._rng.integers(2)) if self.random_first_player else 0
        self.game = KahunaGame(KahunaConfig(**self.rules, first_player=first), seed=int(self._rng.integers(2**63)))
        self._actions = 0
        self._potentials = [None, None]
        self._draw_seats()
        self.agents = [agent for agent in self.seats if agent is not None]
        self._play_baseline()  # a baseline that moves first; no game ends before both seats moved
        return self._decision({}), {}

    def step(self, action_dict: dict[str, Any]):
        """Apply the action of the agent to move (the only key ``action_dict`` may have)."""
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        if self.game.is_over:
            raise RuntimeError("the game is over; call reset()")
        player = self.game.current_player
        agent = self.seats[player]
        if set(action_dict) != {agent}:
            raise ValueError(f"expected an action for {agent!r} only (the player to move), got {sorted(action_dict)}")
        action = int(action_dict[agent])
        if not 0 <= action < NUM_ACTIONS or not self.game.action_mask()[action]:
            what = self.game.describe(action) if 0 <= action < NUM_ACTIONS else "out of range"
            raise IllegalActionError(f"{agent} chose illegal action {action} ({what})")
        self.game.step(action)
        self._actions += 1
        self._play_baseline()
        rewards: dict[str, float] = {agent: 0.0}
        if self.game.is_over:
            observations, infos = self._final(rewards, with_outcome=True)
            done = {**dict.fromkeys(observations, True), "__all__": True}
            return observations, rewards, done, {"__all__": False}, infos
        if self._actions >= self.max_actions:
            observations, infos = self._final(rewards, with_outcome=False)
            return (
                observations,
                rewards,
                {"__all__": False},
                {**dict.fromkeys(observations, True), "__all__": True},
                infos,
            )
        return self._decision(rewards), rewards, {"__all__": False}, {"__all__": False}, {}
