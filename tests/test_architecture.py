"""The import direction of docs/ARCHITECTURE.md, checked on the source of every module.

Layers, lowest first: the rules (``kahuna_env``: board, config -> actions -> positions ->
the state as arrays -> the rules' loops -> engine -> observation, the readable rules reference ->
the batched engine, agents ->
render -> the CLI conventions -> env -> gym_env, parallel env -> vector envs), then the
policy layer (``policy``: networks, agent files, the shipped registry, the guided
search), then ``arena``, then ``training``.  Each module may import only what lies below it:

* ``kahuna_env`` imports nothing of ``policy``, ``training``, ``arena``, torch or ray, at any
  level; inside it, a module imports only modules of a lower rank (:data:`RULES_RANK`);
* ``policy`` imports only ``kahuna_env`` (and torch); its registry and reward modules and
  the package itself load no torch;
* ``arena`` never imports ``training``; of ``policy`` it imports the registry at module
  level and the network modules (and through them torch) only inside functions, when an
  entrant is an agent file, so importing any arena module loads no torch;
* ``training`` imports of the arena only its leaf modules, ``kahuna_arena.stats`` and
  ``kahuna_arena.store`` (which themselves import only ``kahuna_env``);
* the graph of imports between the project's modules has no cycle.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kahuna_env", "kahuna_policy", "training", "kahuna_arena", "kahuna_web")

RULES_RANK = {
    "kahuna_env.version": -1,
    "kahuna_env.workers": -1,
    "kahuna_env.files": -1,
    "kahuna_env.board": 0,
    "kahuna_env.config": 0,
    "kahuna_env.schema": 0.5,
    "kahuna_env.actions": 1,
    "kahuna_env.positions": 2,
    "kahuna_env.arrays": 2.5,
    "kahuna_env.kernels": 2.7,
    "kahuna_env.engine": 3,
    "kahuna_env.observation": 4,
    "kahuna_env.rules": 4,
    "kahuna_env.vector": 5,
    "kahuna_env.agents.base": 5,
    "kahuna_env.agents.search": 5.5,
    "kahuna_env.agents.evaluators": 5.6,
    "kahuna_env.agents.selectors": 5.6,
    "kahuna_env.agents.greedy": 6,
    "kahuna_env.agents.mcts": 6,
    "kahuna_env.agents.spec": 5.7,
    "kahuna_env.agents.batched": 6.5,
    "kahuna_env.agents.external": 6.6,
    "kahuna_env.agents": 7,
    "kahuna_env.match": 7.2,
    "kahuna_env.seated": 7.5,
    "kahuna_env.render": 8,
    "kahuna_env.cli": 8.5,
    "kahuna_env.env": 9,
    "kahuna_env.gym_env": 10,
    "kahuna_env.parallel": 10,
    "kahuna_env.vector_env": 10.5,
    "kahuna_env.gym_vector": 11,
    "kahuna_env.kahuna_v0": 11,
    "kahuna_env.sb3": 11.5,
    "kahuna_env.openspiel": 11.5,
    "kahuna_env": 12,
}
"""Rank of each module of the rules layer: a module imports only modules of a lower rank.

Modules not listed (a new one) get the rank of the layer they import from: the test
below fails and asks for a rank, so that adding a module is a decision about its place.
"""
ARENA_LEAVES = ("kahuna_arena.stats", "kahuna_arena.store", "kahuna_arena.start_positions")
"""The arena modules ``training`` may import: statistics, the results store and the start-positions format (its
one writer for the arena's ``lost_positions``, its one reader for the trainer)."""
FOREIGN_FORBIDDEN_IN_RULES = ("torch", "ray", "kahuna_policy", "training", "kahuna_arena", "kahuna_web")
POLICY_WITHOUT_TORCH = ("kahuna_policy", "kahuna_policy.registry", "kahuna_policy.reward")
"""The policy modules the arena and the web may import at module level: they never load torch."""
WEB_MAY_IMPORT = ("kahuna_env", "kahuna_policy", "kahuna_arena", "kahuna_web")
"""What the web app (``kahuna_web``, docs/WEB.md) may import of the project; nothing imports it."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def imports_of(name: str) -> list[tuple[str, bool]]:
    """``(imported module, at module level?)`` for every import statement of module ``name``.

    ``from package import name`` counts as an import of ``package.name`` when that is a module.
    """
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = top_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                continue  # annotations only, never executed
            if isinstance(child, ast.Import):
                found.extend((alias.name, top_level) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: level 1 is this package, 2 its parent, ...
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - child.level + 1], base]).strip(".")
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    found.append((candidate if candidate in MODULES else base, top_level))
            visit(child, inside)

    visit(tree, True)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def project_module(imported: str) -> str | None:
    """The project module an import refers to (its longest known prefix), or None for a third-party one."""
    parts = imported.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def test_the_module_list_is_not_empty() -> None:
    assert {"kahuna_env.engine", "training.ppo.trainer", "kahuna_arena.stats"} <= set(MODULES)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "kahuna_env"))
def test_kahuna_env_never_imports_torch_ray_training_or_arena(name: str) -> None:
    bad = [imp for imp, _ in imports_of(name) if imp.split(".")[0] in FOREIGN_FORBIDDEN_IN_RULES]
    assert not bad, f"{name} imports {bad}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "kahuna_env"))
def test_kahuna_env_modules_import_only_lower_layers(name: str) -> None:
    assert name in RULES_RANK, f"{name} has no rank in RULES_RANK: decide its layer (docs/ARCHITECTURE.md)"
    for imported, _ in imports_of(name):
        target = project_module(imported)
        if target is None or target == name:
            continue
        assert target in RULES_RANK, f"{name} imports {target}, which has no rank"
        assert RULES_RANK[target] < RULES_RANK[name], (
            f"{name} (rank {RULES_RANK[name]}) imports {target} (rank {RULES_RANK[target]}): upward import"
        )


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "training"))
def test_training_imports_only_the_arena_leaves(name: str) -> None:
    for imported, _ in imports_of(name):
        target = project_module(imported)
        if target is not None and target.split(".")[0] == "kahuna_arena":
            assert target in ARENA_LEAVES, f"{name} imports {target}; training may import only {ARENA_LEAVES}"


@pytest.mark.parametrize("name", ARENA_LEAVES)
def test_arena_leaves_import_only_the_rules(name: str) -> None:
    for imported, _ in imports_of(name):
        target = project_module(imported)
        assert target is None or target.split(".")[0] == "kahuna_env", f"{name} imports {target}"
        assert imported.split(".")[0] != "torch", f"{name} imports torch"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "kahuna_policy"))
def test_policy_imports_only_the_rules(name: str) -> None:
    for imported, _top in imports_of(name):
        target = project_module(imported)
        assert target is None or target.split(".")[0] in ("kahuna_env", "kahuna_policy"), f"{name} imports {target}"
        if name in POLICY_WITHOUT_TORCH:
            assert imported.split(".")[0] != "torch", f"{name} imports torch"
            assert target is None or target.split(".")[0] != "kahuna_policy" or target in POLICY_WITHOUT_TORCH, (
                f"{name} imports {target}, which loads torch"
            )


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "kahuna_arena"))
def test_arena_loads_the_network_and_torch_only_inside_functions(name: str) -> None:
    for imported, top in imports_of(name):
        target = project_module(imported) or ""
        assert target.split(".")[0] != "training", f"{name} imports {target}: the arena lies below training"
        if top:
            assert imported.split(".")[0] not in ("torch", "ray"), f"{name} imports {imported} at module level"
            assert target.split(".")[0] != "kahuna_policy" or target in POLICY_WITHOUT_TORCH, (
                f"{name} imports {target} at module level"
            )


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "kahuna_web"))
def test_kahuna_web_imports_only_the_rules_and_the_arena(name: str) -> None:
    for imported, top in imports_of(name):
        target = project_module(imported)
        assert target is None or target.split(".")[0] in WEB_MAY_IMPORT, f"{name} imports {target}"
        assert imported.split(".")[0] not in ("ray", "training"), f"{name} imports {imported}"
        if top:  # a network (and torch) loads only inside the function that needs it, like the arena's
            assert imported.split(".")[0] != "torch", f"{name} imports torch at module level"
            assert target is None or target.split(".")[0] != "kahuna_policy" or target in POLICY_WITHOUT_TORCH, (
                f"{name} imports {target} at module level, which loads torch"
            )


def test_nothing_imports_the_web_app() -> None:
    for name in MODULES:
        if name.split(".")[0] != "kahuna_web":
            targets = [project_module(imported) or "" for imported, _ in imports_of(name)]
            assert not [t for t in targets if t.split(".")[0] == "kahuna_web"], f"{name} imports kahuna_web"


def test_the_project_import_graph_has_no_cycle() -> None:
    graph = {
        name: {t for imp, _ in imports_of(name) if (t := project_module(imp)) is not None and t != name}
        for name in MODULES
    }
    # A package's __init__ importing its own submodules is how packages re-export; drop package -> child edges.
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not t.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycle = [*stack[stack.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_importing_the_rules_and_every_arena_module_loads_no_torch() -> None:
    names = [
        "kahuna_env",
        *POLICY_WITHOUT_TORCH,
        *sorted(n for n in MODULES if n.split(".")[0] in ("kahuna_arena", "kahuna_web")),
    ]
    if importlib.util.find_spec("starlette") is None:  # the web extra is not installed
        names.remove("kahuna_web.app")
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = [m for m in ('torch', 'training', 'ray') if m in sys.modules]\n"
        "assert not loaded, f'loaded {loaded}'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
