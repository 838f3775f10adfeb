"""Action encoding (docs/ENV.md, "Actions")."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from kahuna_env import actions as A


def test_action_ranges_match_the_spec():
    assert (A.PLACE_A, A.PLACE_B, A.REMOVE_AB, A.REMOVE_AA, A.REMOVE_BB) == (0, 27, 54, 81, 108)
    assert (A.DISCARD, A.DRAW, A.TAKE, A.PASS, A.FREE_BRIDGE, A.NUM_ACTIONS) == (135, 147, 148, 151, 152, 179)


@pytest.mark.parametrize(
    ("action", "text"),
    [
        (0, "place ALOA-BARI paying ALOA"),
        (27, "place ALOA-BARI paying BARI"),
        (26 + 27, "place KAHU-LALE paying LALE"),
        (54 + 13, "remove ELAI-HUNA paying ELAI+HUNA"),
        (81 + 13, "remove ELAI-HUNA paying ELAI+ELAI"),
        (108 + 13, "remove ELAI-HUNA paying HUNA+HUNA"),
        (135, "discard ALOA face down"),
        (146, "discard LALE face down"),
        (147, "draw"),
        (149, "take face-up slot 1"),
        (151, "pass"),
        (152 + 26, "free bridge KAHU-LALE"),
    ],
)
def test_describe_action(action, text):
    assert A.describe_action(action) == text


def test_parse_action_inverts_describe_action_for_every_action():
    for action in range(A.NUM_ACTIONS):
        assert A.parse_action(A.describe_action(action)) == action
        assert A.parse_action("  " + A.describe_action(action).upper() + " ") == action
    assert A.parse_action("147") == 147


@pytest.mark.parametrize("text", ["fly", "place ALOA-LALE paying ALOA", "999", ""])
def test_parse_action_rejects_unknown_text(text):
    with pytest.raises(ValueError):
        A.parse_action(text)


@pytest.mark.parametrize("bad", [-1, 179, 2.5, "7", True, None])
def test_describe_action_rejects_non_actions(bad):
    with pytest.raises(ValueError, match="action must be an integer"):
        A.describe_action(bad)


def test_paid_islands_per_action():
    assert A.PAID_ISLANDS[0] == (0,) and A.PAID_ISLANDS[27] == (1,)
    assert A.PAID_ISLANDS[54] == (0, 1) and A.PAID_ISLANDS[81] == (0, 0) and A.PAID_ISLANDS[108] == (1, 1)
    assert A.PAID_ISLANDS[A.DRAW] == () and A.PAID_ISLANDS[A.FREE_BRIDGE] == ()


def test_place_and_remove_helpers_check_their_islands():
    assert A.place_action(13, "HUNA") == 27 + 13
    assert A.remove_action(13, "HUNA", "ELAI") == 54 + 13
    with pytest.raises(ValueError, match="not on line"):
        A.place_action(13, "ALOA")
    with pytest.raises(ValueError, match="cannot remove"):
        A.remove_action(13, "ALOA", "ELAI")


def test_engine_re_exports_the_action_constants_and_describe_action():
    from kahuna_env import engine

    assert (engine.PLACE_A, engine.DRAW, engine.PASS, engine.NUM_ACTIONS) == (0, 147, 151, 179)
    assert engine.describe_action(0) == "place ALOA-BARI paying ALOA"


@pytest.mark.parametrize(
    "bad", [np.array([5]), Decimal(5), Fraction(5), complex(5), 5.0, True, np.bool_(True), "5", None], ids=repr
)
def test_check_action_refuses_anything_but_an_integer_in_one_line(bad):
    with pytest.raises(ValueError, match=r"^action must be an integer in 0..178, got ") as error:
        A.describe_action(bad)
    assert "\n" not in str(error.value)


def test_check_action_accepts_numpy_integers():
    assert A.check_action(np.int16(151)) == 151 and A.describe_action(np.int64(147)) == "draw"
