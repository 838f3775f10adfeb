"""The shipped recipes (``configs/*.yaml``) by name, from a checkout and from an installed wheel alike.

The repository's ``configs/`` folder is the one copy of each recipe; ``training/configs`` links to it,
so the recipes are package data of :mod:`training` (real files in a wheel).  ``--config default``
of ``kahuna-train`` (and ``kahuna-exploit``, ``kahuna-rllib``) names ``configs/default.yaml`` wherever
the package is installed; a path names a file as before.
"""

from __future__ import annotations

from pathlib import Path

RECIPES = Path(__file__).resolve().parent / "configs"
"""Folder of the shipped recipes: ``training/configs``, the repository's ``configs/``."""
SUFFIX = ".yaml"
RLLIB_RECIPES = ("rllib",)
"""The recipes of ``kahuna-rllib`` (its own config schema); every other recipe is ``kahuna-train``'s."""


def recipe_names() -> list[str]:
    """The names of the shipped recipes (``default``, ``quick``, ...), sorted."""
    return sorted(path.stem for path in RECIPES.glob(f"*{SUFFIX}"))


def recipe_path(name: str) -> Path:
    """The file of the shipped recipe ``name``; a ``ValueError`` naming the recipes for an unknown one."""
    path = RECIPES / f"{name}{SUFFIX}"
    if name not in recipe_names():
        raise ValueError(f"no recipe named {name!r} and no such file (recipes: {', '.join(recipe_names())})")
    return path


def resolve_config(text: str | Path) -> Path:
    """``--config``'s value as a file: an existing file or a path as given, else a shipped recipe's name.

    A value with a folder or a suffix (``configs/mine.yaml``, ``mine.yaml``) is always a path (a missing
    one is reported by the loader); a bare word that is not a file here is a recipe name.
    """
    path = Path(text)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path
    return recipe_path(str(text))


def config_help(default: str | None = None, rllib: bool = False) -> str:
    """The help text of a ``--config`` option: what it takes, the tool's recipes, and the default (a recipe name).

    ``rllib``: the option of ``kahuna-rllib`` (:data:`RLLIB_RECIPES`); else of ``kahuna-train``'s schema.
    """
    names = [name for name in recipe_names() if (name in RLLIB_RECIPES) == rllib]
    end = f"; default: {default}" if default is not None else ""
    return f"a recipe ({', '.join(names)}) or a YAML file{end}"
