"""Search guided by the network: the one ISMCTS search with an :class:`ActorCritic` as prior and value.

The network is the search's evaluator plug-in (:mod:`kahuna_env.agents.search`):
:class:`NetworkEvaluator` is a :class:`kahuna_env.agents.evaluators.LeafEvaluator`,
which :class:`kahuna_env.agents.evaluators.GuidedEvaluator` plugs into the
descent (a batch of leaves per forward pass; this module is the torch side,
``kahuna_env`` never imports torch).  For a batch of determinized
positions it encodes each one from the player to move
(:func:`kahuna_env.observation.encode_observation`, what that player may
know), runs one forward pass and returns

* **priors**: ``softmax(logits / prior_temperature)`` over the position's
  legal actions (the PUCT prior ``P``: the policy's order, flattened; the
  search sharpens it again at the opponent's nodes, to
  ``opponent_prior_temperature``);
* **values**: the critic's estimate mapped to a win probability for the
  player to move.  The critic is trained on the return ``win * outcome`` (+1
  win, -1 loss, 0 draw) plus potential-based island shaping
  ``c * (phi(next) - phi(now))`` with ``phi = (my islands - the opponent's) / 12``
  and ``gamma = 1`` (``training/selfplay/rollout.py``), which sums to ``-c * phi(now)``
  over the rest of the game.  So ``v + c * phi`` estimates ``outcome`` and
  the win probability is ``clip((v + c * phi + 1) / 2, 0, 1)`` (``v`` divided
  by ``win`` first); ``c`` is ``island_shaping``.  Both are the reward
  settings the network was trained with: :func:`load_guided_agent` reads them
  from the agent file (:func:`kahuna_policy.agent.recorded_reward`); a file that
  records none (written before they were recorded) gets
  :data:`kahuna_policy.agent.DEFAULT_REWARD` (``win`` 1, ``island_shaping`` 1, what
  every shipped config trains with), and one warning line says so.

:class:`GuidedMCTSAgent` is a :class:`~kahuna_env.agents.mcts.GuidedSearchAgent` (the guided
search every evaluator shares, its settings :data:`~kahuna_env.agents.mcts.GUIDED_DEFAULTS`) with
that evaluator and, at the root, sequential halving over the policy's top
``root_candidates`` (4) actions instead of PUCT
(:class:`~kahuna_env.agents.selectors.SequentialHalving`); its
``last_search`` holds the visit counts, mean values and policy of its last
search (e.g. search-improved training targets); :func:`load_guided_agent` builds one from anything
:func:`kahuna_policy.agent.load_agent` reads (``PATH.pt@mcts:N`` and
``champion@mcts:N`` as entrants, see ``kahuna_arena/entrants.py``).  The agent acts
through :func:`kahuna_env.agents.choose_action` like every other: it is
handed a determinization, never the real game.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents.mcts import (
    DEFAULT_PRIOR_TEMPERATURE,
    DEFAULT_SIMULATIONS,
    GuidedSearchAgent,
)
from kahuna_env.agents.spec import search_spec
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation
from kahuna_policy.agent import load_agent
from kahuna_policy.model import ActorCritic
from kahuna_policy.reward import DEFAULT_REWARD, island_potentials

DEFAULT_ISLAND_SHAPING = DEFAULT_REWARD["island_shaping"]
"""The island-shaping coefficient assumed when none is given (every shipped config's ``reward.island_shaping``)."""


class NetworkEvaluator:
    """Priors and win probabilities from an :class:`ActorCritic`, one forward pass per batch of positions.

    Args:
        model: the network (put in eval mode).
        island_shaping: the shaping coefficient ``c`` the critic was trained
            with, undone when mapping its value to a win probability (see the
            module docstring); finite.
        win_reward: the terminal reward of a win the critic was trained with (> 0).
        prior_temperature: the priors are ``softmax(logits / prior_temperature)``
            over the legal actions (> 0; 1 is the policy itself, the default 20
            is nearly flat but keeps the policy's order).

    Attributes:
        positions: positions evaluated so far; ``calls``: forward passes so far.
    """

    def __init__(
        self,
        model: ActorCritic,
        island_shaping: float = DEFAULT_ISLAND_SHAPING,
        win_reward: float = 1.0,
        prior_temperature: float = DEFAULT_PRIOR_TEMPERATURE,
    ) -> None:
        if not isinstance(model, ActorCritic):
            raise ValueError(f"NetworkEvaluator needs an ActorCritic, got {type(model).__name__}")
        for label, number, positive in (
            ("island_shaping", island_shaping, False),
            ("win_reward", win_reward, True),
            ("prior_temperature", prior_temperature, True),
        ):
            finite = not isinstance(number, bool) and isinstance(number, (int, float)) and np.isfinite(number)
            if not finite or (positive and number <= 0):
                bound = " > 0" if positive else ""
                raise ValueError(f"NetworkEvaluator {label} must be a finite number{bound}, got {number!r}")
        self.model = model.eval()
        self.island_shaping = float(island_shaping)
        self.win_reward = float(win_reward)
        self.prior_temperature = float(prior_temperature)
        self.positions = 0
        self.calls = 0

    @torch.inference_mode()
    def evaluate(
        self, states: Sequence[KahunaGame], legal: Sequence[list[int]]
    ) -> tuple[list[list[float]], list[float]]:
        """Priors over each state's ``legal`` actions and the win probability of its player to move."""
        count = len(states)
        observations = np.empty((count, OBSERVATION_SIZE), dtype=np.float32)
        masks = np.zeros((count, NUM_ACTIONS), dtype=np.bool_)
        for row, (state, actions) in enumerate(zip(states, legal, strict=True)):
            observations[row] = encode_observation(state, state.current_player)
            masks[row, actions] = True
        logits, values = self.model(torch.from_numpy(observations), torch.from_numpy(masks))
        probabilities = torch.softmax(logits.float() / self.prior_temperature, dim=1).numpy()
        potentials = island_potentials(observations)
        outcome = (values.float().numpy() + self.island_shaping * potentials) / self.win_reward
        wins = np.clip((outcome + 1.0) / 2.0, 0.0, 1.0)
        priors = [probabilities[row, actions].tolist() for row, actions in enumerate(legal)]
        self.positions += count
        self.calls += 1
        return priors, wins.tolist()


class GuidedMCTSAgent(GuidedSearchAgent):
    """The ``mcts`` baseline's ISMCTS guided by a network (:class:`NetworkEvaluator`).

    Args:
        model: the :class:`ActorCritic`.
        island_shaping: see :class:`NetworkEvaluator`.
        win_reward: see :class:`NetworkEvaluator` (default 1).
        prior_temperature: see :class:`NetworkEvaluator` (default 20).
        options: the guided search's (:class:`kahuna_env.agents.mcts.GuidedSearchAgent`: ``simulations``,
            ``value_weight``, ``batch_size``, ``exploration``, ``rollout_depth``, ``first_play_penalty``,
            ``lcb_weight``, ``opponent_prior_temperature``, ``root_candidates``, ``seed``, ``name``; defaults
            :data:`kahuna_env.agents.mcts.GUIDED_DEFAULTS`).
    """

    def __init__(
        self,
        model: ActorCritic,
        island_shaping: float = DEFAULT_ISLAND_SHAPING,
        win_reward: float = 1.0,
        prior_temperature: float = DEFAULT_PRIOR_TEMPERATURE,
        **options: Any,
    ) -> None:
        evaluator = NetworkEvaluator(
            model, island_shaping=island_shaping, win_reward=win_reward, prior_temperature=prior_temperature
        )
        super().__init__(evaluator, prior_temperature=prior_temperature, **options)


def load_guided_agent(
    source: str | Path, simulations: int = DEFAULT_SIMULATIONS, seed: int | None = None, **options
) -> GuidedMCTSAgent:
    """A :class:`GuidedMCTSAgent` with the network of anything :func:`kahuna_policy.agent.load_agent` reads.

    ``source`` is a policy file / checkpoint path or a named agent
    (``"champion"``); ``options`` go to :class:`GuidedMCTSAgent`.  The value
    semantics (``island_shaping``, ``win_reward``) are the reward settings the
    file records, unless ``options`` give them; a file recording none gets
    :data:`policy.agent.DEFAULT_REWARD`, with one warning line per file (also
    across the worker processes this process starts afterwards).  Errors are
    ``load_agent``'s (``FileNotFoundError``, one-line ``ValueError``).
    """
    policy = load_agent(source, seed=seed)
    reward = policy.reward
    if reward is None:
        reward = DEFAULT_REWARD
        warned = os.environ.get(_WARNED_ENVIRONMENT, "").split("\n")
        if str(source) not in warned:
            # Recorded in the environment, so the worker processes an evaluation spawns later stay silent.
            os.environ[_WARNED_ENVIRONMENT] = "\n".join([*warned, str(source)]).strip("\n")
            print(
                f"warning: {source} does not record the reward settings it was trained with; its values are read "
                f"with the default ones (win {reward['win']:g}, island_shaping {reward['island_shaping']:g})",
                file=sys.stderr,
            )
    options = {"island_shaping": reward["island_shaping"], "win_reward": reward["win"], **options}
    name = search_spec(Path(str(source)).stem or str(source), simulations)
    return GuidedMCTSAgent(policy.model, simulations=simulations, seed=seed, name=name, **options)


_WARNED_ENVIRONMENT = "KAHUNA_DEFAULT_REWARD_WARNED"
"""Environment variable listing (one per line) the agent files whose missing reward settings were already
reported by this process or the process that started it (said once, also across an evaluation's workers)."""
