"""A module's summary: what other files' rules may ask of the names it defines at module level."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from ..facts.analysis import FileFacts
from ..facts.foreign import (
    CallableSummary,
    DatasetSummary,
    FactorySummary,
    LoaderSummary,
    ModuleSummary,
    Origin,
    SubclassLink,
)
from ..facts.iteration import Use
from ..facts.classes import forwards_loader_arguments, omitted_loader_workers
from ..facts.subclass_init import class_hands_on_workers, class_omitted_workers
from ..facts.model import ClassInfo, FunctionInfo, LoaderCall
from ..syntax.positions import node_starts
from ..facts.resolve import source_of
from ..facts.payload import held_on_self
from ..facts.class_traits import (
    containers_indexed,
    cuda_in_reads,
    reads_worker_info,
    shards_by_worker,
    single_use_loaders,
    single_use_return,
)
from ..facts.samplers import distributed_samplers, loader_samplers, set_epoch_reaches
from ..facts.dataset_rngs import DRAW_ROOTS, drawn_and_reseeded, held_rngs
from ..facts.classes import self_attribute
from ..settings import Settings
from .lines import CallLines, first_line, method_line, top_level


class _Lines:
    """Lines of the definitions a summary names: from the ast, or one code generation when it cannot tell."""

    def __init__(self, facts: FileFacts, module: cst.Module, source: str, tree: ast.AST, nodes: List[cst.CSTNode]):
        self.module, self.source, self.nodes = module, source, nodes
        self.defs = top_level(tree)
        self.calls = CallLines(facts.graph.calls_in)
        self._slow: Optional[Dict[cst.CSTNode, Tuple[int, int]]] = None

    def of(self, node: cst.CSTNode, function: Optional[FunctionInfo] = None, cls: Optional[ClassInfo] = None) -> int:
        """``node`` is a top-level def or class, a method of ``cls``, or a call inside ``function``."""
        line: Optional[int] = None
        if isinstance(node, (cst.ClassDef, cst.FunctionDef)) and cls is None:
            definition = self.defs.get(node.name.value)
            line = first_line(definition) if definition is not None else None
        elif isinstance(node, cst.FunctionDef) and cls is not None:
            line = method_line(self.defs.get(cls.name), node.name.value)
        elif isinstance(node, cst.Call) and function is not None and function.cls is None:
            definition = self.defs.get(function.name)
            line = self.calls.line(definition, function, node) if definition is not None else None
        if line is None:
            if self._slow is None:
                self._slow = node_starts(self.module, set(self.nodes), self.source)
            line = self._slow[node][0]
        return line


def summarise(
    facts: FileFacts, module: cst.Module, source: str, tree: ast.AST, shown_path: str, settings: Settings
) -> ModuleSummary:
    """The summary of one module's facts (built without following its own imports)."""
    module_scope = facts.file.module_scope
    top_classes = [k for k in facts.file.classes.values() if k.scope.parent is module_scope]
    top_functions = [f for f in facts.file.functions.values() if f.cls is None and f.scope.parent is module_scope]
    iter_methods = {k: m for k, m in ((k, facts.file.method(k, "__iter__")) for k in top_classes) if m is not None}
    factory_calls = [c for by_path in facts.flow.factories.values() for calls in by_path.values() for c in calls]
    nodes: List[cst.CSTNode] = [k.node for k in top_classes] + [f.node for f in top_functions]
    nodes += [c.node for c in factory_calls] + [m.node for m in iter_methods.values()]
    cuda = {k: found for k, found in ((k, cuda_in_reads(facts, k)) for k in top_classes) if found is not None}
    nodes += [call for _, call in cuda.values()]
    samplers = _unset_samplers(facts, factory_calls)
    nodes += list(samplers.values())
    helpers = _sampler_helpers(facts, [f for f in top_functions if f not in facts.flow.factories])
    nodes += [sampler for found in helpers.values() for _, sampler in found]
    rngs = {k: _undrawn_rngs(facts, k) for k in top_classes if facts.file.dataset_kind(k) is not None}
    nodes += [creation for found in rngs.values() for _, creation in found]
    lines = _Lines(facts, module, source, tree, nodes)

    def origin(node: cst.CSTNode, function: Optional[FunctionInfo] = None, cls: Optional[ClassInfo] = None) -> Origin:
        return Origin(shown_path, lines.of(node, function, cls))

    single_use = (facts.file.method(k, "__iter__") for k, _, _, _ in single_use_loaders(facts))
    reported = {method.node for method in single_use if method is not None}
    datasets: Dict[str, DatasetSummary] = {}
    for klass in top_classes:
        kind = facts.file.dataset_kind(klass)
        if kind is None:
            continue
        iter_method = iter_methods.get(klass)
        datasets[klass.name] = DatasetSummary(
            name=klass.name,
            origin=origin(klass.node),
            kind=kind,
            shards=shards_by_worker(facts, klass),
            single_use=single_use_return(facts, klass) if kind == "iterable" else None,
            iter_origin=origin(iter_method.node, cls=iter_method.cls) if iter_method is not None else None,
            single_use_reported=iter_method is not None and iter_method.node in reported,
            held=held_on_self(facts, klass),
            cuda=_cuda_place(cuda.get(klass), klass, origin),
            containers=_indexed_attributes(facts, klass),
            rngs=tuple((attr, str(origin(creation))) for attr, creation in rngs.get(klass, ())),
            readers=_reading_methods(facts, klass),
        )
    factories: Dict[str, FactorySummary] = {}
    module_level = set(top_functions)
    for func, made in facts.flow.factories.items():
        if func in module_level:
            # Sorted: the flow's sets have no stable order, and summaries must not depend on it.
            loaders = tuple(
                (path, tuple(sorted((_loader(facts, c, origin, func, samplers) for c in calls),
                                    key=lambda s: s.origin.line)))
                for path, calls in sorted(made.items(), key=lambda item: repr(item[0]))
            )
            factories[func.name] = FactorySummary(func.name, origin(func.node), loaders, facts.loaders.signature(func))
    callables: Dict[str, CallableSummary] = {}
    for func in top_functions:
        uses = facts.iteration.param_uses.get(func)
        if uses and func not in facts.flow.factories:
            callables[func.name] = CallableSummary(func.name, origin(func.node), tuple(func.params), 0, _levels(uses))
    for klass in top_classes:
        summary = _constructor(facts, klass, origin)
        if summary is not None:
            callables[klass.name] = summary
    lightning = frozenset(k.name for k in top_classes if facts.frameworks.lightning_class(k))
    sampler_helpers = {
        func.name: tuple((path, origin(sampler, func)) for path, sampler in found) for func, found in helpers.items()
    }
    engines = frozenset(f.name for f in top_functions if facts.frameworks.returns_engine(f))
    trainers = frozenset([*(k.name for k in top_classes if facts.frameworks.trainer_class(k)),
                          *(f.name for f in top_functions if facts.frameworks.returns_trainer(f))])
    loader_classes = {k.name: forwards_loader_arguments(facts.file, k)
                      for k in top_classes if facts.file.is_loader_class(k)}
    decided = {k.name: omitted_loader_workers(facts.file, k)
               for k in top_classes if loader_classes.get(k.name) is False}
    loader_workers = {name: workers for name, workers in decided.items() if workers is not None}
    links = _subclass_links(facts, [k for k in top_classes if k.name not in loader_classes], tree)
    iterators = frozenset(k.name for k in top_classes if k.name in loader_classes and _iterates(facts, k))
    return ModuleSummary(datasets, factories, callables, _worker_inits(facts, top_functions), lightning,
                         sampler_helpers, engines, trainers, loader_classes, loader_workers, links, iterators)


def _iterates(facts: FileFacts, klass: ClassInfo) -> bool:
    return facts.file.method(klass, "__iter__") is not None


def _subclass_links(facts: FileFacts, classes: List[ClassInfo], tree: ast.AST) -> Dict[str, SubclassLink]:
    """Classes with one base, imported: what they leave known if that base is a loader subclass elsewhere."""
    links: Dict[str, SubclassLink] = {}
    nodes = top_level(tree)
    every_class: Set[str] = set()
    for klass in classes:
        targets = facts.file.class_targets(klass) if len(klass.bases) == 1 else set()
        base = next(iter(targets)) if len(targets) == 1 else None
        if not isinstance(base, str):
            continue
        forwards = forwards_loader_arguments(facts.file, klass)
        workers, hands_on = None, False
        node = nodes.get(klass.name) or (None if forwards else facts.file.class_tree(klass))  # the ast may not have it
        if not forwards and isinstance(node, ast.ClassDef):
            every_class = every_class or {k.name for k in facts.file.classes.values()}
            workers = class_omitted_workers(node, every_class)
            hands_on = workers is None and class_hands_on_workers(node, every_class)
        links[klass.name] = SubclassLink(base, forwards, workers, hands_on, _iterates(facts, klass))
    return links


_Helpers = Dict[FunctionInfo, List[Tuple[Tuple[int, ...], cst.Call]]]


def _sampler_helpers(facts: FileFacts, functions: List[FunctionInfo]) -> _Helpers:
    """Functions returning a shuffling DistributedSampler (whole, or as an element of a returned tuple)
    whose epoch this module never sets (nor has a set_epoch it cannot follow)."""
    found: _Helpers = {}
    for func in functions:
        for returned in func.returns:
            if returned is None:
                continue
            elements: List[Tuple[Tuple[int, ...], cst.BaseExpression]] = [((), returned)]
            if isinstance(returned, cst.Tuple):
                elements += [((i,), e.value) for i, e in enumerate(returned.elements)
                             if not isinstance(e, cst.StarredElement)]
            for path, expr in elements:
                for sampler in distributed_samplers(facts, expr, func.scope):
                    if (path, sampler) not in found.get(func, []):
                        found.setdefault(func, []).append((path, sampler))
    if not found:
        return {}
    epoch_set = set_epoch_reaches(facts)
    if epoch_set is None:
        return {}
    kept = {func: [(p, s) for p, s in pairs if s not in epoch_set] for func, pairs in found.items()}
    return {func: pairs for func, pairs in kept.items() if pairs}


def _undrawn_rngs(facts: FileFacts, klass: ClassInfo) -> List[Tuple[str, cst.Call]]:
    """(attribute, creation) of the RNGs the class holds and does not itself draw from unreseeded."""
    held = held_rngs(facts, klass)
    if not held:
        return []
    drawn, reseeded = drawn_and_reseeded(facts, klass, facts.graph.reachable(klass, DRAW_ROOTS), held, {})
    return [(attr, creation) for attr, (creation, _) in sorted(held.items()) if attr not in drawn - reseeded]


def _worker_inits(facts: FileFacts, top_functions: List[FunctionInfo]) -> Dict[str, bool]:
    """Each module-level function that takes a parameter (a worker_init_fn takes the worker id): whether
    it reads get_worker_info(), itself or through the functions it calls (one reverse walk for all)."""
    reading = facts.graph.calling({f for f in facts.file.functions.values() if reads_worker_info(facts, [f])})
    return {f.name: f in reading for f in top_functions if f.params}


def _reading_methods(facts: FileFacts, klass: ClassInfo) -> Tuple[str, ...]:
    """The class's own methods that change nothing on `self` (what `ChangedParameters` reads)."""
    out = []
    for name, method in sorted(klass.methods.items()):
        if method.params and not any(param == method.params[0] for param, _ in facts.changed_parameters.of(method)):
            out.append(name)
    return tuple(out)


def _indexed_attributes(facts: FileFacts, klass: ClassInfo) -> Tuple[str, ...]:
    attributes = (self_attribute(m.node, m.ctx.function) for m in containers_indexed(facts, klass) if m.ctx.function)
    return tuple(sorted({attr for attr in attributes if attr is not None}))


def _cuda_place(found: Optional[Tuple[FunctionInfo, cst.Call]], klass: ClassInfo, origin) -> Optional[Tuple[str, str]]:
    if found is None:
        return None
    method, call = found
    return f"{klass.name}.{method.name}", str(origin(call, method))


def _levels(uses: Dict[str, Use]) -> Tuple[Tuple[str, int], ...]:
    return tuple(sorted((param, int(level)) for param, level in uses.items()))


def _loader(facts: FileFacts, call: LoaderCall, origin, factory: FunctionInfo,
            samplers: Dict[LoaderCall, cst.Call]) -> LoaderSummary:
    workers = call.num_workers.expr
    imported, own = _dataset_names(facts, call)
    return LoaderSummary(
        origin=origin(call.node, call.ctx.function),
        states=tuple((name, argument.state) for name, argument in call.args.items()),
        workers_text=source_of(workers) if workers is not None else None,
        repeated_here=any(facts.iteration.iterated_repeatedly(site) for site in facts.iteration.sites_of_call(call)),
        conditions=tuple(facts.loaders.made_under.get((factory, call), [()])),
        reads=tuple(sorted(call.reads.items())),
        sampler=origin(samplers[call], call.ctx.function) if call in samplers else None,
        datasets=imported,
        own_datasets=own,
    )


def _dataset_names(facts: FileFacts, call: LoaderCall) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The classes a loader's dataset is built from: imported (dotted names) or of this module."""
    imported: Set[str] = set()
    own: Set[str] = set()
    for target in facts.loaders.dataset_constructors(call):
        cls = facts.file.class_of_def(target)
        if cls is not None and cls.scope.parent is facts.file.module_scope:
            own.add(cls.name)
        elif isinstance(target, str):
            imported.add(target)
    return tuple(sorted(imported)), tuple(sorted(own))


def _unset_samplers(facts: FileFacts, calls: List[LoaderCall]) -> Dict[LoaderCall, cst.Call]:
    """The shuffling DistributedSampler each returned loader is built with, unless the module sets its
    epoch (or has a set_epoch it cannot follow, which may be that)."""
    with_samplers = {call: loader_samplers(facts, call) for call in calls}
    if not any(with_samplers.values()):
        return {}
    epoch_set = set_epoch_reaches(facts)
    if epoch_set is None:
        return {}
    out: Dict[LoaderCall, cst.Call] = {}
    for call, samplers in with_samplers.items():
        unset = [s for s in samplers if s not in epoch_set]
        if unset:
            out[call] = unset[0]
    return out


def _constructor(facts: FileFacts, klass: ClassInfo, origin) -> Optional[CallableSummary]:
    """A trainer-style class: which `__init__` parameters end up on `self` and are iterated by a method.

    A method that iterates `self.x` once, called from a loop of another method (`fit` calling
    `self.train_epoch()` every epoch), iterates it repeatedly.
    """
    init = facts.file.method(klass, "__init__")
    if init is None or not init.params:
        return None
    stored: Dict[str, str] = {}  # attribute -> the parameter stored in it
    for attr, values in klass.self_attrs.items():
        for value, method in values:
            if method is init and isinstance(value, cst.Name) and value.value in init.params[1:]:
                stored[attr] = value.value
    levels: Dict[str, Use] = {}
    family = [klass, *facts.file.base_classes(klass)]
    for use in facts.iteration.attribute_uses:
        param = stored.get(use.attr)
        if param is None or use.method.cls not in family:
            continue
        level = use.use
        if level == Use.PASSED_ON:
            continue  # `open(self.path)`: constructing the object iterates nothing
        if level == Use.ITERATED and _called_in_a_loop(facts, use.method):
            level = Use.REPEATED
        levels[param] = max(level, levels.get(param, Use.PASSED_ON))
    if not levels:
        return None
    return CallableSummary(klass.name, origin(klass.node), tuple(init.params), 1, _levels(levels))


def _called_in_a_loop(facts: FileFacts, method: FunctionInfo) -> bool:
    return any(caller.record.ctx.loops for caller in facts.graph.callers.get(method, ()))
