"""What a module's top-level definitions may be, from its ast alone: the project index's judgements
(index.py) of functions and classes, each one walk over the module's top level.

A def is marked when its own code meets a seed (names a loader class; holds a lambda; names CUDA)
or names another marked def of the module, so a class is judged with the helpers it calls. Classes
are also judged by kind from their identifiers (an IterableDataset, a dataset holding an RNG) and
as loader subclasses; their imported bases are listed for the lookup to follow.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Callable, DefaultDict, Dict, FrozenSet, List, NamedTuple, Set, Tuple

from ..facts.subclass_init import class_omitted_workers
from ..screen.tokens import DEFINITIONS, holds_payload, names_in, names_of

# A class may be of a kind when its identifiers contain a part of each group (substrings, as the
# prefilter's tokens): an IterableDataset (`__iter__`, DL103's and DL502's imported streams), or a
# dataset class holding an RNG (DL201's dataset base class in another module, across files).
DATASET_PARTS = ("Dataset", "torchvision", "__getitem__", "__getitems__", "__iter__")
CLASS_KINDS = {
    "stream": (("IterableDataset", "__iter__"),),
    "rng": (("default_rng", "RandomState", "Generator", "Random"), DATASET_PARTS),
}
# Kinds read from a class's code rather than its identifiers (the gate's imported_payload and
# imported_cuda): what DL302 and DL602 read in an imported dataset class, or in a same-module def it names.
STRUCTURAL_KINDS = ("payload", "cuda")


class LoaderClasses(NamedTuple):
    plain: FrozenSet[str]  # read as a loader where imported under a loader class's name
    custom: FrozenSet[str]  # with an `__init__`: what a call omits may be set there
    workers: FrozenSet[str]  # of ``custom``, those that may give a call omitting `num_workers` workers


class TopDef(NamedTuple):
    """A module-level function or class, read once: what the index's judgements ask of it."""

    name: str
    is_class: bool
    names: FrozenSet[str]  # its code's names outside annotations and type tests (``code_names``), not its own
    payload: bool  # a lambda, a generator, or a def or class inside one of its functions (DL302)
    cuda: bool  # `cuda` as a name or attribute, or in a string (DL602)


def top_defs(tree: ast.AST) -> List[TopDef]:
    found = []
    for node in getattr(tree, "body", ()):
        if isinstance(node, DEFINITIONS):
            nodes = _code_nodes(node)
            found.append(TopDef(node.name, isinstance(node, ast.ClassDef), frozenset(_mentions(nodes) - {node.name}),
                                holds_payload(nodes, [node]), any(_names_cuda(item) for item in nodes)))
    return found


def structural_kinds(defs: List[TopDef], source: str) -> Dict[str, FrozenSet[str]]:
    """The classes of each STRUCTURAL_KINDS kind: their own code holds it, or names a def that is marked."""
    classes = {definition.name for definition in defs if definition.is_class}
    return {
        "payload": marked_defs(defs, lambda definition: definition.payload) & classes,
        "cuda": marked_defs(defs, lambda definition: definition.cuda) & classes if "cuda" in source else frozenset(),
    }


def _names_cuda(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and "cuda" in node.value
    if isinstance(node, ast.Attribute):
        return node.attr == "cuda"
    return isinstance(node, ast.Name) and node.id == "cuda"


def marked_defs(defs: List[TopDef], seed: Callable[[TopDef], bool]) -> FrozenSet[str]:
    """Module-level defs and classes for which ``seed`` holds, and transitively those naming one of them."""
    mentioned_in: DefaultDict[str, List[str]] = defaultdict(list)  # identifier -> top-level defs naming it
    found: Set[str] = set()
    todo: List[str] = []
    for definition in defs:
        if seed(definition):
            found.add(definition.name)
            todo.append(definition.name)
        else:
            for name in definition.names:
                mentioned_in[name].append(definition.name)
    while todo:  # each def is marked once; each mention is read once
        for name in mentioned_in.pop(todo.pop(), ()):
            if name not in found:
                found.add(name)
                todo.append(name)
    return frozenset(found)


def loader_classes(tree: ast.AST, marked: Set[str], builders: FrozenSet[str]) -> LoaderClasses:
    """(loader subclasses whose code outside their bases names no loader class nor builder, the loader
    subclasses with an `__init__` of their own or of a same-module base, and those of the latter that
    may give a call omitting `num_workers` workers: all but an own `__init__` over bases of other modules
    whose omitted count is 0 (facts/subclass_init.py)). A base is a loader
    class when its last name is one of ``marked`` (`data.DataLoader` too) or a loader subclass here."""
    classes = {node.name: node for node in getattr(tree, "body", ()) if isinstance(node, ast.ClassDef)}
    verdict: Dict[str, Tuple[bool, bool]] = {}  # class -> (a loader subclass, an `__init__` in its chain)

    def judge(name: str, seen: Set[str]) -> Tuple[bool, bool]:
        if name not in verdict:
            node, loader, init = classes[name], False, False
            seen.add(name)
            for base in node.bases:
                tail = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if tail in classes and tail not in seen:
                    base_loader, base_init = judge(tail, seen)
                    loader, init = loader or base_loader, init or base_init
                elif tail in marked:
                    loader = True
            own_init = any(isinstance(item, FUNCTIONS) and item.name == "__init__" for item in node.body)
            verdict[name] = (loader, init or own_init)
        return verdict[name]

    loaders, custom, workers = set(), set(), set()
    every_class: Set[str] = set()  # the names of the module's classes at any depth, read once if needed
    for name, node in classes.items():
        loader, init = judge(name, set())
        if not loader:
            continue
        if init:
            custom.add(name)
            every_class = every_class or {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
            if class_omitted_workers(node, every_class) != 0:
                workers.add(name)
        if all(names_in(stmt).isdisjoint(marked | builders) for stmt in node.body):
            loaders.add(name)
    return LoaderClasses(frozenset(loaders), frozenset(custom), frozenset(workers))


def code_names(definition: ast.AST) -> Set[str]:
    """``names_in`` of a def or class outside its annotations and type tests: a name read only as a type
    (a parameter's, a return's, an annotated assignment's, the class `isinstance(x, DataLoader)` tests
    against) builds nothing, so it does not make the def a builder, nor one marked through it."""
    return _mentions(_code_nodes(definition))


def _mentions(nodes: List[ast.AST]) -> Set[str]:
    tested = [item for node in nodes for item in _type_tested(node)]
    if not tested:
        return names_of(nodes)
    skipped = {id(item) for node in tested for item in ast.walk(node)}
    return names_of([node for node in nodes if id(node) not in skipped])


def _type_tested(node: ast.AST) -> List[ast.AST]:
    """The classes `isinstance(x, C)` / `issubclass(k, (C, D))` tests against, when each is a plain
    (dotted) name: reading one calls nothing. Any other second argument may call code, and is kept."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _TYPE_TESTS
            and len(node.args) == 2 and not node.keywords):
        return []
    tested = node.args[1]
    classes = tested.elts if isinstance(tested, ast.Tuple) else [tested]
    return [tested] if all(_dotted_name(item) for item in classes) else []


def _dotted_name(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _code_nodes(definition: ast.AST) -> List[ast.AST]:
    nodes: List[ast.AST] = []
    todo: List[ast.AST] = [definition]
    while todo:
        node = todo.pop()
        nodes.append(node)
        for field, value in ast.iter_fields(node):
            if field in _ANNOTATION_FIELDS and isinstance(node, _ANNOTATED):
                continue
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, ast.AST))
    return nodes


_ANNOTATION_FIELDS = ("annotation", "returns")
_TYPE_TESTS = ("isinstance", "issubclass")
_ANNOTATED = (ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def class_kinds(
    tree: ast.AST, exports: Dict[str, str], source: str
) -> Tuple[Dict[str, FrozenSet[str]], Dict[str, Tuple[str, ...]]]:
    """Per kind, the module-level classes that may be of it (own identifiers, or a base of this module
    that may be); and the bases each class imports (their dotted names), followed by the lookup.

    An identifier is a substring of an ASCII ``source``, so a kind whose groups the text does not
    all meet marks no class there, and no class's identifiers are collected for it."""
    possible = [
        kind
        for kind, groups in CLASS_KINDS.items()
        if not source.isascii() or all(any(part in source for part in group) for group in groups)
    ]
    classes = [node for node in getattr(tree, "body", ()) if isinstance(node, ast.ClassDef)]
    local_bases: Dict[str, List[str]] = {}
    imported: Dict[str, Tuple[str, ...]] = {}
    named: Dict[str, Set[str]] = {}
    for node in classes:
        names = {base.id for base in node.bases if isinstance(base, ast.Name)}
        roots = [_root(base) for base in node.bases]
        local_bases[node.name] = sorted(names & {c.name for c in classes})
        imported[node.name] = tuple(_dotted(base, exports) for base, root in zip(node.bases, roots) if root in exports)
        if possible:
            named[node.name] = names_in(node)
    kinds: Dict[str, FrozenSet[str]] = {kind: frozenset() for kind in CLASS_KINDS}
    for kind in possible:
        groups = CLASS_KINDS[kind]
        marked = {name for name, ids in named.items() if all(any(p in i for i in ids for p in g) for g in groups)}
        changed = True
        while changed:  # a chain of classes within one module: each pass marks at least one more, or stops
            changed = False
            for name, local in local_bases.items():
                if name not in marked and any(base in marked for base in local):
                    marked.add(name)
                    changed = True
        kinds[kind] = frozenset(marked)
    followed: Dict[str, Tuple[str, ...]] = {}
    for name in local_bases:  # a class's imported bases, with those of its bases in this module
        seen, todo = {name}, [name]
        found: List[str] = []
        while todo:
            current = todo.pop()
            found.extend(imported.get(current, ()))
            for base in local_bases.get(current, ()):
                if base not in seen:
                    seen.add(base)
                    todo.append(base)
        if found:
            followed[name] = tuple(dict.fromkeys(found))
    return kinds, followed


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.AST, exports: Dict[str, str]) -> str:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    base = exports[node.id] if isinstance(node, ast.Name) else ""
    return ".".join([base, *reversed(parts)]) if parts else base
