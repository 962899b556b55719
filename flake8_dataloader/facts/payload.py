"""What a worker is handed that cannot be pickled (DL302, and module summaries).

Under spawn and forkserver every worker receives the dataset, collate_fn and
worker_init_fn by pickling; a lambda, a generator object, a nested function or
a function-local class among them fails at the first `iter()`.
"""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .nodes import children
from .resolve import resolve
from .walk import Visited


def unpicklable(facts, expr, scope, seen, inside=True):
    """(node, what, fix, inside): ``inside`` is False once a name was followed out of the call."""
    if isinstance(expr, cst.Lambda):
        yield expr, "a lambda", "use a module-level def", inside
        return
    if isinstance(expr, cst.GeneratorExp):
        yield expr, "a generator object", "pass a Dataset (or a list) instead", inside
        return
    if isinstance(expr, cst.Name):
        for node, what, fix, _ in _follow_name(facts, expr, scope, seen):
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
            held = _held_on_self(facts, klass, seen) if klass is not None else None
            if held is not None:
                attr, what = held
                yield expr, f"an instance of {klass.name} holding {what} on self.{attr}", (
                    "store a module-level function (or the data itself) instead"
                ), inside
        consumes = _consumes_iterables(expr, scope)
        for arg in expr.args:
            if consumes and isinstance(arg.value, cst.GeneratorExp):
                continue  # consumed by the call: its result is what is kept
            yield from unpicklable(facts, arg.value, scope, seen, inside)
        return
    if isinstance(expr, (cst.ListComp, cst.SetComp)):
        # The iterables are consumed where the comprehension runs: only the elements are kept.
        yield from unpicklable(facts, expr.elt, scope, seen, inside)
        return
    if isinstance(expr, cst.DictComp):
        yield from unpicklable(facts, expr.key, scope, seen, inside)
        yield from unpicklable(facts, expr.value, scope, seen, inside)
        return
    for child in children(expr):
        yield from unpicklable(facts, child, scope, seen, inside)


def _follow_name(facts, name: cst.Name, scope, seen):
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
        yield from unpicklable(facts, binding.value, binding.scope, seen, False)


def held_on_self(facts, klass) -> Optional[Tuple[str, str]]:
    """(attribute, what) when the class (or a base of this file) holds something unpicklable on self."""
    return _held_on_self(facts, klass, Visited())


def _held_on_self(facts, klass, seen) -> Optional[Tuple[str, str]]:
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
                for _, what, _, _ in unpicklable(facts, value, method.scope, seen):
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
