"""KahunaConfig: one frozen object holding every rule option, validated at construction."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
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


@pytest.mark.parametrize("integer", [np.int8, np.int16, np.int64, np.uint8])
def test_numpy_integers_are_integers_and_stored_as_ints(integer) -> None:
    options = KahunaConfig(first_player=integer(1), handicap=(integer(0), integer(2)))
    assert options == KahunaConfig(first_player=1, handicap=(0, 2))
    assert type(options.first_player) is int and all(type(x) is int for x in options.handicap)
    assert hash(options) == hash(KahunaConfig(first_player=1, handicap=(0, 2)))


def test_the_envs_take_numpy_integers_wherever_they_take_ints() -> None:
    import gymnasium

    import kahuna_env

    environment = kahuna_env.env(first_player=np.int8(1), handicap=(np.int64(0), np.int64(2)), max_cycles=np.int32(9))
    environment.reset(seed=0)
    assert environment.unwrapped.config == KahunaConfig(first_player=1, handicap=(0, 2))
    assert environment.unwrapped.max_cycles == 9
    single = gymnasium.make("Kahuna-v0", first_player=np.int64(1))
    assert single.unwrapped.config.first_player == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"first_player": np.bool_(True)}, "first_player must be 0 or 1, got np.True_"),
        ({"first_player": True}, "first_player must be 0 or 1, got True"),
        ({"first_player": np.float64(1.0)}, "first_player must be 0 or 1"),
        ({"handicap": (0, np.bool_(True))}, "handicap bridges must be an integer in 1..3"),
    ],
)
def test_bools_and_floats_are_not_integers_even_from_numpy(options, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        KahunaConfig(**options)


def test_config_errors_show_a_hostile_value_briefly() -> None:
    deep: object = 0
    for _ in range(100_000):
        deep = [deep]
    for options in ({"handicap": deep}, {"variant": "v" * 12_000}, {"handicap": (0, "n" * 12_000)}):
        with pytest.raises(ValueError) as error:
            KahunaConfig(**options)
        assert "\n" not in str(error.value) and len(str(error.value)) < 200
    with pytest.raises(ValueError, match=r"unknown config option\(s\) \['kkkk[k.]*', 1\]") as error:
        KahunaConfig.from_dict({"k" * 12_000: 0, 1: 2})  # keys of mixed types, one of them huge
    assert len(str(error.value)) < 300
