"""Training configuration: YAML onto typed dataclasses, overrides, and clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from training.cli import main
from training.ppo.config import (
    ConfigError,
    TrainConfig,
    config_from_dict,
    config_to_yaml,
    load_config,
    parse_override,
    read_yaml,
)

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_maps_onto_typed_sections(tmp_path):
    config = load_config(write(tmp_path, "ppo:\n  lr: 0.001\n  target_kl: 0.02\nmodel:\n  hidden_sizes: [64, 32]\n"))
    assert config.ppo.lr == 0.001
    assert config.ppo.target_kl == 0.02
    assert config.model.hidden_sizes == (64, 32)
    assert config.rollout.num_games == TrainConfig().rollout.num_games


def test_float_written_without_a_dot_is_a_float(tmp_path):
    # YAML 1.1 reads 3e-4 as a string; it must still be the float 0.0003.
    assert load_config(write(tmp_path, "ppo:\n  lr: 3e-4\n")).ppo.lr == pytest.approx(3e-4)


def test_unknown_key_is_an_error_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"ppo\.learning_rate: unknown key"):
        load_config(write(tmp_path, "ppo:\n  learning_rate: 0.1\n"))


def test_unknown_section_is_an_error_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"^optimiser: unknown key"):
        load_config(write(tmp_path, "optimiser:\n  lr: 0.1\n"))


def test_wrong_type_is_an_error_naming_key_and_value(tmp_path):
    with pytest.raises(ConfigError, match=r"ppo\.lr: expected float, got 'abc'"):
        load_config(write(tmp_path, "ppo:\n  lr: abc\n"))


def test_bool_is_not_accepted_as_an_integer():
    with pytest.raises(ConfigError, match=r"rollout\.num_games: expected int, got True"):
        config_from_dict({"rollout": {"num_games": True}})


def test_out_of_range_value_is_an_error_naming_the_key():
    with pytest.raises(ConfigError, match=r"ppo\.gamma: must be in \(0, 1\]"):
        config_from_dict({"ppo": {"gamma": 1.5}})


def test_section_given_as_a_scalar_is_an_error():
    with pytest.raises(ConfigError, match=r"ppo: expected a mapping"):
        config_from_dict({"ppo": 3})


def test_override_sets_a_nested_key(tmp_path):
    config = load_config(write(tmp_path, "ppo:\n  lr: 0.001\n"), ["ppo.lr=1e-4", "model.hidden_sizes=[8,8]"])
    assert config.ppo.lr == pytest.approx(1e-4)
    assert config.model.hidden_sizes == (8, 8)


def test_override_null_clears_an_optional_key():
    assert load_config(None, ["ppo.target_kl=0.1", "ppo.target_kl=null"]).ppo.target_kl is None


@pytest.mark.parametrize("text", ["ppo.lr", "=3", "ppo..lr=3", "ppo.lr x=3"])
def test_bad_override_syntax_is_a_clear_error(text):
    with pytest.raises(ConfigError, match="bad override"):
        parse_override(text)


def test_override_of_unknown_key_is_an_error():
    with pytest.raises(ConfigError, match=r"ppo\.nope: unknown key"):
        load_config(None, ["ppo.nope=1"])


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_config_round_trips_through_yaml(tmp_path):
    config = load_config(CONFIGS / "default.yaml", ["ppo.target_kl=0.05"])
    assert load_config(write(tmp_path, config_to_yaml(config))) == config


def test_cli_reports_a_bad_config_in_one_line_and_fails(tmp_path, capsys):
    status = main(["--config", str(write(tmp_path, "ppo:\n  lr: abc\n")), "--run-dir", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert status != 0
    assert error.strip() == "kahuna-train: error: ppo.lr: expected float, got 'abc'"


def test_cli_reports_bad_override_syntax(tmp_path, capsys):
    status = main(["--config", str(CONFIGS / "smoke.yaml"), "--set", "ppo.lr", "--run-dir", str(tmp_path / "r")])
    error = capsys.readouterr().err
    assert status != 0
    assert "bad override 'ppo.lr'" in error and len(error.strip().splitlines()) == 1


def test_cli_reports_a_missing_config_file(tmp_path, capsys):
    status = main(["--config", str(tmp_path / "missing.yaml")])
    assert status != 0
    assert "config file not found" in capsys.readouterr().err


def test_cli_resume_without_checkpoint_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    status = main(["--resume", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert status != 0
    assert "no checkpoint to resume from" in error and len(error.strip().splitlines()) == 1


def test_cli_resume_of_missing_run_directory_is_a_clear_error(tmp_path, capsys):
    status = main(["--resume", str(tmp_path / "never-ran")])
    assert status != 0
    assert "run directory not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("pool.snapshots_per_update=0", r"pool\.snapshots_per_update: must be in \[1, 10000\] or null, got 0"),
        ("pool.snapshots_per_update=two", r"pool\.snapshots_per_update: expected int or null, got 'two'"),
        ("ppo.bf16=maybe", r"ppo\.bf16: must be true, false or 'auto', got 'maybe'"),
        ("ppo.bf16=1", r"ppo\.bf16: expected bool or str, got 1"),
    ],
)
def test_bad_pool_and_precision_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_snapshots_per_update_and_bf16_read_from_yaml_and_overrides():
    config = load_config(None, ["pool.snapshots_per_update=2", "ppo.bf16=true"])
    assert config.pool.snapshots_per_update == 2 and config.ppo.bf16 is True
    assert load_config(None, ["ppo.bf16=auto"]).ppo.bf16 == "auto"
    assert load_config(None, ["pool.snapshots_per_update=null"]).pool.snapshots_per_update is None


# ------------------------------------------------------------------ hostile YAML (issue 66, item 6)
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)  # "billion laughs": 9**9 strings once expanded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (LAUGHS, "line 1: an anchor (&a) is not allowed in a config: write the value out"),
        ("name: *nobody\n", "line 1: an alias (*nobody) is not allowed in a config: write the value out"),
        ("name: " + "[" * 100_000 + "\n", "line 1: nested more than 16 levels deep"),
        ("".join("  " * depth + f"k{depth}:\n" for depth in range(40)), "line 16: nested more than 16 levels deep"),
        ("name: a\ntotal_updates: 3\nname: b\n", "line 3: duplicate key 'name'"),
        ("ppo:\n  lr: 1.0e-4\n  lr: 3.0e-4\n", "line 3: duplicate key 'lr'"),
        ("seed: " + "9" * 5000 + "\n", "line 1: a number of 5,000 characters (at most 64)"),
    ],
    ids=["billion_laughs", "alias", "100k_brackets", "deep_mapping", "duplicate_key", "duplicate_nested_key", "digits"],
)
def test_hostile_yaml_is_refused_with_the_file_and_line_before_any_expansion(tmp_path, text, message):
    # The refusals come from the loader itself: no alias is expanded, no recursion runs out of stack.
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as refused:
        read_yaml(path)
    assert str(refused.value) == f"{path}: not a valid config file: {message}"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp_path: write(tmp_path, ""), "{}: empty (no keys); a config file sets at least one key, e.g. name"),
        (lambda tmp_path: write(tmp_path, "# nothing\n"), "{}: empty (no keys); a config file sets at least one key"),
        (lambda tmp_path: tmp_path, "{} is a directory, not a config file"),
        (lambda tmp_path: Path("/dev/zero"), "{} is not a regular file (a device, pipe or socket), not a config file"),
        (lambda tmp_path: write(tmp_path, "#" * (1 << 20) + "\n"), "{}: larger than 1,048,576 bytes, not a config"),
    ],
    ids=["empty", "comments_only", "directory", "dev_zero", "huge"],
)
def test_an_empty_file_or_a_file_that_is_no_config_file_is_one_line_saying_so(tmp_path, capsys, make, message):
    path = make(tmp_path)
    # total_updates=0 is refused too, after the file: a file read as no keys can never start a run here.
    assert main(["--config", str(path), "--set", "total_updates=0", "--run-dir", str(tmp_path / "run")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kahuna-train: error: {message.format(path)}"), lines
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("name=&a [*a, *a]", "an anchor (&a) is not allowed in a config"),
        ("name=" + "[" * 100_000, "nested more than 16 levels deep"),
        ("eval={every: 1, every: 2}", "duplicate key 'every'"),
    ],
)
def test_hostile_override_values_are_refused_by_the_same_loader(override, problem):
    expected = rf"^bad override '.{{1,160}}: the value is not valid YAML \({re.escape(problem)}"
    with pytest.raises(ConfigError, match=expected):
        parse_override(override)
