"""Packaging by layer: the environment alone needs no torch; the wheel carries the recipes and runs the main job.

The wheel is built once for the module from a copy of the sources (the checkout stays clean), installed with
``--no-deps`` into a fresh virtual environment that sees this environment's installed dependencies through a
``.pth`` file (not its editable kahuna-rl: a ``.pth`` line adds a folder, whose own ``.pth`` files are not
read), and run from an empty folder, as issue 66 (item 5) and issue 67 describe.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import tomllib

from kahuna_policy.registry import SHIPPED_AGENTS
from training.recipes import recipe_names

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = ("kahuna_env", "kahuna_policy", "training", "kahuna_arena", "kahuna_web")
ENVIRONMENT_DEPENDENCIES = {"numpy", "numba", "gymnasium", "pettingzoo", "pillow"}
BLOCK_TORCH = "import sys; sys.modules['torch'] = None; "
"""Prefix of a ``python -c`` program that runs as if torch were not installed (``import torch`` raises ImportError)."""
TRAIN_MODULES = ("torch", "tensorboard", "matplotlib", "yaml", "tqdm")
"""What the ``train`` extra installs: absent from ``pip install kahuna-rl`` alone."""
BLOCK_TRAIN = f"import sys; sys.modules.update(dict.fromkeys({TRAIN_MODULES!r})); "
"""Prefix of a ``python -c`` program that runs as if only the environment were installed (no ``train`` extra)."""


def _clean_env() -> dict[str, str]:
    """This process's environment without PYTHONPATH, so a subprocess imports only what its interpreter installs."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def _python(program: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``python -c program`` with this interpreter, from ``cwd``, with the checkout importable."""
    env = {**_clean_env(), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", program], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


# ------------------------------------------------------------------------------------------- the layers, no wheel
def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0].strip()
        for stop in "<>=![ ":
            name = name.split(stop)[0]
        names.add(name.lower())
    return names


def test_the_base_install_is_the_environment_alone():
    assert _requirement_names(PYPROJECT["project"]["dependencies"]) == ENVIRONMENT_DEPENDENCIES


def test_the_train_extra_holds_torch_and_dev_includes_it():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"torch", "tensorboard", "matplotlib", "pyyaml", "tqdm"} <= _requirement_names(extras["train"])
    assert "kahuna-rl[train,docs]" in extras["dev"]  # pip install -e ".[dev]" still sets up the main job
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= _requirement_names(extras["docs"])
    for extra in ("rllib", "integrations", "export", "wandb"):  # they train or load networks: torch comes along
        assert "kahuna-rl[train]" in extras[extra], extra


def test_the_environment_imports_and_passes_pettingzoo_s_api_test_without_torch():
    done = _python(
        BLOCK_TRAIN + "import kahuna_env; from pettingzoo.test import api_test; "
        "api_test(kahuna_env.env(), num_cycles=200); "
        "assert sys.modules.get('torch') is None; print('api ok')"
    )
    assert done.returncode == 0, done.stderr
    assert "api ok" in done.stdout


def _scripts_in(module: str) -> dict[str, str]:
    return {
        name: target
        for name, target in PYPROJECT["project"]["scripts"].items()
        if target.startswith(f"{module}:") or target.startswith(f"{module}.")
    }


@pytest.mark.parametrize("script", sorted(_scripts_in("training.launch")))
def test_a_training_tool_without_torch_names_the_extra_in_one_line(script):
    module, function = PYPROJECT["project"]["scripts"][script].split(":")
    done = _python(BLOCK_TORCH + f"sys.argv = ['{script}', '--help']; import {module}; sys.exit({module}.{function}())")
    assert done.returncode == 2
    assert done.stdout == ""
    extra = "rllib" if script == "kahuna-rllib" else "train"
    assert done.stderr.startswith(f'{script}: error: needs the {extra} extra (pip install "kahuna-rl[{extra}]"')
    assert done.stderr.count("\n") == 1


def test_every_training_tool_starts_through_the_launcher():
    tools = {"kahuna-train", "kahuna-ship", "kahuna-exploit", "kahuna-distill", "kahuna-export", "kahuna-rllib"}
    assert set(_scripts_in("training.launch")) == tools


# ------------------------------------------------------------------------------------------------------ the wheel
def _copy_sources(destination: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, destination / name)
    for folder in ("configs", *PACKAGES):
        shutil.copytree(ROOT / folder, destination / folder, symlinks=True, ignore=ignore)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built offline with this environment's setuptools."""
    base = tmp_path_factory.mktemp("wheel")
    sources = base / "src"
    sources.mkdir()
    _copy_sources(sources)
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "-q"]
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", *offline, "-w", str(base), str(sources)],
        cwd=base,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (path,) = base.glob("kahuna_rl-*.whl")
    return path


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [item for item in archive.namelist() if item.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def test_the_wheel_s_metadata_has_torch_only_in_extras(wheel):
    requirements = _metadata(wheel).get_all("Requires-Dist")
    required = [item for item in requirements if "extra ==" not in item]
    assert _requirement_names(required) == ENVIRONMENT_DEPENDENCIES
    torch = [item for item in requirements if _requirement_names([item]) == {"torch"}]
    assert torch and all('extra == "train"' in item for item in torch)


def test_the_wheel_ships_the_registered_agents_with_their_cards_and_the_recipes(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    agents = {name for name in names if name.startswith("kahuna_policy/agents/")}
    expected = {f"kahuna_policy/agents/{file}" for file in SHIPPED_AGENTS.values()}
    assert agents == expected | {path.replace(".pt", ".md") for path in expected}
    assert {name for name in names if name.startswith("training/configs/")} == {
        f"training/configs/{name}.yaml" for name in recipe_names()
    }
    assert not [name for name in names if name.startswith(("experiments/", "configs/"))]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed (no dependencies: they come from this environment)."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300, env=_clean_env())
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "dependencies-of-the-test.pth").write_text("\n".join(sorted(ours)) + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
        env=_clean_env(),
    )
    return venv


def test_the_wheel_s_packages_are_the_ones_imported(installed, tmp_path):
    done = subprocess.run(
        [installed / "bin" / "python", "-c", f"import {', '.join(PACKAGES)}; print(training.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(done.stdout.strip()).is_relative_to(installed)


def test_a_wheel_install_runs_the_main_job_from_an_empty_folder(installed, tmp_path):
    helped = subprocess.run(
        [installed / "bin" / "kahuna-train", "--help"], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True
    )
    assert helped.returncode == 0 and "default" in helped.stdout
    # The default recipe, bounded: two updates of a few games and a short final evaluation.
    overrides = [
        "total_updates=2",
        "rollout.num_games=8",
        "rollout.workers=0",
        "eval.final_games=10",
        "logging.progress=false",
    ]
    done = subprocess.run(
        [installed / "bin" / "kahuna-train", "--config", "default", *(f"--set={item}" for item in overrides)],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("default-") and (run / "final_agent.pt").is_file()
    assert "kahuna-train: 2 updates" in done.stdout


def test_a_wheel_install_s_exploit_finds_its_default_recipe(installed, tmp_path):
    done = subprocess.run(
        [installed / "bin" / "kahuna-exploit", "champion", "--minutes", "1", "--set", "nosuchkey=1"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The recipe is found and read (the error is the bad key's, not a missing file's).
    assert done.returncode == 2
    assert "nosuchkey" in done.stderr and "not found" not in done.stderr


def test_kahuna_serve_without_the_web_extra_names_it_in_one_line():
    done = _python(
        "import sys; sys.modules['uvicorn'] = None; sys.argv = ['kahuna-serve']; "
        "from kahuna_web.server import main; sys.exit(main())"
    )
    assert done.returncode == 2
    assert done.stderr.startswith('kahuna-serve: error: needs the web extra (pip install "kahuna-rl[web]"')
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("progress", [[], ["--no-progress"]], ids=["bar", "no-bar"])
def test_the_arena_plays_baselines_without_the_train_extra_and_names_it_for_an_agent(progress):
    run = "from kahuna_arena.eval_cli import main; sys.exit(main())"
    arguments = ["kahuna-eval", "random", "greedy", "--games", "2", *progress]
    baselines = _python(BLOCK_TRAIN + f"sys.argv = {arguments!r}; {run}")
    assert baselines.returncode == 0, baselines.stderr
    assert "random vs greedy" in baselines.stdout
    agent = _python(BLOCK_TRAIN + f"sys.argv = ['kahuna-eval', 'champion', 'greedy', '--games', '2']; {run}")
    assert agent.returncode == 2
    assert agent.stderr.startswith("kahuna-eval: error: champion: an agent file needs the train extra (pip install")
    assert agent.stderr.count("\n") == 1


def test_kahuna_ratings_plays_without_the_train_extra_and_names_it_for_a_plot(tmp_path):
    db = str(tmp_path / "results.sqlite")
    evaluate = ["kahuna-eval", "random", "greedy", "--games", "2", "--db", db]
    stored = _python(BLOCK_TRAIN + f"sys.argv = {evaluate!r}; from kahuna_arena.eval_cli import main; sys.exit(main())")
    assert stored.returncode == 0, stored.stderr
    run = "from kahuna_arena.ratings_cli import main; sys.exit(main())"
    play = ["kahuna-ratings", "--db", db, "--entrant", "mcts:2", "--schedule", "1", "--play", "--games", "2"]
    played = _python(BLOCK_TRAIN + f"sys.argv = {play!r}; {run}")
    assert played.returncode == 0, played.stderr
    assert "2 games played and stored" in played.stdout
    plot = ["kahuna-ratings", "--db", db, "--plot", str(tmp_path / "elo.png")]
    refused = _python(BLOCK_TRAIN + f"sys.argv = {plot!r}; {run}")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith('kahuna-ratings: error: needs the train extra (pip install "kahuna-rl[train]"')
    assert refused.stderr.count("\n") == 1
    assert not (tmp_path / "elo.png").exists()
