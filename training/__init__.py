"""Self-play PPO training, evaluation and checkpoint tools for Kahuna (needs torch)."""

from kahuna_env.version import __version__
from training.agent import PolicyAgent, load_agent

__all__ = ["PolicyAgent", "__version__", "load_agent"]
