"""Kahuna RL environment: rules engine, PettingZoo AEC env, Gymnasium wrapper, agents.

``kahuna_env.env(**kwargs)`` is the PettingZoo AEC environment (wrapped),
``kahuna_env.raw_env`` the unwrapped one, ``kahuna_env.parallel_env(**kwargs)``
its PettingZoo parallel version (all three also in :mod:`kahuna_env.kahuna_v0`, and
registered with PettingZoo: ``pettingzoo.make("aec", "kahuna-v0")``), and ``gymnasium.make("Kahuna-v0",
opponent="random")`` the Gymnasium single-agent wrapper
(:class:`~kahuna_env.gym_env.KahunaSingleAgentEnv`), registered on import
with a vector entry point (``gymnasium.make_vec("Kahuna-v0", num_envs=n)``,
:mod:`kahuna_env.gym_vector`).  docs/ECOSYSTEM.md shows each RL library's path.
"""

from gymnasium.envs.registration import register, registry

from kahuna_env import kahuna_v0
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_env.env import env, raw_env
from kahuna_env.gym_env import IllegalActionWarning, KahunaSingleAgentEnv
from kahuna_env.parallel import parallel_env
from kahuna_env.version import __version__

GYMNASIUM_ID = "Kahuna-v0"
"""Gymnasium id of the single-agent wrapper: ``gymnasium.make("Kahuna-v0", opponent=...)``."""

if GYMNASIUM_ID not in registry:
    register(
        id=GYMNASIUM_ID,
        entry_point="kahuna_env.gym_env:KahunaSingleAgentEnv",
        vector_entry_point="kahuna_env.gym_vector:make_vector_env",
    )
kahuna_v0.register_with_pettingzoo()

__all__ = [
    "GYMNASIUM_ID",
    "IllegalActionError",
    "IllegalActionWarning",
    "KahunaConfig",
    "KahunaGame",
    "KahunaSingleAgentEnv",
    "__version__",
    "env",
    "kahuna_v0",
    "parallel_env",
    "raw_env",
]
