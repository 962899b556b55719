"""The package's import graph: no cycles, and each layer imports only the layers below it.

Every import counts, those inside functions included (a lazy import is still a dependency);
imports under ``if TYPE_CHECKING:`` are annotations only and are left out.
"""

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "flake8_dataloader"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, name: str, modules: Set[str]) -> Set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()
    pending: List[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            found.update(m for m in [target, *(f"{target}.{a.name}" for a in node.names)] if m in modules)
        pending.extend(ast.iter_child_nodes(node))
    found.discard(name)
    return found


def import_graph() -> Dict[str, Set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, name, set(paths)) for name, path in paths.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "flake8_dataloader.engine" in graph and graph["flake8_dataloader.engine"]
    assert cycles(graph) == []


def _under(graph: Dict[str, Set[str]], prefix: str) -> Dict[str, Set[str]]:
    return {name: deps for name, deps in graph.items() if name == prefix or name.startswith(prefix + ".")}


def test_the_project_index_never_calls_the_engine_and_the_facts_never_read_the_project():
    graph = import_graph()
    for name, deps in _under(graph, "flake8_dataloader.project").items():
        assert not {"flake8_dataloader.engine", "flake8_dataloader.plugin", "flake8_dataloader.prefilter"} & deps, name
    for name, deps in _under(graph, "flake8_dataloader.facts").items():
        assert not {d for d in deps if d.startswith(("flake8_dataloader.project", "flake8_dataloader.rules"))}, name
    for name, deps in _under(graph, "flake8_dataloader.rules").items():
        assert not {d for d in deps if d.startswith("flake8_dataloader.project")}, name


def test_the_engine_asks_the_project_through_one_service():
    project = {d for d in import_graph()["flake8_dataloader.engine"] if d.startswith("flake8_dataloader.project")}
    assert project == {"flake8_dataloader.project.service"}
