"""The engine's modules import only their own layer and the layers below it (ARCHITECTURE.md, "The engine's
layers"), type-only imports included, and no two modules import each other, however indirectly."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "autodiff"

# lowest first; a module may import modules of its own layer or of an earlier one
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("ids", "errors", "printing", "observer")),
    ("backends", ("memory", "backends.base", "backends.numpy_backend", "backends.mlx_backend", "backends")),
    ("graph", ("graph",)),
    ("memory management", ("memory_management",)),
    ("gradients", ("grads",)),
    ("checkpointing", ("checkpointing",)),
    ("server", ("server",)),
    ("observers", ("trace", "memory_history", "structure", "snapshot")),
    ("device", ("device",)),
    ("ops and Tensor", ("checks", "values", "ops.*", "ops", "tensor")),
    ("library", ("activation", "module", "loss", "memory_viz", "crosscheck", "__init__")),
    ("pictures", ("stage.*", "stage", "notebook")),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """The engine modules `path` imports, at run time or for type hints alone."""
    package = module_name(path).split(".")[:-1] if path.name != "__init__.py" else module_name(path).split(".")
    if path == PACKAGE / "__init__.py":
        package = []
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and (node.module == "autodiff" or node.module.startswith("autodiff.")):
                target = node.module.removeprefix("autodiff").removeprefix(".")
            else:
                continue
            names = [f"{target}.{a.name}" if target else a.name for a in node.names]
            found.update(n for n in names if n in MODULES) or found.add(target or "__init__")
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("autodiff.") for a in node.names if a.name.startswith("autodiff."))
    return {name for name in found if name != module_name(path)}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        if module in members or any(m.endswith(".*") and module.startswith(m[:-1]) for m in members):
            return index
    raise AssertionError(f"autodiff/{module} belongs to no layer: place it in LAYERS and in ARCHITECTURE.md")


def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """Each import of a module in a later layer, said as `importer -> imported (layer)`."""
    return sorted(
        f"{importer} -> {imported} ({LAYERS[layer_of(imported)][0]})"
        for importer, targets in graph.items()
        for imported in targets
        if layer_of(imported) > layer_of(importer)
    )


def a_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle, if there is one."""
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target] if target in path else [module, target]
            if target not in state:
                found = visit(target, [*path, target])
                if found:
                    return found
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_later_layer():
    assert upward_imports(GRAPH) == []


def test_no_import_circle():
    assert a_cycle(GRAPH) is None


def test_the_checks_see_an_upward_import_and_a_circle():
    planted = {**GRAPH, "graph": GRAPH["graph"] | {"tensor"}}  # graph.py importing Tensor, even for a hint
    assert upward_imports(planted) == ["graph -> tensor (ops and Tensor)"]
    assert a_cycle(planted) is not None  # tensor imports graph
    assert "graph" in imports_of(PACKAGE / "server.py") and "ops.base" in imports_of(PACKAGE / "ops" / "__init__.py")
