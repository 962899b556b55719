"""DL3xx: safety under the spawn and forkserver start methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..facts import constants as C
from ..facts.model import CallRecord, FunctionInfo, Known, LoaderCall, LoaderSite
from ..facts.nodes import children
from ..facts.walk import Visited
from ..facts.resolve import evaluate, follow_single_binding, resolve
from .base import FACTORY_SITES, INHERITS, NEEDS_LOADER, PER_FILE, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings

SET_START_METHOD = frozenset(f"{m}.set_start_method" for m in C.MULTIPROCESSING_MODULES)
GET_CONTEXT = frozenset(f"{m}.get_context" for m in C.MULTIPROCESSING_MODULES)


def _first_arg(call: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or (arg.keyword is not None and arg.keyword.value == keyword):
            return arg.value
    return None


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _calls_of(facts, names) -> List:
    return [
        r for r in facts.file.calls
        if any(t in names for t in resolve(r.node.func, r.ctx.scope) if isinstance(t, str))
    ]


def _is_fork(expr, scope) -> bool:
    value = evaluate(expr, scope)
    return isinstance(value, Known) and value.value == "fork"


def file_forces_fork(facts, settings) -> bool:
    """`--dataloader-start-method=fork`, or a module-level set_start_method("fork")."""
    if settings.start_method == "fork":
        return True
    for record in _calls_of(facts, SET_START_METHOD):
        method = _first_arg(record.node, "method")
        if record.ctx.function is None and method is not None and _is_fork(method, record.ctx.scope):
            return True
    return False


def uses_fork_context(call: LoaderCall) -> bool:
    """multiprocessing_context="fork" or get_context("fork"), directly or through a name bound once."""
    arg = call.args["multiprocessing_context"]
    if arg.known:
        return arg.value == "fork"
    if arg.expr is None:
        return False
    expr, scope = follow_single_binding(arg.expr, call.ctx.scope)
    if isinstance(expr, cst.Call) and all(t in GET_CONTEXT for t in resolve(expr.func, scope)):
        method = _first_arg(expr, "method")
        return method is not None and _is_fork(method, scope)
    return False


def spawn_exposed(site: LoaderSite) -> bool:
    """A worker-using loader that does not pin the fork start method."""
    return site.worker_using() and not all(uses_fork_context(c) for c in site.calls)


def generator_run_at(facts, record: CallRecord) -> Tuple[Optional[cst.CSTNode], Optional[cst.CSTNode]]:
    """(anchor, statement) where the object a module-level call of a generator function returns is
    first consumed unguarded at module level: the call itself when consumed in place (`for b in
    cycle(loader)`), the consuming statement, or a module-level call of a function that consumes it.
    (None, None) when nothing unguarded runs it: making a generator runs none of its body."""
    functions: Set[FunctionInfo] = set()
    for ctx in facts.iteration.generator_uses.get(record.node, ()):
        if ctx.function is not None:
            functions.add(ctx.function)
        elif not ctx.guarded:
            if ctx.top_statement is record.ctx.top_statement:
                return record.node, ctx.top_statement
            return ctx.top_statement, ctx.top_statement
    consumers = facts.graph.calling(functions)
    for call in facts.graph.calls_in(None):
        found = facts.graph.callees.get(call.node)
        if found is not None and found.function in consumers and not call.ctx.guarded:
            return call.node, call.ctx.top_statement
    return None, None


class UnguardedEntryPoint(Rule):
    """
    ## What it does
    Flags module-level code outside `if __name__ == "__main__":` that iterates
    a loader with workers, or calls a function of this file that (directly or
    through other calls) iterates one.
    A framework call that iterates loaders counts the same: a Lightning
    `trainer.fit(...)` (or `validate`/`test`/`predict`) with the loaders
    passed to it and those the hooks of the model or datamodule passed to it
    return, and an Ignite engine's `run(loader, ...)`.

    ## Why is this bad?
    Under spawn (Windows, macOS) and forkserver (Linux from Python 3.14) each
    worker imports the main module again. Unguarded, that import tries to
    start workers of its own: each worker dies with `RuntimeError: An attempt
    has been made to start a new process before the current process has
    finished its bootstrapping phase`, and the main process raises
    `RuntimeError: DataLoader worker (pid(s) ...) exited unexpectedly` at the
    first batch.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            pass


    main()
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            pass


    if __name__ == "__main__":
        main()
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(list(range(8)), num_workers=2)  # built at module level: allowed


    def main():
        for batch in loader:
            pass


    if __name__ == "__main__":
        main()
    ```

    ## Options
    `--dataloader-start-method=fork` turns the rule off (Linux up to Python
    3.13 only); so does a module-level `set_start_method("fork")` or
    `multiprocessing_context="fork"` on the loader.

    ## Known limits
    Calls are followed within the file only (functions, methods through
    `self` and module-level instances of classes of the file). A generator
    over a loader runs where it is consumed: one made at module level is
    reported at the module-level statement that iterates it or calls
    `next()` on it, at a module-level call handed it, or at a module-level
    call of a function that consumes it; one made and never consumed
    unguarded is not reported. Calling a Lightning hook directly
    (`first = dm.train_dataloader()`) builds the loader and iterates
    nothing: reported only where its result is iterated. Anchor: the
    module-level statement, or the call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [Multi-process data loading: platform-specific behaviors](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors).
    """

    CODE = "DL301"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the module-level statement")
    NAME = "unguarded-entry-point"
    MESSAGE = (
        "{what} at module level without an `if __name__ == \"__main__\":` guard: under spawn/forkserver "
        "every worker re-imports this module and dies; move it under the guard"
    )
    CONDITION = (("workers", "module_code"), ("imported_builder", "module_code"))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        if file_forces_fork(facts, settings):
            return
        iterating = cls._functions_iterating(facts)
        reported: Set[cst.CSTNode] = set()
        iterating_calls: Set[cst.CSTNode] = set()  # module-level calls that iterate the loader they pass
        for it in facts.iteration.iterations:
            if it.node in facts.graph.callees:
                if spawn_exposed(it.site):
                    iterating_calls.add(it.node)
                continue  # a call of a same-file function: reported below, naming the function
            if it.ctx.function is None and not it.ctx.guarded and spawn_exposed(it.site):
                statement = it.ctx.top_statement
                if statement is not None and statement not in reported:
                    reported.add(statement)
                    yield cls.finding(statement, what="a loader with workers is iterated")
        for record in facts.graph.calls_in(None):
            found = facts.graph.callees.get(record.node)
            if record.ctx.guarded or found is None:
                continue
            if found.function not in iterating and record.node not in iterating_calls:
                continue
            anchor: Optional[cst.CSTNode] = record.node
            statement = record.ctx.top_statement
            if found.function.is_generator:
                anchor, statement = generator_run_at(facts, record)
            if anchor is not None and statement is not None and statement not in reported:
                reported.add(statement)
                yield cls.finding(anchor, what=f"{found.function.name}() iterates a loader with workers and runs")

    @staticmethod
    def _functions_iterating(facts) -> Set[FunctionInfo]:
        # A Lightning hook's return is iterated by the Trainer, not by the hook: calling the hook
        # directly (`first = dm.train_dataloader()`) only builds the loader.
        hook_returns = facts.frameworks.hook_returns
        return facts.graph.calling(
            it.ctx.function for it in facts.iteration.iterations
            if it.ctx.function is not None and spawn_exposed(it.site) and it.node not in hook_returns
        )


PICKLED_PARAMETERS = ("dataset", "collate_fn", "worker_init_fn")


class UnpicklableWorkerPayload(Rule):
    """
    ## What it does
    Flags a lambda, a nested function, a class defined inside a function or
    a generator object passed as `dataset`, `collate_fn` or `worker_init_fn`
    of a loader with workers, or nested inside such an argument (a
    `transforms.Lambda(lambda x: ...)` in the dataset's transform), following
    names bound once; and an instance of a class of this file (a dataset, a
    transform) whose `self` holds one, when a loader with workers gets it.

    ## Why is this bad?
    Under spawn and forkserver these three arguments are pickled for every
    worker. `iter(loader)` fails in the main process: `AttributeError: Can't
    pickle local object '...<locals>...'` (Python 3.10–3.12), `Can't get local
    object` (3.13), `PicklingError` (3.14); a module-level lambda fails too,
    a generator with `TypeError: cannot pickle 'generator' object`. Samplers
    stay in the main process and are never pickled: not reported.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, num_workers=2, collate_fn=lambda batch: batch)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def keep_as_list(batch):
        return batch


    def main():
        loader = DataLoader(dataset, num_workers=2, collate_fn=keep_as_list)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def collate(batch):
        return batch


    def make(dataset):
        in_process = DataLoader(dataset, collate_fn=lambda batch: batch)  # no workers: nothing is pickled
        module_level = DataLoader(dataset, num_workers=2, collate_fn=collate)
        return in_process, module_level
    ```

    ## Options
    Off under `--dataloader-start-method=fork`, a module-level
    `set_start_method("fork")`, or `multiprocessing_context="fork"`.

    ## Known limits
    "Held on `self`" means the value assigned to a `self` attribute holds
    it: directly, in a container, or through an object of a same-file class
    that itself stores one on `self`. Not held: a lambda only passed to a
    call whose result is not kept (`pool.imap(lambda i: ..., idx)` iterated
    in `__init__`), what a loop over a value yields (`for i, x in
    results: self.ims[i] = x`), and a generator expression consumed by the
    call it is passed to (`sorted(...)`, `list(...)`, `"".join(...)`,
    `np.array(...)`) or the iterable of a list/set/dict comprehension.
    Values built by calling functions (`build_transform()`) are not
    followed. Anchor: the lambda, def or class reference inside the call,
    else the call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [Multi-process data loading: platform-specific behaviors](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors).
    """

    CODE = "DL302"
    ACROSS_FILES = (
        "A dataset class imported from the project that holds a lambda, a nested function or a generator on "
        "`self` is followed: the loader call of this file is reported (or the call of an imported factory "
        "whose dataset parameter it is given), naming the class's file and line."
    ) + INHERITS
    NAME = "unpicklable-worker-payload"
    MESSAGE = "{what} passed as {param} cannot be pickled for spawn/forkserver workers; {fix}"
    CONDITION = (("workers",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        if file_forces_fork(facts, settings):
            return
        for call in facts.flow.loader_calls.values():
            if not facts.iteration.may_use_workers(call) or uses_fork_context(call):
                continue
            seen_anchors: Set[cst.CSTNode] = set()
            for param in PICKLED_PARAMETERS:
                arg = call.args[param]
                if arg.expr is None:
                    continue
                for node, what, fix, inside in cls._unpicklable(facts, arg.expr, call.ctx.scope, Visited()):
                    anchor = node if inside else call.node
                    if anchor not in seen_anchors:
                        seen_anchors.add(anchor)
                        yield cls.finding(anchor, what=what, param=param, fix=fix)
        # Dataset classes of other project modules that hold one on self (at a loader call here, or at
        # the call of an imported factory whose dataset parameter is given an instance of one).
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            if dataset.held is not None and not uses_fork_context(call):
                attr, what = dataset.held
                yield cls.finding(
                    call.node, what=f"an instance of {dataset.name} ({dataset.origin}) holding {what} on self.{attr}",
                    param="dataset", fix="store a module-level function (or the data itself) instead",
                )

    @classmethod
    def _unpicklable(cls, facts, expr, scope, seen, inside=True):
        """(node, what, fix, inside): ``inside`` is False once a name was followed out of the call."""
        if isinstance(expr, cst.Lambda):
            yield expr, "a lambda", "use a module-level def", inside
            return
        if isinstance(expr, cst.GeneratorExp):
            yield expr, "a generator object", "pass a Dataset (or a list) instead", inside
            return
        if isinstance(expr, cst.Name):
            for node, what, fix, _ in cls._follow_name(facts, expr, scope, seen):
                yield node, what, fix, inside and node is expr
            return
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            if len(targets) == 1:
                target = next(iter(targets))
                func = facts.file.functions.get(target) if isinstance(target, cst.FunctionDef) else None
                if func is not None and func.is_generator:
                    yield expr, f"a generator object from {func.name}()", "pass a Dataset (or a list) instead", inside
                    return
                klass = facts.file.class_of_def(target)
                if klass is not None and klass.local:
                    yield expr.func, f"an instance of function-local class {klass.name}", (
                        "define the class at module level"
                    ), inside
                    return
                held = cls._held_on_self(facts, klass, seen) if klass is not None else None
                if held is not None:
                    attr, what = held
                    yield expr, f"an instance of {klass.name} holding {what} on self.{attr}", (
                        "store a module-level function (or the data itself) instead"
                    ), inside
            consumes = _consumes_iterables(expr, scope)
            for arg in expr.args:
                if consumes and isinstance(arg.value, cst.GeneratorExp):
                    continue  # consumed by the call: its result is what is kept
                yield from cls._unpicklable(facts, arg.value, scope, seen, inside)
            return
        if isinstance(expr, (cst.ListComp, cst.SetComp)):
            # The iterables are consumed where the comprehension runs: only the elements are kept.
            yield from cls._unpicklable(facts, expr.elt, scope, seen, inside)
            return
        if isinstance(expr, cst.DictComp):
            yield from cls._unpicklable(facts, expr.key, scope, seen, inside)
            yield from cls._unpicklable(facts, expr.value, scope, seen, inside)
            return
        for child in children(expr):
            yield from cls._unpicklable(facts, child, scope, seen, inside)

    @classmethod
    def _follow_name(cls, facts, name: cst.Name, scope, seen):
        owner = scope.lookup(name.value)
        if owner is None or not seen.first((id(owner), name.value)):
            return
        bindings = owner.bindings[name.value]
        if len(bindings) != 1:
            return
        binding = bindings[0]
        if binding.kind == "def" and facts.file.functions[binding.value].nested:
            yield name, f"nested function {name.value}", "define it at module level", True
        elif binding.kind == "class" and facts.file.classes[binding.value].local:
            yield name, f"function-local class {name.value}", "define it at module level", True
        elif binding.kind == "assign" and binding.value is not None:
            yield from cls._unpicklable(facts, binding.value, binding.scope, seen, False)

    @classmethod
    def held_on_self(cls, facts, klass) -> Optional[Tuple[str, str]]:
        """(attribute, what) when the class (or a base of this file) holds something unpicklable on self."""
        return cls._held_on_self(facts, klass, Visited())

    @classmethod
    def _held_on_self(cls, facts, klass, seen) -> Optional[Tuple[str, str]]:
        """(attribute, what) for the first self attribute of the class whose value holds something unpicklable.

        Only values assigned to `self.<attr>` count: a lambda passed to a call whose result
        is not kept, or what a loop over a value yields, is not held.
        """
        if not seen.first(("held", klass)):
            return None
        for owner in [klass, *facts.file.base_classes(klass)]:
            for attr, values in owner.self_attrs.items():
                for value, method in values:
                    if value is None:
                        continue
                    for _, what, _, _ in cls._unpicklable(facts, value, method.scope, seen):
                        return attr, what
        return None


# Callables that consume an iterable argument at once and keep only what they build from it.
_CONSUMING_CALLS = frozenset(
    f"builtins.{name}"
    for name in ("list", "tuple", "set", "frozenset", "sorted", "sum", "min", "max", "any", "all", "dict", "len")
) | {"numpy.array", "numpy.asarray", "numpy.fromiter", "torch.tensor", "torch.stack", "torch.cat"}


def _consumes_iterables(call: cst.Call, scope) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "join":
        return True  # "".join(...), os.sep.join(...)
    targets = resolve(call.func, scope)
    return bool(targets) and targets <= _CONSUMING_CALLS


class UnguardedStartMethod(Rule):
    """
    ## What it does
    Flags `multiprocessing.set_start_method(...)` or
    `torch.multiprocessing.set_start_method(...)` at module level, outside the
    `__main__` guard, without `force=True`.

    ## Why is this bad?
    Under spawn/forkserver every worker re-imports the main module and runs
    the call again; the start method is already set in the worker, so each
    one dies with `RuntimeError: context has already been set`, even when the
    loop itself is guarded.

    ## Example
    ```python
    import torch.multiprocessing as mp

    mp.set_start_method("spawn")
    ```

    ## Use instead
    ```python
    import torch.multiprocessing as mp

    if __name__ == "__main__":
        mp.set_start_method("spawn")
    ```

    ## Not reported
    ```python
    import multiprocessing


    def main():
        pass


    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn")
        main()
    ```

    ## Options
    None.

    ## Known limits
    `set_start_method("fork")` is not reported: forked workers do not
    re-import the module. Anchor: the call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [`multiprocessing.set_start_method`](https://docs.python.org/3/library/multiprocessing.html#multiprocessing.set_start_method): raises `RuntimeError` when the context is already set, unless `force=True`.
    """

    CODE = "DL303"
    ACROSS_FILES = PER_FILE
    NAME = "unguarded-start-method"
    MESSAGE = (
        "set_start_method() at module level runs again in every spawned worker and raises "
        "'context has already been set'; call it under the `__main__` guard"
    )
    CONDITION = (("start_method",),)
    TRIGGERS = ("set_start_method",)

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for record in _calls_of(facts, SET_START_METHOD):
            if record.ctx.function is not None or record.ctx.guarded:
                continue
            if record.ctx.scope.kind != "module":
                continue
            force = _keyword(record.node, "force")
            if force is not None and not (isinstance(evaluate(force, record.ctx.scope), Known)
                                          and not evaluate(force, record.ctx.scope).value):
                continue
            method = _first_arg(record.node, "method")
            if method is not None and _is_fork(method, record.ctx.scope):
                continue
            yield cls.finding(record.node)
