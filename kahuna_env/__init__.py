"""Kahuna RL environment: rules engine, PettingZoo AEC env, Gymnasium wrapper, agents."""

from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame

__all__ = ["IllegalActionError", "KahunaConfig", "KahunaGame"]
