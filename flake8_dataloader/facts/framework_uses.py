"""Where this file hands loaders to a training framework, read through the tables of frameworks.py.

Found here, used by the iteration layer and a few rules:
- loaders a framework iterates (a Lightning hook's return, `trainer.fit(model, loader)`,
  `engine.run(loader, max_epochs=3)`), every epoch or once;
- functions a framework runs every epoch (Ignite handlers of an epoch event);
- loaders whose sampler's epoch the framework sets (Lightning, accelerate's prepared loaders) and
  samplers Ignite's `setup_common_training_handlers(train_sampler=...)` sets;
- `accelerator.prepare(loader)` written inside a loop that does not build the loader;
- `TrainingArguments(...)` calls, read as the DataLoader settings of the loaders the Trainer builds.
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from . import frameworks as F
from .binding import NO_DEFAULT, Signature, bind
from .calls import CallGraph
from .classes import ClassFacts, last_name
from .flow import OBJECT_FLOW, ValueFlow
from .loaders import LoaderFacts
from .loops import repeating_loops
from .model import Argument, CallRecord, ClassInfo, Context, FunctionInfo, LoaderCall
from .states import OMITTED, Known
from .resolve import Scope, Target, evaluate, qualname_in, resolve
from .signature import ALL_PARAMETERS


class HandedLoader(NamedTuple):
    """An expression (read in ``scope``) whose loaders a framework iterates at ``node`` (in ``ctx``):
    every epoch (``repeats``) or once. A hook's return iterated by `fit` is read in the hook."""

    expr: cst.BaseExpression
    scope: Scope
    ctx: Context
    node: cst.CSTNode
    repeats: bool


class ConfigCall(NamedTuple):
    """A `TrainingArguments(...)` call as the DataLoader settings it gives, and whether the Trainer
    iterates its train loader more than once (or builds eval loaders again)."""

    call: LoaderCall
    repeats: bool


def _argument(call: cst.Call, where: F.LoaderArgument) -> Optional[cst.BaseExpression]:
    """The argument a call passes by that keyword, or at that position (after a `*args`: not known)."""
    positional: List[cst.BaseExpression] = []
    starred = False
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == where.keyword:
            return arg.value
        starred = starred or bool(arg.star)
        if arg.keyword is None and not starred:
            positional.append(arg.value)
    return positional[where.position] if where.position < len(positional) else None


def _known_int(state: object) -> Optional[int]:
    """The value of a Known int (a bool is not a count)."""
    if isinstance(state, Known) and isinstance(state.value, int) and not isinstance(state.value, bool):
        return state.value
    return None


def _fires_every_pass(expr: cst.BaseExpression, scope: Scope) -> bool:
    """An event fired in every pass: `Events.EPOCH_COMPLETED`, `Events.ITERATION_COMPLETED(every=100)`,
    `Events.EPOCH_COMPLETED | Events.COMPLETED`; not one filtered to fire once (`once=5`)."""
    if isinstance(expr, cst.Call):
        once = any(arg.keyword is not None and arg.keyword.value == "once" for arg in expr.args)
        return not once and _fires_every_pass(expr.func, scope)
    if isinstance(expr, cst.BinaryOperation):
        return _fires_every_pass(expr.left, scope) or _fires_every_pass(expr.right, scope)
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value in F.IGNITE_PASS_EVENTS
        and qualname_in(expr.value, scope, F.IGNITE_EVENTS)
    )


class FrameworkUses:
    """What this file hands to Lightning, transformers, accelerate and Ignite."""

    def __init__(self, file: ClassFacts, graph: CallGraph, flow: ValueFlow, loaders: LoaderFacts) -> None:
        self.file = file
        self.graph = graph
        self.flow = flow
        self.loaders = loaders
        self.handed: List[HandedLoader] = []
        self.epoch_handlers: Set[FunctionInfo] = set()  # run by a framework every epoch
        self.epoch_set: List[Tuple[cst.BaseExpression, Scope]] = []  # loaders whose sampler epoch is set
        self.sampler_epoch: List[Tuple[cst.BaseExpression, Scope]] = []  # samplers whose epoch is set
        self.prepared_in_loops: List[CallRecord] = []
        self.config_calls: List[ConfigCall] = []
        self._repeating_engines: Set[cst.Call] = set()  # Ignite engines whose run makes several passes
        self._handlers: List[Tuple[cst.BaseExpression, Scope, FunctionInfo]] = []  # (engine, scope, handler)
        self._lightning_single_epoch: Optional[bool] = None  # every Trainer of the file is a short run
        self._trainers: List[Tuple[cst.Call, Scope]] = []  # the file's Trainer constructions
        # Calls of imported callees that are Trainers when a project helper returns one (asked lazily).
        self._maybe_trainers: List[Tuple[cst.Call, Scope, FrozenSet[Target]]] = []
        self._fitted: Dict[ClassInfo, bool] = {}  # a Lightning class a `fit` here runs -> several epochs
        self.hook_returns: Set[cst.CSTNode] = set()  # hook returns handed to Lightning: not the hook's iteration
        self._find_calls()
        self._find_hooks()
        for engine, scope, handler in self._handlers:
            if self._repeating_engines.intersection(self._instance_of(engine, scope, F.IGNITE_ENGINES)):
                self.epoch_handlers.add(handler)

    # -- Lightning -------------------------------------------------------------
    def _builds(self, targets: FrozenSet[Target], names: FrozenSet[str]) -> bool:
        """A callee (its resolved targets) is one of ``names``, or a same-file subclass of one."""
        if not targets:
            return False
        if all(isinstance(t, str) and t in names for t in targets):
            return True
        cls = self.file.class_of_def(next(iter(targets))) if len(targets) == 1 else None
        return cls is not None and self.file.subclasses_any(cls, names)

    def _instance_of(self, expr: cst.BaseExpression, scope: Scope, names: FrozenSet[str]) -> List[cst.Call]:
        """The constructions of ``names`` (or of same-file subclasses) an expression may hold."""
        return [call for call, _ in self._constructions(expr, scope, names)]

    def _constructions(self, expr: cst.BaseExpression, scope: Scope,
                       names: FrozenSet[str]) -> List[Tuple[cst.Call, Scope]]:
        """Each construction of ``names`` an expression may hold, with the scope it is written in; for
        Ignite's engines, also a call of a function of another project module that returns one."""
        found = []
        for value in self.flow.values(expr, scope, (), OBJECT_FLOW):
            if value.path or not isinstance(value.node, cst.Call):
                continue
            targets = resolve(value.node.func, value.scope)
            if self._builds(targets, names) or self._helper_builds(targets, names):
                found.append((value.node, value.scope))
        return found

    def _helper_builds(self, targets: FrozenSet[Target], names: FrozenSet[str]) -> bool:
        """The callee is a function of another project module returning an Ignite engine, or (for
        Lightning's Trainer) one returning a Trainer, or a Trainer subclass there."""
        imports = self.file.imports
        target = next(iter(targets)) if len(targets) == 1 else None
        if imports is None or not isinstance(target, str):
            return False
        if names == F.IGNITE_ENGINES:
            return imports.engine_helper(target)
        return F.LIGHTNING_TRAINERS <= names and imports.trainer_helper(target)

    def trainer_class(self, cls: ClassInfo) -> bool:
        """A class of this file subclassing Lightning's Trainer (directly or through a same-file base)."""
        return bool(self.file.collector.imported_packages & F.FRAMEWORK_PACKAGES) and self.file.subclasses_any(
            cls, F.LIGHTNING_TRAINERS
        )

    def returns_trainer(self, func: FunctionInfo) -> bool:
        """A function of this file that returns a Lightning Trainer (in some branch)."""
        trainers = F.LIGHTNING_TRAINERS | F.LIGHTNING_TRAINER_FACTORIES
        return bool(self.file.collector.imported_packages & F.FRAMEWORK_PACKAGES) and any(
            returned is not None and self._instance_of(returned, func.scope, trainers) for returned in func.returns
        )

    def returns_engine(self, func: FunctionInfo) -> bool:
        """A function of this file that returns an Ignite engine (in some branch)."""
        return bool(self.file.collector.imported_packages & F.FRAMEWORK_PACKAGES) and any(
            returned is not None and self._instance_of(returned, func.scope, F.IGNITE_ENGINES)
            for returned in func.returns
        )

    def _short_run(self, call: cst.Call, scope: Scope) -> bool:
        """A Trainer construction that runs no second epoch (frameworks.py: max_epochs, fast_dev_run,
        a smoke run's max_steps); a class-method constructor shows no run length."""
        if self._builds(resolve(call.func, scope), F.LIGHTNING_TRAINER_FACTORIES):
            return False
        epochs_key, steps_key = F.LIGHTNING_EPOCHS_KEYWORD, F.LIGHTNING_STEPS_KEYWORD
        fast_key = F.LIGHTNING_FAST_DEV_RUN
        bound = bind(call, scope, Signature((), (epochs_key, steps_key, fast_key), ()), 0)
        epochs, steps, fast = bound[epochs_key].state, bound[steps_key].state, bound[fast_key].state
        if isinstance(fast, Known) and fast.value:
            return True  # overrides max_epochs and max_steps
        epoch_count, step_count = _known_int(epochs), _known_int(steps)
        if epoch_count is not None:
            return 0 <= epoch_count <= 1  # -1: no limit
        return epochs == NO_DEFAULT and step_count is not None and 0 <= step_count <= F.SMOKE_MAX_STEPS

    def _short_runs(self, constructions: List[Tuple[cst.Call, Scope]]) -> bool:
        """Every Trainer among ``constructions`` is a short run (and there is one)."""
        return bool(constructions) and all(self._short_run(call, scope) for call, scope in constructions)

    def lightning_class(self, cls: ClassInfo) -> bool:
        """Subclasses a Lightning module or datamodule: directly, through a same-file base, or through a
        class of another project module that does."""
        if self.file.subclasses_any(cls, F.LIGHTNING_BASES):
            return True
        imports = self.file.imports
        return imports is not None and any(
            isinstance(target, str) and imports.lightning_class(target) for target in self.file.class_targets(cls)
        )

    def _hook_returns(self, cls: ClassInfo) -> Iterator[Tuple[FunctionInfo, cst.BaseExpression, bool]]:
        for hook, repeats in F.LIGHTNING_HOOKS.items():
            method = self.file.method(cls, hook)
            if method is not None:
                for returned in method.returns:
                    if returned is not None:
                        yield method, returned, repeats

    def _find_hooks(self) -> None:
        """The hooks of the file's Lightning classes, inherited ones (a mixin's) included, each once:
        repeated when a `fit` of this file that runs the class runs several epochs, or, for a class no
        `fit` here runs, unless every Trainer of the file is a short run."""
        repeats_of: Dict[Tuple[FunctionInfo, cst.BaseExpression], bool] = {}
        for cls in self.file.classes.values():
            if not self.lightning_class(cls):
                continue
            fitted = self._fitted.get(cls)
            runs_again = not self._single_epoch() if fitted is None else fitted
            for method, returned, repeats in self._hook_returns(cls):
                repeats_of[(method, returned)] = repeats_of.get((method, returned), False) or (repeats and runs_again)
        for (method, returned), repeats in repeats_of.items():
            self.hook_returns.add(returned)
            ctx = Context(scope=method.scope, function=method, loops=(), guarded=True, top_statement=None)
            self._hand(returned, method.scope, ctx, returned, repeats, F.SETS_EPOCH.lightning)

    def _hand(self, expr: cst.BaseExpression, scope: Scope, ctx: Context, node: cst.CSTNode, repeats: bool,
              sets_epoch: bool) -> None:
        self.handed.append(HandedLoader(expr, scope, ctx, node, repeats))
        if sets_epoch:
            self.epoch_set.append((expr, scope))

    def _lightning_call(self, record: CallRecord, method: F.FrameworkMethod, short_run: bool) -> None:
        """A Trainer's `fit` (or validate/test/predict) call; ``short_run``: its Trainer runs no second epoch."""
        call, ctx = record.node, record.ctx
        repeats = method.repeats and not short_run
        for where in method.loaders:
            expr = _argument(call, where)
            if expr is not None:
                self._hand(expr, ctx.scope, ctx, call, repeats, F.SETS_EPOCH.lightning)
        # The model and datamodule handed over: their hooks' loaders are iterated by this call.
        for arg in call.args:
            if arg.star:
                continue
            for value in self.flow.values(arg.value, ctx.scope, (), OBJECT_FLOW):
                cls = self.file.instance_class(value.node, value.scope) if isinstance(value.node, cst.Call) else None
                if cls is not None and self.lightning_class(cls):
                    if method.repeats:
                        self._fitted[cls] = self._fitted.get(cls, False) or repeats
                    for hook, returned, hook_repeats in self._hook_returns(cls):
                        repeated = hook_repeats and repeats
                        self._hand(returned, hook.scope, ctx, call, repeated, F.SETS_EPOCH.lightning)

    def _single_epoch(self) -> bool:
        """Every Trainer of the file is a short run (and there is one). The helper question goes only to
        calls that can decide: none once a Trainer built here runs several epochs."""
        if self._lightning_single_epoch is None:
            trainers = self._trainers
            if all(self._short_run(call, scope) for call, scope in trainers):
                trainers = trainers + [
                    (call, scope) for call, scope, targets in self._maybe_trainers
                    if self._helper_builds(targets, F.LIGHTNING_TRAINERS | F.LIGHTNING_TRAINER_FACTORIES)
                ]
            self._lightning_single_epoch = self._short_runs(trainers)
        return self._lightning_single_epoch

    def _framework_call(
        self, record: CallRecord, targets: FrozenSet[Target], lightning_methods: Dict[str, F.FrameworkMethod],
        trainer_constructors: FrozenSet[str], lightning_calls: List[Tuple[CallRecord, F.FrameworkMethod, bool]],
    ) -> Optional[Callable[[], None]]:
        """What the call hands to a framework, to do unless its callee turns out to build a Trainer (None:
        nothing)."""
        call, scope = record.node, record.ctx.scope
        func = call.func
        if self._builds(targets, F.IGNITE_SAMPLER_EPOCH):
            return lambda: self.sampler_epoch.extend(
                (arg.value, scope) for arg in call.args
                if arg.keyword is not None and arg.keyword.value == F.IGNITE_SAMPLER_KEYWORD
            )
        if self._builds(targets, F.TRAINING_ARGUMENTS.names):
            return lambda: self.config_calls.append(self._config_call(record))
        if not isinstance(func, cst.Attribute):
            return None
        name = func.attr.value
        if name in lightning_methods and (runs := self._constructions(func.value, scope, trainer_constructors)):
            return lambda: lightning_calls.append((record, lightning_methods[name], self._short_runs(runs)))
        if name in F.ACCELERATE_PREPARE and self._accelerator(func.value, scope):
            return lambda: self._prepare(record)
        if name == F.IGNITE_RUN.name and (engines := self._instance_of(func.value, scope, F.IGNITE_ENGINES)):
            return lambda: self._ignite_run(record, engines)
        if name == F.IGNITE_REGISTER_CALL and call.args and _fires_every_pass(call.args[0].value, scope):
            return lambda: self._epoch_handler(func.value, call.args[1].value, scope) if len(call.args) > 1 else None
        return None

    # -- every framework's calls -----------------------------------------------
    def _find_calls(self) -> None:
        """One pass over the file's calls (each callee resolved once). The Trainer a Lightning call is
        made on decides its run length; the file's Trainers together decide for hooks no `fit` here runs."""
        lightning_methods = {m.name: m for m in F.LIGHTNING_METHODS}
        trainer_constructors = F.LIGHTNING_TRAINERS | F.LIGHTNING_TRAINER_FACTORIES
        lightning_calls: List[Tuple[CallRecord, F.FrameworkMethod, bool]] = []
        if not self.file.collector.imported_packages & F.FRAMEWORK_PACKAGES:
            for record in self.file.calls:  # no framework imported: an accelerator handed in, at most
                func = record.node.func
                if isinstance(func, cst.Attribute) and func.attr.value in F.ACCELERATE_PREPARE:
                    if self._accelerator(func.value, record.ctx.scope):
                        self._prepare(record)
            return
        for record in self.file.calls:
            call, scope = record.node, record.ctx.scope
            targets = resolve(call.func, scope)
            if self._builds(targets, trainer_constructors):
                self._trainers.append((call, scope))
                continue
            action = self._framework_call(record, targets, lightning_methods, trainer_constructors, lightning_calls)
            if action is None:  # a Trainer only if a project helper returns one: asked when the run length decides
                self._maybe_trainers.append((call, scope, targets))
            elif self._helper_builds(targets, trainer_constructors):
                self._trainers.append((call, scope))
            else:
                action()
        for record, method, short_run in lightning_calls:
            self._lightning_call(record, method, short_run)
        for info in self.file.functions.values():
            for decorator in info.node.decorators:
                expr = decorator.decorator
                if (
                    isinstance(expr, cst.Call)
                    and last_name(expr.func) == F.IGNITE_REGISTER_DECORATOR
                    and isinstance(expr.func, cst.Attribute)
                    and expr.args
                    and _fires_every_pass(expr.args[0].value, info.scope.parent or info.scope)
                ):
                    self._epoch_handler_function(expr.func.value, info, info.scope.parent or info.scope)

    # -- accelerate --------------------------------------------------------------
    def _accelerator(self, receiver: cst.BaseExpression, scope: Scope) -> bool:
        if self._instance_of(receiver, scope, F.ACCELERATORS):
            return True
        name = last_name(receiver)
        return name is not None and F.ACCELERATOR_HINT in name.lower()

    def _prepare(self, record: CallRecord) -> None:
        if F.SETS_EPOCH.accelerate:
            self.epoch_set.extend((arg.value, record.ctx.scope) for arg in record.node.args
                                  if arg.keyword is None and not arg.star)
        # In a loop that repeats the loader (not one over a list of loaders) and did not build it.
        if any(
            loop not in site.ctx.loops
            for arg in record.node.args
            for site in self.flow.sites_of(arg.value, record.ctx.scope)
            for loop in repeating_loops(arg.value, record.ctx)
        ):
            self.prepared_in_loops.append(record)

    # -- Ignite ------------------------------------------------------------------
    def _ignite_run(self, record: CallRecord, engines: List[cst.Call]) -> None:
        """`engine.run(data, max_epochs)`: several passes unless max_epochs is omitted or Known 1."""
        call, ctx = record.node, record.ctx
        data = _argument(call, F.IGNITE_RUN.loaders[0])
        if data is None:
            return
        epochs = _argument(call, F.IGNITE_EPOCHS)
        state = evaluate(epochs, ctx.scope) if epochs is not None else Known(1)
        repeats = not (isinstance(state, Known) and state.value == 1)
        self._hand(data, ctx.scope, ctx, call, repeats, F.SETS_EPOCH.ignite)
        if repeats:
            self._repeating_engines.update(engines)

    def _epoch_handler(self, engine: cst.BaseExpression, handler: cst.BaseExpression, scope: Scope) -> None:
        for function in self.graph.functions_of(handler, scope):
            self._epoch_handler_function(engine, function, scope)

    def _epoch_handler_function(self, engine: cst.BaseExpression, function: FunctionInfo, scope: Scope) -> None:
        self._handlers.append((engine, scope, function))  # kept if that engine's run repeats

    # -- transformers -------------------------------------------------------------
    def _config_call(self, record: CallRecord) -> ConfigCall:
        """The call's `dataloader_*` keywords as DataLoader arguments (written, from a dict splatted in
        place or bound once, Unknown through any other splat, Omitted when absent)."""
        spec = F.TRAINING_ARGUMENTS
        defaults = ((spec.epochs, Known(spec.default_epochs)),
                    *((key, Known(spec.no_evaluation)) for key in spec.evaluation))
        signature = Signature((), (*spec.keywords.values(), *(name for name, _ in defaults)), defaults)
        bound = bind(record.node, record.ctx.scope, signature, 0, self.loaders.changed_name)
        anchors = {arg.keyword.value: arg for arg in record.node.args if arg.keyword is not None}
        args: Dict[str, Argument] = {}
        for name in ALL_PARAMETERS:
            keyword = spec.keywords.get(name)
            given = bound[keyword] if keyword is not None else None
            if keyword is None or given is None or (given.expr is None and given.state == NO_DEFAULT):
                args[name] = Argument(name, OMITTED)  # not a setting of the loaders, or not given
            else:
                args[name] = Argument(name, given.state, given.expr, anchors.get(keyword), given.expr is None)
        epochs = bound[spec.epochs].state
        one_pass = isinstance(epochs, Known) and isinstance(epochs.value, (int, float)) and epochs.value <= 1
        no_evaluation = all(bound[k].state == Known(spec.no_evaluation) for k in spec.evaluation)
        return ConfigCall(LoaderCall(record.node, record.ctx, args, keywords=spec), not (one_pass and no_evaluation))
