"""From the traversal's records to the facts rules read: loaders, iterations, call graph."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from . import constants as C
from .collector import Collector
from .model import (
    OMITTED,
    Argument,
    ClassInfo,
    Context,
    FunctionInfo,
    IterationSite,
    LoaderCall,
    LoaderSite,
    Unknown,
)
from .loops import drop_single_pass_loops
from .resolve import Scope, evaluate, resolve
from .signature import ALL_PARAMETERS, POSITIONAL

_CONTAINERS = (cst.List, cst.Tuple, cst.Set)
# A name re-bound more often than this is not followed to loaders (keeps generated code linear).
MAX_BINDINGS_FOLLOWED = 16


def last_name(expr: cst.CSTNode) -> Optional[str]:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


class FileFacts:
    """Everything known about one file; built once, read by every rule."""

    def __init__(self, collector: Collector, loader_names: FrozenSet[str]):
        drop_single_pass_loops(collector)
        self.collector = collector
        self.module_scope: Scope = collector.module_scope
        self.loader_names = loader_names
        self.functions = collector.functions
        self.classes = collector.classes
        self._class_kind: Dict[ClassInfo, Optional[str]] = {}
        self._ancestors: Dict[ClassInfo, List[ClassInfo]] = {}
        self._targets: Dict[ClassInfo, Set] = {}
        self.loader_calls: Dict[cst.Call, LoaderCall] = {}
        self.sites: Dict[cst.Call, LoaderSite] = {}
        self.factories: Dict[FunctionInfo, List[LoaderCall]] = {}
        self.iterations: List[IterationSite] = []
        self._iterations_by_site: Optional[Dict[LoaderSite, List[IterationSite]]] = None
        self._sites_by_call: Optional[Dict[LoaderCall, List[LoaderSite]]] = None
        self.callees: Dict[cst.Call, Tuple[FunctionInfo, int]] = {}
        self.callers: Dict[FunctionInfo, List] = defaultdict(list)  # function -> [(call record, offset)]
        self._find_loader_calls()
        self._find_factories()
        self._resolve_calls()
        self._find_iterations()

    # -- classes -------------------------------------------------------------
    def class_of_def(self, node) -> Optional[ClassInfo]:
        return self.classes.get(node) if isinstance(node, cst.ClassDef) else None

    def _parents(self, cls: ClassInfo) -> List[ClassInfo]:
        parents: List[ClassInfo] = []
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
        seen = {cls}
        queue = [cls]
        while queue:
            current = queue.pop(0)
            for parent in self._parents(current):
                if parent not in seen:
                    seen.add(parent)
                    out.append(parent)
                    queue.append(parent)
        self._ancestors[cls] = out
        return out

    def _class_targets(self, cls: ClassInfo) -> Set:
        cached = self._targets.get(cls)
        if cached is None:
            cached = set()
            for klass in [cls, *self.base_classes(cls)]:
                for base in klass.bases:
                    targets = resolve(base, klass.scope.parent)
                    cached |= targets if len(targets) <= MAX_BINDINGS_FOLLOWED else {None}
            self._targets[cls] = cached
        return cached

    def is_loader_class(self, cls: ClassInfo) -> bool:
        return any(isinstance(t, str) and t in self.loader_names for t in self._class_targets(cls))

    def dataset_kind(self, cls: ClassInfo) -> Optional[str]:
        """'iterable', 'map' or None for a same-file class."""
        if cls not in self._class_kind:
            kind = None
            for target in self._class_targets(cls):
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

    def self_attr_values(self, cls: ClassInfo, attr: str):
        out = []
        for klass in [cls, *self.base_classes(cls)]:
            out.extend(klass.self_attrs.get(attr, ()))
        return out

    def enclosing_class(self, scope: Scope) -> Tuple[Optional[ClassInfo], Optional[FunctionInfo]]:
        """The class whose method ``scope`` is in, and that method."""
        while scope is not None:
            info = scope.info
            if isinstance(info, FunctionInfo) and info.cls is not None:
                return info.cls, info
            scope = scope.parent
        return None, None

    def instance_class(self, expr: cst.CSTNode, scope: Scope, _seen=None) -> Optional[ClassInfo]:
        """The same-file class an expression is an instance of, when that is certain."""
        seen = _seen or set()
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            if len(targets) == 1:
                return self.class_of_def(next(iter(targets)))
            return None
        if isinstance(expr, cst.Name):
            owner = scope.lookup(expr.value)
            if owner is None or (owner, expr.value) in seen:
                return None
            seen.add((owner, expr.value))
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
            if cls is not None and method.params and expr.value.value == method.params[0]:
                key = ("self", cls, expr.attr.value)
                if key in seen:  # `self.ds = self.ds`: already being followed
                    return None
                seen.add(key)
                values = self.self_attr_values(cls, expr.attr.value)
                classes = {self.instance_class(v, m.scope, seen) for v, m in values if v is not None}
                if len(classes) == 1:
                    return classes.pop()
        return None

    # -- loaders -------------------------------------------------------------
    def _loader_callee(self, func: cst.BaseExpression, scope: Scope) -> Tuple[bool, Optional[ClassInfo]]:
        targets = resolve(func, scope)
        if not targets:
            return False, None
        subclass = None
        for target in targets:
            if isinstance(target, str) and target in self.loader_names:
                continue
            cls = self.class_of_def(target)
            if cls is not None and self.is_loader_class(cls):
                subclass = cls
                continue
            return False, None
        return True, subclass

    def _find_loader_calls(self) -> None:
        for record in self.collector.calls:
            is_loader, subclass = self._loader_callee(record.node.func, record.ctx.scope)
            if is_loader:
                custom_init = subclass is not None and self.method(subclass, "__init__") is not None
                call = read_arguments(record.node, record.ctx, custom_init)
                self.loader_calls[record.node] = call
                self.sites[record.node] = LoaderSite(node=record.node, ctx=record.ctx, calls=[call])

    def _returned_loaders(self, func: FunctionInfo) -> Optional[List[LoaderCall]]:
        if not func.returns or func.is_generator:
            return None
        out: List[LoaderCall] = []
        for value in func.returns:
            if value is None:
                return None
            calls = self._loader_calls_of_value(value, func.scope)
            if not calls:
                return None
            out.extend(calls)
        return out

    def _loader_calls_of_value(self, value: cst.CSTNode, scope: Scope) -> List[LoaderCall]:
        if isinstance(value, cst.Call):
            if value in self.loader_calls:
                return [self.loader_calls[value]]
            site = self.sites.get(value)
            return list(site.calls) if site is not None else []
        if isinstance(value, cst.Name):
            owner = scope.lookup(value.value)
            if owner is None or owner is not scope:
                return []
            out: List[LoaderCall] = []
            for binding in owner.bindings[value.value]:
                if binding.kind != "assign" or not isinstance(binding.value, cst.Call):
                    return []
                calls = self._loader_calls_of_value(binding.value, scope)
                if not calls:
                    return []
                out.extend(calls)
            return out
        return []

    def _find_factories(self) -> None:
        # Two rounds let a factory return another factory's result.
        for _ in range(2):
            for func in self.functions.values():
                if func in self.factories:
                    continue
                calls = self._returned_loaders(func)
                if calls:
                    self.factories[func] = calls
            for record in self.collector.calls:
                if record.node in self.sites:
                    continue
                targets = resolve(record.node.func, record.ctx.scope)
                if len(targets) == 1:
                    target = next(iter(targets))
                    func = self.functions.get(target) if isinstance(target, cst.FunctionDef) else None
                    if func is not None and func in self.factories:
                        self.sites[record.node] = LoaderSite(
                            node=record.node, ctx=record.ctx, calls=list(self.factories[func])
                        )

    # -- references ----------------------------------------------------------
    def sites_of(self, expr: cst.CSTNode, scope: Scope, _seen=None) -> Set[LoaderSite]:
        """The loader objects an expression may be (not containers of them)."""
        seen = set() if _seen is None else _seen
        if isinstance(expr, cst.Call):
            site = self.sites.get(expr)
            if site is not None:
                return {site}
            if last_name(expr.func) in C.LOADER_WRAPPER_METHODS:
                out: Set[LoaderSite] = set()
                for arg in expr.args:
                    out |= self.sites_of(arg.value, scope, seen)
                return out
            return set()
        if isinstance(expr, cst.Name):
            owner = scope.lookup(expr.value)
            if owner is None or (id(owner), expr.value) in seen:
                return set()
            seen.add((id(owner), expr.value))
            bindings = owner.bindings[expr.value]
            if len(bindings) > MAX_BINDINGS_FOLLOWED:
                return set()  # generated code: too many candidates to say which loader it is
            out = set()
            for binding in bindings:
                out |= self._binding_sites(binding, seen)
            return out
        if isinstance(expr, cst.Attribute):
            out = set()
            for value, value_scope in self._attribute_values(expr, scope):
                key = ("attribute", id(value))
                if key not in seen:
                    seen.add(key)
                    out |= self.sites_of(value, value_scope, seen) | self._argument_sites(value, value_scope, seen)
            return out
        if isinstance(expr, cst.Subscript):
            return self.contents_of(expr.value, scope, seen)
        if isinstance(expr, cst.IfExp):
            return self.sites_of(expr.body, scope, seen) | self.sites_of(expr.orelse, scope, seen)
        return set()

    def _argument_sites(self, value: cst.CSTNode, scope: Scope, seen) -> Set[LoaderSite]:
        """`self.loader = loader` in a method: the loaders callers pass for that parameter."""
        func = scope.info if isinstance(scope.info, FunctionInfo) else None
        if func is None or not isinstance(value, cst.Name) or self.param_of(value, func) is None:
            return set()
        key = ("argument", id(func), value.value)
        if key in seen:
            return set()
        seen.add(key)
        out: Set[LoaderSite] = set()
        for record, offset in self.callers.get(func, ()):
            for param, arg in self.map_arguments(record.node, func, offset):
                if param == value.value:
                    out |= self.sites_of(arg, record.ctx.scope, seen)
        return out

    def _attribute_values(self, expr: cst.Attribute, scope: Scope):
        """Values assigned to ``self.x`` (or ``obj.x`` of a same-file instance)."""
        if not isinstance(expr.value, cst.Name):
            return []
        cls, method = self.enclosing_class(scope)
        if cls is not None and method.params and expr.value.value == method.params[0]:
            owner_cls = cls
        else:
            owner_cls = self.instance_class(expr.value, scope)
        if owner_cls is None:
            return []
        return [(v, m.scope) for v, m in self.self_attr_values(owner_cls, expr.attr.value) if v is not None]

    def _binding_sites(self, binding, seen) -> Set[LoaderSite]:
        value = binding.value
        if binding.kind == "assign" and value is not None:
            out = self.sites_of(value, binding.scope, seen)
            if not out and isinstance(value, cst.Call):
                # `loader = wrap(loader)` keeps the loader it re-binds.
                for arg in value.args:
                    if isinstance(arg.value, cst.Name) and arg.value.value == binding.name:
                        out |= self.sites_of(arg.value, binding.scope, seen)
            return out
        if binding.kind == "unpack" and value is not None:
            if isinstance(value, (cst.Tuple, cst.List)) and binding.index < len(value.elements):
                return self.sites_of(value.elements[binding.index].value, binding.scope, seen)
            if isinstance(value, cst.Call) and last_name(value.func) in C.LOADER_WRAPPER_METHODS:
                positional = [a for a in value.args if a.keyword is None and not a.star]
                if binding.index < len(positional):
                    return self.sites_of(positional[binding.index].value, binding.scope, seen)
            return set()
        if binding.kind == "for":
            return self._for_target_sites(binding, seen)
        return set()

    def _for_target_sites(self, binding, seen) -> Set[LoaderSite]:
        loop = binding.value
        if not isinstance(loop, cst.For):
            return set()
        source = loop.iter
        if binding.index is None:
            func = source.func if isinstance(source, cst.Call) else None
            if isinstance(func, cst.Attribute) and func.attr.value == "values":
                return self.contents_of(source.func.value, binding.scope, seen)
            return self.contents_of(source, binding.scope, seen)
        if binding.index == 1 and isinstance(source, cst.Call):
            if isinstance(source.func, cst.Attribute) and source.func.attr.value == "items":
                return self.contents_of(source.func.value, binding.scope, seen)
            if last_name(source.func) == "enumerate" and source.args:
                return self.contents_of(source.args[0].value, binding.scope, seen)
        return set()

    def contents_of(self, expr: cst.CSTNode, scope: Scope, _seen=None) -> Set[LoaderSite]:
        """Loaders held by a container literal (list, tuple, set, dict) the expression denotes."""
        seen = set() if _seen is None else _seen
        if isinstance(expr, _CONTAINERS):
            out: Set[LoaderSite] = set()
            for element in expr.elements:
                out |= self.sites_of(element.value, scope, seen)
            return out
        if isinstance(expr, cst.Dict):
            out = set()
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    out |= self.sites_of(element.value, scope, seen)
            return out
        if isinstance(expr, cst.Call) and last_name(expr.func) == "dict":
            out = set()
            for arg in expr.args:
                if arg.keyword is not None:
                    out |= self.sites_of(arg.value, scope, seen)
            return out
        if isinstance(expr, cst.Name):
            owner = scope.lookup(expr.value)
            if owner is None or ("c", id(owner), expr.value) in seen:
                return set()
            seen.add(("c", id(owner), expr.value))
            out = set()
            for binding in owner.bindings[expr.value]:
                if binding.kind == "assign" and binding.value is not None:
                    out |= self.contents_of(binding.value, binding.scope, seen)
            return out
        if isinstance(expr, cst.Attribute):
            out = set()
            for value, value_scope in self._attribute_values(expr, scope):
                key = ("contents", id(value))
                if key not in seen:
                    seen.add(key)
                    out |= self.contents_of(value, value_scope, seen)
            return out
        return set()

    def param_of(self, expr: cst.CSTNode, func: Optional[FunctionInfo]) -> Optional[str]:
        """The parameter of ``func`` an expression reads (directly or subscripted)."""
        if func is None:
            return None
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Name) and expr.value in func.scope.params:
            if func.scope.lookup(expr.value) is func.scope:
                return expr.value
        return None

    # -- calls ---------------------------------------------------------------
    def functions_of(self, expr: Optional[cst.BaseExpression], scope: Scope) -> List[FunctionInfo]:
        """The same-file functions an expression may denote (`functools.partial(f, ...)` is f)."""
        if expr is None:
            return []
        if isinstance(expr, cst.Call) and last_name(expr.func) == "partial" and expr.args:
            expr = expr.args[0].value
        found: List[FunctionInfo] = []
        for target in resolve(expr, scope):
            func = self.functions.get(target) if isinstance(target, cst.FunctionDef) else None
            if func is not None and func not in found:
                found.append(func)
        return found

    def reached_from(self, *roots: FunctionInfo) -> List[FunctionInfo]:
        """The roots and every same-file function or method they call, transitively."""
        by_function = calls_by_function(self)
        seen: List[FunctionInfo] = []
        todo = list(roots)
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.append(current)
            for record in by_function.get(current, ()):
                found = self.callees.get(record.node)
                if found is not None and found[0] not in seen:
                    todo.append(found[0])
        return seen

    def function_called(self, call: cst.Call, scope: Scope) -> Optional[Tuple[FunctionInfo, int]]:
        """The same-file function (or method) a call runs, and how many params the receiver fills."""
        func = call.func
        if isinstance(func, cst.Name):
            targets = resolve(func, scope)
            if len(targets) != 1:
                return None
            target = next(iter(targets))
            if isinstance(target, cst.FunctionDef) and target in self.functions:
                return self.functions[target], 0
            cls = self.class_of_def(target)
            if cls is not None:
                init = self.method(cls, "__init__")
                return (init, 1) if init is not None else None
            return None
        if isinstance(func, cst.Attribute):
            receiver = func.value
            cls = None
            if isinstance(receiver, cst.Name):
                enclosing, method = self.enclosing_class(scope)
                if enclosing is not None and method.params and receiver.value == method.params[0]:
                    cls = enclosing
                else:
                    targets = resolve(receiver, scope)
                    if len(targets) == 1:
                        cls = self.class_of_def(next(iter(targets)))  # Class.method(...)
                    if cls is None:
                        cls = self.instance_class(receiver, scope)
            elif isinstance(receiver, cst.Call):
                cls = self.instance_class(receiver, scope)
            if cls is not None:
                method = self.method(cls, func.attr.value)
                if method is not None:
                    return method, 1
        return None

    def _resolve_calls(self) -> None:
        for record in self.collector.calls:
            found = self.function_called(record.node, record.ctx.scope)
            if found is not None:
                self.callees[record.node] = found
                self.callers[found[0]].append((record, found[1]))

    @staticmethod
    def map_arguments(call: cst.Call, func: FunctionInfo, offset: int) -> List[Tuple[str, cst.BaseExpression]]:
        params = func.params[offset:]
        out = []
        index = 0
        for arg in call.args:
            if arg.star:
                continue
            if arg.keyword is not None:
                if arg.keyword.value in func.scope.params:
                    out.append((arg.keyword.value, arg.value))
            elif index < len(params):
                out.append((params[index], arg.value))
                index += 1
        return out

    # -- iteration -----------------------------------------------------------
    def _unwrap_iterable(self, expr: cst.BaseExpression, consumed: Set[cst.Call]) -> List[cst.BaseExpression]:
        if isinstance(expr, cst.Call) and last_name(expr.func) in C.ITERABLE_WRAPPERS_LAST_NAME:
            consumed.add(expr)
            out = []
            for arg in expr.args:
                if arg.keyword is None and not arg.star:
                    out.extend(self._unwrap_iterable(arg.value, consumed))
            return out
        return [expr]

    def _find_iterations(self) -> None:
        consumed: Set[cst.Call] = set()
        # (expression, context, node, header loop, repeated inside)
        events: List[Tuple[cst.BaseExpression, Context, cst.CSTNode, object]] = []
        for loop, node, ctx in self.collector.for_loops:
            for expr in self._unwrap_iterable(node.iter, consumed):
                events.append((expr, ctx, node, loop))
        for expr, ctx in self.collector.comprehension_iters:
            for inner in self._unwrap_iterable(expr, consumed):
                events.append((inner, ctx, inner, None))
        for record in self.collector.calls:
            call, ctx = record.node, record.ctx
            if call in consumed or call in self.callees or call in self.sites:
                continue
            name = last_name(call.func)
            targets = resolve(call.func, ctx.scope)
            builtin_iter = any(t in C.ITERATING_BUILTINS for t in targets if isinstance(t, str))
            if builtin_iter or name in C.ITERABLE_WRAPPERS_LAST_NAME:
                for expr in self._unwrap_iterable(call, consumed):
                    events.append((expr, ctx, call, None))
            elif ctx.loops and name not in C.NON_ITERATING_CALLS and name not in C.LOADER_WRAPPER_METHODS:
                # A training step called every iteration with the loader iterates it.
                for arg in call.args:
                    events.append((arg.value, ctx, call, None))

        iter_params: Dict[FunctionInfo, Dict[str, bool]] = defaultdict(dict)

        def note_param(func, param, repeated) -> bool:
            before = iter_params[func].get(param)
            if before is None or (repeated and not before):
                iter_params[func][param] = repeated
                return True
            return False

        for expr, ctx, node, header in events:
            for site in self.sites_of(expr, ctx.scope):
                self.iterations.append(IterationSite(site, node, ctx, ctx.loops, header))
            param = self.param_of(expr, ctx.function)
            if param is not None:
                note_param(ctx.function, param, bool(ctx.loops))

        edges = []
        for record in self.collector.calls:
            found = self.callees.get(record.node)
            if found is None:
                continue
            callee, offset = found
            for param, arg in self.map_arguments(record.node, callee, offset):
                edges.append((record, callee, param, arg))
        changed = True
        while changed:
            changed = False
            for record, callee, param, arg in edges:
                if param not in iter_params.get(callee, {}):
                    continue
                caller_param = self.param_of(arg, record.ctx.function)
                if caller_param is not None:
                    repeated = iter_params[callee][param] or bool(record.ctx.loops)
                    changed |= note_param(record.ctx.function, caller_param, repeated)
        for record, callee, param, arg in edges:
            if param in iter_params.get(callee, {}):
                ctx = record.ctx
                for site in self.sites_of(arg, ctx.scope) | self.contents_of(arg, ctx.scope):
                    self.iterations.append(
                        IterationSite(site, record.node, ctx, ctx.loops, None, iter_params[callee][param])
                    )
        self._propagate_through_calls()

    def _propagate_through_calls(self) -> None:
        """A call of a function that iterates a loader it did not build iterates it at the call."""
        inside: Dict[FunctionInfo, Dict[LoaderSite, bool]] = defaultdict(dict)
        for it in self.iterations:
            if it.ctx.function is not None and it.site.ctx.function is not it.ctx.function:
                repeated = bool(it.loops) or it.repeated_inside
                inside[it.ctx.function][it.site] = inside[it.ctx.function].get(it.site, False) or repeated
        calls = [(r, self.callees[r.node][0]) for r in self.collector.calls if r.node in self.callees]
        changed = True
        while changed:
            changed = False
            for record, callee in calls:
                caller = record.ctx.function
                if caller is None:
                    continue
                for site, repeated in list(inside.get(callee, {}).items()):
                    if site.ctx.function is caller:
                        continue
                    repeated = repeated or bool(record.ctx.loops)
                    if inside[caller].get(site) is None or (repeated and not inside[caller][site]):
                        inside[caller][site] = repeated
                        changed = True
        for record, callee in calls:
            for site, repeated in inside.get(callee, {}).items():
                if site.ctx.function is not record.ctx.function:
                    self.iterations.append(
                        IterationSite(site, record.node, record.ctx, record.ctx.loops, None, repeated)
                    )

    def calls_in(self, func: Optional[FunctionInfo]):
        return calls_by_function(self).get(func, [])

    def reachable(self, cls: ClassInfo, roots: Iterable[str]) -> List[FunctionInfo]:
        return reachable_methods(self, cls, roots)

    def iterations_of(self, site: LoaderSite) -> List[IterationSite]:
        if self._iterations_by_site is None:
            index: Dict[LoaderSite, List[IterationSite]] = defaultdict(list)
            for it in self.iterations:
                index[it.site].append(it)
            self._iterations_by_site = index
        return self._iterations_by_site.get(site, [])

    def iterated_repeatedly(self, site: LoaderSite) -> bool:
        """Iterated inside a loop that did not build it (every epoch), here or in a callee."""
        for it in self.iterations_of(site):
            if it.repeated_inside or any(loop not in site.ctx.loops for loop in it.loops):
                return True
        return False

    def sites_of_call(self, call: LoaderCall) -> List[LoaderSite]:
        """The sites a loader call reaches the program through (itself, or factory calls)."""
        if self._sites_by_call is None:
            index: Dict[LoaderCall, List[LoaderSite]] = defaultdict(list)
            for site in self.sites.values():
                for each in site.calls:
                    index[each].append(site)
            self._sites_by_call = index
        return self._sites_by_call.get(call, [])

    def loader_sites_using(self, cls: ClassInfo) -> List[LoaderSite]:
        """Direct loader calls whose dataset argument is an instance of ``cls``."""
        out = []
        for call in self.loader_calls.values():
            dataset = call.args["dataset"]
            if dataset.expr is not None and self.instance_class(dataset.expr, call.ctx.scope) is cls:
                out.append(call)
        return out


def read_arguments(call: cst.Call, ctx: Context, custom_init: bool = False) -> LoaderCall:
    """Every DataLoader parameter of a call as Known / Unknown / Omitted."""
    positional: List[cst.Arg] = []
    keywords: Dict[str, cst.Arg] = {}
    star = kwsplat = False
    for arg in call.args:
        if arg.star == "*":
            star = True
        elif arg.star == "**":
            kwsplat = True  # every keyword not written may come from it
        elif arg.keyword is not None:
            keywords[arg.keyword.value] = arg
        elif not star:
            positional.append(arg)
    args: Dict[str, Argument] = {}
    for index, name in enumerate(ALL_PARAMETERS):
        node = keywords.get(name)
        if node is None and index < len(POSITIONAL) and index < len(positional):
            node = positional[index]
        if node is not None:
            args[name] = Argument(name, evaluate(node.value, ctx.scope), node.value, node)
        elif kwsplat or (star and name in POSITIONAL):
            args[name] = Argument(name, Unknown("may come from a splat"), via_splat=True)
        elif custom_init:
            args[name] = Argument(name, Unknown("set by the subclass's __init__"))
        else:
            args[name] = Argument(name, OMITTED)
    return LoaderCall(node=call, ctx=ctx, args=args)


def calls_by_function(facts: "FileFacts"):
    """Call records grouped by enclosing function (None for module level), built once."""
    cache = getattr(facts, "_calls_by_function", None)
    if cache is None:
        cache = defaultdict(list)
        for record in facts.collector.calls:
            cache[record.ctx.function].append(record)
        facts._calls_by_function = cache
    return cache


def reachable_methods(facts: "FileFacts", cls: ClassInfo, roots: Iterable[str]) -> List[FunctionInfo]:
    """Methods of ``cls`` run from ``roots``, following ``self.m()`` and same-file helpers."""
    return facts.reached_from(*[m for m in (facts.method(cls, name) for name in roots) if m is not None])
