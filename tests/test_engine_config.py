"""KahunaConfig: one frozen object holding every rule option, validated at construction."""

from __future__ import annotations

import dataclasses

import pytest

from kahuna_env import config, engine
from kahuna_env.engine import KahunaConfig, KahunaGame


def test_defaults_are_the_standard_game():
    config = KahunaConfig()
    assert (config.variant, config.handicap, config.discard_rule, config.first_player) == (
        "standard",
        None,
        "instead_of_play",
        0,
    )


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        KahunaConfig().variant = "planning"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"variant": "easy"}, r"variant must be one of \('standard', 'planning'\), got 'easy'"),
        ({"discard_rule": "never"}, r"discard_rule must be one of"),
        ({"first_player": 2}, r"first_player must be 0 or 1, got 2"),
        ({"first_player": True}, r"first_player must be 0 or 1"),
        ({"handicap": (0, 4)}, r"handicap bridges must be an integer in 1..3, got 4"),
        ({"handicap": (3, 1)}, r"handicap player must be 0 or 1, got 3"),
        ({"handicap": 2}, r"handicap must be None or a pair"),
        ({"handicap": {0: "x", 2: "y"}}, r"handicap must be None or a pair \(player, bridges\), got \{0: 'x'"),
        ({"handicap": {0, 2}}, r"handicap must be None or a pair"),
        ({"handicap": "01"}, r"handicap must be None or a pair"),
    ],
)
def test_bad_option_values_are_errors_at_construction(options, message):
    with pytest.raises(ValueError, match=message):
        KahunaConfig(**options)


def test_unknown_option_is_an_error():
    with pytest.raises(TypeError):
        KahunaConfig(speed=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"unknown config option\(s\) \['speed'\]"):
        KahunaConfig.from_dict({"speed": 3})
    with pytest.raises(ValueError, match=r"unknown config option"):
        KahunaGame({"speed": 3})


def test_handicap_given_as_a_list_is_stored_as_a_tuple():
    assert KahunaConfig(handicap=[1, 2]).handicap == (1, 2)  # type: ignore[arg-type]
    assert KahunaConfig.from_dict(KahunaConfig(handicap=(1, 2)).to_dict()) == KahunaConfig(handicap=(1, 2))


def test_game_accepts_a_mapping_config():
    assert KahunaGame({"variant": "planning"}, seed=0).config.variant == "planning"
    with pytest.raises(ValueError, match="config must be a KahunaConfig"):
        KahunaGame("planning")  # type: ignore[arg-type]


def test_the_config_lies_at_the_bottom_and_the_engine_re_exports_it():
    assert KahunaConfig is config.KahunaConfig and engine.as_config is config.as_config
    assert KahunaConfig.__module__ == "kahuna_env.config"
    assert engine.VARIANTS is config.VARIANTS and engine.DISCARD_RULES is config.DISCARD_RULES
