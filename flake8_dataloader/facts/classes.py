"""Same-file classes: ancestors, loader subclasses, dataset kinds, methods, instances."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from . import constants as C
from .collector import Collector
from .foreign import Imports
from .model import CallRecord, ClassInfo, FunctionInfo
from .nodes import children
from .resolve import Scope, Target, resolve
from .subclass_init import class_hands_on_workers, class_omitted_workers
from .walk import Visited, WorkBudget

# A name re-bound more often than this is not followed (keeps generated code linear).
MAX_BINDINGS_FOLLOWED = 16

AttributeValue = Tuple[cst.BaseExpression, Scope]


def last_name(expr: cst.CSTNode) -> Optional[str]:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def self_attribute(node: cst.CSTNode, method: FunctionInfo) -> Optional[str]:
    """``attr`` when ``node`` is `self.attr` in ``method`` (its first parameter being self)."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and method.params[:1] == [node.value.value]:
        return node.attr.value
    return None


class ClassFacts:
    """The bottom layer of the facts: what the traversal recorded, and the file's classes."""

    def __init__(self, collector: Collector, loader_names: FrozenSet[str], imports: Optional[Imports] = None) -> None:
        assert collector.module_scope is not None
        self.collector = collector
        self.budget = WorkBudget()  # every transitive walk of this file's facts spends from it
        self.module_scope: Scope = collector.module_scope
        self.loader_names = loader_names
        self.imports = imports  # the project's other modules (None: this file alone)
        self.functions: Dict[cst.FunctionDef, FunctionInfo] = collector.functions
        self.classes: Dict[cst.ClassDef, ClassInfo] = collector.classes
        self._class_kind: Dict[ClassInfo, Optional[str]] = {}
        self._ancestors: Dict[ClassInfo, List[ClassInfo]] = {}
        self._targets: Dict[ClassInfo, Set[Target]] = {}
        self._project_bases: Dict[ClassInfo, Optional[str]] = {}
        self._class_trees: Dict[ClassInfo, Optional[ast.ClassDef]] = {}

    @property
    def calls(self) -> List[CallRecord]:
        """Every call of the file, in source order, with its context."""
        return self.collector.calls

    def class_of_def(self, node: object) -> Optional[ClassInfo]:
        return self.classes.get(node) if isinstance(node, cst.ClassDef) else None

    def _parents(self, cls: ClassInfo) -> List[ClassInfo]:
        parents: List[ClassInfo] = []
        assert cls.scope.parent is not None
        for base in cls.bases:
            targets = resolve(base, cls.scope.parent)
            if len(targets) > MAX_BINDINGS_FOLLOWED:
                continue  # generated code (`class D(D)` redefined hundreds of times): not followed
            for target in targets:
                parent = self.class_of_def(target)
                if parent is not None and parent is not cls and parent not in parents:
                    parents.append(parent)
        return parents

    def base_classes(self, cls: ClassInfo) -> List[ClassInfo]:
        """Same-file ancestors, nearest first (breadth-first over the bases), memoised."""
        cached = self._ancestors.get(cls)
        if cached is not None:
            return cached
        out: List[ClassInfo] = []
        seen: Visited[ClassInfo] = Visited()
        seen.first(cls)
        queue = [cls]
        while queue:
            current = queue.pop(0)
            for parent in self._parents(current):
                if seen.first(parent):
                    out.append(parent)
                    queue.append(parent)
        self._ancestors[cls] = out
        return out

    def class_targets(self, cls: ClassInfo) -> Set[Target]:
        """What the bases of a class and of its same-file ancestors resolve to (None: unknown)."""
        cached = self._targets.get(cls)
        if cached is None:
            cached = set()
            for klass in [cls, *self.base_classes(cls)]:
                assert klass.scope.parent is not None
                for base in klass.bases:
                    targets = resolve(base, klass.scope.parent)
                    cached |= targets if len(targets) <= MAX_BINDINGS_FOLLOWED else {None}
            self._targets[cls] = cached
        return cached

    def subclasses_any(self, cls: ClassInfo, names: FrozenSet[str]) -> bool:
        return any(isinstance(t, str) and t in names for t in self.class_targets(cls))

    def is_loader_class(self, cls: ClassInfo) -> bool:
        return self.subclasses_any(cls, self.loader_names) or self.project_loader_base(cls) is not None

    def project_loader_base(self, cls: ClassInfo) -> Optional[str]:
        """The imported base (of the class or a same-file ancestor) that another module of the project
        defines as a loader subclass (`class Mine(ThreadDataLoader)`), when the class subclasses no loader
        class itself."""
        if cls not in self._project_bases:
            found = None
            if self.imports is not None and not self.subclasses_any(cls, self.loader_names):
                found = next((t for t in sorted(self.class_targets(cls), key=str)
                              if isinstance(t, str) and self.imports.loader_class(t) is not None), None)
            self._project_bases[cls] = found
        return self._project_bases[cls]

    def class_tree(self, cls: ClassInfo) -> Optional[ast.ClassDef]:
        """``class_ast`` of the class, generated and parsed once however many readings ask for it."""
        if cls not in self._class_trees:
            self._class_trees[cls] = class_ast(cls)
        return self._class_trees[cls]

    def dataset_kind(self, cls: ClassInfo) -> Optional[str]:
        """'iterable', 'map' or None for a same-file class."""
        if cls not in self._class_kind:
            kind = None
            for target in self.class_targets(cls):
                if not isinstance(target, str):
                    continue
                if target in C.ITERABLE_DATASET_BASES:
                    kind = "iterable"
                    break
                if target in C.DATASET_BASES or target.startswith(C.DATASET_BASE_PREFIXES):
                    kind = "map"
            self._class_kind[cls] = kind
        return self._class_kind[cls]

    def method(self, cls: ClassInfo, name: str) -> Optional[FunctionInfo]:
        for klass in [cls, *self.base_classes(cls)]:
            if name in klass.methods:
                return klass.methods[name]
        return None

    def self_attr_values(self, cls: ClassInfo, attr: str) -> List[Tuple[Optional[cst.BaseExpression], FunctionInfo]]:
        out: List[Tuple[Optional[cst.BaseExpression], FunctionInfo]] = []
        for klass in [cls, *self.base_classes(cls)]:
            out.extend(klass.self_attrs.get(attr, ()))
        return out

    def enclosing_class(self, scope: Optional[Scope]) -> Tuple[Optional[ClassInfo], Optional[FunctionInfo]]:
        """The class whose method ``scope`` is in, and that method."""
        while scope is not None:
            info = scope.info
            if isinstance(info, FunctionInfo) and info.cls is not None:
                return info.cls, info
            scope = scope.parent
        return None, None

    def receiver_class(self, name: cst.Name, scope: Scope) -> Optional[ClassInfo]:
        """The class of ``self`` when ``name`` is a method's receiver, else of a same-file instance."""
        cls, method = self.enclosing_class(scope)
        if cls is not None and method is not None and method.params and name.value == method.params[0]:
            return cls
        return self.instance_class(name, scope)

    def attribute_values(self, expr: cst.Attribute, scope: Scope) -> List[AttributeValue]:
        """Values assigned to ``self.x`` (or ``obj.x`` of a same-file instance), with their scopes."""
        if not isinstance(expr.value, cst.Name):
            return []
        owner_cls = self.receiver_class(expr.value, scope)
        if owner_cls is None:
            return []
        return [(v, m.scope) for v, m in self.self_attr_values(owner_cls, expr.attr.value) if v is not None]

    def instance_class(
        self, expr: cst.CSTNode, scope: Scope, seen: Optional[Visited[object]] = None
    ) -> Optional[ClassInfo]:
        """The same-file class an expression is an instance of, when that is certain."""
        seen = Visited() if seen is None else seen
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            if len(targets) == 1:
                return self.class_of_def(next(iter(targets)))
            return None
        if isinstance(expr, cst.Name):
            owner = scope.lookup(expr.value)
            if owner is None or not seen.first((owner, expr.value)):
                return None
            found = None
            for binding in owner.bindings[expr.value]:
                if binding.kind != "assign" or binding.value is None:
                    return None
                cls = self.instance_class(binding.value, binding.scope, seen)
                if cls is None or (found is not None and cls is not found):
                    return None
                found = cls
            return found
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            cls, method = self.enclosing_class(scope)
            if cls is not None and method is not None and method.params and expr.value.value == method.params[0]:
                if not seen.first(("self", cls, expr.attr.value)):  # `self.ds = self.ds`: already followed
                    return None
                values = self.self_attr_values(cls, expr.attr.value)
                classes = {self.instance_class(v, m.scope, seen) for v, m in values if v is not None}
                if len(classes) == 1:
                    return classes.pop()
        return None


def forwards_loader_arguments(file: "ClassFacts", cls: ClassInfo) -> bool:
    """A loader subclass whose `__init__` (its own or a same-file base's) is absent or only
    forwards what it is given: `def __init__(self, *args, **kwargs): super().__init__(*args, **kwargs)`."""
    init = file.method(cls, "__init__")
    if init is None:
        return True
    params = init.node.params
    star, kwargs = params.star_arg, params.star_kwarg
    if len(params.params) != 1 or params.kwonly_params or params.posonly_params:
        return False
    if not isinstance(star, cst.Param) or kwargs is None:
        return False
    for node in _calls_in(init.node):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
            spread = [(a.star, a.value) for a in node.args if a.star]
            plain = [a for a in node.args if not a.star]
            names = {(s, v.value) for s, v in spread if isinstance(v, cst.Name)}
            return not plain and names == {("*", star.name.value), ("**", kwargs.name.value)}
    return False


def omitted_loader_workers(file: "ClassFacts", cls: ClassInfo) -> Optional[int]:
    """The worker count a call of this loader subclass that omits `num_workers` gets from the class's own
    `__init__` (None: undecided, the omitted argument is unknown). One definition for this file's classes
    and the project index's (facts/subclass_init.py, on the stdlib ast of the class's text)."""
    if "__init__" not in cls.methods:
        return None
    node = file.class_tree(cls)
    return None if node is None else class_omitted_workers(node, {c.name for c in file.classes.values()})


def hands_on_loader_workers(file: "ClassFacts", cls: ClassInfo) -> bool:
    """The class's own `__init__` leaves an omitted `num_workers` to its one base (facts/subclass_init.py)."""
    node = file.class_tree(cls) if "__init__" in cls.methods else None
    return node is not None and class_hands_on_workers(node, {c.name for c in file.classes.values()})


def class_ast(cls: ClassInfo) -> Optional[ast.ClassDef]:
    """The class's own text, parsed by the stdlib `ast` (for the readings both the index and the facts make)."""
    try:
        tree = ast.parse(_BLANK.code_for_node(cls.node))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


_BLANK = cst.Module(body=[])  # generates a node's own text (default indentation and newlines)


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(reversed(children(current)))
