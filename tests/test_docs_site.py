"""The documentation site builds with warnings as errors: a broken link or anchor, a page left out of the
navigation, a module or function of the API reference that no longer exists fails the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_every_markdown_file_under_docs_is_a_page_of_the_site():
    import yaml

    def pages(entries):
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            if isinstance(value, list):
                yield from pages(value)
            else:
                yield value

    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    in_nav = set(pages(config["nav"]))
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert on_disk == in_nav


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason='the docs extra: pip install -e ".[docs]" (dev includes it)')
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0 and warnings == [], "\n".join(warnings) or done.stderr[-2000:]
    site = tmp_path / "site"
    assert (site / "api" / "kahuna_policy" / "index.html").is_file()
    files = [path.relative_to(DOCS) for path in DOCS.rglob("*") if path.is_file() and path.suffix != ".md"]
    assert [path for path in files if not (site / path).is_file()] == []  # ratings.json, the pictures
    assert (tmp_path / "site" / "search" / "search_index.json").is_file()
    # The docstrings render: no reST role or table rule is left as text in the API reference.
    for page in (site / "api").rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not LEFT_AS_TEXT.search(html), f"{page.relative_to(site)}: {LEFT_AS_TEXT.search(html).group(0)!r}"


LEFT_AS_TEXT = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`|^(?:<p>)?\s*={4,}(?: +={2,})*\s*$", re.M)
"""What a docstring's reST markup looks like when the site did not render it: a role, a table's rule."""

COMMANDS = {
    "kahuna_arena.demo",
    "kahuna_arena.eval_cli",
    "kahuna_arena.play",
    "kahuna_arena.ratings_cli",
    "kahuna_arena.replay",
    "kahuna_env.version",
}
"""Modules that are commands (documented by their ``--help`` and the guides) or only hold the version."""
INTERNALS = {"kahuna_env.arrays", "kahuna_env.kernels", "kahuna_env.workers"}
"""The loops, their arrays and the worker pool: reached through the engine and the vector env, not called."""
TRAINING_API = {"training.ppo.trainer", "training.ppo.config", "training.recipes"}
"""What a user calls of ``training``: the main job's entry point and its configuration."""


def test_every_public_module_has_a_page_in_the_api_reference():
    documented = set(
        re.findall(r"^::: ([\w.]+)", "\n".join(p.read_text("utf-8") for p in (DOCS / "api").glob("*.md")), re.M)
    )
    public = set(TRAINING_API)
    for package in ("kahuna_env", "kahuna_policy", "kahuna_arena"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if not any(part.startswith("_") for part in parts):
                public.add(".".join(parts))
    assert sorted(public - COMMANDS - INTERNALS - documented - {"kahuna_policy", "kahuna_arena"}) == []


def test_the_docstring_extension_writes_roles_as_code_and_tables_as_markdown():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_rst", ROOT / "tools" / "docs_rst.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = ":class:`~a.b.Game` and :func:`kahuna_arena.stats.wilson` and :mod:`the loops <kahuna_env.kernels>`"
    assert module.to_markdown(text) == "`Game` and `kahuna_arena.stats.wilson` and `the loops`"
    table = "=====  =====\nkey    value\n=====  =====\na      one\n       more\nb      two\n=====  =====\n"
    assert module.to_markdown(table) == "| key | value |\n|---|---|\n| a | one more |\n| b | two |\n"


def test_every_file_under_docs_that_is_not_a_page_is_used_by_a_page():
    pages = "\n".join(path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md"))
    files = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*") if path.is_file())
    # A picture only an experiment's note shows lives in that experiment's folder, not in the site.
    assert [name for name in files if not name.endswith(".md") and name not in pages] == []


README = ROOT / "README.md"
MAX_README_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_a_landing_page_whose_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES
    targets = {link.split("#")[0] for link in LINK.findall(text) if "://" not in link}
    assert targets and [target for target in sorted(targets) if not (ROOT / target).exists()] == []


def test_ci_runs_the_readme_s_test_command():
    text = README.read_text(encoding="utf-8")
    block = text.split("# 2. run the tests\n", 1)[1].split("```", 1)[0].strip()
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert lines[-1].strip() == block


def test_the_readme_s_python_examples_run(tmp_path):
    pytest.importorskip("sb3_contrib", reason="the dev extra (the SB3 example)")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 3
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


EXPERIMENTS = ROOT / "experiments"


def test_every_experiment_folder_has_a_note_and_is_indexed_by_the_history_page():
    history = (DOCS / "history.md").read_text(encoding="utf-8")
    folders = sorted(path.name for path in EXPERIMENTS.iterdir() if path.is_dir())
    assert folders
    assert [name for name in folders if not (EXPERIMENTS / name / "README.md").is_file()] == []
    assert [name for name in folders if f"experiments/{name}/" not in history] == []
