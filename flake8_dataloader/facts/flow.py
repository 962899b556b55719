"""Value flow: what an expression may hold, followed wherever the file carries it.

One query, ``values``, answers for loaders, samplers, datasets and
worker_init_fns alike: names through every binding that reaches the use,
tuple/list/dict elements and their unpacking, `self`/object attributes,
returns of same-file functions, parameters (from the file's calls), and
wrappers that hand back the same loader. Anything else is a terminal value
(a construction call, an imported name, an unknown expression): nothing is
guessed past it.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple, Union

import libcst as cst

from . import constants as C
from .calls import CallGraph
from .classes import MAX_BINDINGS_FOLLOWED, ClassFacts, last_name
from .model import FunctionInfo, LoaderCall, LoaderSite
from .states import Known
from .resolve import Binding, BindingKind, Scope, evaluate
from .walk import UnionMemo


class _Any:
    """The key of "any element" (a for target, a subscript with an unknown index)."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
Key = Union[int, str, _Any]
Path = Tuple[Key, ...]  # element keys still to apply to a value, outermost first
# Where a factory call's result holds a loader: an element, or any loader of a container element.
ElementKey = Union[Key, Tuple[Key, Key]]
MAX_PATH = 3  # `x = x[0]` would otherwise grow the path for ever
# Methods that put their argument into the container they are called on (`loaders.append(dl)`), and
# those that put the elements of their argument there (`loaders.extend([...])`).
ELEMENT_FILLS = frozenset({"append", "add"})
ELEMENTS_FILLS = frozenset({"extend", "update"})


class Value(NamedTuple):
    """A terminal value: ``node`` evaluated in ``scope``, then indexed by ``path``."""

    node: cst.CSTNode
    scope: Scope
    path: Path


class Mode(NamedTuple):
    """How far a walk follows: into returns of same-file functions, and from parameters to arguments."""

    returns: bool
    params: bool


LOADER_FLOW = Mode(returns=False, params=False)  # factories are sites of their own
OBJECT_FLOW = Mode(returns=True, params=True)  # samplers, datasets, receivers


def constant_key(expr: cst.BaseExpression, scope: Scope) -> Key:
    state = evaluate(expr, scope)
    if isinstance(state, Known) and isinstance(state.value, (int, str)) and not isinstance(state.value, bool):
        return state.value
    return ANY


def _element_taken(value: Optional[cst.CSTNode]) -> Optional[Tuple[cst.CSTNode, int]]:
    """(call, index) for `call(...)[index]` with a literal index."""
    if not isinstance(value, cst.Subscript) or not isinstance(value.value, cst.Call) or len(value.slice) != 1:
        return None
    index = value.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
        return value.value, int(index.value.value)
    return None


def _key_matches(element: cst.DictElement, key: Key, scope: Scope) -> bool:
    return key is ANY or constant_key(element.key, scope) in (key, ANY)


class Fill(NamedTuple):
    """A container filled in place: ``value`` (in ``scope``) put under ``key``, or its elements when
    ``spread`` (`extend`, `update`)."""

    key: Key
    value: cst.BaseExpression
    scope: Scope
    spread: bool


class ValueFlow:
    """What each expression may evaluate to; the loader site tables it reads are filled by LoaderFacts."""

    def __init__(self, file: ClassFacts, graph: CallGraph) -> None:
        self.file = file
        self.graph = graph
        self.loader_calls: Dict[cst.Call, LoaderCall] = {}
        # Where loaders come into being: a loader call, or a call of a same-file factory.
        self.sites: Dict[cst.Call, LoaderSite] = {}
        # A factory call's loaders returned inside a tuple/list/dict, by element key.
        self.element_sites: Dict[cst.Call, Dict[ElementKey, LoaderSite]] = {}
        self.factories: Dict[FunctionInfo, Dict[Path, List[LoaderCall]]] = {}
        self._memo: UnionMemo[Tuple[cst.CSTNode, Path, Mode], Value] = UnionMemo(file.budget)
        self._names: Optional[Dict[Tuple[cst.CSTNode, Optional[int]], Set[str]]] = None
        self._fills: Optional[Dict[Tuple[Scope, str], List[Fill]]] = None

    def forget_values(self) -> None:
        """Drop every value computed: the site tables grew (a factory was found)."""
        self._memo = UnionMemo(self.file.budget)

    # -- the query -----------------------------------------------------------
    def values(
        self, expr: cst.CSTNode, scope: Scope, path: Path = (), mode: Mode = LOADER_FLOW
    ) -> FrozenSet[Value]:
        """The terminal values ``expr`` (in ``scope``), indexed by ``path``, may evaluate to."""
        if len(path) > MAX_PATH:
            return frozenset()
        return self._memo.get((expr, path, mode), self._compute, expr, scope, path, mode)

    def _compute(self, expr: cst.CSTNode, scope: Scope, path: Path, mode: Mode) -> FrozenSet[Value]:
        return frozenset(self._terminals(expr, scope, path, mode))

    def _terminals(self, expr: cst.CSTNode, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        if isinstance(expr, cst.Name):
            return self._name_values(expr, scope, path, mode)
        if isinstance(expr, cst.Attribute):
            found = self._attribute_values(expr, scope, path, mode)
            return found if found is not None else {Value(expr, scope, path)}
        if isinstance(expr, cst.Subscript):
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                key = constant_key(expr.slice[0].slice.value, scope)
                return set(self.values(expr.value, scope, (key, *path), mode))
            return {Value(expr, scope, path)}  # a slice: not followed
        if isinstance(expr, cst.IfExp):
            return set(self.values(expr.body, scope, path, mode) | self.values(expr.orelse, scope, path, mode))
        if isinstance(expr, cst.BooleanOperation):
            return set(self.values(expr.left, scope, path, mode) | self.values(expr.right, scope, path, mode))
        if isinstance(expr, cst.NamedExpr):
            return set(self.values(expr.value, scope, path, mode))
        if path and isinstance(expr, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
            return self._element_values(expr, scope, path, mode)
        if path and isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return set(self.values(expr.elt, scope, path[1:], mode))  # every element, whatever the key
        if path and isinstance(expr, cst.DictComp):
            return set(self.values(expr.value, scope, path[1:], mode))
        if isinstance(expr, cst.Call):
            return self._call_values(expr, scope, path, mode)
        return {Value(expr, scope, path)}

    def _name_values(self, expr: cst.Name, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        owner = scope.lookup(expr.value)
        if owner is None:
            return {Value(expr, scope, path)}  # a builtin, a star import, or unbound
        bindings = owner.bindings[expr.value]
        if len(bindings) > MAX_BINDINGS_FOLLOWED:
            return set()  # generated code: too many candidates to say which value it is
        out: Set[Value] = set()
        for binding in bindings:
            out |= self._binding_values(binding, expr, scope, path, mode)
        if path:
            for fill in self._fills_of(owner, expr.value):
                if fill.spread:
                    out |= self.values(fill.value, fill.scope, (ANY, *path[1:]), mode)
                elif path[0] is ANY or fill.key in (path[0], ANY):
                    out |= self.values(fill.value, fill.scope, path[1:], mode)
        return out

    def _fills_of(self, owner: Scope, name: str) -> List[Fill]:
        """What the file puts in place into the container a name of ``owner`` holds (Flow v7):
        `name.append(x)`, `name.extend(xs)`, `name[key] = x`."""
        if self._fills is None:
            fills: Dict[Tuple[Scope, str], List[Fill]] = {}

            def add(base: cst.BaseExpression, scope: Scope, fill: Fill) -> None:
                if isinstance(base, cst.Name):
                    found = scope.lookup(base.value)
                    if found is not None:
                        fills.setdefault((found, base.value), []).append(fill)

            for mutation in self.file.collector.mutations:
                target, value = mutation.node, mutation.value
                if isinstance(target, cst.Subscript) and isinstance(value, cst.BaseExpression) and target.slice:
                    index = target.slice[0].slice if len(target.slice) == 1 else None
                    key = constant_key(index.value, mutation.ctx.scope) if isinstance(index, cst.Index) else ANY
                    add(mutation.base, mutation.ctx.scope, Fill(key, value, mutation.ctx.scope, False))
            for record in self.file.calls:
                func = record.node.func
                args = [a.value for a in record.node.args if a.keyword is None and not a.star]
                if isinstance(func, cst.Attribute) and len(args) == 1:
                    method = func.attr.value
                    if method in ELEMENT_FILLS or method in ELEMENTS_FILLS:
                        fill = Fill(ANY, args[0], record.ctx.scope, method in ELEMENTS_FILLS)
                        add(func.value, record.ctx.scope, fill)
            self._fills = fills
        return self._fills.get((owner, name), [])

    def _binding_values(self, binding: Binding, use: cst.Name, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        value = binding.value
        kind = binding.kind
        if kind == BindingKind.ASSIGN and value is not None:
            found = set(self.values(value, binding.scope, path, mode))
            if isinstance(value, cst.Call) and not any(self._value_sites(v) for v in found):
                # `loader = wrap(loader)` keeps the loader it re-binds.
                for arg in value.args:
                    if isinstance(arg.value, cst.Name) and arg.value.value == binding.name:
                        found |= self.values(arg.value, binding.scope, path, mode)
            return found
        if kind == BindingKind.UNPACK and value is not None and binding.index is not None:
            return set(self.values(value, binding.scope, (binding.index, *path), mode))
        if kind == BindingKind.FOR and isinstance(value, cst.For):
            return self._for_target_values(value, binding, path, mode)
        if kind == BindingKind.PARAM:
            func = binding.scope.info
            arguments = self.graph.arguments_for(func, binding.name) if isinstance(func, FunctionInfo) else []
            if mode.params and arguments:
                passed: Set[Value] = set()
                for argument, argument_scope in arguments:
                    passed |= self.values(argument, argument_scope, path, mode)
                return passed
        return {Value(use, scope, path)}  # an import, def, class, parameter or unknown binding

    def _for_target_values(self, loop: cst.For, binding: Binding, path: Path, mode: Mode) -> Set[Value]:
        source = loop.iter
        func = source.func if isinstance(source, cst.Call) else None
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        inner = (ANY, *path)
        if binding.index is None:
            if isinstance(func, cst.Attribute) and method == "values":
                return set(self.values(func.value, binding.scope, inner, mode))
            return set(self.values(source, binding.scope, inner, mode))
        if binding.index == 1 and isinstance(source, cst.Call):
            if isinstance(func, cst.Attribute) and method == "items":
                return set(self.values(func.value, binding.scope, inner, mode))
            if func is not None and last_name(func) == "enumerate" and source.args:
                return set(self.values(source.args[0].value, binding.scope, inner, mode))
        return set()

    def _attribute_values(self, expr: cst.Attribute, scope: Scope, path: Path, mode: Mode) -> Optional[Set[Value]]:
        assigned = self.file.attribute_values(expr, scope)
        if not assigned:
            return None
        owner = self.file.receiver_class(expr.value, scope) if isinstance(expr.value, cst.Name) else None
        out: Set[Value] = set()
        for value, value_scope in assigned:
            func = value_scope.info
            if isinstance(value, cst.Name) and isinstance(func, FunctionInfo) and self._is_param(value, func):
                # `self.loader = loader` in a method: what the file's callers pass for it,
                # when they build an object of this class (or of a subclass).
                arguments = self.graph.arguments_for(func, value.value, owner)
                for arg, arg_scope in arguments:
                    out |= self.values(arg, arg_scope, path, mode)
                if not arguments:
                    out.add(Value(value, value_scope, path))
                continue
            out |= self.values(value, value_scope, path, mode)
        return out

    def _element_values(self, expr: cst.BaseExpression, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        key, rest = path[0], path[1:]
        out: Set[Value] = set()
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.StarredDictElement):
                    out |= self.values(element.value, scope, path, mode)
                elif isinstance(element, cst.DictElement) and _key_matches(element, key, scope):
                    out |= self.values(element.value, scope, rest, mode)
            return out
        assert isinstance(expr, (cst.Tuple, cst.List, cst.Set))
        elements = list(expr.elements)
        starred = any(isinstance(e, cst.StarredElement) for e in elements)
        if isinstance(key, int) and not starred and not isinstance(expr, cst.Set):
            if -len(elements) <= key < len(elements):
                return set(self.values(elements[key].value, scope, rest, mode))
            return out
        for item in elements:
            if isinstance(item, cst.StarredElement):
                out |= self.values(item.value, scope, (ANY, *rest), mode)
            else:
                out |= self.values(item.value, scope, rest, mode)
        return out

    def _call_values(self, call: cst.Call, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        if not path and call in self.sites:
            return {Value(call, scope, path)}
        elements = self.element_sites.get(call, {})
        if path and (path[0] in elements or path[:2] in elements or (path[0] is ANY and elements)):
            return {Value(call, scope, path)}
        name = last_name(call.func)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if name in C.LOADER_WRAPPER_METHODS:
            key = path[0] if path else None
            if isinstance(key, int):
                chosen = positional[key:key + 1] if -len(positional) <= key < len(positional) else []
                return set().union(*(self.values(a, scope, path[1:], mode) for a in chosen))
            rest = path[1:] if key is ANY else path
            return set().union(*(self.values(a, scope, rest, mode) for a in positional))
        if name == "dict" and path and isinstance(call.func, cst.Name):
            key = path[0]
            return set().union(
                *(
                    self.values(a.value, scope, path[1:], mode)
                    for a in call.args
                    if a.keyword is not None and (key is ANY or a.keyword.value == key)
                )
            )
        callee = self.graph.callees.get(call)
        if callee is not None and callee.function.name != "__init__" and not callee.function.is_generator:
            return self._returned_values(call, callee.function, scope, path, mode)
        return {Value(call, scope, path)}  # a construction, or a call it cannot see into

    def _returned_values(self, call: cst.Call, func: FunctionInfo, scope: Scope, path: Path, mode: Mode) -> Set[Value]:
        out: Set[Value] = set()
        for returned in func.returns:
            if returned is None:
                continue
            for value in self.values(returned, func.scope, path, mode):
                if mode.returns or not self._made_in(value, func):
                    out.add(value)  # a loader made elsewhere and handed back (a global, `self.loader`)
        return out if out or not mode.returns else {Value(call, scope, path)}

    def _made_in(self, value: Value, func: FunctionInfo) -> bool:
        site = self.site_of_value(value)
        return site is not None and site.ctx.function is func

    def _is_param(self, name: cst.Name, func: FunctionInfo) -> bool:
        return name.value in func.scope.params and func.scope.lookup(name.value) is func.scope

    # -- loaders -------------------------------------------------------------
    def site_of_value(self, value: Value) -> Optional[LoaderSite]:
        if not isinstance(value.node, cst.Call):
            return None
        if not value.path:
            return self.sites.get(value.node)
        if len(value.path) == 1:
            return self.element_sites.get(value.node, {}).get(value.path[0])
        if len(value.path) == 2:  # a loader of a list inside the result (`return train, [val]`)
            return self.element_sites.get(value.node, {}).get((value.path[0], value.path[1]))
        return None

    def _value_sites(self, value: Value) -> List[LoaderSite]:
        """The sites a terminal value is: one, or every element of a factory call (`[ANY]`)."""
        site = self.site_of_value(value)
        if site is not None:
            return [site]
        if value.path == (ANY,) and isinstance(value.node, cst.Call):
            return [site for key, site in self.element_sites.get(value.node, {}).items() if not isinstance(key, tuple)]
        return []

    def _sites_in(self, found: FrozenSet[Value]) -> Set[LoaderSite]:
        return {site for value in found for site in self._value_sites(value)}

    def sites_of(self, expr: cst.CSTNode, scope: Scope) -> Set[LoaderSite]:
        """The loader objects an expression may be (not containers of them)."""
        return self._sites_in(self.values(expr, scope))

    def loaders_passed(self, expr: cst.CSTNode, scope: Scope) -> Set[LoaderSite]:
        """The loader objects an expression may be, parameters followed to what the file's calls pass."""
        return self._sites_in(self.values(expr, scope, (), OBJECT_FLOW))

    def may_be_loader(self, expr: cst.CSTNode, scope: Scope) -> bool:
        """The expression may hold a loader, parameters followed to what the file's calls pass."""
        return bool(self.loaders_passed(expr, scope))

    def may_hold_loaders(self, expr: cst.CSTNode, scope: Scope) -> bool:
        """A loader, or a container of loaders, parameters followed to what the file's calls pass."""
        return self.may_be_loader(expr, scope) or bool(self._sites_in(self.values(expr, scope, (ANY,), OBJECT_FLOW)))

    def contents_of(self, expr: cst.CSTNode, scope: Scope) -> Set[LoaderSite]:
        """The loaders held by the container (tuple, list, dict) an expression may be."""
        return self._sites_in(self.values(expr, scope, (ANY,)))

    def loader_sites(self) -> List[LoaderSite]:
        """Every site: loader calls, factory calls, and factory calls' tuple/dict elements."""
        return [*self.sites.values(), *(s for by_key in self.element_sites.values() for s in by_key.values())]

    def names_of(self, node: cst.CSTNode, index: Optional[int] = None) -> Set[str]:
        """Names and `self` attributes bound to ``node`` (element ``index`` of it, when unpacked)."""
        if self._names is None:
            names: Dict[Tuple[cst.CSTNode, Optional[int]], Set[str]] = {}
            scopes = [self.file.module_scope, *(f.scope for f in self.file.functions.values())]
            for scope in scopes:
                for name, bindings in scope.bindings.items():
                    for b in bindings:
                        if b.value is not None and b.kind in (BindingKind.ASSIGN, BindingKind.UNPACK):
                            names.setdefault((b.value, b.index), set()).add(name)
                        element = _element_taken(b.value) if b.kind == BindingKind.ASSIGN else None
                        if element is not None:  # `test_loader = make(...)[0]` names element 0 of the call
                            names.setdefault(element, set()).add(name)
            for cls in self.file.classes.values():
                for attr, assigned in cls.self_attrs.items():
                    for value, _ in assigned:
                        if value is not None:
                            names.setdefault((value, None), set()).add(attr)
            self._names = names
        return self._names.get((node, index), set())
