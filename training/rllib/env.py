"""Kahuna as an RLlib ``MultiAgentEnv`` (the adapter RLlib's EnvRunners step).

=====================  =====================================================================
agents                 ``"player_0"``, ``"player_1"`` (seats 0 and 1 of :class:`KahunaGame`)
who acts               only the player to move: the observation dict holds exactly that
                       agent, and ``step`` expects exactly its action; a turn is several
                       consecutive actions by the same agent
observation            ``Dict(observations=Box(0, 1, (246,), float32),
                       action_mask=Box(0, 1, (179,), float32))`` —
                       :func:`kahuna_env.observation.encode_observation` from the agent's side
                       and the legal-action mask (1 where legal)
action                 ``Discrete(179)`` (:mod:`kahuna_env.actions`)
rewards                0 during the game; at the end +1 for the winner, -1 for the loser,
                       0 each for a draw; both agents receive a final observation (with an
                       all-zero mask) so each seat's last decision gets its reward
illegal action         :class:`kahuna_env.engine.IllegalActionError` (the masked RLModule
                       never produces one, so this is a bug, not a training signal)
=====================  =====================================================================

``env_config`` keys: ``variant``, ``discard_rule`` (see
:class:`kahuna_env.engine.KahunaConfig`), ``random_first_player`` (default
True) and ``max_actions`` (truncate a game after this many actions, a safety
net; default 2000).  Games are dealt from the env's own generator, seeded by
``reset(seed=...)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from training.rllib.errors import require_ray

require_ray()

import gymnasium as gym  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402

from kahuna_env.actions import NUM_ACTIONS  # noqa: E402
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame  # noqa: E402
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation  # noqa: E402

AGENTS = ("player_0", "player_1")
"""Agent id of each seat."""

_ENV_OPTIONS = ("variant", "discard_rule", "random_first_player", "max_actions")


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
        self.rules = {
            "variant": options.get("variant", "standard"),
            "discard_rule": options.get("discard_rule", "instead_of_play"),
        }
        KahunaConfig(**self.rules)  # validate now, not at the first reset
        self.random_first_player = bool(options.get("random_first_player", True))
        self.max_actions = int(options.get("max_actions", 2000))
        self.agents = self.possible_agents = list(AGENTS)
        self.observation_spaces = {agent: observation_space() for agent in AGENTS}
        self.action_spaces = {agent: action_space() for agent in AGENTS}
        self._rng = np.random.default_rng()
        self.game: KahunaGame | None = None
        self._actions = 0

    def _observe(self, player: int, terminal: bool = False) -> dict[str, np.ndarray]:
        assert self.game is not None
        mask = np.zeros(NUM_ACTIONS, np.float32) if terminal else self.game.action_mask().astype(np.float32)
        return {"observations": encode_observation(self.game, player), "action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal a new game; returns the observation of the player to move."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        first = int(self._rng.integers(2)) if self.random_first_player else 0
        self.game = KahunaGame(KahunaConfig(**self.rules, first_player=first), seed=int(self._rng.integers(2**63)))
        self._actions = 0
        player = self.game.current_player
        return {AGENTS[player]: self._observe(player)}, {}

    def step(self, action_dict: dict[str, Any]):
        """Apply the action of the player to move (the only key ``action_dict`` may have)."""
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        if self.game.is_over:
            raise RuntimeError("the game is over; call reset()")
        player = self.game.current_player
        agent = AGENTS[player]
        if set(action_dict) != {agent}:
            raise ValueError(f"expected an action for {agent!r} only (the player to move), got {sorted(action_dict)}")
        action = int(action_dict[agent])
        if not 0 <= action < NUM_ACTIONS or not self.game.action_mask()[action]:
            what = self.game.describe(action) if 0 <= action < NUM_ACTIONS else "out of range"
            raise IllegalActionError(f"{agent} chose illegal action {action} ({what})")
        self.game.step(action)
        self._actions += 1
        if self.game.is_over:
            winner = self.game.winner
            rewards = {AGENTS[p]: (0.0 if winner is None else (1.0 if winner == p else -1.0)) for p in (0, 1)}
            observations = {AGENTS[p]: self._observe(p, terminal=True) for p in (0, 1)}
            done = {AGENTS[0]: True, AGENTS[1]: True, "__all__": True}
            return observations, rewards, done, {"__all__": False}, {}
        if self._actions >= self.max_actions:
            observations = {AGENTS[p]: self._observe(p, terminal=True) for p in (0, 1)}
            return (
                observations,
                {a: 0.0 for a in AGENTS},
                {"__all__": False},
                {**dict.fromkeys(AGENTS, True), "__all__": True},
                {},
            )
        player = self.game.current_player
        return {AGENTS[player]: self._observe(player)}, {agent: 0.0}, {"__all__": False}, {"__all__": False}, {}
