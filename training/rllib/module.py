"""The RLModule: the project's :class:`kahuna_policy.model.ActorCritic`, with masked logits, inside RLlib.

:class:`KahunaRLModule` holds an :class:`~kahuna_policy.model.ActorCritic` as its
``net`` attribute, built from the ``model_config`` dict (the
:class:`~kahuna_policy.model.ModelConfig` fields: ``hidden_sizes``,
``activation``, and whatever else the native network offers).  Its state
dict is therefore the native network's with a ``net.`` prefix, and exporting
to the agent format (:mod:`training.rllib.export`) is a copy of that state.

The network masks illegal actions itself: they get the logit
:data:`kahuna_policy.model.MASKED_LOGIT` (-1e9), so their probability is exactly
0 in float32 in every forward pass RLlib makes (exploration on the
EnvRunners, inference, training): a sampled or argmax action is always legal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from training.rllib.errors import require_ray

require_ray()

import torch  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.core.rl_module.torch import TorchRLModule  # noqa: E402

from kahuna_env.actions import NUM_ACTIONS  # noqa: E402
from kahuna_env.observation import OBSERVATION_SIZE  # noqa: E402
from kahuna_policy.model import ActorCritic, ModelConfig, model_config_from_dict  # noqa: E402


def check_spaces(observation_space: Any, action_space: Any) -> None:
    """Raise ``ValueError`` unless the spaces are Kahuna's (see :mod:`training.rllib.env`)."""
    spaces = getattr(observation_space, "spaces", None)
    if not isinstance(spaces, dict) or set(spaces) != {"observations", "action_mask"}:
        raise ValueError(
            f"expected a Dict observation space with keys 'observations' and 'action_mask', got {observation_space}"
        )
    if spaces["observations"].shape != (OBSERVATION_SIZE,):
        raise ValueError(
            f"observations have shape {spaces['observations'].shape}; "
            f"this version of kahuna_env uses ({OBSERVATION_SIZE},)"
        )
    if spaces["action_mask"].shape != (NUM_ACTIONS,) or getattr(action_space, "n", None) != NUM_ACTIONS:
        raise ValueError(
            f"expected {NUM_ACTIONS} actions, got action space {action_space} "
            f"and mask shape {spaces['action_mask'].shape}"
        )


MODEL_KEYS = tuple(field.name for field in dataclasses.fields(ModelConfig))
"""The ``model_config`` keys the module reads (the :class:`~kahuna_policy.model.ModelConfig` fields)."""


def module_model_config(config: ModelConfig) -> dict[str, Any]:
    """``config`` as the RLModule's ``model_config`` dict (plain values, lists for tuples)."""
    values = dataclasses.asdict(config)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}


def model_config_of(model_config: Mapping[str, Any]) -> ModelConfig:
    """The :class:`~kahuna_policy.model.ModelConfig` in an RLModule ``model_config`` (RLlib adds keys of its own)."""
    return model_config_from_dict({key: model_config[key] for key in MODEL_KEYS if key in model_config})


class KahunaRLModule(TorchRLModule, ValueFunctionAPI):
    """Masked actor-critic RLModule for Kahuna (PPO-compatible: implements ``ValueFunctionAPI``).

    Every forward pass runs the whole :class:`~kahuna_policy.model.ActorCritic`
    (whatever its ``architecture``), which returns masked logits and values
    together; the training pass hands the values to ``compute_values`` as
    the "embeddings", so PPO does not run the network twice.
    """

    train_bf16 = False
    """Run the training forward pass under bfloat16 autocast (set by the Learner from ``ppo.bf16``); the
    outputs are float32 again, so the loss is computed in float32, as in the native trainer."""

    def setup(self) -> None:
        check_spaces(self.observation_space, self.action_space)
        self.net = ActorCritic(model_config_of(self.model_config))

    def _run(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        observation = batch[Columns.OBS]
        return self.net(observation["observations"], observation["action_mask"])

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, _ = self._run(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.train_bf16):
            logits, values = self._run(batch)
        return {Columns.ACTION_DIST_INPUTS: logits.float(), Columns.EMBEDDINGS: values.float()}

    def compute_values(self, batch: dict[str, Any], embeddings: Any | None = None) -> torch.Tensor:
        """State values ``(B,)``; ``embeddings`` from ``forward_train`` already are the values."""
        if embeddings is not None:
            return embeddings
        return self._run(batch)[1]
