"""Stable-Baselines3's ``VecEnv`` interface over a Gymnasium vector env of Kahuna (the native one included).

SB3 takes its own ``VecEnv``, not a Gymnasium vector env, so
``MaskablePPO("MlpPolicy", gymnasium.make_vec("Kahuna-v0", ...))`` is refused
(SB3's ``ValueError``, whose "of type ..." names this adapter:
:class:`~kahuna_env.vector_env.VectorEnvType`).  Wrapped in :class:`VecEnv` it
trains unmodified::

    import gymnasium
    from sb3_contrib import MaskablePPO

    import kahuna_env
    from kahuna_env.sb3 import VecEnv

    envs = gymnasium.make_vec("Kahuna-v0", num_envs=8, opponent="greedy", observation="flat")
    model = MaskablePPO("MlpPolicy", VecEnv(envs), n_steps=64, seed=0)
    model.learn(10_000)

What it maps: ``reset()`` seeds the vector env with the seed of SB3's
``seed(s)`` (sub-environment ``i`` gets ``s + i``, SB3's convention and
Kahuna's); ``step_wait()`` returns SB3's ``(obs, rewards, dones, infos)``
with a list of one info dict per sub-environment, and for a finished episode
``info["terminal_observation"]`` (Gymnasium's ``final_obs``),
``info["TimeLimit.truncated"]`` and the final info's keys (``winner``,
``scores``, ...); ``env_method("action_masks")`` (what sb3-contrib's masked
algorithms call) returns each sub-environment's mask.  The vector env must use
same-step auto-reset (the default of ``make_vec("Kahuna-v0")``), the one SB3
assumes; another mode is a ``ValueError``.

``kahuna_env`` does not import Stable-Baselines3 (nor torch): this module
builds the class on first access of ``kahuna_env.sb3.VecEnv`` (a module
``__getattr__``), so ``import kahuna_env.sb3`` costs nothing without SB3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

__all__ = ["VecEnv"]  # noqa: F822 (built on first access, see __getattr__)

_CLASS: type | None = None


def _autoreset_mode(envs: Any) -> AutoresetMode | None:
    """The vector env's auto-reset mode (its attribute, else its metadata), or ``None`` if it declares none."""
    mode = getattr(envs, "autoreset_mode", None)
    if mode is None:
        mode = getattr(envs, "metadata", {}).get("autoreset_mode")
    return None if mode is None else AutoresetMode(mode)


def _split_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's dict of arrays (with ``_key`` masks) as one dict per sub-environment."""
    split: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        present = infos.get(f"_{key}", np.ones(num_envs, dtype=bool))
        for i in np.flatnonzero(present).tolist():
            split[i][key] = values[i]
    return split


def _build_class() -> type:
    from stable_baselines3.common.vec_env import VecEnv as SB3VecEnv

    class VecEnv(SB3VecEnv):
        """SB3's ``VecEnv`` over a Gymnasium vector env with same-step auto-reset (see :mod:`kahuna_env.sb3`)."""

        def __init__(self, envs: Any) -> None:
            mode = _autoreset_mode(envs)
            if mode != AutoresetMode.SAME_STEP:
                raise ValueError(
                    "kahuna_env.sb3.VecEnv: the vector env must use same-step auto-reset (what SB3 assumes), "
                    f"got {mode}; build it with gymnasium.make_vec('Kahuna-v0', ...) or autoreset_mode=SAME_STEP"
                )
            self.envs = envs
            """The wrapped Gymnasium vector env."""
            self._actions: np.ndarray | None = None
            super().__init__(envs.num_envs, envs.single_observation_space, envs.single_action_space)

        def reset(self) -> Any:
            """Reset every sub-environment (seeded by the last ``seed(s)``, once); returns the observations."""
            seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
            options = self._options[0] if self._options and self._options[0] else None
            observations, infos = self.envs.reset(seed=seed, options=options)
            self.reset_infos = _split_infos(infos, self.num_envs)
            self._reset_seeds()
            self._reset_options()
            return observations

        def step_async(self, actions: np.ndarray) -> None:
            """Remember the actions of the next :meth:`step_wait`."""
            self._actions = np.asarray(actions)

        def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            """Step every sub-environment; a finished one is already reset (its last observation in the info)."""
            observations, rewards, terminated, truncated, infos = self.envs.step(self._actions)
            dones = np.logical_or(terminated, truncated)
            split = _split_infos(infos, self.num_envs)
            final_infos = infos.get("final_info", {})
            for i in np.flatnonzero(dones).tolist():
                split[i].update(_split_infos(final_infos, self.num_envs)[i] if final_infos else {})
                split[i]["terminal_observation"] = infos["final_obs"][i]
                split[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return observations, np.asarray(rewards, dtype=np.float32), dones, split

        def close(self) -> None:
            """Close the vector env."""
            self.envs.close()

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            """``method_name`` of each sub-environment (``action_masks`` for sb3-contrib), for ``indices``."""
            results = list(self.envs.call(method_name, *args, **kwargs))
            return [results[i] for i in self._get_indices(indices)]

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            """The attribute of each sub-environment, for ``indices``.

            Through the vector env's ``get_attr`` when it has one (Gymnasium's sync and async envs), else the
            native env's own attribute for every index (``action_masks``: what sb3-contrib checks for).
            """
            if hasattr(self.envs, "get_attr"):
                values = list(self.envs.get_attr(attr_name))
            else:
                values = [getattr(self.envs, attr_name)] * self.num_envs
            return [values[i] for i in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            """Set the attribute on every sub-environment (Gymnasium vector envs set them all at once)."""
            self.envs.set_attr(attr_name, value)

        def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
            """No sub-environment carries a Gymnasium wrapper class that SB3 looks for (e.g. ``Monitor``)."""
            return [False for _ in self._get_indices(indices)]

        def action_masks(self) -> np.ndarray:
            """The sub-environments' masks, bool ``(num_envs, 179)``."""
            return np.stack([np.asarray(mask, dtype=bool) for mask in self.envs.call("action_masks")])

    return VecEnv


def __getattr__(name: str) -> Any:
    global _CLASS
    if name == "VecEnv":
        if _CLASS is None:
            _CLASS = _build_class()
        return _CLASS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
