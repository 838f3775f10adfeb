"""Self-play PPO training, evaluation and checkpoint tools for Kahuna (needs torch)."""

from training.agent import PolicyAgent, load_agent

__all__ = ["PolicyAgent", "load_agent"]
