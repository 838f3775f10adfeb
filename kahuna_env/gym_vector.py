"""Gymnasium vector envs of the single-agent wrapper: the ``vector_entry_point`` of ``Kahuna-v0``.

``gymnasium.make_vec("Kahuna-v0", num_envs=n, **env_options)`` builds
:func:`make_vector_env`: ``n`` :class:`~kahuna_env.gym_env.KahunaSingleAgentEnv`
in one process (``asynchronous=True``: one process each) with **same-step**
auto-reset: a sub-environment whose episode ends is reset inside that
``step``, which returns the new episode's first observation (its terminal
observation and info are in ``info["final_obs"]`` / ``info["final_info"]``),
so every observation handed to the policy belongs to a live episode with a
non-empty mask.  ``envs.action_masks()`` stacks the sub-environments'
``action_masks()`` (bool, ``(n, 179)``), as ``envs.call("action_masks")``
does one by one; ``obs["action_mask"]`` and ``info["action_mask"]`` carry the
same masks as int8.

Gymnasium's own modes (``vectorization_mode="sync"`` or ``"async"``) default
to next-step auto-reset: the terminal observation is handed to the policy and
the action chosen for it is ignored.  Its mask is then the next episode's
first mask (the wrapper's ``terminal_mask="next_episode"``), so no mode hands
out an all-zero mask.

This vector env runs the scalar wrapper; a batched engine can replace it as
the entry point without changing this interface.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from kahuna_env.agents import Agent
from kahuna_env.gym_env import KahunaSingleAgentEnv


class KahunaSyncVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` of :class:`KahunaSingleAgentEnv` with :meth:`action_masks`."""

    def action_masks(self) -> np.ndarray:
        """The sub-environments' masks, bool ``(num_envs, 179)`` (what sb3-contrib's masked policies read)."""
        return np.stack(self.call("action_masks"))


class KahunaAsyncVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` of :class:`KahunaSingleAgentEnv` with :meth:`action_masks`."""

    def action_masks(self) -> np.ndarray:
        """The sub-environments' masks, bool ``(num_envs, 179)``."""
        return np.stack(self.call("action_masks"))


def _sub_env(**env_options: Any) -> KahunaSingleAgentEnv:
    """One sub-environment; an :class:`~kahuna_env.agents.Agent` opponent is copied so that none is shared."""
    opponent = env_options.get("opponent")
    if isinstance(opponent, Agent):
        env_options = {**env_options, "opponent": copy.deepcopy(opponent)}
    return KahunaSingleAgentEnv(**env_options)


def make_vector_env(
    num_envs: int = 1,
    *,
    asynchronous: bool = False,
    autoreset_mode: str | AutoresetMode = AutoresetMode.SAME_STEP,
    **env_options: Any,
) -> KahunaSyncVectorEnv | KahunaAsyncVectorEnv:
    """``num_envs`` single-agent Kahuna envs as one Gymnasium vector env (see the module docstring).

    Args:
        num_envs: the number of sub-environments (at least 1).
        asynchronous: ``False`` (one process) or ``True`` (a process per sub-environment).
        autoreset_mode: Gymnasium's auto-reset mode, same-step by default.
        env_options: keywords of :class:`KahunaSingleAgentEnv` (``opponent``, ``seat``, ...), the same for all.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"make_vector_env: num_envs must be a positive int, got {num_envs!r}")
    KahunaSingleAgentEnv(**env_options).close()  # a bad option fails here, in this process, with its message
    env_fns = [functools.partial(_sub_env, **env_options) for _ in range(int(num_envs))]
    if asynchronous:
        return KahunaAsyncVectorEnv(env_fns, autoreset_mode=autoreset_mode)
    return KahunaSyncVectorEnv(env_fns, autoreset_mode=autoreset_mode)
