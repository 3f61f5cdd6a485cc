"""minigrad's modules import one another one way, top-down: no module-level import cycle,
not even through imports a type checker alone follows (`if TYPE_CHECKING:`), and an
import inside a function only with a comment saying why it is deferred."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "minigrad"


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(module: str, name: str | None = None) -> str | None:
    """The minigrad module an import statement loads (`from pkg import sub` loads the
    submodule when there is one), or None for other packages."""
    if not module.startswith("minigrad"):
        return None
    if name and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module if module in MODULES else None


def _module_level_imports(tree: ast.Module):
    """Import statements outside functions: those that run when the module is imported,
    and those under `if TYPE_CHECKING:`, which type checkers follow."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(node) -> list[str]:
    if isinstance(node, ast.Import):
        return [t for alias in node.names if (t := _resolve(alias.name))]
    if node.level or node.module is None:
        raise AssertionError("minigrad uses absolute imports only")
    return [t for alias in node.names if (t := _resolve(node.module, alias.name))]


def _parents(module: str, importer: str) -> list[str]:
    """Packages whose __init__ runs before `module` is imported from `importer`: not
    minigrad's own (the composition root, always imported first), nor the packages the
    importer itself is in (they are already being imported)."""
    parts = module.split(".")
    packages = [".".join(parts[:i]) for i in range(2, len(parts))]
    return [p for p in packages if not importer.startswith(p + ".")]


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        edges = set()
        for node in _module_level_imports(ast.parse(path.read_text())):
            for target in _targets(node):
                edges.update(t for t in [*_parents(target, name), target] if t != name)
        graph[name] = edges
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, iterators = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while path:
            target = next(iterators[-1], None)
            if target is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(target) == 1:
                return path[path.index(target):] + [target]
            elif target in graph and not state.get(target):
                state[target] = 1
                path.append(target)
                iterators.append(iter(sorted(graph[target])))
    return None


def test_no_module_imports_one_that_imports_it_back():
    graph = _graph()
    assert "minigrad.tensor" in graph["minigrad.nn.modules.module"]  # the walk sees real edges
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_deferred_imports_of_minigrad_modules_say_why(name):
    path = MODULES[name]
    lines = path.read_text().splitlines()
    tree = ast.parse(path.read_text())
    module_level = set(map(id, _module_level_imports(tree)))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in module_level:
            continue
        if not any(_resolve(n.name if isinstance(node, ast.Import) else node.module or "")
                   for n in node.names):
            continue
        nearby = lines[max(0, node.lineno - 3):node.lineno]
        assert any("#" in line for line in nearby), (
            f"{path.name}:{node.lineno}: a deferred import of a minigrad module needs a "
            "comment saying why it is not at the top of the file")
