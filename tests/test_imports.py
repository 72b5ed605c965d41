"""The package's import graph: the config module stands alone, and no two modules import each other (even
inside a function), so each can be read, and imported, before the ones that use it.  The same holds for the
benchmarks beside it (the GPU check among them), which the package never imports."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ftcl_core"
BENCHMARKS = PACKAGE.parent / "benchmarks"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module named by an import statement of ``path`` (module level or inside functions), relative imports
    resolved against ``package``; ``from a import x`` names both ``a`` and ``a.x``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return names


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules of the same package it imports}`` for the package in folder ``root``, from every import
    statement of every file; ``from ftcl_core import x`` counts as importing ``ftcl_core.x`` where that is a module."""
    top = root.name
    files = {_module_name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        named = {m for m in imported_modules(path, package) if m == top or m.startswith(top + ".")}
        modules = {m for m in named if m in files}
        # `from a import x` where x is a name, not a module: the import is of `a`
        modules |= {m.rsplit(".", 1)[0] for m in named - modules if m.rsplit(".", 1)[0] in files}
        graph[name] = {d for d in modules if d != name and d != top}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_module_of_the_package_takes_part_in_an_import_cycle():
    graph = import_graph()
    assert {"ftcl_core.config", "ftcl_core.runs", "ftcl_core.training", "ftcl_core.methods"} <= set(graph)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_the_package_imports_nothing_from_the_benchmarks_and_they_take_part_in_no_cycle():
    for path in PACKAGE.rglob("*.py"):
        outside = {m for m in imported_modules(path, "ftcl_core") if m == "benchmarks" or m.startswith("benchmarks.")}
        assert not outside, f"{path.relative_to(PACKAGE.parent)} imports {sorted(outside)}"
    graph = import_graph(BENCHMARKS)
    assert {"benchmarks.bench", "benchmarks.timing", "benchmarks.gpucheck.run", "benchmarks.gpucheck.report"} <= set(graph)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_config_modules_import_nothing_else_from_the_package():
    graph = import_graph()
    assert graph["ftcl_core.config_fields"] == set()
    assert graph["ftcl_core.config_sections"] == {"ftcl_core.config_fields"}
    assert graph["ftcl_core.config_yaml"] == {"ftcl_core.config_fields"}
    assert graph["ftcl_core.config"] == {"ftcl_core.config_fields", "ftcl_core.config_sections", "ftcl_core.config_yaml"}
    code = "import sys, ftcl_core.config; print(sorted(m for m in sys.modules if m.startswith('ftcl_core.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("['ftcl_core.config', 'ftcl_core.config_fields', 'ftcl_core.config_sections', "
                           "'ftcl_core.config_yaml']")


def test_the_names_kept_as_data_in_the_config_match_their_owners():
    from ftcl_core import augment, config, methods, models, transforms

    assert tuple(augment.PRESETS) == config.AUGMENT_PRESETS
    assert tuple(models.SMALL) == config.SMALL_ENCODERS and tuple(models.TORCHVISION) == config.TORCHVISION_ENCODERS
    for g in config.GRANULARITIES:
        transforms.lambda_shape(g, 2, 3)
    assert tuple(methods.METHODS) == config.METHODS
    assert config.CONTRASTIVE == tuple(name for name, cls in methods.METHODS.items() if cls.has_negatives)
