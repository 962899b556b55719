"""Loader sites: loader calls with their arguments, and same-file factories that return them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Set, Tuple

import libcst as cst

from .foreign import DatasetSummary, LoaderSummary
from .inherited import inherited_dataset
from .classes import ClassFacts, ClassInfo, hands_on_loader_workers, omitted_loader_workers
from .calls import CallGraph
from .flow import ANY, OBJECT_FLOW, ElementKey, Key, Path, ValueFlow, constant_key
from .binding import (KWARGS, SPLAT, Bound, Conditions, Signature, bind, conditions_of, own_kwargs, reads_parameter,
                      signature_of, taken)
from .model import Argument, Context, FunctionInfo, LoaderCall, LoaderSite
from .states import OMITTED, ArgState, Known, Unknown
from .resolve import Scope, Target, resolve
from .loader_arguments import read_arguments
from .subclass_init import SubclassInit, over_base

# A factory returning another factory's result is found in the second round.
FACTORY_ROUNDS = 2


class LoaderFacts:
    """Loader calls, the factories that return them, and the loaders imported factories build."""

    def __init__(self, file: ClassFacts, graph: CallGraph, flow: ValueFlow) -> None:
        self.file = file
        self.graph = graph
        self.flow = flow
        self._by_dataset: Optional[Dict[ClassInfo, List[LoaderCall]]] = None
        self._inits: Dict[ClassInfo, SubclassInit] = {}  # read once per class, not once per call of it
        # Loader calls of a subclass that defines `__iter__` (MONAI's ThreadDataLoader iterates through a
        # thread buffer): their iteration is not DataLoader's.
        self.own_iteration: Set[cst.Call] = set()
        self._foreign_datasets: Dict[LoaderCall, List[DatasetSummary]] = {}
        # Loaders built in other modules of the project, returned by an imported factory.
        self.foreign_calls: List[LoaderCall] = []
        # The branch conditions under which a factory builds each loader it returns (one per site).
        self.made_under: Dict[Tuple[FunctionInfo, LoaderCall], List[Conditions]] = {}
        self._changed_names: Optional[Set[Tuple[Optional[Scope], str]]] = None
        self._find_loader_calls()
        self._find_foreign_factories()
        self._find_factories()

    def _loader_callee(self, func: cst.BaseExpression, scope: Scope) -> Tuple[bool, Optional[SubclassInit]]:
        """Whether the callee is a loader, and what an `__init__` that may set what a call omits leaves
        known (a same-file subclass with an `__init__`, or one of another module that does more than
        forward; None: no such `__init__`)."""
        targets = resolve(func, scope)
        if not targets:
            return False, None
        readings: List[Optional[SubclassInit]] = []
        for target in targets:
            if isinstance(target, str) and target in self.file.loader_names:
                readings.append(None)
                continue
            cls = self.file.class_of_def(target)
            if cls is not None and self.file.is_loader_class(cls):
                readings.append(self._subclass_init(cls))
                continue
            subclass, reading = self._imported_loader_class(func, scope) if cls is None else (False, None)
            if not subclass:
                return False, None
            readings.append(reading)
        inits = [reading for reading in readings if reading is not None]
        if not inits:
            return True, None
        # Several classes a name may hold: an omitted count is known only when each of them decides the same.
        if len(inits) == len(readings) and len(set(inits)) == 1:
            return True, inits[0]
        return True, inits[0]._replace(omitted_workers=None)

    def _iterates_own_way(self, func: cst.BaseExpression, scope: Scope) -> bool:
        """Some class the loader callee may be defines `__iter__`: a same-file subclass (or a same-file base of
        it), or a loader subclass of another module of the project."""
        imports = self.file.imports
        for target in resolve(func, scope):
            cls = self.file.class_of_def(target)
            if cls is not None:
                if self.file.method(cls, "__iter__") is not None:
                    return True
                qualname = self.file.project_loader_base(cls)  # the imported loader subclass it is built on
            elif isinstance(target, str) and target not in self.file.loader_names:
                qualname = self.imported(func, scope)
            else:
                continue
            if qualname and imports is not None and imports.loader_iterates(qualname):
                return True
        return False

    def _subclass_init(self, cls: ClassInfo) -> Optional[SubclassInit]:
        """What a same-file loader subclass's `__init__` (its own or a same-file base's) leaves known; over a
        loader subclass of another module, what that one's leaves known when the class adds nothing."""
        base = self.file.project_loader_base(cls)
        inherited = self._imported_init(base) if base is not None else None
        if self.file.method(cls, "__init__") is None:
            return inherited
        if cls not in self._inits:
            workers = omitted_loader_workers(self.file, cls)
            hands_on = workers is None and base is not None and hands_on_loader_workers(self.file, cls)
            self._inits[cls] = over_base(cls.name, workers, hands_on, inherited)
        return self._inits[cls]

    def _imported_init(self, qualname: str) -> Optional[SubclassInit]:
        """What an imported loader subclass's `__init__` leaves known (None: it forwards, so its calls read
        as DataLoader's)."""
        imports = self.file.imports
        if imports is None or imports.loader_class(qualname) is not False:
            return None
        return imports.loader_init(qualname) or SubclassInit(qualname.rpartition(".")[2], None)

    def _imported_loader_class(self, func: cst.BaseExpression, scope: Scope) -> Tuple[bool, Optional[SubclassInit]]:
        """Whether the callee is a loader subclass of another project module, and what its `__init__`
        leaves known (None: none that may set what a call omits; it forwards its arguments as they are)."""
        imports = self.file.imports
        qualname = self.imported(func, scope) if imports is not None else None
        forwards = imports.loader_class(qualname) if imports is not None and qualname else None
        if forwards is None:
            return False, None
        assert qualname
        return True, self._imported_init(qualname)

    def _find_loader_calls(self) -> None:
        for record in self.file.calls:
            is_loader, init = self._loader_callee(record.node.func, record.ctx.scope)
            if is_loader:
                if self._iterates_own_way(record.node.func, record.ctx.scope):
                    self.own_iteration.add(record.node)
                call = read_arguments(record.node, record.ctx, init)
                constructed: Dict[str, Argument] = {}
                splat = own_kwargs(record.node, record.ctx.function)
                for name, argument in call.args.items():
                    param = reads_parameter(argument.expr, record.ctx.function)
                    if param is not None:
                        call.reads[name] = param
                    elif splat is not None and argument.via_splat:
                        call.reads[name] = KWARGS  # read, at each call of the factory, as that call passes it
                    elif argument.unknown and not argument.via_splat:
                        state = self.constructed_state(argument.expr, record.ctx.function)
                        if state is not None:
                            constructed[name] = replace(argument, state=state)
                self.flow.loader_calls[record.node] = call
                # The call stays as written (other modules may construct the class otherwise); the site
                # this file builds reads what its constructions pass (v7), as a factory's call does.
                built = call
                if constructed:
                    built = LoaderCall(node=call.node, ctx=call.ctx, args={**call.args, **constructed},
                                       foreign=call.foreign, reads=dict(call.reads), original=call)
                self.flow.sites[record.node] = LoaderSite(node=record.node, ctx=record.ctx, calls=[built])

    def imported(self, func: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """The one dotted name a callee denotes when it is imported (followed across modules)."""
        if self.file.imports is None:
            return None
        targets = resolve(func, scope)
        if len(targets) > 1 and scope.module.star_imports and all(isinstance(t, str) for t in targets):
            # A name several star imports may bind (`from common import *`, `from torch.utils.data import
            # *`): the one project module that defines it.
            defined = [t for t in sorted(targets, key=str) if self.file.imports.defines(str(t))]
            return str(defined[0]) if len(defined) == 1 else None
        target = next(iter(targets)) if len(targets) == 1 else None
        return target if isinstance(target, str) else None

    def _find_foreign_factories(self) -> None:
        for record in self.file.calls:
            qualname = None if record.node in self.flow.sites else self.imported(record.node.func, record.ctx.scope)
            factory = self.file.imports.factory(qualname) if self.file.imports is not None and qualname else None
            if factory is None:
                continue
            bound: Optional[Dict[str, Bound]] = None
            for path, loaders in factory.loaders:
                if bound is None and any(any(c) or loader.reads for loader in loaders for c in loader.conditions):
                    bound = bind(record.node, record.ctx.scope, factory.signature, 0, self.changed_name)
                calls = [
                    foreign_call(record, loader, bound)
                    for loader in loaders
                    if bound is None or not loader.conditions or any(taken(c, bound) for c in loader.conditions)
                ]
                if not calls:
                    continue
                self.foreign_calls.extend(calls)
                site = LoaderSite(node=record.node, ctx=record.ctx, calls=calls)
                if not path:
                    self.flow.sites[record.node] = site
                elif isinstance(path[0], (int, str)):
                    self.flow.element_sites.setdefault(record.node, {}).setdefault(element_key(path), site)

    def _find_factories(self) -> None:
        for _ in range(FACTORY_ROUNDS):
            self.flow.forget_values()  # values depend on the sites known so far
            for func in self.file.functions.values():
                if func not in self.flow.factories and not func.is_generator and func.returns:
                    made = self._made_loaders(func)
                    if made:
                        self.flow.factories[func] = made
            for record in self.file.calls:
                callee = self.graph.callees.get(record.node)
                if callee is None or callee.function not in self.flow.factories or record.node in self.flow.sites:
                    continue
                binder = _Binder(self, record, callee.function, callee.offset)
                for path, returned in self.flow.factories[callee.function].items():
                    calls = [binder.version(call) for call in returned if binder.builds(call)]
                    if not calls:
                        continue
                    site = LoaderSite(node=record.node, ctx=record.ctx, calls=calls)
                    if not path:
                        self.flow.sites[record.node] = site
                    else:
                        self.flow.element_sites.setdefault(record.node, {}).setdefault(element_key(path), site)
        self.flow.forget_values()

    def constructed_state(self, expr: Optional[cst.BaseExpression], func: Optional[FunctionInfo]) -> Optional[ArgState]:
        """`self.x` in a method, stored once by `__init__` from its parameter (`self.x = x`), read as
        every construction of the class in this file passes it (v7), when they all pass one Known value
        (`DataModule(num_workers=0)`); None when a construction passes something else, or none is here."""
        if func is None or func.cls is None or not func.params or not isinstance(expr, cst.Attribute):
            return None
        if not (isinstance(expr.value, cst.Name) and expr.value.value == func.params[0]):
            return None
        stored = self.file.self_attr_values(func.cls, expr.attr.value)
        if len(stored) != 1 or stored[0][1].name != "__init__":
            return None
        init = stored[0][1]
        param = reads_parameter(stored[0][0], init)
        if param is None:
            return None
        states: List[ArgState] = []
        for caller in self.graph.callers.get(init, ()):
            record = caller.record
            if self.file.instance_class(record.node, record.ctx.scope) is None:
                return None  # `super().__init__(...)` or a call this file cannot place
            bound = bind(record.node, record.ctx.scope, self.signature(init), caller.offset, self.changed_name)
            state = bound[param].state if param in bound else None
            if not isinstance(state, Known) or (states and states[0] != state):
                return None
            states.append(state)
        return states[0] if states else None

    def changed_name(self, name: cst.Name, scope: Scope) -> bool:
        """The name's object is changed in place somewhere in the file (item or attribute assignment,
        a method call on it): a dict bound to it once may not hold only what it was built with."""
        if self._changed_names is None:
            found: Set[Tuple[Optional[Scope], str]] = set()
            for mutation in self.file.collector.mutations:
                if isinstance(mutation.base, cst.Name):
                    found.add((mutation.ctx.scope.lookup(mutation.base.value), mutation.base.value))
            for record in self.file.calls:
                func = record.node.func
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                    found.add((record.ctx.scope.lookup(func.value.value), func.value.value))
            self._changed_names = found
        return (scope.lookup(name.value), name.value) in self._changed_names

    def signature(self, func: FunctionInfo) -> Signature:
        return signature_of(func.node, tuple(func.params), func.scope.parent or func.scope)

    def branch_conditions(self, ctx: Context) -> Conditions:
        """The parameters of the enclosing function whose truth decides whether code at ``ctx`` runs."""
        func = ctx.function
        if func is None or not ctx.branches:
            return ()
        return conditions_of(ctx.branches, func.scope.params, lambda name: reads_parameter(name, func) is not None)

    def _made_loaders(self, func: FunctionInfo) -> Dict[Path, List[LoaderCall]]:
        """The loaders ``func`` builds and returns: alone (path ``()``) or as element ``(key,)``."""
        returned = [r for r in func.returns if r is not None]
        keys: Set[Key] = set()
        for expr in returned:
            for value in self.flow.values(expr, func.scope):
                keys |= self._literal_keys(value.node, value.scope)
        out: Dict[Path, List[LoaderCall]] = {}
        # A loader alone, an element, or any loader of a container element (`return train, [val]`).
        for path in [(), *((key,) for key in keys), *((key, ANY) for key in keys)]:
            calls: List[LoaderCall] = []
            for expr in returned:
                for value in self.flow.values(expr, func.scope, path):
                    site = self.flow.site_of_value(value)
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
            return {key for key in self.flow.element_sites.get(node, {}) if not isinstance(key, tuple)}
        return set()

    def site_names(self, site: LoaderSite) -> Set[str]:
        """The names a site's loader is bound to where it is made (`val_loader = ...`)."""
        names: Set[str] = set()
        for key, element in self.flow.element_sites.get(site.node, {}).items():
            if element is site:
                names |= self.flow.names_of(site.node, key if isinstance(key, int) else None)
        if self.flow.sites.get(site.node) is site:
            names |= self.flow.names_of(site.node)
        return names

    def dataset_constructors(self, call: LoaderCall) -> List[Target]:
        """What each construction a loader's dataset may be calls, when that is one thing (a class of
        this file, a dotted name), through the value flow (a factory that returns the dataset, a tuple
        it comes in, a parameter, an if/else)."""
        dataset = call.args["dataset"].expr
        out: List[Target] = []
        for value in self.flow.values(dataset, call.ctx.scope, (), OBJECT_FLOW) if dataset is not None else ():
            if not value.path and isinstance(value.node, cst.Call):
                targets = resolve(value.node.func, value.scope)
                if len(targets) == 1:
                    out.append(next(iter(targets)))
        return out

    def dataset_classes(self, call: LoaderCall) -> Set[ClassInfo]:
        """The same-file classes a loader's dataset may be an instance of."""
        classes = (self.file.class_of_def(target) for target in self.dataset_constructors(call))
        return {cls for cls in classes if cls is not None}

    def foreign_datasets(self, call: LoaderCall) -> List[DatasetSummary]:
        """The dataset classes of other project modules a loader's dataset may be an instance of
        (asked by six rules per loader call: computed once)."""
        dataset = call.args["dataset"].expr
        if dataset is None or self.file.imports is None:
            return []
        cached = self._foreign_datasets.get(call)
        if cached is None:
            cached = self._foreign_datasets[call] = self._find_foreign_datasets(call)
        return cached

    def _find_foreign_datasets(self, call: LoaderCall) -> List[DatasetSummary]:
        imports = self.file.imports
        assert imports is not None
        out: List[DatasetSummary] = []
        for target in self.dataset_constructors(call):
            cls = self.file.class_of_def(target)
            if cls is not None:  # a class of this file: what it inherits from an imported dataset class
                found = inherited_dataset(self.file, self.graph, cls)
            else:
                found = imports.dataset(target) if isinstance(target, str) else None
            if found is not None and found not in out:
                out.append(found)
        return out

    def inherited_dataset(self, cls: ClassInfo) -> Optional[DatasetSummary]:
        """What a class of this file inherits from a dataset class of another project module, if any."""
        return inherited_dataset(self.file, self.graph, cls) if self.file.imports is not None else None

    def loaders_using(self, cls: ClassInfo) -> List[LoaderCall]:
        """Loader calls whose dataset may be an instance of ``cls``."""
        if self._by_dataset is None:
            index: Dict[ClassInfo, List[LoaderCall]] = {}
            for call in self.flow.loader_calls.values():
                for klass in self.dataset_classes(call):
                    index.setdefault(klass, []).append(call)
            self._by_dataset = index
        return self._by_dataset.get(cls, [])


class _Binder:
    """One call of a same-file factory: which of the loaders it returns it builds (the `if <parameter>:`
    branches its Known arguments take), and each as built there (its parameter arguments bound)."""

    def __init__(self, facts: "LoaderFacts", record, func: FunctionInfo, offset: int) -> None:
        self.facts, self.record, self.func, self.offset = facts, record, func, offset
        self._bound: Optional[Dict[str, Bound]] = None

    @property
    def bound(self) -> Dict[str, Bound]:
        if self._bound is None:  # only for factories whose loaders depend on a parameter
            signature = self.facts.signature(self.func)
            self._bound = bind(self.record.node, self.record.ctx.scope, signature, self.offset, self.facts.changed_name)
        return self._bound

    def builds(self, call: LoaderCall) -> bool:
        conditions = self.facts.made_under.get((self.func, call))
        if not conditions or not all(conditions):
            return True  # built unconditionally somewhere in the factory
        return any(taken(each, self.bound) for each in conditions)

    def version(self, call: LoaderCall) -> LoaderCall:
        if not call.reads:
            return call
        return bound_version(call, self.bound, self.record.ctx.function)


def element_key(path: Tuple[Any, ...]) -> ElementKey:
    """The key of ``element_sites`` for a factory's element path: its key, or the pair (key, ANY)."""
    return path[0] if len(path) == 1 else (path[0], path[1])


def bound_version(call: LoaderCall, bound: Dict[str, Bound], caller: Optional[FunctionInfo],
                  with_expressions: bool = False) -> LoaderCall:
    """``call`` with the arguments that read a factory parameter taking what one call of it passes; those
    the caller passes its own parameter for read that parameter in turn (a factory calling a factory).
    It stays anchored where ``call`` is (the DataLoader call, or an imported factory's call here)."""
    args = dict(call.args)
    reads: Dict[str, str] = {}
    for name, param in call.reads.items():
        if param == KWARGS:  # the factory's own **kwargs: the keyword this call passes, else omitted
            given = bound.get(name) or (Bound(Unknown("may come from **kwargs")) if SPLAT in bound else None)
            if given is None:
                args[name] = replace(args[name], state=OMITTED, via_splat=False)
                continue
        else:
            given = bound.get(param)
        if given is None:
            continue
        args[name] = replace(args[name], state=given.state)
        if with_expressions and given.expr is not None:  # the call stands here: its expression is readable
            args[name] = replace(args[name], expr=given.expr)
        passed = reads_parameter(given.expr, caller)
        if passed is not None:
            reads[name] = passed
    return LoaderCall(node=call.node, ctx=call.ctx, args=args, foreign=call.foreign, reads=reads, original=call.source)


def foreign_call(record, loader: LoaderSummary, bound: Optional[Dict[str, Bound]]) -> LoaderCall:
    """A loader an imported factory builds, seen at the factory's call here (its parameters bound there)."""
    args = {name: Argument(name, state) for name, state in loader.states}
    call = LoaderCall(node=record.node, ctx=record.ctx, args=args, foreign=loader, reads=dict(loader.reads))
    if bound is None or not call.reads:
        return call
    return bound_version(call, bound, record.ctx.function, with_expressions=True)
