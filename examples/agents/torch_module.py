"""A plain PyTorch module as a Kahuna agent: ``kahuna-eval py:examples/agents/torch_module.py:TorchAgent greedy``.

Any network of your own becomes an entrant by wrapping it in a class with ``act`` (and ``value`` for
``@mcts``): the arena builds the class with no arguments, so the class finds its weights itself (here
``KAHUNA_TORCH_WEIGHTS``, a ``state_dict`` saved with ``torch.save``; without it, a seeded random network).
"""

import os

import numpy as np
import torch
from torch import nn

OBSERVATION_SIZE, NUM_ACTIONS = 246, 179


class PolicyNet(nn.Module):
    """An actor-critic MLP: logits over the 179 actions and a value in [-1, 1]."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(OBSERVATION_SIZE, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.policy = nn.Linear(hidden, NUM_ACTIONS)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(observation)
        return self.policy(features), torch.tanh(self.critic(features)).squeeze(-1)


class TorchAgent:
    """The agent protocol over :class:`PolicyNet`: masked argmax, and the critic as ``value``."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.net = PolicyNet().eval()
        weights = os.environ.get("KAHUNA_TORCH_WEIGHTS")
        if weights:
            self.net.load_state_dict(torch.load(weights, weights_only=True))

    @torch.inference_mode()
    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        logits, _ = self.net(torch.as_tensor(observations, dtype=torch.float32))
        logits[~torch.as_tensor(action_masks, dtype=torch.bool)] = -torch.inf
        return logits.argmax(dim=-1).numpy()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], action_mask[None])[0])

    @torch.inference_mode()
    def value(self, observation: np.ndarray) -> float:
        return float(self.net(torch.as_tensor(observation, dtype=torch.float32)[None])[1][0])
