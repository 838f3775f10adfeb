"""Export an RLlib checkpoint of a Kahuna run to the project's agent format (``training.load_agent``).

The RLModule (:class:`training.rllib.module.KahunaRLModule`) holds the
native :class:`kahuna_policy.model.ActorCritic` as ``net``, so export reads the
module's state from the checkpoint, drops the ``net.`` prefix, loads it into
an ``ActorCritic`` of the same :class:`~kahuna_policy.model.ModelConfig` (strictly:
every tensor must fit) and writes :func:`kahuna_policy.model.agent_payload`.

An algorithm checkpoint (``<run_dir>/checkpoint`` or
``<run_dir>/checkpoints/iter_NNNNNN``) keeps each module under
``learner_group/learner/rl_module/<module_id>``; :func:`find_module_dir`
also accepts a ``rl_module`` directory or a single module's directory.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.observation import OBSERVATION_SIZE
from kahuna_policy.model import ActorCritic, ModelConfig
from training.ppo.checkpoint import export_agent
from training.rllib.errors import IncompatibleCheckpointError, require_ray

MODULE_PATH = ("learner_group", "learner", "rl_module")
"""Where an algorithm checkpoint keeps its modules."""

STATE_PREFIX = "net."


def _module_ids(rl_module_dir: Path) -> list[str]:
    return sorted(p.name for p in rl_module_dir.iterdir() if p.is_dir())


def _is_module_dir(path: Path) -> bool:
    return path.is_dir() and (path / "class_and_ctor_args.pkl").is_file() and any(path.glob("module_state*"))


def find_module_dir(checkpoint: str | Path, module_id: str = "learner") -> Path:
    """The directory of ``module_id`` in an RLlib checkpoint; clear errors when it is not there."""
    root = Path(checkpoint).expanduser()
    if not root.exists():
        raise IncompatibleCheckpointError(f"RLlib checkpoint not found: {root}")
    if not root.is_dir():
        raise IncompatibleCheckpointError(
            f"{root} is a file; give an RLlib checkpoint directory (e.g. <run_dir>/checkpoint)"
        )
    if _is_module_dir(root) and not any(_is_module_dir(child) for child in root.iterdir() if child.is_dir()):
        return root  # a single module's directory (not a MultiRLModule's, which holds module directories)
    candidates = [root.joinpath(*MODULE_PATH), root / "rl_module", root]
    for rl_module_dir in candidates:
        if _is_module_dir(rl_module_dir / module_id):
            return rl_module_dir / module_id
    for rl_module_dir in candidates:
        if rl_module_dir.is_dir() and rl_module_dir.name == "rl_module":
            found = _module_ids(rl_module_dir)
            raise IncompatibleCheckpointError(
                f"{root} has no module {module_id!r}; its modules are {found} (choose one with --module)"
            )
    raise IncompatibleCheckpointError(
        f"{root} is not an RLlib algorithm checkpoint (no {'/'.join(MODULE_PATH)} directory inside)"
    )


def _read_pickle(path: Path) -> Any:
    # RLlib checkpoints are pickles: only export checkpoints you trust (as with any RLlib checkpoint).
    with path.open("rb") as file:
        return pickle.load(file)


def read_module_checkpoint(module_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(constructor kwargs, state dict)`` of the module saved in ``module_dir``."""
    require_ray()  # unpickling the constructor arguments needs ray's classes
    ctor_file = module_dir / "class_and_ctor_args.pkl"
    state_files = sorted(module_dir.glob("module_state*"))
    if not ctor_file.is_file() or not state_files:
        raise IncompatibleCheckpointError(f"{module_dir} is not an RLModule checkpoint (files missing)")
    try:
        ctor = _read_pickle(ctor_file)
        args, kwargs = ctor["ctor_args_and_kwargs"]
        cls = ctor.get("class")
    except Exception as error:  # a foreign or damaged pickle: say so in one line
        raise IncompatibleCheckpointError(f"{ctor_file} cannot be read: {type(error).__name__}: {error}") from None
    kwargs = dict(kwargs)
    if args:
        # RLModule(observation_space, action_space, inference_only, learner_only, model_config, ...)
        for name, value in zip(
            ("observation_space", "action_space", "inference_only", "learner_only", "model_config"), args, strict=False
        ):
            kwargs.setdefault(name, value)
    kwargs["class"] = cls
    state_file = state_files[0]
    if state_file.suffix != ".pkl":
        raise IncompatibleCheckpointError(
            f"{state_file}: only pickled module states (RLlib's default, module_state.pkl) can be exported"
        )
    try:
        state = _read_pickle(state_file)
    except Exception as error:
        raise IncompatibleCheckpointError(f"{state_file} cannot be read: {type(error).__name__}: {error}") from None
    return kwargs, state


def _check_module(kwargs: Mapping[str, Any], source: str) -> ModelConfig:
    from training.rllib.module import check_spaces, model_config_of

    cls = kwargs.get("class")
    try:
        check_spaces(kwargs.get("observation_space"), kwargs.get("action_space"))
    except ValueError as error:
        raise IncompatibleCheckpointError(
            f"{source} was not made by a compatible Kahuna run ({getattr(cls, '__name__', cls)}): {error}"
        ) from None
    try:
        return model_config_of(dict(kwargs.get("model_config") or {}))
    except ValueError as error:
        raise IncompatibleCheckpointError(f"{source} has a model_config this version cannot build: {error}") from None


def weights_to_model(
    weights: Mapping[str, Any], model_config: ModelConfig, source: str = "RLlib module"
) -> ActorCritic:
    """An :class:`ActorCritic` holding the module weights ``weights`` (keys ``net.*``)."""
    state = {}
    for key, value in weights.items():
        if key.startswith(STATE_PREFIX):
            state[key[len(STATE_PREFIX) :]] = torch.as_tensor(np.asarray(value)).clone()
    model = ActorCritic(model_config)
    if not state:
        raise IncompatibleCheckpointError(
            f"{source} holds no Kahuna network weights (no '{STATE_PREFIX}*' keys; found {sorted(weights)[:5]}...)"
        )
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        first = str(error).strip().splitlines()
        raise IncompatibleCheckpointError(
            f"{source} has weights that do not fit a {model_config} network: {' '.join(s.strip() for s in first[:3])}"
        ) from None
    return model.eval()


def export_weights(
    weights: Mapping[str, Any], model_config: ModelConfig, out: str | Path, meta: Mapping[str, Any] | None = None
) -> Path:
    """Write module weights (``net.*`` keys) as an agent file at ``out``; returns the path."""
    model = weights_to_model(weights, model_config)
    return export_agent(out, model, meta)  # through a temporary file: never a half-written agent


def export_checkpoint(checkpoint: str | Path, out: str | Path, module_id: str = "learner") -> Path:
    """Convert ``module_id`` of an RLlib checkpoint to an agent file at ``out`` (``training.load_agent`` reads it).

    Raises :class:`IncompatibleCheckpointError` (a ``ValueError``) for a missing
    directory, a missing module id, or a module from an incompatible setup
    (other observation/action spaces, other network shapes).
    """
    module_dir = find_module_dir(checkpoint, module_id)
    kwargs, state = read_module_checkpoint(module_dir)
    source = f"module {module_dir.name!r} of {checkpoint}"
    model_config = _check_module(kwargs, source)
    meta = {
        "source": "rllib",
        "rllib_checkpoint": str(Path(checkpoint).resolve()),
        "module_id": module_dir.name,
        "observation_size": OBSERVATION_SIZE,
        "num_actions": NUM_ACTIONS,
    }
    model = weights_to_model(state, model_config, source)
    return export_agent(out, model, meta)  # through a temporary file: never a half-written agent
