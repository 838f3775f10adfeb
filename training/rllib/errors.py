"""The errors of the RLlib integration and the check that the ``rllib`` extra is installed.

Each error carries a one-line message that says what went wrong and what to
do, and ``kahuna-rllib`` prints it without a traceback.  They subclass the
built-in error a caller would expect: :class:`RLlibNotInstalledError` an
``ImportError``, :class:`IncompatibleCheckpointError` a ``ValueError``,
:class:`RayConnectionError` and :class:`TrainingError` a ``RuntimeError``.
"""

from __future__ import annotations

INSTALL_HINT = 'pip install -e ".[rllib]"'
"""The command (run in the repository root) that installs the optional RLlib extra."""


class RLlibNotInstalledError(ImportError):
    """Ray RLlib (the ``rllib`` extra) is not installed."""


class RayConnectionError(RuntimeError):
    """The Ray cluster named by ``ray.address`` cannot be reached."""


class IncompatibleCheckpointError(ValueError):
    """An RLlib checkpoint that is missing, not a Kahuna run, or from an incompatible setup."""


class TrainingError(RuntimeError):
    """A run that cannot go on: the env runners keep failing, or an illegal action was sampled."""


def require_ray() -> None:
    """Import ray and RLlib, or raise :class:`RLlibNotInstalledError` saying how to install them."""
    try:
        import ray
        import ray.rllib  # noqa: F401
    except ImportError as error:
        raise RLlibNotInstalledError(
            f"Ray RLlib is not installed ({error}); install the optional extra with "
            f'`{INSTALL_HINT}` in the repository root (or `pip install "kahuna-rl[rllib]"`)'
        ) from None
