"""Gymnasium vector envs of ``Kahuna-v0``: the ``vector_entry_point`` and its two backends.

``gymnasium.make_vec("Kahuna-v0", num_envs=n, **env_options)`` (or
``vectorization_mode="vector_entry_point"``) builds :func:`make_vector_env`,
which picks a backend (``backend="auto"``, the default):

* ``"batch"``, :class:`~kahuna_env.vector_env.KahunaVectorEnv`: the ``n``
  games held in one :class:`~kahuna_env.vector.KahunaBatch` and stepped as
  arrays.  The default when the opponent is a batched baseline
  (``"random"``, ``"greedy"``, played with array work), the env runs in one
  process with same-step auto-reset, and nothing is rendered: several times
  faster than the scalar path (benchmarks/vector_env.py).
* ``"scalar"``: ``n`` :class:`~kahuna_env.gym_env.KahunaSingleAgentEnv` in
  one process (:class:`KahunaSyncVectorEnv`; ``asynchronous=True``: one
  process each, :class:`KahunaAsyncVectorEnv`).  The default for any other
  opponent (an :class:`~kahuna_env.agents.Agent`, a callable, ``"mcts"``: it
  is asked game by game either way, so the batch gains little), for
  ``asynchronous=True``, for a non-default ``autoreset_mode`` and for a
  ``render_mode``.  ``backend="batch"`` takes such an opponent too (asked
  per game through ``choose_action``; it then plays exactly the games of this
  backend on the same seeds).

Both have the same interface: **same-step** auto-reset by default (a
sub-environment whose episode ends is reset inside that ``step``, which
returns the new episode's first observation; its terminal observation and
info are in ``info["final_obs"]`` / ``info["final_info"]``), so every
observation handed to the policy belongs to a live episode with a non-empty
mask; ``envs.action_masks()`` (bool, ``(n, 179)``, what sb3-contrib reads),
``envs.call("action_masks")`` (one by one), ``obs["action_mask"]`` and
``info["action_mask"]`` (int8).

Gymnasium's own modes (``vectorization_mode="sync"`` or ``"async"``) default
to next-step auto-reset: the terminal observation is handed to the policy and
the action chosen for it is ignored.  Its mask is then the next episode's
first mask (the wrapper's ``terminal_mask="next_episode"``), so no mode hands
out an all-zero mask.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from kahuna_env.agents import Agent
from kahuna_env.engine import KahunaConfig, check_seed
from kahuna_env.env import start_game
from kahuna_env.gym_env import KahunaSingleAgentEnv
from kahuna_env.vector import _is_sequence, _seed_list, check_game_count
from kahuna_env.vector_env import KahunaVectorEnv, VectorEnvType, is_batched_opponent

BACKENDS: tuple[str, ...] = ("auto", "batch", "scalar")
"""Values of :func:`make_vector_env`'s ``backend`` keyword (the default first)."""


def _check_reset(where: str, num_envs: int, config: KahunaConfig | None, seed: object, options: object) -> None:
    """Check a vector ``reset``'s seeds (and position, given the config) before any sub-environment resets.

    The scalar backends reset their sub-environments one after another: without this, a seed list
    with a bad last entry would reseed the earlier ones before the error.
    """
    if seed is not None:
        try:
            if _is_sequence(seed):
                _seed_list(seed, num_envs, "seed", allow_none=True)
            else:
                check_seed(seed)
        except ValueError as error:
            raise ValueError(f"{where}.reset(): {error}") from None
    positioned = options is not None and (not isinstance(options, Mapping) or options.get("position") is not None)
    if config is not None and positioned:
        start_game(config, 0, options)  # type: ignore[arg-type]  # a bad position: one line, nothing reset


class _MaskedVectorEnv:
    """What both Gymnasium vector envs of Kahuna add to theirs: a checked ``reset`` and :meth:`action_masks`."""

    config: KahunaConfig | None = None
    """The sub-environments' rules (set by :func:`make_vector_env`): ``reset`` checks a position against them first."""
    num_envs: int

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """The vector env's ``reset``, after checking every seed and the position: a refused one resets nothing."""
        _check_reset(type(self).__name__, self.num_envs, self.config, seed, options)
        return super().reset(seed=seed, options=options)  # type: ignore[misc]

    def action_masks(self) -> np.ndarray:
        """The sub-environments' masks, bool ``(num_envs, 179)`` (what sb3-contrib's masked policies read)."""
        return np.stack(self.call("action_masks"))  # type: ignore[attr-defined]


class KahunaSyncVectorEnv(_MaskedVectorEnv, SyncVectorEnv, metaclass=VectorEnvType):
    """``SyncVectorEnv`` of :class:`KahunaSingleAgentEnv` with :meth:`action_masks`."""


class KahunaAsyncVectorEnv(_MaskedVectorEnv, AsyncVectorEnv, metaclass=VectorEnvType):
    """``AsyncVectorEnv`` of :class:`KahunaSingleAgentEnv` with :meth:`action_masks`."""


def _sub_env(**env_options: Any) -> KahunaSingleAgentEnv:
    """One sub-environment; an :class:`~kahuna_env.agents.Agent` opponent is copied so that none is shared."""
    opponent = env_options.get("opponent")
    if isinstance(opponent, Agent):
        env_options = {**env_options, "opponent": copy.deepcopy(opponent)}
    return KahunaSingleAgentEnv(**env_options)


def make_vector_env(
    num_envs: int = 1,
    *,
    backend: str = "auto",
    asynchronous: bool = False,
    autoreset_mode: str | AutoresetMode = AutoresetMode.SAME_STEP,
    **env_options: Any,
) -> KahunaVectorEnv | KahunaSyncVectorEnv | KahunaAsyncVectorEnv:
    """``num_envs`` single-agent Kahuna envs as one Gymnasium vector env (see the module docstring).

    Args:
        num_envs: the number of sub-environments, 1 to :data:`~kahuna_env.vector.MAX_GAMES` (checked first).
        backend: ``"auto"`` (the batched engine for a ``"random"``/``"greedy"`` opponent in one
            process with same-step auto-reset and no rendering, else the scalar wrapper),
            ``"batch"`` (:class:`~kahuna_env.vector_env.KahunaVectorEnv`) or ``"scalar"``.
        asynchronous: ``False`` (one process) or ``True`` (a process per sub-environment; scalar only).
        autoreset_mode: Gymnasium's auto-reset mode, same-step by default (the only one of ``"batch"``).
        env_options: keywords of :class:`KahunaSingleAgentEnv` (``opponent``, ``seat``, ...), the same for all.
    """
    try:
        num_envs = check_game_count(num_envs, "num_envs")
    except ValueError as error:
        raise ValueError(f"make_vector_env: {error}") from None
    if backend not in BACKENDS:
        raise ValueError(f"make_vector_env: backend must be one of {list(BACKENDS)}, got {backend!r}")
    same_step = AutoresetMode(autoreset_mode) == AutoresetMode.SAME_STEP
    if backend == "auto":
        batchable = not asynchronous and same_step and env_options.get("render_mode") is None
        backend = "batch" if batchable and is_batched_opponent(env_options.get("opponent", "random")) else "scalar"
    if backend == "batch":
        if asynchronous or not same_step:
            raise ValueError(
                "make_vector_env: backend='batch' runs in one process with same-step auto-reset "
                f"(got asynchronous={asynchronous!r}, autoreset_mode={autoreset_mode!r}); use backend='scalar'"
            )
        return KahunaVectorEnv(num_envs, **env_options)
    probe = KahunaSingleAgentEnv(**env_options)  # a bad option fails here, in this process, with its message
    probe.close()
    env_fns = [functools.partial(_sub_env, **env_options) for _ in range(num_envs)]
    envs: KahunaSyncVectorEnv | KahunaAsyncVectorEnv
    if asynchronous:
        envs = KahunaAsyncVectorEnv(env_fns, autoreset_mode=autoreset_mode)
    else:
        envs = KahunaSyncVectorEnv(env_fns, autoreset_mode=autoreset_mode)
    envs.config = probe.config
    return envs
