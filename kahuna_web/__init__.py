"""Kahuna in the browser (docs/WEB.md)."""

from kahuna_env.version import __version__

__all__ = ["__version__"]
