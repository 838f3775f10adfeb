"""The masked actor-critic network and the agent file format shared by every tool.

A policy file (an exported agent, or a training checkpoint, which holds the
same keys and more) is a ``torch.save`` dict of plain types and tensors,
loaded with ``weights_only=True`` so an untrusted file cannot run code:

==================  ==========================================================
key                 value
==================  ==========================================================
``format``          ``"kahuna-agent-v1"``
``model_config``    ``dict``: the :class:`ModelConfig` fields
``model_state``     the network's ``state_dict``
``observation_size``  246 (must match :data:`kahuna_env.observation.OBSERVATION_SIZE`)
``num_actions``     179
``meta``            ``dict`` of plain values (run name, update, env steps, ...)
==================  ==========================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.observation import OBSERVATION_SIZE

AGENT_FORMAT = "kahuna-agent-v1"
MASKED_LOGIT = -1e9
"""Logit given to illegal actions: their probability is exactly 0 in float32."""

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Network shape.

    Attributes:
        hidden_sizes: widths of the shared MLP trunk's hidden layers.
        activation: ``"tanh"`` or ``"relu"``.
    """

    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "tanh"

    def __post_init__(self) -> None:
        sizes = tuple(self.hidden_sizes)
        if not sizes or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
            raise ValueError(f"model.hidden_sizes must be a non-empty list of positive integers, got {self.hidden_sizes!r}")
        object.__setattr__(self, "hidden_sizes", sizes)
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"model.activation must be one of {sorted(_ACTIVATIONS)}, got {self.activation!r}")


class ActorCritic(nn.Module):
    """MLP trunk with a policy head (179 logits, illegal ones masked) and a value head."""

    def __init__(self, config: ModelConfig | None = None) -> None:
        super().__init__()
        self.config = config or ModelConfig()
        layers: list[nn.Module] = []
        width = OBSERVATION_SIZE
        for size in self.config.hidden_sizes:
            layers += [nn.Linear(width, size), _ACTIVATIONS[self.config.activation]()]
            width = size
        self.trunk = nn.Sequential(*layers)
        self.policy_head = nn.Linear(width, NUM_ACTIONS)
        self.value_head = nn.Linear(width, 1)
        for module in self.trunk:
            if isinstance(module, nn.Linear):
                nn.init.orthogonal_(module.weight, gain=2**0.5)
                nn.init.zeros_(module.bias)
        nn.init.orthogonal_(self.policy_head.weight, gain=0.01)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0)
        nn.init.zeros_(self.value_head.bias)

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(batch, 179)`` and values ``(batch,)``; ``action_mask`` is nonzero where legal."""
        hidden = self.trunk(observation)
        logits = self.policy_head(hidden)
        logits = torch.where(action_mask.bool(), logits, torch.full_like(logits, MASKED_LOGIT))
        return logits, self.value_head(hidden).squeeze(-1)


def model_config_from_dict(values: Mapping[str, Any]) -> ModelConfig:
    """Build a :class:`ModelConfig` from a mapping; unknown keys are a ``ValueError``."""
    known = {field.name for field in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown model option(s) {unknown}; known: {sorted(known)}")
    data = dict(values)
    if "hidden_sizes" in data and isinstance(data["hidden_sizes"], list):
        data["hidden_sizes"] = tuple(data["hidden_sizes"])
    return ModelConfig(**data)


def agent_payload(model: ActorCritic, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keys of the agent file format for ``model`` (training checkpoints add their own)."""
    config = dataclasses.asdict(model.config)
    config["hidden_sizes"] = list(config["hidden_sizes"])
    return {
        "format": AGENT_FORMAT,
        "model_config": config,
        "model_state": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "observation_size": OBSERVATION_SIZE,
        "num_actions": NUM_ACTIONS,
        "meta": dict(meta or {}),
    }


def model_from_payload(payload: Mapping[str, Any], source: str = "policy file") -> ActorCritic:
    """Rebuild the network from an agent-format dict; a wrong format is a ``ValueError`` naming ``source``."""
    if not isinstance(payload, Mapping) or payload.get("format") != AGENT_FORMAT:
        found = payload.get("format") if isinstance(payload, Mapping) else type(payload).__name__
        raise ValueError(f"{source} is not a Kahuna agent file (format {found!r}, expected {AGENT_FORMAT!r})")
    if payload.get("observation_size") != OBSERVATION_SIZE or payload.get("num_actions") != NUM_ACTIONS:
        raise ValueError(
            f"{source} was made for observations of size {payload.get('observation_size')} and "
            f"{payload.get('num_actions')} actions; this version uses {OBSERVATION_SIZE} and {NUM_ACTIONS}"
        )
    model = ActorCritic(model_config_from_dict(payload["model_config"]))
    try:
        model.load_state_dict(payload["model_state"])
    except (RuntimeError, KeyError, TypeError) as error:
        raise ValueError(f"{source} has weights that do not fit its model_config: {error}") from None
    model.eval()
    return model
