"""The rule options of a game: :class:`KahunaConfig`, at the bottom of the layers (it imports nothing of the project).

The engine (:mod:`kahuna_env.engine`, which re-exports it), the position format
(:mod:`kahuna_env.positions`), the batch and the envs all take their options as a
``KahunaConfig``; the schema's option fields read theirs off it
(:data:`kahuna_env.schema.FIELDS`, ``from_config``).
"""

from __future__ import annotations

import dataclasses
import numbers
import reprlib
from collections.abc import Mapping
from typing import Any

__all__ = ["DISCARD_RULES", "RULE_OPTIONS", "VARIANTS", "KahunaConfig", "as_config", "clipped", "is_integer", "shown"]

VARIANTS = ("standard", "planning")
DISCARD_RULES = ("instead_of_play", "hand_limit")


@dataclasses.dataclass(frozen=True)
class KahunaConfig:
    """Every rule option of a game (docs/RULES.md); bad values raise ``ValueError`` at construction.

    Attributes:
        variant: ``"standard"`` or ``"planning"`` (placement restricted next to
            opponent-controlled islands, free claim of a line freed by a removal).
        handicap: ``None`` or ``(player, n)``: ``player`` places ``n`` (1..3)
            free bridges after the deal, before the first turn.
        discard_rule: ``"instead_of_play"`` (face-down discards instead of
            playing, the seed rulebook) or ``"hand_limit"`` (the printed Kosmos
            rule: discard only with 5 cards and something drawable, then draw).
        first_player: the player (0 or 1) who takes the first turn.
    """

    variant: str = "standard"
    handicap: tuple[int, int] | None = None
    discard_rule: str = "instead_of_play"
    first_player: int = 0

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {shown(self.variant)}")
        if self.discard_rule not in DISCARD_RULES:
            raise ValueError(f"discard_rule must be one of {DISCARD_RULES}, got {shown(self.discard_rule)}")
        if not _is_player(self.first_player):
            raise ValueError(f"first_player must be 0 or 1, got {shown(self.first_player)}")
        # A numpy integer is stored as the int it is, so that equal configs compare, hash and print alike.
        object.__setattr__(self, "first_player", int(self.first_player))
        if self.handicap is not None:
            handicap = self.handicap
            # A list or tuple only: a dict or a set of two would unpack into its keys or in any order.
            if not isinstance(handicap, (tuple, list)) or len(handicap) != 2:
                raise ValueError(f"handicap must be None or a pair (player, bridges), got {shown(handicap)}")
            player, count = handicap
            if not _is_player(player):
                raise ValueError(f"handicap player must be 0 or 1, got {shown(player)}")
            if not is_integer(count) or not 1 <= count <= 3:
                raise ValueError(f"handicap bridges must be an integer in 1..3, got {shown(count)}")
            # JSON gives lists; keep the frozen object hashable and comparable.
            object.__setattr__(self, "handicap", (int(player), int(count)))

    @classmethod
    def from_dict(cls, options: Mapping[str, Any]) -> KahunaConfig:
        """Build a config from a mapping; an unknown key is a ``ValueError`` naming it."""
        if not isinstance(options, Mapping):
            raise ValueError(f"config must be a mapping, got {type(options).__name__}")
        unknown = [key for key in options if key not in RULE_OPTIONS]
        if unknown:
            # Each key shown bounded, and sorted as text: keys of mixed types do not sort otherwise.
            names = ", ".join(sorted(shown(key) for key in unknown))
            raise ValueError(f"unknown config option(s) [{names}]; known options: {sorted(RULE_OPTIONS)}")
        return cls(**options)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: every option by name, in field order (handicap as a list or null)."""
        options = {name: getattr(self, name) for name in RULE_OPTIONS}
        if self.handicap is not None:
            options["handicap"] = list(self.handicap)
        return options


RULE_OPTIONS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(KahunaConfig))
"""The names of the rule options, in :class:`KahunaConfig`'s field order: what every option list derives from."""


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer and not a bool: a Python ``int`` or a numpy integer (``np.int8(1)``).

    ``numbers.Integral`` takes both (numpy registers its integers there) and leaves out floats,
    strings and ``np.bool_``; ``True`` is an ``int`` to Python but never an integer option here.
    Every integer option of the config, the envs and the position format is checked with it.
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_player(value: object) -> bool:
    return is_integer(value) and value in (0, 1)


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 3
_SHOWN.maxstring = 40
_SHOWN.maxother = 40
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = _SHOWN.maxfrozenset = 6
SHOWN_MAX_CHARS = 80
"""The longest text :func:`shown` gives for a value."""


def shown(value: object) -> str:
    """``repr(value)`` for an error message, bounded: at most :data:`SHOWN_MAX_CHARS` characters.

    Long strings and lists are cut (``'XXXX...XXXX'``, ``[1, 2, ...]``) and nesting stops after
    three levels (``[[[[...]]]]``), without building the whole ``repr`` first: a message about a
    hostile value (a 12,000-character card name, a list nested 100,000 deep) stays one short line.
    """
    return clipped(_SHOWN.repr(value), SHOWN_MAX_CHARS)


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked ``...`` (an error line never grows without bound)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_config(config: KahunaConfig | Mapping[str, Any] | None) -> KahunaConfig:
    """A config from a config, a mapping of options, or ``None`` (the defaults); ``ValueError`` otherwise."""
    if config is None:
        return KahunaConfig()
    if isinstance(config, KahunaConfig):
        return config
    if isinstance(config, Mapping):
        return KahunaConfig.from_dict(config)
    raise ValueError(f"config must be a KahunaConfig, a mapping or None, got {type(config).__name__}")
