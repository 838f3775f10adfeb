"""The RLlib Learner: PPO with the native trainer's loss (``ppo.loss: native``) or RLlib's own (``rllib``).

RLlib 2.60's stock PPO differs from the native trainer (:func:`training.ppo.trainer.ppo_losses`,
CleanRL's PPO) in three places that change what is learned per decision:

* it standardizes the advantages once over the whole train batch; the native
  trainer standardizes them per minibatch;
* its value loss is ``vf_loss_coeff * min((V - R)^2, vf_clip_param)``: no 0.5
  factor and no clipping around the values the batch was sampled with; the
  native one is ``vf_coef * 0.5 * max((V - R)^2, (V_clipped - R)^2)`` with
  ``V_clipped = V_old + clip(V - V_old, -clip, clip)``, so with the same
  coefficient RLlib weights the critic twice as much;
* its Adam epsilon is 1e-8 (native: ``ppo.adam_eps``, 1e-5).

:class:`KahunaPPOLearner` is the PPO Learner of every ``kahuna-rllib`` run.
With ``ppo.loss: native`` (the default) it replaces RLlib's GAE connector by
:class:`RawAdvantages` (same GAE, advantages left raw, the sampled values kept
in the batch as ``vf_preds``) and computes the native loss; with
``ppo.loss: rllib`` it is RLlib's PPO unchanged except for the Adam epsilon.
The options reach the Learner through ``learner_config_dict``
(:data:`LOSS_KEY`, :data:`ADAM_EPS_KEY`, :data:`CLIP_VLOSS_KEY`).
"""

from __future__ import annotations

from typing import Any

from training.rllib.errors import require_ray

require_ray()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ray.rllib.algorithms.ppo.ppo import (  # noqa: E402
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner  # noqa: E402
from ray.rllib.connectors.learner import GeneralAdvantageEstimation  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.evaluation.postprocessing import Postprocessing  # noqa: E402
from ray.rllib.utils.numpy import convert_to_numpy  # noqa: E402
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets  # noqa: E402
from ray.rllib.utils.torch_utils import explained_variance  # noqa: E402

from training.ppo.trainer import clipped_ppo_terms  # noqa: E402
from training.rllib.config import PPO_LOSSES  # noqa: E402

LOSS_KEY = "kahuna_loss"
"""``learner_config_dict`` key: ``"native"`` or ``"rllib"`` (``ppo.loss``)."""
ADAM_EPS_KEY = "kahuna_adam_eps"
"""``learner_config_dict`` key: Adam's epsilon (``ppo.adam_eps``)."""
CLIP_VLOSS_KEY = "kahuna_clip_vloss"
"""``learner_config_dict`` key: clip the value loss around the sampled values (``ppo.clip_vloss``, native loss)."""
BF16_KEY = "kahuna_bf16"
"""``learner_config_dict`` key: True runs the trained modules' forward passes under bfloat16 autocast (CPU)."""


class RawAdvantages(GeneralAdvantageEstimation):
    """RLlib's GAE connector without the batch-wide standardization, keeping the sampled values.

    Writes ``advantages`` (raw GAE), ``value_targets`` (advantages + values) and
    ``vf_preds`` (the values of the network the batch was collected for, before
    any gradient step of this iteration) into every trained module's batch.
    Where the episodes carry ``vf_preds`` already (the batched sampler records
    the values it sampled with, as the native trainer does), those are used
    instead of a second forward pass over the batch.
    The Kahuna module is not recurrent, so there is no zero padding to undo.
    """

    def __call__(self, *, rl_module: Any, episodes: list[Any], batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        episodes_list = list(self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False))
        for module_id, module in rl_module.items():
            if module_id not in batch or not isinstance(module, ValueFunctionAPI):
                continue
            if module.is_stateful():
                raise ValueError(f"module {module_id!r} is recurrent; ppo.loss=native supports feed-forward modules")
            module_batch = batch[module_id]
            sampled = module_batch.get(Columns.VF_PREDS)
            if sampled is not None:  # recorded by the sampler (the batched runner) with these very weights
                values_tensor = torch.as_tensor(sampled).reshape(-1).float()
            else:
                with torch.no_grad():
                    values_tensor = module.compute_values(module_batch)
            values = convert_to_numpy(values_tensor).astype(np.float32)
            lengths = [len(e) for e in episodes_list if e.module_id in (None, module_id)]
            targets = compute_value_targets(
                values=values,
                rewards=convert_to_numpy(module_batch[Columns.REWARDS]),
                terminateds=convert_to_numpy(module_batch[Columns.TERMINATEDS]),
                truncateds=convert_to_numpy(module_batch[Columns.TRUNCATEDS]),
                gamma=self.gamma,
                lambda_=self.lambda_,
            )
            if targets.shape[0] != sum(lengths):
                raise RuntimeError(f"GAE: {targets.shape[0]} value targets for {sum(lengths)} timesteps")
            device = values_tensor.device
            module_batch[Postprocessing.ADVANTAGES] = torch.as_tensor(targets - values, device=device)
            module_batch[Postprocessing.VALUE_TARGETS] = torch.as_tensor(targets, device=device)
            module_batch[Columns.VF_PREDS] = values_tensor.detach()
        return batch


def normalized(advantages: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``advantages`` standardized by the mean and (unbiased) std of the entries where ``mask`` is true.

    The native trainer's per-minibatch normalisation (:func:`training.ppo.trainer.ppo_losses`), over the
    minibatch's real timesteps only (RLlib adds one masked timestep per episode chunk for bootstrapping).
    """
    selected = advantages if mask is None else advantages[mask]
    if selected.numel() < 2:
        return advantages
    return (advantages - selected.mean()) / (selected.std() + 1e-8)


class KahunaPPOLearner(PPOTorchLearner):
    """PPO Learner with the native trainer's loss and Adam epsilon (see the module docstring)."""

    def _option(self, key: str, default: Any) -> Any:
        return (self.config.learner_config_dict or {}).get(key, default)

    def build(self) -> None:
        # Read (and checked) once: RLlibConfig validates ppo.loss, but a Learner can be built from any config.
        self.loss_kind = self._option(LOSS_KEY, "native")
        if self.loss_kind not in PPO_LOSSES:
            raise ValueError(f"unknown PPO loss {self.loss_kind!r}; expected one of {', '.join(PPO_LOSSES)}")
        super().build()
        bf16 = bool(self._option(BF16_KEY, False)) and torch.device(self._device).type == "cpu"
        for _, wrapped in self.module.items():
            module = wrapped.unwrapped()
            if hasattr(module, "train_bf16"):
                module.train_bf16 = bf16
        if self.loss_kind == "native" and self._learner_connector is not None:
            pipeline = self._learner_connector
            if not any(type(piece) is GeneralAdvantageEstimation for piece in pipeline.connectors):
                raise RuntimeError("RLlib's PPO learner pipeline has no GAE connector to replace")
            pipeline.remove(GeneralAdvantageEstimation)
            pipeline.append(RawAdvantages(gamma=self.config.gamma, lambda_=self.config.lambda_))

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        params = self.get_parameters(self._module[module_id])
        optimizer = torch.optim.Adam(params, eps=float(self._option(ADAM_EPS_KEY, 1e-5)))
        self.register_optimizer(module_id=module_id, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr)

    def compute_loss_for_module(self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]):
        if self.loss_kind == "rllib":
            return super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        module = self.module[module_id].unwrapped()
        mask = batch.get(Columns.LOSS_MASK)

        def mean(values: torch.Tensor) -> torch.Tensor:
            return values.mean() if mask is None else values[mask].mean()

        distribution = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        sampled = module.get_exploration_action_dist_cls().from_logits(batch[Columns.ACTION_DIST_INPUTS])
        kl = mean(sampled.kl(distribution))
        logp_ratio = torch.exp(distribution.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        returns = batch[Postprocessing.VALUE_TARGETS]
        policy, value = clipped_ppo_terms(
            logp_ratio,
            normalized(batch[Postprocessing.ADVANTAGES], mask),
            values,
            batch[Columns.VF_PREDS],
            returns,
            config.clip_param,
            bool(self._option(CLIP_VLOSS_KEY, True)),
        )
        entropy = mean(distribution.entropy())
        policy_loss, value_loss = mean(policy), mean(value)
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total = policy_loss - entropy_coeff * entropy + config.vf_loss_coeff * value_loss
        if config.use_kl_loss:
            total = total + self.curr_kl_coeffs_per_module[module_id] * kl
        self.metrics.log_dict(
            {
                POLICY_LOSS_KEY: policy_loss,
                VF_LOSS_KEY: value_loss,
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean(0.5 * (values - returns) ** 2),
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(returns, values),
                ENTROPY_KEY: entropy,
                LEARNER_RESULTS_KL_KEY: kl,
            },
            key=module_id,
            window=1,
        )
        return total
