"""Where each loader is iterated, and whether repeatedly (every epoch).

Iterations are found where they are written (`for` headers, comprehensions,
`iter`/`list`/`next`, `yield from`, a call inside a loop that receives the
loader), then carried up the call graph: a parameter a function iterates is
iterated at every call that passes a loader for it, and a loader a function
reads without building it (a global, `self.loader`, a closure) is iterated
at every call of that function. A call inside a loop repeats what it reaches.
"""

from __future__ import annotations

from collections import defaultdict
from enum import IntEnum
from typing import DefaultDict, Dict, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

import libcst as cst

from . import constants as C
from .binding import reads_parameter
from .calls import CallGraph, foreign_arguments
from .classes import ClassFacts, last_name, self_attribute
from .collector import Collector
from .flow import ValueFlow
from .foreign import CallableSummary, DatasetSummary
from .framework_uses import FrameworkUses
from .loaders import LoaderFacts
from .loops import repeating_loops
from .model import CallRecord, ClassInfo, Context, FunctionInfo, IterationSite, LoaderCall, LoaderSite, LoopInfo
from .resolve import Scope, resolve


class Use(IntEnum):
    """What a function does with a loader it is given, weakest first."""

    PASSED_ON = 0  # handed to a call it cannot see into, outside its loops
    ITERATED = 1
    REPEATED = 2  # iterated inside a loop of its own (or of a callee)


class AttributeUse(NamedTuple):
    method: FunctionInfo
    attr: str
    use: Use


# What a parameter use is recorded for: a same-file function, or one of another module.
ParamOwner = Union[FunctionInfo, CallableSummary]


class _Event:
    __slots__ = ("expr", "ctx", "node", "header", "use", "repeats", "scope", "contents")

    def __init__(self, expr: cst.BaseExpression, ctx: Context, node: cst.CSTNode,
                 header: Optional[LoopInfo], use: Use, repeats: bool = False, scope: Optional[Scope] = None,
                 contents: bool = False) -> None:
        self.expr, self.ctx, self.node, self.header, self.use = expr, ctx, node, header, use
        self.repeats = repeats  # a framework iterates it every epoch
        self.contents = contents  # a framework iterates each loader of a list or dict it is handed too
        # Where ``expr`` is read: its own context's scope, except for a hook's return iterated at `fit`.
        self.scope = ctx.scope if scope is None else scope


def loop_around_both(site: LoaderSite, ctx: Context) -> bool:
    """A loop encloses both the loader's construction and the code at ``ctx``."""
    return any(loop in site.ctx.loops for loop in ctx.loops)


class IterationFacts:
    """Where each loader is iterated, and whether every epoch; what functions do with their parameters."""

    def __init__(self, file: ClassFacts, graph: CallGraph, flow: ValueFlow, loaders: LoaderFacts,
                 frameworks: FrameworkUses) -> None:
        self.file = file
        self.graph = graph
        self.flow = flow
        self.loaders = loaders
        self.frameworks = frameworks
        self._framework_epochs: Optional[Set[LoaderSite]] = None
        self.iterations: List[IterationSite] = []
        self._by_site: Optional[Dict[LoaderSite, List[IterationSite]]] = None
        self._sites_by_call: Optional[Dict[LoaderCall, List[LoaderSite]]] = None
        self._call_order: Optional[Dict[cst.CSTNode, int]] = None
        # What each same-file function does with each parameter (module summaries read it).
        self.param_uses: DefaultDict[ParamOwner, Dict[str, Use]] = defaultdict(dict)
        # Imported callables matter only for the loaders they are handed: none without a loader site.
        self._foreign_callees: Dict[cst.Call, CallableSummary] = (
            self._find_foreign_callees() if self.flow.sites or self.flow.element_sites else {}
        )
        self.attribute_uses: List[AttributeUse] = []  # `self.x` iterated or handed on in a method
        # Where the object a call of a same-file generator function returns is consumed (iterated, or
        # handed to a call): its body, and the loader it iterates, run there, not where it is made.
        self.generator_uses: DefaultDict[cst.Call, List[Context]] = defaultdict(list)
        self._generators = any(func.is_generator for func in file.functions.values())
        self._find_iterations(file.collector)
        for record in file.calls if self._generators else ():
            if last_name(record.node.func) == "next" and record.node.args:  # a generator's next() runs it
                self._note_generator_use(record.node.args[0].value, record.ctx.scope, record.ctx)

    # -- queries -------------------------------------------------------------
    def iterations_of(self, site: LoaderSite) -> List[IterationSite]:
        if self._by_site is None:
            index: DefaultDict[LoaderSite, List[IterationSite]] = defaultdict(list)
            for it in self.iterations:
                index[it.site].append(it)
            self._by_site = index
        return self._by_site.get(site, [])

    def iterated_repeatedly(self, site: LoaderSite) -> bool:
        """One construction iterated more than once (`IterationSite.repeated`), here or in a callee."""
        return any(it.repeated for it in self.iterations_of(site))

    def epoch_set_by_framework(self, call: LoaderCall) -> bool:
        """The loader is handed to a framework that calls `set_epoch` on its sampler (Lightning,
        accelerate's prepared loaders)."""
        if self._framework_epochs is None:
            self._framework_epochs = set()
            for expr, scope in self.frameworks.epoch_set:
                self._framework_epochs |= self.flow.sites_of(expr, scope) | self.flow.contents_of(expr, scope)
        return any(site in self._framework_epochs for site in self.sites_of_call(call))

    def _each_epoch(self, ctx: Context) -> bool:
        """Code at ``ctx`` runs repeatedly: in a loop, or in a function a framework runs every epoch."""
        return bool(ctx.loops) or ctx.function in self.frameworks.epoch_handlers

    def _in_handler(self, site: LoaderSite, ctx: Context) -> bool:
        """``ctx`` is in an epoch handler that did not build the loader: each epoch iterates it again."""
        return ctx.function in self.frameworks.epoch_handlers and site.ctx.function is not ctx.function

    def sites_of_call(self, call: LoaderCall) -> List[LoaderSite]:
        """The sites a DataLoader call reaches the program through (itself, factory calls, their elements)."""
        if self._sites_by_call is None:
            index: DefaultDict[LoaderCall, List[LoaderSite]] = defaultdict(list)
            for site in self.flow.loader_sites():
                for each in site.calls:
                    index[each.source].append(site)
            self._sites_by_call = index
        return self._sites_by_call.get(call.source, [])

    def versions(self, call: LoaderCall) -> List[Tuple[LoaderSite, LoaderCall]]:
        """Each site of a DataLoader call, with the call as that site builds it (a factory's call binds
        the arguments that read its parameters: `make(ds, num_workers=0)` is single-process there)."""
        return [(site, site.version_of(call)) for site in self.sites_of_call(call)]

    def runs_as(self, call: LoaderCall) -> List[LoaderCall]:
        """The call as the file runs it: as each call of the factories returning it builds it, or as
        written when no factory call of the file builds it (a module that only defines the factory)."""
        built = [version for site, version in self.versions(call) if site.node is not call.node]
        return built or [call]

    def may_use_workers(self, call: LoaderCall) -> bool:
        return any(version.worker_using() for version in self.runs_as(call))

    def imported_datasets_in_workers(self) -> Iterator[Tuple[LoaderCall, DatasetSummary]]:
        """(call, class summary) for each dataset class of another project module that a worker-using
        loader of this file is given: at a loader call, or at an imported factory's call whose dataset
        parameter is given an instance."""
        for call in [*self.flow.loader_calls.values(), *self.loaders.foreign_calls]:
            if self.may_use_workers(call):
                for dataset in self.loaders.foreign_datasets(call):
                    yield call, dataset

    def single_process_everywhere(self, call: LoaderCall) -> bool:
        return all(version.single_process() for version in self.runs_as(call))

    # -- finding them --------------------------------------------------------
    def _header_iterables(self, expr: cst.BaseExpression, consumed: Set[cst.Call]) -> List[cst.BaseExpression]:
        """What a `for` header or comprehension iterates: wrappers are seen through, and any
        call it cannot see into iterates what it receives (`metric_logger.log_every(loader, 10)`)."""
        if not isinstance(expr, cst.Call) or expr in self.flow.sites or expr in self.graph.callees:
            return [expr]
        consumed.add(expr)
        wrapper = last_name(expr.func) in C.ITERABLE_WRAPPERS_LAST_NAME
        out: List[cst.BaseExpression] = [] if wrapper else [expr]
        for arg in expr.args:
            if not arg.star and (arg.keyword is None or not wrapper):
                out.extend(self._header_iterables(arg.value, consumed))
        return out

    def _unwrap(self, expr: cst.BaseExpression, consumed: Set[cst.Call]) -> List[cst.BaseExpression]:
        if isinstance(expr, cst.Call) and last_name(expr.func) in C.ITERABLE_WRAPPERS_LAST_NAME:
            consumed.add(expr)
            out = []
            for arg in expr.args:
                if arg.keyword is None and not arg.star:
                    out.extend(self._unwrap(arg.value, consumed))
            return out
        return [expr]

    def _events(self, collector: Collector) -> List[_Event]:
        consumed: Set[cst.Call] = set()
        events: List[_Event] = []

        def use(ctx: Context) -> Use:
            return Use.REPEATED if self._each_epoch(ctx) else Use.ITERATED

        for handed in self.frameworks.handed:
            level = Use.REPEATED if handed.repeats or self._each_epoch(handed.ctx) else Use.ITERATED
            events.append(_Event(handed.expr, handed.ctx, handed.node, None, level, handed.repeats, handed.scope, True))
            if isinstance(handed.node, cst.Call):
                consumed.add(handed.node)

        for loop, node, ctx in collector.for_loops:
            for expr in self._header_iterables(node.iter, consumed):
                events.append(_Event(expr, ctx, node, loop, use(ctx)))
        for expr, ctx in collector.comprehension_iters:
            for inner in self._header_iterables(expr, consumed):
                events.append(_Event(inner, ctx, inner, None, use(ctx)))
        for expr, ctx in collector.yield_froms:
            events.append(_Event(expr, ctx, expr, None, use(ctx)))
        for record in self.file.calls:
            call, ctx = record.node, record.ctx
            handled_elsewhere = call in self.graph.callees or call in self.flow.sites or call in self._foreign_callees
            if call in consumed or handled_elsewhere:
                continue
            name = last_name(call.func)
            targets = resolve(call.func, ctx.scope)
            builtin_iter = any(t in C.ITERATING_BUILTINS for t in targets if isinstance(t, str))
            if builtin_iter or name in C.ITERABLE_WRAPPERS_LAST_NAME:
                consumed.add(call)
                # `iter(self.loader)` again once the last pass ran out: a new pass each time (a fetcher)
                restart = builtin_iter and call in collector.restarts
                for arg in call.args:
                    if arg.keyword is None and not arg.star:
                        for expr in self._unwrap(arg.value, consumed):
                            level = Use.REPEATED if restart else use(ctx)
                            events.append(_Event(expr, ctx, call, None, level, restart))
            elif name not in C.NON_ITERATING_CALLS and name not in C.LOADER_WRAPPER_METHODS:
                # A training step called every iteration with the loader iterates it; outside a
                # loop the loader is only handed on (it counts if the caller repeats the call).
                kind = Use.REPEATED if self._each_epoch(ctx) else Use.PASSED_ON
                for arg in call.args:
                    events.append(_Event(arg.value, ctx, call, None, kind))
        return events

    def _find_foreign_callees(self) -> Dict[cst.Call, CallableSummary]:
        """Calls of functions and classes of other project modules whose parameter use is known."""
        found: Dict[cst.Call, CallableSummary] = {}
        imports = self.file.imports
        if imports is None:
            return found
        for record in self.file.calls:
            if record.node in self.flow.sites or record.node in self.graph.callees:
                continue
            # Cheap questions first: only another module of the project may say what a callee does,
            # for a callee imported from it or a class of this file built by an `__init__` from it.
            qualname = self.loaders.imported(record.node.func, record.ctx.scope)
            inherits = self._inherits_init(record) if qualname is None else None
            if qualname is None and inherits is None or qualname is not None and not imports.may_define(qualname):
                continue
            # Asked only for a call handed something that may hold a loader: each answer may cost
            # a summary of the callee's module (a LibCST parse), and no other argument matters.
            if not any(self.flow.may_hold_loaders(arg.value, record.ctx.scope) for arg in record.node.args):
                continue
            summary = imports.callable(qualname) if qualname else self._inherited_init(inherits)
            if summary is not None:
                found[record.node] = summary
        return found

    def _inherits_init(self, record: CallRecord) -> Optional[ClassInfo]:
        """The class of this file the call builds, when it has no `__init__` of its own (nor in a
        same-file base): then the `__init__` of the imported class it derives from builds it, and
        that class's summary (``_inherited_init``) says what it does."""
        cls = self.file.instance_class(record.node, record.ctx.scope)
        return None if cls is None or self.file.method(cls, "__init__") is not None else cls

    def _inherited_init(self, cls: Optional[ClassInfo]) -> Optional[CallableSummary]:
        if cls is None or self.file.imports is None:
            return None
        for target in sorted(t for t in self.file.class_targets(cls) if isinstance(t, str)):
            summary = self.file.imports.callable(target)
            if summary is not None:
                return summary
        return None

    def _find_iterations(self, collector: Collector) -> None:
        uses = self.param_uses

        def note(func: FunctionInfo, param: str, level: Use) -> bool:
            before = uses[func].get(param)
            if before is None or level > before:
                uses[func][param] = level
                return True
            return False

        for event in self._events(collector):
            self._note_generator_use(event.expr, event.scope, event.ctx)
            if event.use != Use.PASSED_ON:
                loops = repeating_loops(event.expr, event.ctx)
                sites = self.flow.sites_of(event.expr, event.scope)
                if event.contents:
                    sites = sites | self.flow.contents_of(event.expr, event.scope)
                for site in sites:
                    if self._built_after_loop(site, event.ctx):
                        continue
                    repeated = event.repeats or self._in_handler(site, event.ctx)
                    self.iterations.append(IterationSite(site, event.node, event.ctx, loops, event.header, repeated))
            event_use = Use.REPEATED if self._each_epoch(event.ctx) else event.use
            param = self.param_of(event.expr, event.ctx.function)
            if param is not None and event.ctx.function is not None:
                note(event.ctx.function, param, event_use)
            elif event.ctx.function in self.frameworks.epoch_handlers:
                # A handler the framework runs every epoch, reading a parameter of the function it is
                # defined in (`def run(..., val_loader): @trainer.on(...) def validate(e): ...`).
                enclosing = self._closure_param(event.expr, event.ctx.function)
                if enclosing is not None:
                    note(enclosing[0], enclosing[1], Use.REPEATED)
            method = event.ctx.function
            if method is not None and method.cls is not None:
                attr = self_attribute(event.expr, method)
                if attr is not None:
                    self.attribute_uses.append(AttributeUse(method, attr, event_use))

        edges: List[Tuple[CallRecord, ParamOwner, str, cst.BaseExpression]] = []
        for record in self.file.calls:
            callee = self.graph.callees.get(record.node)
            if callee is not None:
                for param, arg in self.graph.map_arguments(record.node, callee.function, callee.offset):
                    edges.append((record, callee.function, param, arg))
                    self._note_generator_use(arg, record.ctx.scope, record.ctx)
            foreign = self._foreign_callees.get(record.node)
            if foreign is not None:
                uses[foreign] = {param: Use(value) for param, value in foreign.uses}
                for param, arg in foreign_arguments(record.node, foreign):
                    edges.append((record, foreign, param, arg))

        # A parameter's use carried to the callers' parameters passed for it: a worklist in which
        # each (function, parameter) rises at most len(Use) times, so each edge is read as often.
        passed_for: DefaultDict[Tuple[ParamOwner, str], List[Tuple[FunctionInfo, str, bool]]] = defaultdict(list)
        for record, callee_fn, param, arg in edges:
            caller = record.ctx.function
            caller_param = self.param_of(arg, caller)
            if caller is not None and caller_param is not None:
                passed_for[(callee_fn, param)].append((caller, caller_param, self._each_epoch(record.ctx)))
        todo = [(owner, param) for owner, params in uses.items() for param in params]
        while todo:
            owner, param = todo.pop()
            raised = uses[owner][param]
            callers = passed_for.get((owner, param), ())
            self.file.budget.spend(1 + len(callers))
            for caller, caller_param, in_loop in callers:
                if note(caller, caller_param, Use.REPEATED if in_loop else raised):
                    todo.append((caller, caller_param))
        for record, callee_fn, param, arg in edges:
            level = uses.get(callee_fn, {}).get(param)
            if level is None or (level == Use.PASSED_ON and not self._each_epoch(record.ctx)):
                continue
            ctx = record.ctx
            loops = repeating_loops(arg, ctx)
            for site in self.flow.sites_of(arg, ctx.scope) | self.flow.contents_of(arg, ctx.scope):
                if self._built_after_loop(site, ctx):
                    continue
                repeated = level == Use.REPEATED or self._in_handler(site, ctx)
                self.iterations.append(IterationSite(site, record.node, ctx, loops, None, repeated))
        self._carry_through_calls()

    def _note_generator_use(self, expr: cst.BaseExpression, scope: Scope, ctx: Context) -> None:
        if self._generators:
            for value in self.flow.values(expr, scope):
                callee = self.graph.callees.get(value.node) if isinstance(value.node, cst.Call) else None
                if callee is not None and callee.function.is_generator and not value.path:
                    self.generator_uses[value.node].append(ctx)  # type: ignore[index]

    def _carry_through_calls(self) -> None:
        """A call of a function that iterates a loader it did not build iterates it at the call.

        Carried up to (and including) calls made in the function that builds the loader,
        not past it: its callers get a new loader at every call.
        """
        inside: DefaultDict[FunctionInfo, Dict[LoaderSite, bool]] = defaultdict(dict)
        for it in self.iterations:
            if it.ctx.function is not None and it.site.ctx.function is not it.ctx.function:
                repeated = it.repeated  # its loops are the callee's: none built the loader
                inside[it.ctx.function][it.site] = inside[it.ctx.function].get(it.site, False) or repeated
        calls = [(r, self.graph.callees[r.node].function) for r in self.file.calls if r.node in self.graph.callees]
        calls_of: DefaultDict[FunctionInfo, List[CallRecord]] = defaultdict(list)
        for record, callee in calls:
            if record.ctx.function is not None:
                calls_of[callee].append(record)
        # A worklist: each (function, site) is set at most twice (iterated, then repeatedly).
        todo = [(func, site) for func, sites in inside.items() for site in sites]
        while todo:
            callee, site = todo.pop()
            records = calls_of.get(callee, ())
            self.file.budget.spend(1 + len(records))
            for record in records:
                caller = record.ctx.function
                assert caller is not None
                if site.ctx.function is caller:
                    continue
                repeated = inside[callee][site] or self._each_epoch(record.ctx)
                before = inside[caller].get(site)
                if before is None or (repeated and not before):
                    inside[caller][site] = repeated
                    todo.append((caller, site))
        for record, callee in calls:
            for site, repeated in inside.get(callee, {}).items():
                if self._built_after_loop(site, record.ctx):
                    continue
                repeated = repeated or self._in_handler(site, record.ctx)
                self.iterations.append(IterationSite(site, record.node, record.ctx, record.ctx.loops, None, repeated))

    def _built_after_loop(self, site: LoaderSite, ctx: Context) -> bool:
        """The site is built, in the function of ``ctx``, after a loop around ``ctx`` and in no loop
        around both (v7): a name bound again after its loop is a new value, and that loop's passes
        ran before it existed."""
        if site.ctx.function is not ctx.function or not ctx.loops:
            return False
        if self._call_order is None:
            self._call_order = {record.node: index for index, record in enumerate(self.file.calls)}
        order = self._call_order.get(site.node)
        if order is None:
            return False
        if loop_around_both(site, ctx):
            return False  # its next pass iterates the new value
        before = self.file.collector.calls_before
        return any(order >= before.get(loop.node, order + 1) for loop in ctx.loops)

    def _closure_param(self, expr: cst.CSTNode, func: FunctionInfo) -> Optional[Tuple[FunctionInfo, str]]:
        """The enclosing function and parameter a nested function's free name reads."""
        if not isinstance(expr, cst.Name):
            return None
        owner = func.scope.lookup(expr.value)
        info = owner.info if owner is not None and owner is not func.scope else None
        if isinstance(info, FunctionInfo) and self.param_of(expr, info) is not None:
            return info, expr.value
        return None

    def param_of(self, expr: cst.CSTNode, func: Optional[FunctionInfo]) -> Optional[str]:
        """The parameter of ``func`` an expression reads: directly, subscripted, or through a name the
        function binds only by unpacking or subscripting it (`train_loader, val_loader = loaders`)."""
        if func is None:
            return None
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        if not isinstance(expr, cst.Name) or func.scope.lookup(expr.value) is not func.scope:
            return None
        if expr.value in func.scope.params:
            return expr.value
        bindings = func.scope.bindings.get(expr.value, ())
        sources = {self._unpacked_param(b, func) for b in bindings}
        return sources.pop() if len(sources) == 1 and None not in sources else None

    @staticmethod
    def _unpacked_param(binding, func: FunctionInfo) -> Optional[str]:
        value = binding.value
        if binding.kind == "unpack" or (binding.kind == "assign" and isinstance(value, cst.Subscript)):
            return reads_parameter(value.value if isinstance(value, cst.Subscript) else value, func)
        return None
