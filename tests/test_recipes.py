"""The shipped recipes (configs/): few, each loadable, each naming only files that exist or that the run creates.

A recipe is what a user runs (``kahuna-train --config default``); the sittings of past experiments live in
experiments/ (docs/history.md), not here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kahuna_env.agents.spec import EntrantSpec
from kahuna_policy.registry import SHIPPED_AGENTS
from training.cli import build_parser
from training.ppo.config import TrainConfig, load_config
from training.recipes import RECIPES, RLLIB_RECIPES, recipe_names, recipe_path, resolve_config
from training.rllib.config import load_rllib_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
MAX_RECIPES = 8
REPOSITORY_PATH = re.compile(r"\b(?:configs|experiments|policy|docs|benchmarks|training|arena)/[\w./-]*\w")
"""A path into the repository named in a recipe's comments (``configs/x.yaml``, ``experiments/...``)."""


def test_the_recipes_are_few_and_the_main_ones():
    assert len(list(CONFIGS.iterdir())) <= MAX_RECIPES
    assert {"default", "quick", "smoke", "exploit", "rllib", "champion"} <= set(recipe_names())
    assert RECIPES.resolve() == CONFIGS.resolve()  # the package's recipes are the repository's configs/


def _train_recipes() -> list[str]:
    return [name for name in recipe_names() if name not in RLLIB_RECIPES]


@pytest.mark.parametrize("name", _train_recipes())
def test_a_recipe_loads_and_names_only_files_that_exist(name):
    config = load_config(recipe_path(name))
    assert isinstance(config, TrainConfig)
    if config.init_from is not None:  # a shipped agent, or a file in the repository
        assert config.init_from in SHIPPED_AGENTS or (ROOT / config.init_from).is_file(), config.init_from
    if config.rollout.start_positions is not None:
        assert (ROOT / config.rollout.start_positions).is_file(), config.rollout.start_positions
    # eval.db is created by the run; the run directory too.


@pytest.mark.parametrize("name", _train_recipes())
def test_the_entrants_a_recipe_names_are_baselines_shipped_agents_or_files_of_the_repository(name):
    config = load_config(recipe_path(name))
    for spec in (*config.eval.opponents, config.rollout.start_opponent):
        # A file must be inside the repository and there (FileNotFoundError otherwise, EntrantRefused outside it).
        parsed = EntrantSpec.parse(spec, agents_dir=ROOT, named=tuple(SHIPPED_AGENTS))
        assert parsed.kind != "file" or Path(parsed.source).is_file(), spec


def test_a_missing_agent_file_in_a_recipe_s_entrants_is_caught():
    with pytest.raises(FileNotFoundError):
        EntrantSpec.parse("runs/missing/final_agent.pt", agents_dir=ROOT, named=tuple(SHIPPED_AGENTS))


@pytest.mark.parametrize("name", sorted(RLLIB_RECIPES))
def test_an_rllib_recipe_loads(name):
    assert load_rllib_config(recipe_path(name)).name


@pytest.mark.parametrize("name", recipe_names())
def test_the_paths_a_recipe_s_comments_name_exist(name):
    text = recipe_path(name).read_text(encoding="utf-8")
    named = {match.rstrip(".") for match in REPOSITORY_PATH.findall(text)}
    assert [path for path in sorted(named) if not (ROOT / path).exists()] == []


def test_a_recipe_is_named_by_its_name_and_a_path_stays_a_path(tmp_path):
    assert resolve_config("default") == RECIPES / "default.yaml"
    assert resolve_config("configs/default.yaml") == Path("configs/default.yaml")
    assert resolve_config(str(tmp_path / "mine.yaml")) == tmp_path / "mine.yaml"  # missing: the loader says so
    with pytest.raises(ValueError, match=r"^no recipe named 'nope' and no such file \(recipes: champion, "):
        resolve_config("nope")


def test_kahuna_train_s_help_names_its_recipes():
    help_text = " ".join(build_parser().format_help().split())
    assert f"a recipe ({', '.join(_train_recipes())}) or a YAML file" in help_text
