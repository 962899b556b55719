"""What a worker is handed that cannot be pickled, or unpickled (DL302, and module summaries).

Under spawn and forkserver every worker receives the dataset, collate_fn and
worker_init_fn by pickling; a lambda, a generator object, a nested function or
a function-local class among them fails at the first `iter()`. A function or
class pickles by reference to its module: one defined in a notebook (the
kernel's `__main__` has no file) or under the script's `if __name__ ==
"__main__":` (workers import the script as `__mp_main__`, where that block
does not run) cannot be found again in the worker.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import libcst as cst

from .nodes import children
from .resolve import resolve
from .walk import Visited

NOTEBOOK, GUARDED = "notebook", "guarded"


class Payload(NamedTuple):
    node: cst.CSTNode
    what: str
    fix: str
    inside: bool  # False once a name was followed out of the call
    name: str = ""  # the function or class workers cannot import (with `where`)
    where: str = ""  # NOTEBOOK or GUARDED: defined where spawn/forkserver workers cannot import it


def _unimportable(info, notebook: bool) -> str:
    """Where a module-level (not nested, not function-local) def or class is out of the workers' reach."""
    return NOTEBOOK if notebook else GUARDED if info.guarded else ""


def unpicklable(facts, expr, scope, seen, inside=True, notebook=False):
    """Payloads under ``expr``; with ``notebook``, every function and class of the file is unimportable."""
    if isinstance(expr, cst.Lambda):
        yield Payload(expr, "a lambda", "use a module-level def", inside)
        return
    if isinstance(expr, cst.GeneratorExp):
        yield Payload(expr, "a generator object", "pass a Dataset (or a list) instead", inside)
        return
    if isinstance(expr, cst.Name):
        for payload in _follow_name(facts, expr, scope, seen, notebook):
            yield payload._replace(inside=inside and payload.node is expr)
        return
    if isinstance(expr, cst.Call):
        targets = resolve(expr.func, scope)
        if len(targets) == 1:
            target = next(iter(targets))
            func = facts.file.functions.get(target) if isinstance(target, cst.FunctionDef) else None
            if func is not None and func.is_generator:
                what = f"a generator object from {func.name}()"
                yield Payload(expr, what, "pass a Dataset (or a list) instead", inside)
                return
            klass = facts.file.class_of_def(target)
            if klass is not None and klass.local:
                yield Payload(expr.func, f"an instance of function-local class {klass.name}", (
                    "define the class at module level"
                ), inside)
                return
            where = _unimportable(klass, notebook) if klass is not None else ""
            if where:
                yield Payload(expr.func, f"class {klass.name}", "", inside, klass.name, where)
                return
            held = _held_on_self(facts, klass, seen, notebook) if klass is not None else None
            if held is not None:
                attr, payload = held
                what = (f"{payload.what} (held on self.{attr} by {klass.name})" if payload.where
                        else f"an instance of {klass.name} holding {payload.what} on self.{attr}")
                fix = payload.fix or "store a module-level function (or the data itself) instead"
                yield payload._replace(node=expr, what=what, fix=fix, inside=inside)
        consumes = _consumes_iterables(expr, scope)
        for arg in expr.args:
            if consumes and isinstance(arg.value, cst.GeneratorExp):
                continue  # consumed by the call: its result is what is kept
            yield from unpicklable(facts, arg.value, scope, seen, inside, notebook)
        return
    if isinstance(expr, (cst.ListComp, cst.SetComp)):
        # The iterables are consumed where the comprehension runs: only the elements are kept.
        yield from unpicklable(facts, expr.elt, scope, seen, inside, notebook)
        return
    if isinstance(expr, cst.DictComp):
        yield from unpicklable(facts, expr.key, scope, seen, inside, notebook)
        yield from unpicklable(facts, expr.value, scope, seen, inside, notebook)
        return
    for child in children(expr):
        yield from unpicklable(facts, child, scope, seen, inside, notebook)


def _follow_name(facts, name: cst.Name, scope, seen, notebook):
    owner = scope.lookup(name.value)
    if owner is None or not seen.first((id(owner), name.value)):
        return
    bindings = owner.bindings[name.value]
    if len(bindings) != 1:
        return
    binding = bindings[0]
    if binding.kind == "def":
        function = facts.file.functions[binding.value]
        if function.nested:
            yield Payload(name, f"nested function {name.value}", "define it at module level", True)
        elif _unimportable(function, notebook):
            yield Payload(name, f"function {name.value}", "", True, name.value, _unimportable(function, notebook))
    elif binding.kind == "class":
        klass = facts.file.classes[binding.value]
        if klass.local:
            yield Payload(name, f"function-local class {name.value}", "define it at module level", True)
        elif _unimportable(klass, notebook):
            yield Payload(name, f"class {name.value}", "", True, name.value, _unimportable(klass, notebook))
    elif binding.kind == "assign" and binding.value is not None:
        yield from unpicklable(facts, binding.value, binding.scope, seen, False, notebook)
    elif binding.kind == "param" and _plain_function(facts, binding.node):
        # `def train(dataset): DataLoader(dataset, ...)` then `train(Shapes())`: what the file's calls pass.
        # Only what workers cannot import is followed here (the rest stays one scope deep); not a method's
        # parameter, whose calls are every construction of the class, not the one given to the loader.
        yield from facts.passed_payloads.of(facts.file.functions[binding.node], name.value, notebook)


class PassedPayloads:
    """What the file's calls pass to a plain function's parameter that workers cannot import, found once
    per parameter: every loader reading the parameter asks the same (n loaders of a function the file
    calls n times followed n calls each)."""

    def __init__(self, facts) -> None:
        self._facts = facts
        self._found: Dict[Tuple[object, str, bool], Tuple[Payload, ...]] = {}

    def of(self, function, param: str, notebook: bool) -> Tuple[Payload, ...]:
        key = (function, param, notebook)
        found = self._found.get(key)
        if found is None:
            self._found[key] = ()  # a chain of calls that passes it back here adds nothing new
            facts = self._facts
            seen: Visited[object] = Visited()
            found = self._found[key] = tuple(
                payload
                for value, scope in facts.graph.arguments_for(function, param)
                for payload in unpicklable(facts, value, scope, seen, False, notebook)
                if payload.where
            )
        return found


def _plain_function(facts, node) -> bool:
    function = facts.file.functions.get(node)
    return function is not None and function.cls is None


def held_on_self(facts, klass) -> Optional[Tuple[str, str]]:
    """(attribute, what) when the class (or a base of this file) holds something unpicklable on self."""
    held = _held_on_self(facts, klass, Visited(), False)
    return None if held is None or held[1].where else (held[0], held[1].what)


def _held_on_self(facts, klass, seen, notebook) -> Optional[Tuple[str, Payload]]:
    """(attribute, payload) for the first self attribute of the class whose value holds something unpicklable.

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
                for payload in unpicklable(facts, value, method.scope, seen, True, notebook):
                    return attr, payload
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
