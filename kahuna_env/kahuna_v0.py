"""``kahuna_v0``: Kahuna under PettingZoo's naming conventions (``metadata["name"]``).

As with PettingZoo's own environments (``from pettingzoo.classic import
connect_four_v3``), the versioned module holds the three entry points:

| name | what it is |
|------|------------|
| ``kahuna_v0.env(**options)`` | the AEC env with PettingZoo's standard wrappers (:func:`kahuna_env.env.env`) |
| ``kahuna_v0.raw_env(**options)`` | the unwrapped AEC env (:class:`kahuna_env.env.raw_env`) |
| ``kahuna_v0.parallel_env(**options)`` | the parallel API (:func:`kahuna_env.parallel.parallel_env`) |

``import kahuna_env`` also registers them with PettingZoo's registry (PettingZoo
1.27 and later), so ``pettingzoo.make("aec", "kahuna-v0")`` and
``pettingzoo.make("parallel", "kahuna_v0", max_cycles=200)`` work.  The
options, observation, mask, rewards and version history are in the manual of
:mod:`kahuna_env.env` (and docs/ENV.md).
"""

from __future__ import annotations

from kahuna_env.env import env, raw_env
from kahuna_env.parallel import parallel_env

PETTINGZOO_ID = "kahuna-v0"
"""The id under which ``import kahuna_env`` registers the AEC and the parallel env with PettingZoo."""

__all__ = ["PETTINGZOO_ID", "env", "parallel_env", "raw_env"]


def register_with_pettingzoo() -> bool:
    """Register :func:`env` and :func:`parallel_env` as ``kahuna-v0`` in PettingZoo's registries.

    Returns whether PettingZoo has a registry (1.27 and later; older versions have none and nothing
    is done).  Registering again is a no-op.
    """
    try:
        from pettingzoo import aec_registry, parallel_registry, register
    except ImportError:
        return False
    if PETTINGZOO_ID not in aec_registry:
        register("aec", PETTINGZOO_ID, entry_point=f"{__name__}:env")
    if PETTINGZOO_ID not in parallel_registry:
        register("parallel", PETTINGZOO_ID, entry_point=f"{__name__}:parallel_env")
    return True
