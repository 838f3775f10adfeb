"""Reward settings an agent's value head was trained with, and the island-shaping potential (numpy only).

:data:`TRAINING_REWARD_DEFAULTS` are the training config's ``reward`` defaults
(``training.ppo.config.RewardConfig`` takes its defaults from here), and
:data:`DEFAULT_REWARD` the settings assumed for an agent file that records none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kahuna_env.board import NUM_ISLANDS
from kahuna_env.observation import OBSERVATION_LAYOUT

TRAINING_REWARD_DEFAULTS: dict[str, float] = {"win": 1.0, "island_shaping": 0.0}
"""The training config's ``reward`` defaults (a key an agent file's recorded settings lack took this value)."""
DEFAULT_REWARD: dict[str, float] = {"win": 1.0, "island_shaping": 1.0}
"""The reward settings assumed for an agent file that does not record its own (files written before they
were recorded): those of every shipped config (``configs/*.yaml``), which the shipped agents were trained with."""

_CONTROL_MINE = OBSERVATION_LAYOUT["control_mine"]
_CONTROL_OPPONENT = OBSERVATION_LAYOUT["control_opponent"]


def island_potentials(observations: np.ndarray) -> np.ndarray:
    """The shaping potential of each observation's viewer: (islands it controls - the opponent's) / 12.

    Read from the observation's control features (0/1 each).
    """
    return (observations[:, _CONTROL_MINE].sum(axis=1) - observations[:, _CONTROL_OPPONENT].sum(axis=1)) / NUM_ISLANDS


def recorded_reward(payload: Mapping[str, Any], source: str = "policy file") -> dict[str, float] | None:
    """The reward settings (``win``, ``island_shaping``, ``margin`` if not 0) a file or checkpoint was trained with.

    Looked up in the file's ``meta["reward"]`` (every file written since
    they are recorded), else the run config it carries (``meta["config"]``
    of a shipped agent, a checkpoint's ``config``), else the provenance of
    the agent it was made from (``source_meta``, ``student_meta``).  None
    when the file records none (an old file: :data:`DEFAULT_REWARD` is
    then the documented assumption).  A recorded value that is not a finite
    number (``win`` > 0) is a one-line ``ValueError`` naming ``source``.
    """
    meta = payload.get("meta")
    meta = meta if isinstance(meta, Mapping) else {}
    candidates: list[Any] = [meta.get("reward")]
    for holder in (meta, payload):
        config = holder.get("config")
        candidates.append(config.get("reward") if isinstance(config, Mapping) else None)
    for key in ("source_meta", "student_meta"):
        inner = meta.get(key)
        if isinstance(inner, Mapping):
            found = recorded_reward({"meta": inner}, source)
            candidates.append(found)
    for reward in candidates:
        if reward is None:
            continue
        if not isinstance(reward, Mapping):
            raise ValueError(f"{source}: the recorded reward settings are a {type(reward).__name__}, not a mapping")
        # A key the mapping lacks took the training config's default when the network was trained.
        settings = {**TRAINING_REWARD_DEFAULTS, **{key: reward[key] for key in DEFAULT_REWARD if key in reward}}
        for key, value in settings.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{source}: the recorded reward.{key} is not a finite number")
        if not settings["win"] > 0:
            raise ValueError(f"{source}: the recorded reward.win must be > 0")
        margin = reward.get("margin", 0.0)
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not np.isfinite(margin) or margin < 0:
            raise ValueError(f"{source}: the recorded reward.margin is not a finite number >= 0")
        return reward_record({**settings, "margin": margin})
    return None


def reward_record(settings: Mapping[str, Any]) -> dict[str, float]:
    """The reward settings as files record them: ``win`` and ``island_shaping``, and ``margin`` only when not 0.

    A run without the margin term (every run before ``reward.margin`` existed) records the same
    two keys as before; one with it records the third.
    """
    record = {key: float(settings[key]) for key in DEFAULT_REWARD}
    if settings.get("margin", 0.0):
        record["margin"] = float(settings["margin"])
    return record
