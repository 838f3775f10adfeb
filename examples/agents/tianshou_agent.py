"""A Tianshou network as a Kahuna agent: ``kahuna-eval py:examples/agents/tianshou_agent.py:Agent greedy``.

The ``Net`` of docs/ECOSYSTEM.md's Tianshou recipe (the flat observation in, one score per action out);
``KAHUNA_TIANSHOU_WEIGHTS`` names its ``state_dict`` (``torch.save(kahuna_policy.model.state_dict(), path)`` after
training; without it, a seeded random network).  The arena masks nothing for a ``py:`` agent: ``act`` does.
"""

import os

import numpy as np
import torch
from tianshou.utils.net.common import Net

OBSERVATION_SIZE, NUM_ACTIONS = 246, 179


class Agent:
    """The legal action with the highest score of a Tianshou ``Net``."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.net = Net(state_shape=OBSERVATION_SIZE, action_shape=NUM_ACTIONS, hidden_sizes=[64, 64]).eval()
        weights = os.environ.get("KAHUNA_TIANSHOU_WEIGHTS")
        if weights:
            self.net.load_state_dict(torch.load(weights, weights_only=True))

    @torch.inference_mode()
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        scores, _ = self.net(torch.as_tensor(observation, dtype=torch.float32)[None])
        scores[0, ~torch.as_tensor(action_mask, dtype=torch.bool)] = -torch.inf
        return int(scores.argmax())
