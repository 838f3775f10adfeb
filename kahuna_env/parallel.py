"""PettingZoo parallel API for Kahuna: ``kahuna_env.parallel_env(**options)``.

Kahuna is turn based (a turn is several actions by the same player), so the
parallel env is a view of the AEC env :func:`kahuna_env.env` for tools that
only speak the parallel API (PettingZoo's ``parallel_api_test``, SuperSuit's
parallel vectorization, AgileRL's vector env, ...):

* every ``step(actions)`` applies exactly one action: ``actions[agent]`` of the
  agent that is to act (:attr:`KahunaParallelEnv.acting_agent`, also the
  ``my_turn`` feature of its observation); the other agent's action is
  ignored and may be anything, or missing;
* the agent that is not to act gets :data:`~kahuna_env.env.WAITING_MASK`,
  which allows :data:`~kahuna_env.env.CLOSING_ACTION` (PASS, 151) alone, so a
  masked sampler always has something to sample and its "choice" carries no
  policy gradient (its probability is 1); the AEC env gives that agent an
  all-zero mask instead (PettingZoo's classic convention: there it is never
  asked to act); the acting agent's mask is its legal actions, the AEC env's
  ``observe(agent)["action_mask"]``;
* both agents get an observation, a reward, ``terminations``/``truncations``
  and an info on every step; rewards are 0 until the game ends, then both
  agents' final rewards come on the same (last) step and both agents are done;
  ``env.agents`` is then empty;
* the infos are the AEC env's: ``{}`` until the end, then ``scores``,
  ``final_points`` and ``winner`` (with ``observation="flat"``, plus
  ``action_mask`` on every step); their keys stay the same from the reset to
  the last step but one, as TorchRL's wrapper requires;
* an illegal action by the acting agent ends the game with -1 for it and 0
  for the other (``kahuna_env.env()``'s ``TerminateIllegalWrapper``).

Options are those of :func:`kahuna_env.env` (``observation="flat"`` puts the
mask in ``infos[agent]["action_mask"]``; ``render_viewer=p`` renders player
``p``'s view, nothing it cannot see; ``max_cycles=n`` truncates both
agents after ``n`` steps of an unfinished game; ``closing_step`` is not needed
here and is refused).  ``metadata["is_parallelizable"]`` is ``True`` here (this
is the parallel version, as PettingZoo's own parallel wrappers say) and
``False`` on the AEC env: PettingZoo's generic ``aec_to_parallel`` would be
wrong for a game whose turns are several actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from kahuna_env.env import AGENT_INDEX, AGENTS, WAITING_MASK, env
from kahuna_env.observation import encode_observation

__all__ = ["WAITING_MASK", "KahunaParallelEnv", "parallel_env"]


class KahunaParallelEnv(ParallelEnv):
    """Kahuna through PettingZoo's parallel API (see the module docstring); keywords as :func:`kahuna_env.env`."""

    def __init__(self, **options: Any) -> None:
        if options.get("closing_step"):
            raise ValueError("kahuna_env.parallel_env(): closing_step is an AEC option; here both rewards come at once")
        self.aec_env = env(**options)
        raw = self.aec_env.unwrapped
        self._raw = raw
        self.metadata = {**raw.metadata, "is_parallelizable": True}
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.render_mode = raw.render_mode
        self.state_space = raw.state_space
        self._flat = raw.observation_mode == "flat"

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """The AEC env's observation space of ``agent``."""
        return self._raw.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """``Discrete(179)``."""
        return self._raw.action_space(agent)

    @property
    def unwrapped(self) -> Any:
        """The raw AEC env (``raw_env``); its ``game`` is the rules engine."""
        return self._raw

    # ------------------------------------------------------------------ parallel API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start a game (``seed`` and ``options`` as the AEC env's ``reset``); returns observations and infos."""
        self.aec_env.reset(seed=seed, options=options)
        self.agents = list(AGENTS)
        return self._observations(), self._infos()

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """Apply the acting agent's action (the other agent's is ignored); both agents get every result."""
        if not self.agents:
            if self._raw.game is None:
                raise RuntimeError("step(): call reset() before the first step")
            raise RuntimeError("step(): the game is over; call reset() to start a new game")
        acting = self.aec_env.agent_selection
        if acting not in actions:
            raise KeyError(f"step(): no action for {acting!r}, the agent to act (actions given for {sorted(actions)})")
        self.aec_env.step(actions[acting])
        raw = self._raw
        rewards = {agent: float(raw.rewards[agent]) for agent in AGENTS}
        terminations = {agent: bool(raw.terminations[agent]) for agent in AGENTS}
        truncations = {agent: bool(raw.truncations[agent]) for agent in AGENTS}
        observations = self._observations()
        infos = self._infos()
        if any(terminations.values()) or any(truncations.values()):
            # The game is over: finish the AEC env's dead steps so that it is clean, and retire both agents.
            while self.aec_env.agents:
                self.aec_env.step(None)
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """The full state for centralized critics (``state_space``)."""
        return self._raw.state()

    def render(self) -> str | np.ndarray | None:
        """Render as ``render_mode`` says."""
        return self._raw.render()

    def close(self) -> None:
        """Close the renderer's window if one is open."""
        self.aec_env.close()

    @property
    def acting_agent(self) -> str | None:
        """The agent whose action the next :meth:`step` applies (``None`` before a reset and once the game is over)."""
        raw = self._raw
        game = raw.game
        if game is None or game.is_over or not self.agents:
            return None
        return raw.agent_selection

    # ------------------------------------------------------------------ internals
    def _mask(self, agent: str) -> np.ndarray:
        acting = self.acting_agent
        if acting is not None and agent != acting and not self._raw.truncations.get(agent, False):
            return WAITING_MASK  # the AEC env's all-zero mask would leave a masked sampler nothing to choose
        return self._raw.action_mask(agent)

    def _observations(self) -> dict[str, Any]:
        raw = self._raw
        if self._flat:
            return {agent: raw.observe(agent) for agent in AGENTS}
        return {
            agent: {"observation": encode_observation(raw.game, AGENT_INDEX[agent]), "action_mask": self._mask(agent)}
            for agent in AGENTS
        }

    def _infos(self) -> dict[str, dict[str, Any]]:
        raw = self._raw
        infos: dict[str, dict[str, Any]] = {}
        for agent in AGENTS:
            info = {key: value for key, value in raw.infos.get(agent, {}).items() if key != "action_mask"}
            if self._flat:
                info["action_mask"] = self._mask(agent)
            infos[agent] = info
        return infos

    def __str__(self) -> str:
        return str(self._raw)


def parallel_env(**options: Any) -> KahunaParallelEnv:
    """The Kahuna parallel env (PettingZoo parallel API for a turn-based game; see :mod:`kahuna_env.parallel`)."""
    return KahunaParallelEnv(**options)
