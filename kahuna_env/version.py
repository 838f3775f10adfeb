"""The project's version, read from one place: the installed distribution's metadata (``pyproject.toml``).

Every package re-exports it as ``__version__`` (``kahuna_env``, ``training``,
``arena``, ``kahuna_web``) and every console script prints it with
``--version``.  From a source tree that is not installed, the version is read
from the ``pyproject.toml`` beside the package instead.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "kahuna-rl"
"""The name of the distribution (``[project] name`` in pyproject.toml)."""


def _read_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text("utf-8"), re.M)
    except OSError:
        found = None
    return found.group(1) if found else "0+unknown"


__version__: str = _read_version()
"""The version of kahuna-rl, e.g. ``"0.1.0"``."""
