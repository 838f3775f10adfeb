"""The RLlib Learner (issue 16): ``ppo.loss: native`` computes the native trainer's PPO loss exactly.

A Learner is built directly from ``configs/rllib.yaml`` (no Ray cluster, no
sampling); its loss on a hand-made batch is compared with
:func:`training.ppo.trainer.ppo_losses` on the same data, and its pipeline and
optimizer with what the config asks for.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from test_rllib import random_states

from training.ppo.config import PPOConfig as NativePPOConfig
from training.ppo.trainer import clipped_ppo_terms, ppo_losses
from training.rllib.config import load_rllib_config
from training.rllib.errors import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
)
# float32 (ppo.bf16=false): the loss formulas are compared to the native trainer's exactly.
SMALL = ["model.architecture=mlp", "model.hidden_sizes=[16]", "pool.max_snapshots=1", "ppo.bf16=false"]


def build_learner(*overrides: str):
    from training.rllib.algorithm import build_ppo_config
    from training.rllib.env import action_space, observation_space

    config = load_rllib_config(CONFIG, [*SMALL, *overrides])
    spaces = {module: (observation_space(), action_space()) for module in ("learner", "snapshot_0")}
    return config, build_ppo_config(config).build_learner(spaces=spaces)


@pytest.fixture(scope="module")
def native_learner():
    return build_learner()


def make_batch(learner, count: int, seed: int, masked: int) -> dict:
    """A module batch as RLlib's learner pipeline hands it to the loss: ``masked`` bootstrap rows at the end."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    observations, masks = random_states(count, seed)
    rng = np.random.default_rng(seed)
    module = learner.module["learner"].unwrapped()
    obs = {"observations": torch.from_numpy(observations), "action_mask": torch.from_numpy(masks)}
    with torch.no_grad():
        logits, _ = module.net(obs["observations"], obs["action_mask"])
    # Sampling-time logits: the current ones, perturbed, so that the ratio is not 1 and clipping bites.
    old_logits = logits + torch.from_numpy(rng.normal(0, 0.5, logits.shape).astype(np.float32))
    old_logits = torch.where(obs["action_mask"] > 0, old_logits, logits)
    actions = torch.tensor([rng.choice(np.flatnonzero(row)) for row in masks])
    old_logp = torch.log_softmax(old_logits, -1).gather(1, actions[:, None]).squeeze(1)
    loss_mask = torch.ones(count, dtype=torch.bool)
    loss_mask[count - masked :] = False
    return {
        Columns.OBS: obs,
        Columns.ACTIONS: actions,
        Columns.ACTION_LOGP: old_logp,
        Columns.ACTION_DIST_INPUTS: old_logits,
        Postprocessing.ADVANTAGES: torch.from_numpy(rng.normal(0.3, 2.0, count).astype(np.float32)),
        Postprocessing.VALUE_TARGETS: torch.from_numpy(rng.uniform(-1, 1, count).astype(np.float32)),
        Columns.VF_PREDS: torch.from_numpy(rng.uniform(-1, 1, count).astype(np.float32)),
        Columns.LOSS_MASK: loss_mask,
    }


def native_loss(learner, batch: dict, config) -> tuple[torch.Tensor, dict]:
    """:func:`training.ppo.trainer.ppo_losses` on the batch's real rows, with the RLlib config's coefficients."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    keep = batch[Columns.LOSS_MASK]
    module = learner.module["learner"].unwrapped()
    logits, values = module.net(batch[Columns.OBS]["observations"][keep], batch[Columns.OBS]["action_mask"][keep])
    ppo = NativePPOConfig(
        clip_coef=config.ppo.clip_coef,
        ent_coef=config.ppo.ent_coef,
        vf_coef=config.ppo.vf_coef,
        clip_vloss=config.ppo.clip_vloss,
        norm_adv=True,
    )
    return ppo_losses(
        logits,
        values,
        batch[Columns.ACTIONS][keep],
        batch[Columns.ACTION_LOGP][keep],
        batch[Columns.VF_PREDS][keep],
        batch[Postprocessing.ADVANTAGES][keep],
        batch[Postprocessing.VALUE_TARGETS][keep],
        ppo,
    )


def rllib_loss(learner, batch: dict) -> torch.Tensor:
    fwd_out = learner.module["learner"].forward_train(batch)
    return learner.compute_loss_for_module(
        module_id="learner", config=learner.config.get_config_for_module("learner"), batch=batch, fwd_out=fwd_out
    )


@pytest.mark.parametrize("masked", [0, 3])
def test_native_loss_equals_the_native_trainers_loss_on_the_same_minibatch(native_learner, masked):
    config, learner = native_learner
    batch = make_batch(learner, 64, seed=masked + 1, masked=masked)
    expected, parts = native_loss(learner, batch, config)
    got = rllib_loss(learner, batch)
    assert got.item() == pytest.approx(expected.item(), rel=1e-5, abs=1e-6)
    # The masked (bootstrap) rows change nothing: scrambling them leaves the loss as it is.
    if masked:
        from ray.rllib.evaluation.postprocessing import Postprocessing

        batch[Postprocessing.ADVANTAGES][-masked:] = 1e3
        batch[Postprocessing.VALUE_TARGETS][-masked:] = -1e3
        assert rllib_loss(learner, batch).item() == pytest.approx(got.item(), rel=1e-6, abs=1e-6)
    # Gradients agree too (same parameters, same loss function).
    params = list(learner.module["learner"].unwrapped().net.parameters())
    grads_rllib = torch.autograd.grad(rllib_loss(learner, batch), params)
    grads_native = torch.autograd.grad(native_loss(learner, batch, config)[0], params)
    for a, b in zip(grads_rllib, grads_native, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert np.isfinite(parts["approx_kl"].item())


def test_native_loss_differs_from_rllibs_stock_loss_on_the_same_batch(native_learner):
    _, learner = native_learner
    _, stock = build_learner("ppo.loss=rllib")
    stock.module["learner"].unwrapped().net.load_state_dict(learner.module["learner"].unwrapped().net.state_dict())
    batch = make_batch(learner, 64, seed=9, masked=2)
    assert rllib_loss(stock, batch).item() != pytest.approx(rllib_loss(learner, batch).item(), rel=1e-3)


def test_native_pipeline_keeps_raw_advantages_and_the_sampled_values(native_learner):
    from ray.rllib.connectors.learner import GeneralAdvantageEstimation

    from training.rllib.learner import RawAdvantages

    _, learner = native_learner
    pieces = [type(piece) for piece in learner._learner_connector.connectors]
    assert pieces[-1] is RawAdvantages
    assert GeneralAdvantageEstimation not in pieces
    _, stock = build_learner("ppo.loss=rllib")
    assert type(stock._learner_connector.connectors[-1]) is GeneralAdvantageEstimation


@pytest.mark.parametrize(("overrides", "eps"), [((), 1e-5), (("ppo.adam_eps=1e-8",), 1e-8)])
def test_adam_epsilon_comes_from_the_config(overrides, eps):
    _, learner = build_learner(*overrides)
    assert learner.get_optimizer("learner").defaults["eps"] == eps


def test_raw_advantages_are_gae_of_the_sampled_values():
    """The connector's GAE on one finished episode (plus RLlib's bootstrap row) matches the formula."""
    from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

    rewards = np.array([0.1, 0.0, -0.2, 1.0, 0.0], dtype=np.float32)  # last: RLlib's artificial row
    values = np.array([0.2, 0.4, -0.1, 0.5, 0.0], dtype=np.float32)
    terminateds = np.array([0, 0, 0, 1, 0], dtype=np.float32)
    targets = compute_value_targets(
        values=values,
        rewards=rewards,
        terminateds=terminateds,
        truncateds=np.zeros(5, dtype=np.float32),
        gamma=1.0,
        lambda_=0.95,
    )
    # By hand, backwards from the terminal step (gamma 1, lambda 0.95, no bootstrap after it).
    advantages = np.zeros(4)
    gae = 0.0
    for t in (3, 2, 1, 0):
        next_value = 0.0 if t == 3 else values[t + 1]
        gae = rewards[t] + next_value - values[t] + 0.95 * gae
        advantages[t] = gae
    np.testing.assert_allclose(targets[:4] - values[:4], advantages, rtol=1e-5, atol=1e-6)


def test_clipped_terms_without_value_clipping_are_half_the_squared_error():
    ratio = torch.tensor([0.5, 1.0, 1.5])
    advantages = torch.tensor([1.0, -1.0, 2.0])
    values, old, returns = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0.9, 0.5, 0.0]), torch.tensor([1.0, 0.0, 0.0])
    policy, value = clipped_ppo_terms(ratio, advantages, values, old, returns, 0.2, clip_vloss=False)
    torch.testing.assert_close(value, 0.5 * (values - returns) ** 2)
    # max(-A r, -A clip(r)): ratio 0.5, A = 1 keeps -0.5 (not -0.8); ratio 1.5, A = 2 keeps -2.4 (not -3).
    torch.testing.assert_close(policy, torch.tensor([-0.5, 1.0, -2.4]))
    _, clipped = clipped_ppo_terms(ratio, advantages, values, old, returns, 0.2, clip_vloss=True)
    # Value 0.0 against old 0.9 clips to 0.7: (0.7 - 1)^2 = 0.09 < (0 - 1)^2 = 1, so the max keeps 0.5.
    torch.testing.assert_close(clipped, torch.tensor([0.5, 0.125, 0.5]))


def test_unknown_loss_is_a_one_line_config_error():
    from training.ppo.config import ConfigError

    with pytest.raises(ConfigError, match=r"ppo\.loss: must be one of native, rllib"):
        load_rllib_config(CONFIG, ["ppo.loss=cleanrl"])
    with pytest.raises(ConfigError, match=r"ppo\.adam_eps: must be > 0"):
        load_rllib_config(CONFIG, ["ppo.adam_eps=0"])


def test_shipped_config_uses_the_native_loss_with_the_native_trainers_constants():
    from training.ppo.config import load_config

    rllib = load_rllib_config(CONFIG).ppo
    native = load_config(ROOT / "configs" / "quick.yaml").ppo
    assert rllib.loss == "native"
    assert (rllib.clip_vloss, rllib.adam_eps) == (native.clip_vloss, native.adam_eps)
    assert rllib.clip_coef == native.clip_coef
