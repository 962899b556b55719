"""The import graphs of the package and of runtime_checks: no cycles, and each layer imports only the layers below it.

Every import counts, those inside functions included (a lazy import is still a dependency), and
so do imports under ``if TYPE_CHECKING:``: a circle of modules that need each other's types is a
circle all the same (the graph without them is checked too, as a separate, weaker test).
"""

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "flake8_dataloader"
RUNTIME_CHECKS = PACKAGE.parent / "runtime_checks"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, name: str, modules: Set[str], type_checking: bool = False) -> Set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()
    pending: List[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
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


def import_graph(type_checking: bool = False, package: Path = PACKAGE) -> Dict[str, Set[str]]:
    paths = {module_name(path): path for path in package.rglob("*.py")}
    return {name: imports_of(path, name, set(paths), type_checking) for name, path in paths.items()}


def package_graphs(graph: Dict[str, Set[str]]) -> Dict[str, Dict[str, Set[str]]]:
    """Each package's modules with the imports among them (its own ``__init__`` left out: a package
    importing its modules to re-export them is not a circle of concepts)."""
    packages: Dict[str, Dict[str, Set[str]]] = {}
    for name in graph:
        parent = name.rpartition(".")[0]
        if parent:
            packages.setdefault(parent, {})[name] = set()
    for package, members in packages.items():
        for name in members:
            members[name] = graph[name] & set(members)
    return packages


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


def test_no_import_cycle_even_through_annotations():
    """The fix context names the facts, not the engine (which imports the rules, which import it); the
    runtime scenarios import what a scenario is from scenarios/base.py, not from the registry."""
    for package in (PACKAGE, RUNTIME_CHECKS):
        graph = import_graph(type_checking=True, package=package)
        assert len(graph) > 10, package
        assert cycles(graph) == [], package


def test_the_runtime_report_and_the_timeline_share_without_a_circle():
    graph = import_graph(type_checking=True, package=RUNTIME_CHECKS)
    assert graph["runtime_checks.report"] >= {"runtime_checks.timeline", "runtime_checks.stats"}
    assert "runtime_checks.report" not in graph["runtime_checks.timeline"]


def test_the_fix_context_reads_the_facts_not_the_engine():
    deps = import_graph(type_checking=True)["flake8_dataloader.autofix.context"]
    assert "flake8_dataloader.facts.analysis" in deps
    assert not {d for d in deps if d.startswith(("flake8_dataloader.engine", "flake8_dataloader.rules"))}


def test_annotation_imports_count_inside_a_package(tmp_path):
    (tmp_path / "model.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .foreign import S\n"
    )
    (tmp_path / "foreign.py").write_text("from .model import Known\n")
    modules = {"pkg.model", "pkg.foreign"}
    graph = {name: imports_of(tmp_path / f"{name[4:]}.py", name, modules, type_checking=True) for name in modules}
    assert package_graphs(graph) == {"pkg": {"pkg.model": {"pkg.foreign"}, "pkg.foreign": {"pkg.model"}}}
    assert cycles(package_graphs(graph)["pkg"]) == [["pkg.foreign", "pkg.model"]]
    assert imports_of(tmp_path / "model.py", "pkg.model", modules) == set()


def test_no_package_has_an_import_cycle_even_through_annotations():
    packages = package_graphs(import_graph(type_checking=True))
    assert {"flake8_dataloader.facts", "flake8_dataloader.rules", "flake8_dataloader.project"} <= set(packages)
    assert {package: cycles(graph) for package, graph in packages.items() if cycles(graph)} == {}


def _under(graph: Dict[str, Set[str]], prefix: str) -> Dict[str, Set[str]]:
    return {name: deps for name, deps in graph.items() if name == prefix or name.startswith(prefix + ".")}


def test_the_project_index_never_calls_the_engine_and_the_facts_never_read_the_project():
    graph = import_graph()
    screen_entry = "flake8_dataloader.screen.decide"
    for name, deps in _under(graph, "flake8_dataloader.project").items():
        assert not {"flake8_dataloader.engine", "flake8_dataloader.plugin", screen_entry} & deps, name
    for name, deps in _under(graph, "flake8_dataloader.facts").items():
        assert not {d for d in deps if d.startswith(("flake8_dataloader.project", "flake8_dataloader.rules"))}, name
    for name, deps in _under(graph, "flake8_dataloader.rules").items():
        assert not {d for d in deps if d.startswith("flake8_dataloader.project")}, name


def test_the_project_layer_reads_facts_never_rules():
    """What a summary says of a class (shards by worker, reads CUDA, holds a lambda...) is a fact."""
    graph = import_graph(type_checking=True)
    project = _under(graph, "flake8_dataloader.project")
    assert "flake8_dataloader.project.summarise" in project
    for name, deps in project.items():
        assert not {d for d in deps if d.startswith("flake8_dataloader.rules")}, name


def test_one_module_per_rule_and_none_over_450_lines():
    from flake8_dataloader.rules import RULES

    modules = [rule.__module__ for rule in RULES]
    assert len(set(modules)) == len(RULES)
    for rule, module in zip(RULES, modules):
        assert module.rpartition(".")[2].startswith(rule.CODE.lower() + "_"), (rule.CODE, module)
    paths = [*PACKAGE.rglob("*.py"), *RUNTIME_CHECKS.rglob("*.py")]
    sizes = {module_name(path): len(path.read_text(encoding="utf-8").splitlines()) for path in paths}
    assert {name: size for name, size in sizes.items() if size > 450} == {}


def test_the_stages_are_folders_and_at_most_8_modules_sit_at_the_top():
    """A reader names the stages from the folders: the screen (may this file hold a finding?), the LibCST
    side, the facts, the project, the rules, the fix command; the flake8 adapter, the engine, settings,
    the cache, errors, the manifest and the command line at the top (its __init__ and __main__ counted)."""
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert folders == {"autofix", "facts", "project", "rules", "screen", "syntax"}


def test_the_screen_has_one_entry_point_and_its_init_imports_nothing():
    """The flake8 adapter, the engine and the fix command ask the screen through screen/decide.py only;
    the project index reads its tokens, the LibCST side its one ast walk. Importing a screen module never
    loads the entry point (the package's __init__ imports nothing)."""
    entry, tokens, walk = (f"flake8_dataloader.screen.{name}" for name in ("decide", "tokens", "ast_walk"))
    graph = import_graph(type_checking=True)
    assert {name for name, deps in graph.items() if entry in deps} == {
        "flake8_dataloader.plugin", "flake8_dataloader.engine", "flake8_dataloader.autofix.command"}
    for name, deps in graph.items():
        inner = {d for d in deps if d.startswith("flake8_dataloader.screen")} - {entry}
        if name.startswith("flake8_dataloader.screen"):
            continue
        allowed = {tokens} if name.startswith("flake8_dataloader.project.") else set()
        allowed |= {walk} if name == "flake8_dataloader.syntax.ast_positions" else set()
        assert inner <= allowed, name
    for package in ("screen", "syntax"):
        init = ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8"))
        assert not [node for node in ast.walk(init) if isinstance(node, (ast.Import, ast.ImportFrom))], package


def test_the_engine_asks_the_project_through_one_service():
    project = {d for d in import_graph()["flake8_dataloader.engine"] if d.startswith("flake8_dataloader.project")}
    assert project == {"flake8_dataloader.project.service"}
