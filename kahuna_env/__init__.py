"""Kahuna RL environment: rules engine, PettingZoo AEC env, Gymnasium wrapper, agents.

``kahuna_env.env(**kwargs)`` is the PettingZoo AEC environment (wrapped),
``kahuna_env.raw_env`` the unwrapped one, and ``gymnasium.make("Kahuna-v0",
opponent="random")`` the Gymnasium single-agent wrapper
(:class:`~kahuna_env.gym_env.KahunaSingleAgentEnv`), registered on import.
"""

from gymnasium.envs.registration import register, registry

from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_env.env import env, raw_env
from kahuna_env.gym_env import KahunaSingleAgentEnv

GYMNASIUM_ID = "Kahuna-v0"
"""Gymnasium id of the single-agent wrapper: ``gymnasium.make("Kahuna-v0", opponent=...)``."""

if GYMNASIUM_ID not in registry:
    register(id=GYMNASIUM_ID, entry_point="kahuna_env.gym_env:KahunaSingleAgentEnv")

__all__ = [
    "GYMNASIUM_ID",
    "IllegalActionError",
    "KahunaConfig",
    "KahunaGame",
    "KahunaSingleAgentEnv",
    "env",
    "raw_env",
]
