"""Networks of other frameworks as agents: Stable-Baselines3 checkpoints and TorchScript files (torch).

**Stable-Baselines3 / sb3-contrib ``.zip``** (``PPO``, ``MaskablePPO``, ``A2C``,
``DQN``), read without unpickling anything: SB3 keeps its hyperparameters
as JSON (``data``) and the network's weights as a torch state dict
(``policy.pth``); classes, spaces and functions are cloudpickled inside
``data`` and loading them would run code from the file.  So this reader
never touches those: it reads the weights with ``torch.load(weights_only=True)``
and rebuilds the forward pass from them (the layers' shapes are in the
weights), with the activation the JSON names (``policy_kwargs``), checked
against a list of torch's activations:

* actor-critic (PPO, MaskablePPO, A2C): ``mlp_extractor.policy_net`` then
  ``action_net`` give the logits, ``mlp_extractor.value_net`` then
  ``value_net`` the value (the critic: ``AGENT.zip@mcts:N`` is guided by it);
* DQN: ``q_net.q_net`` gives Q-values (the legal action with the highest is
  played; the guided search refuses it: a Q-value is no win probability).

The observation must be the flat vector (``observation="flat"`` or the
dict's ``"observation"``; the ``MlpPolicy`` any size of network); a
checkpoint whose network cannot be rebuilt from its weights alone (a CNN or
another features extractor with weights, a recurrent policy, a
``MultiInputPolicy``) is refused in one line that says so: load it with SB3
in your own code and hand that to the arena as a ``py:`` agent (code you
chose to run).  Illegal actions are never played: the logits or Q-values are
masked.

**TorchScript files** of ``kahuna-export`` (``observation``, ``action_mask`` in;
``logits``, ``value`` out): loaded with ``torch.jit.load``, which runs no
Python code from the file.
"""

from __future__ import annotations

import json
import pickle
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents.external import ArrayAgent, regular_file
from kahuna_env.observation import OBSERVATION_SIZE

__all__ = ["SB3_ACTIVATIONS", "load_sb3", "load_torchscript"]

SB3_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "Tanh": torch.tanh,
    "ReLU": torch.relu,
    "ELU": torch.nn.functional.elu,
    "LeakyReLU": torch.nn.functional.leaky_relu,
    "GELU": torch.nn.functional.gelu,
    "SiLU": torch.nn.functional.silu,
    "Sigmoid": torch.sigmoid,
    "Softplus": torch.nn.functional.softplus,
}
"""The activations an SB3 ``policy_kwargs["activation_fn"]`` may name (torch.nn's class name)."""
MAX_DATA_BYTES = 16 << 20
"""The largest ``data`` (JSON) member of an SB3 zip that is read."""
_LINEAR = re.compile(r"^(?P<stack>.+)\.(?P<index>\d+)\.weight$")


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:160] if text else type(error).__name__


def _read_sb3(file: Path, label: str) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The JSON ``data`` and the ``policy.pth`` state dict of an SB3 zip (nothing unpickled beyond tensors)."""
    try:
        with zipfile.ZipFile(file) as archive:
            info = archive.getinfo("data")
            if info.file_size > MAX_DATA_BYTES:
                raise ValueError(f"{label}: its SB3 'data' is {info.file_size:,} bytes (at most {MAX_DATA_BYTES:,})")
            data = json.loads(archive.read("data"))
            with archive.open("policy.pth") as handle:
                weights = torch.load(handle, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(
            f"{label} is not a readable SB3 checkpoint: its policy.pth holds Python objects other than tensors "
            "(refused: loading those could run code)"
        ) from None
    except (KeyError, OSError, zipfile.BadZipFile, json.JSONDecodeError, RuntimeError, EOFError) as error:
        raise ValueError(f"{label} is not a readable SB3 checkpoint: {_one_line(error)}") from None
    if not isinstance(data, dict) or not isinstance(weights, dict):
        raise ValueError(f"{label} is not a readable SB3 checkpoint: unexpected content")
    if not all(isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in weights.items()):
        raise ValueError(f"{label} is not a readable SB3 checkpoint: policy.pth is not a state dict of tensors")
    return data, weights


def _space_size(data: dict[str, Any], key: str, field: str) -> Any:
    """A readable field of a cloudpickled space in SB3's JSON (``observation_space["_shape"]``), never unpickled."""
    space = data.get(key)
    return space.get(field) if isinstance(space, dict) else None


def _activation(data: dict[str, Any], default: str, label: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The activation SB3's ``policy_kwargs`` name (its readable copy), checked against :data:`SB3_ACTIVATIONS`."""
    kwargs = data.get("policy_kwargs")
    written = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
    if written is None:
        return SB3_ACTIVATIONS[default]
    match = re.search(r"\.(\w+)'>$", str(written))
    name = match.group(1) if match else str(written)
    if name not in SB3_ACTIVATIONS:
        raise ValueError(
            f"{label}: activation {name[:40]!r} is not one this reader rebuilds ({', '.join(SB3_ACTIVATIONS)}); "
            "evaluate it as a py: agent that loads it with SB3"
        )
    return SB3_ACTIVATIONS[name]


def _stack(weights: dict[str, torch.Tensor], prefix: str, label: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The linear layers ``prefix.0``, ``prefix.2``, ... of a state dict, in order, as (weight, bias)."""
    layers = []
    for key in weights:
        match = _LINEAR.match(key)
        if match and match.group("stack") == prefix:
            index = match.group("index")
            bias = weights.get(f"{prefix}.{index}.bias")
            if bias is None:
                raise ValueError(f"{label}: layer {prefix}.{index} has no bias")
            layers.append((int(index), weights[key].float(), bias.float()))
    return [(weight, bias) for _, weight, bias in sorted(layers, key=lambda layer: layer[0])]


def _run(layers: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor, activation: Callable, last: bool) -> Any:
    """``x`` through the linear ``layers`` with ``activation`` after each (and after the last when ``last``)."""
    for number, (weight, bias) in enumerate(layers):
        x = torch.nn.functional.linear(x, weight, bias)
        if last or number < len(layers) - 1:
            x = activation(x)
    return x


def _check_shapes(label: str, layers: list[tuple[torch.Tensor, torch.Tensor]], inputs: int, outputs: int) -> None:
    size = inputs
    for weight, bias in layers:
        if weight.ndim != 2 or weight.shape[1] != size or bias.shape != (weight.shape[0],):
            raise ValueError(f"{label}: its network's layers do not chain from {inputs} inputs (not an MLP policy?)")
        size = weight.shape[0]
    if outputs and size != outputs:
        raise ValueError(f"{label}: its network gives {size} outputs, expected {outputs} (one per Kahuna action)")


def load_sb3(path: str | Path, sampled: bool = False, seed: int | None = None, name: str | None = None) -> ArrayAgent:
    """A Stable-Baselines3 / sb3-contrib ``.zip`` as an agent (see the module docstring); one-line ``ValueError``."""
    label = name or str(path)
    file = regular_file(path)
    data, weights = _read_sb3(file, label)
    shape = _space_size(data, "observation_space", "_shape")
    actions = _space_size(data, "action_space", "n")
    if shape is not None and [str(size) for size in shape] != [str(OBSERVATION_SIZE)]:
        raise ValueError(
            f"{label}: trained on observations of shape {tuple(shape)}, not the flat Kahuna observation "
            f"({OBSERVATION_SIZE},) (observation='flat')"
        )
    if actions is not None and str(actions) != str(NUM_ACTIONS):  # SB3 writes numpy's integers as text
        raise ValueError(f"{label}: trained on {actions} actions, not Kahuna's {NUM_ACTIONS}")
    if any(key.startswith(("features_extractor.", "pi_features_extractor.", "lstm")) for key in weights):
        raise ValueError(
            f"{label}: its network has a features extractor or recurrent layers with weights, which cannot be "
            "rebuilt without running code from the file; evaluate it as a py: agent that loads it with SB3"
        )
    if "q_net.q_net.0.weight" in weights:
        q_layers = _stack(weights, "q_net.q_net", label)
        _check_shapes(label, q_layers, OBSERVATION_SIZE, NUM_ACTIONS)
        activation = _activation(data, "ReLU", label)

        @torch.inference_mode()
        def q_forward(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, None]:
            return _run(q_layers, torch.from_numpy(observations), activation, last=False).numpy(), None

        return ArrayAgent(
            q_forward, label, False, (load_sb3, (str(file), sampled, None, name)), sampled, seed, logits=False
        )
    if "action_net.weight" not in weights:
        raise ValueError(f"{label}: not an SB3 actor-critic (action_net) or DQN (q_net) checkpoint")
    activation = _activation(data, "Tanh", label)
    policy = _stack(weights, "mlp_extractor.policy_net", label)
    critic = _stack(weights, "mlp_extractor.value_net", label)
    action_net = (weights["action_net.weight"].float(), weights["action_net.bias"].float())
    value_net = (
        (weights["value_net.weight"].float(), weights["value_net.bias"].float())
        if "value_net.weight" in weights
        else None
    )
    _check_shapes(label, [*policy, action_net], OBSERVATION_SIZE, NUM_ACTIONS)
    if value_net is not None:
        _check_shapes(label, [*critic, value_net], OBSERVATION_SIZE, 1)

    @torch.inference_mode()
    def forward(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        x = torch.from_numpy(observations)
        latent = _run(policy, x, activation, last=True)
        logits = torch.nn.functional.linear(latent, *action_net)
        if value_net is None:
            return logits.numpy(), None
        value = torch.nn.functional.linear(_run(critic, x, activation, last=True), *value_net)
        return logits.numpy(), value.reshape(-1).clamp(-1.0, 1.0).numpy()

    return ArrayAgent(
        forward, label, value_net is not None, (load_sb3, (str(file), sampled, None, name)), sampled, seed
    )


def load_torchscript(
    path: str | Path, sampled: bool = False, seed: int | None = None, name: str | None = None
) -> ArrayAgent:
    """A TorchScript file of ``kahuna-export`` as an agent; one-line ``ValueError`` for another file."""
    label = name or str(path)
    file = regular_file(path)
    try:
        module = torch.jit.load(str(file), map_location="cpu").eval()
    except Exception as error:  # torch.jit.load fails on foreign bytes in many ways
        raise ValueError(f"{label} is not a readable TorchScript file: {_one_line(error)}") from None

    @torch.inference_mode()
    def forward(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        try:
            logits, values = module(torch.from_numpy(observations), torch.from_numpy(masks.astype(np.int8)))
        except Exception as error:  # a module of another signature
            raise ValueError(
                f"{label}: the TorchScript module does not take (observation, action_mask) and give "
                f"(logits, value): {_one_line(error)}"
            ) from None
        return logits.float().numpy(), values.float().reshape(-1).numpy()

    return ArrayAgent(forward, label, True, (load_torchscript, (str(file), sampled, None, name)), sampled, seed)
