"""The package's layers, read from its imports: no arrow runs back up, and there is no import circle.

Every ``import`` counts, also inside functions and under ``TYPE_CHECKING``: a lower layer that needs
something from a higher one takes it as an argument or through a registry. The order is the one
``CONTRIBUTING.md`` describes.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("harness_gym._version", "harness_gym.core", "harness_gym.sandbox"),
    ("harness_gym.executors",),
    ("harness_gym.envs",),
    ("harness_gym.domains",),
    ("harness_gym.policies",),
    ("harness_gym.evaluation",),
    ("harness_gym.datasets",),
    ("harness_gym.bench",),
    ("harness_gym.cli",),
    ("harness_gym", "harness_gym._compat"),
    ("baselines",),
)
"""Lowest first. A module may import its own layer and the ones before it."""


def _modules() -> dict[str, Path]:
    found = {}
    for package in ("harness_gym", "baselines"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """Every project module ``module`` imports (``from pkg import submodule`` counts as the submodule)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            subs = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in MODULES]
            names = subs if len(subs) == len(node.names) else [*subs, source]
        else:
            continue
        found.update(t for t in map(_target, names) if t is not None and t != module)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def layer(module: str) -> int:
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[1]
            ):
                best = (index, len(prefix))
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best[0]


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_back_up(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert not upward, f"{module} (layer {layer(module)}) imports higher layers: {upward}"


def test_nothing_in_harness_gym_imports_baselines() -> None:
    offenders = {
        m: sorted(t for t in targets if t.split(".")[0] == "baselines") for m, targets in GRAPH.items()
    }
    assert not {m: t for m, t in offenders.items() if t and m.split(".")[0] == "harness_gym"}


def test_no_import_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]
    edges = defaultdict(set, GRAPH)

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The checks above can fail: a core module importing a domain is found."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from harness_gym.domains.coding import verifier\n")
    found = _imports("harness_gym.core.fake", fake)
    assert found == {"harness_gym.domains.coding.verifier"}
    assert layer("harness_gym.domains.coding.verifier") > layer("harness_gym.core.fake")


def _is_generator(module: str) -> bool:
    name = module.rpartition(".")[2]
    return name == "generate" or name.startswith("generate_")


def test_no_runtime_module_imports_a_generator() -> None:
    """Task generators are build scripts: what a running env needs lives in runtime modules they import."""
    offenders = {
        m: sorted(filter(_is_generator, targets)) for m, targets in GRAPH.items() if not _is_generator(m)
    }
    assert not {m: t for m, t in offenders.items() if t}


_LOADED_GENERATORS = """
import importlib, sys
import harness_gym
from harness_gym.envs.registry import ENV_ENTRY_POINTS, EXTRA_ENV_ENTRY_POINTS
for entry in {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}.values():
    importlib.import_module(entry.partition(":")[0])
print(sorted(m for m in sys.modules if m.rpartition(".")[2].partition("_")[0] == "generate"))
"""


def test_importing_every_env_loads_no_generator() -> None:
    """In a fresh interpreter, ``harness_gym`` and every env's module leave no ``*.generate`` in
    ``sys.modules``: also lazy imports inside functions run at import time would show here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_GENERATORS], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"
