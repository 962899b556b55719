"""Loader sites: loader calls with their arguments, and same-file factories that return them."""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from .collector import Collector
from .foreign import DatasetSummary, Imports, LoaderSummary
from .classes import ClassInfo
from .flow import ANY, OBJECT_FLOW, Key, Path, ValueFlow, constant_key
from .binding import Conditions, Signature, bind, conditions_of, signature_of, taken
from .model import OMITTED, Argument, ArgState, Context, FunctionInfo, LoaderCall, LoaderSite, Unknown
from .resolve import BindingKind, Scope, evaluate, resolve
from .signature import ALL_PARAMETERS, POSITIONAL
from .walk import UnionMemo

# A factory returning another factory's result is found in the second round.
FACTORY_ROUNDS = 2


class LoaderFacts(ValueFlow):
    def __init__(self, collector: Collector, loader_names: FrozenSet[str], imports: Optional[Imports] = None) -> None:
        super().__init__(collector, loader_names, imports)
        self._by_dataset: Optional[Dict[ClassInfo, List[LoaderCall]]] = None
        # Loaders built in other modules of the project, returned by an imported factory.
        self.foreign_calls: List[LoaderCall] = []
        # The branch conditions under which a factory builds each loader it returns (one per site).
        self.made_under: Dict[Tuple[FunctionInfo, LoaderCall], List[Conditions]] = {}
        self._find_loader_calls()
        self._find_foreign_factories()
        self._find_factories()

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
        for record in self.calls:
            is_loader, subclass = self._loader_callee(record.node.func, record.ctx.scope)
            if is_loader:
                custom_init = subclass is not None and self.method(subclass, "__init__") is not None
                call = read_arguments(record.node, record.ctx, custom_init)
                self.loader_calls[record.node] = call
                self.sites[record.node] = LoaderSite(node=record.node, ctx=record.ctx, calls=[call])

    def imported(self, func: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """The one dotted name a callee denotes when it is imported (followed across modules)."""
        if self.imports is None:
            return None
        targets = resolve(func, scope)
        target = next(iter(targets)) if len(targets) == 1 else None
        return target if isinstance(target, str) else None

    def _find_foreign_factories(self) -> None:
        for record in self.calls:
            qualname = None if record.node in self.sites else self.imported(record.node.func, record.ctx.scope)
            factory = self.imports.factory(qualname) if self.imports is not None and qualname else None
            if factory is None:
                continue
            bound: Optional[Dict[str, ArgState]] = None
            for path, loaders in factory.loaders:
                if bound is None and any(any(c) for loader in loaders for c in loader.conditions):
                    bound = bind(record.node, record.ctx.scope, factory.signature, 0)
                calls = [
                    foreign_call(record.node, record.ctx, loader)
                    for loader in loaders
                    if bound is None or not loader.conditions or any(taken(c, bound) for c in loader.conditions)
                ]
                if not calls:
                    continue
                self.foreign_calls.extend(calls)
                site = LoaderSite(node=record.node, ctx=record.ctx, calls=calls)
                if not path:
                    self.sites[record.node] = site
                elif isinstance(path[0], (int, str)):
                    self.element_sites.setdefault(record.node, {}).setdefault(path[0], site)

    def _find_factories(self) -> None:
        for _ in range(FACTORY_ROUNDS):
            self._memo = UnionMemo(self.budget)  # values depend on the sites known so far
            for func in self.functions.values():
                if func not in self.factories and not func.is_generator and func.returns:
                    made = self._made_loaders(func)
                    if made:
                        self.factories[func] = made
            for record in self.calls:
                callee = self.callees.get(record.node)
                if callee is None or callee.function not in self.factories or record.node in self.sites:
                    continue
                taken_here = self._branch_taken(record, callee.function, callee.offset)
                for path, returned in self.factories[callee.function].items():
                    calls = [call for call in returned if taken_here(call)]
                    if not calls:
                        continue
                    site = LoaderSite(node=record.node, ctx=record.ctx, calls=calls)
                    if not path:
                        self.sites[record.node] = site
                    else:
                        self.element_sites.setdefault(record.node, {}).setdefault(path[0], site)
        self._memo = UnionMemo(self.budget)

    def _branch_taken(self, record, func: FunctionInfo, offset: int) -> Callable[[LoaderCall], bool]:
        """Whether a loader ``func`` builds under `if <parameter>:` branches is built at this call of it."""
        bound: Optional[Dict[str, ArgState]] = None

        def built(call: LoaderCall) -> bool:
            nonlocal bound
            conditions = self.made_under.get((func, call))
            if not conditions or not all(conditions):
                return True  # built unconditionally somewhere in func
            if bound is None:
                bound = bind(record.node, record.ctx.scope, self.signature(func), offset)
            return any(taken(each, bound) for each in conditions)

        return built

    def signature(self, func: FunctionInfo) -> Signature:
        return signature_of(func.node, tuple(func.params), func.scope.parent or func.scope)

    def branch_conditions(self, ctx: Context) -> Conditions:
        """The parameters of the enclosing function whose truth decides whether code at ``ctx`` runs."""
        func = ctx.function
        if func is None or not ctx.branches:
            return ()

        def unbound_param(name: cst.Name) -> bool:
            bindings = func.scope.bindings.get(name.value, ())
            return all(b.kind == BindingKind.PARAM for b in bindings) and func.scope.lookup(name.value) is func.scope

        return conditions_of(ctx.branches, func.scope.params, unbound_param)

    def _made_loaders(self, func: FunctionInfo) -> Dict[Path, List[LoaderCall]]:
        """The loaders ``func`` builds and returns: alone (path ``()``) or as element ``(key,)``."""
        returned = [r for r in func.returns if r is not None]
        keys: Set[Key] = set()
        for expr in returned:
            for value in self.values(expr, func.scope):
                keys |= self._literal_keys(value.node, value.scope)
        out: Dict[Path, List[LoaderCall]] = {}
        for path in [(), *((key,) for key in keys)]:
            calls: List[LoaderCall] = []
            for expr in returned:
                for value in self.values(expr, func.scope, path):
                    site = self.site_of_value(value)
                    if site is not None and site.ctx.function is func:
                        calls.extend(c for c in site.calls if c not in calls)
                        conditions = self.branch_conditions(site.ctx)
                        for call in site.calls:
                            under = self.made_under.setdefault((func, call), [])
                            if conditions not in under:
                                under.append(conditions)
            if calls:
                out[path] = calls
        return out

    def _literal_keys(self, node: cst.CSTNode, scope: Scope) -> Set[Key]:
        if isinstance(node, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return set()
            return set(range(len(node.elements)))
        if isinstance(node, cst.Dict):
            keys = {constant_key(e.key, scope) for e in node.elements if isinstance(e, cst.DictElement)}
            return {k for k in keys if k is not ANY}
        if isinstance(node, cst.Call):
            return set(self.element_sites.get(node, {}))
        return set()

    def sites_of_call(self, call: LoaderCall) -> List[LoaderSite]:
        """The sites a loader call reaches the program through (itself, factory calls, their elements)."""
        return [site for site in self.loader_sites() if call in site.calls]

    def site_names(self, site: LoaderSite) -> Set[str]:
        """The names a site's loader is bound to where it is made (`val_loader = ...`)."""
        names: Set[str] = set()
        for key, element in self.element_sites.get(site.node, {}).items():
            if element is site:
                names |= self.names_of(site.node, key if isinstance(key, int) else None)
        if self.sites.get(site.node) is site:
            names |= self.names_of(site.node)
        return names

    def dataset_classes(self, call: LoaderCall) -> Set[ClassInfo]:
        """The same-file classes a loader's dataset may be an instance of, through the value flow
        (a factory that returns the dataset, a tuple it comes in, a parameter, an if/else)."""
        dataset = call.args["dataset"].expr
        if dataset is None:
            return set()
        out: Set[ClassInfo] = set()
        for value in self.values(dataset, call.ctx.scope, (), OBJECT_FLOW):
            if not value.path and isinstance(value.node, cst.Call):
                targets = resolve(value.node.func, value.scope)
                cls = self.class_of_def(next(iter(targets))) if len(targets) == 1 else None
                if cls is not None:
                    out.add(cls)
        return out

    def foreign_datasets(self, call: LoaderCall) -> List[DatasetSummary]:
        """The dataset classes of other project modules a loader's dataset may be an instance of."""
        dataset = call.args["dataset"].expr
        if dataset is None or self.imports is None:
            return []
        out: List[DatasetSummary] = []
        for value in self.values(dataset, call.ctx.scope, (), OBJECT_FLOW):
            if not value.path and isinstance(value.node, cst.Call):
                qualname = self.imported(value.node.func, value.scope)
                found = self.imports.dataset(qualname) if qualname else None
                if found is not None and found not in out:
                    out.append(found)
        return out

    def loaders_using(self, cls: ClassInfo) -> List[LoaderCall]:
        """Loader calls whose dataset may be an instance of ``cls``."""
        if self._by_dataset is None:
            index: Dict[ClassInfo, List[LoaderCall]] = {}
            for call in self.loader_calls.values():
                for klass in self.dataset_classes(call):
                    index.setdefault(klass, []).append(call)
            self._by_dataset = index
        return self._by_dataset.get(cls, [])


def foreign_call(node: cst.Call, ctx: Context, loader: LoaderSummary) -> LoaderCall:
    """A loader an imported factory builds, seen at the factory's call here."""
    args = {name: Argument(name, state) for name, state in loader.states}
    return LoaderCall(node=node, ctx=ctx, args=args, foreign=loader)


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
