"""What a loader subclass's own `__init__` decides for a call that omits `num_workers`.

Read from the stdlib ast, so that the project index (which never loads LibCST) and the analysis
(same-file classes and summaries of other modules) read one definition: the gate's answer for an
imported subclass is then exactly what the analysis will read.

Only `num_workers` is read this way. It decides whether a loader uses workers at all, which most rules
need first; an `__init__` that takes it with a literal default and hands it on unchanged is the common
shape (`def __init__(self, dataset, num_workers=0, **kwargs)`). Every other argument a call omits stays
unknown (the `__init__` may set it, as `kwargs["collate_fn"] = ...` does).
"""

from __future__ import annotations

import ast
from typing import AbstractSet, NamedTuple, Optional

WORKERS = "num_workers"
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class SubclassInit(NamedTuple):
    """A loader subclass's `__init__` that may set what a call omits: all omitted arguments are unknown
    but `num_workers` when ``omitted_workers`` decides it."""

    owner: str  # the class's name, for messages
    omitted_workers: Optional[int]


def class_omitted_workers(cls: ast.ClassDef, module_classes: AbstractSet[str]) -> Optional[int]:
    """``omitted_workers`` of the class's own `__init__`, when the class has one base and it is not a class
    of its module (``module_classes``: the names of every class the module defines, at any depth) whose
    `__init__` could change what is handed on."""
    base = cls.bases[0] if len(cls.bases) == 1 and not cls.keywords else None
    if not isinstance(base, (ast.Name, ast.Attribute)) or _tail(base) in module_classes:
        return None
    init = next((item for item in cls.body if isinstance(item, FUNCTIONS) and item.name == "__init__"), None)
    return None if init is None else omitted_workers(init)


def _tail(base: ast.expr) -> str:
    return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")


def omitted_workers(init: ast.AST) -> Optional[int]:
    """The worker count a call that omits `num_workers` gets from this `__init__`: its own literal default,
    when it takes `num_workers` by keyword, never binds that name again and passes it on as it is
    (`num_workers=num_workers`) to every base `__init__` it calls, of which there is at least one.
    None: not decided here (a caller then reads the omitted argument as unknown)."""
    if not isinstance(init, ast.FunctionDef) or init.decorator_list:
        return None
    default = _own_default(init.args)
    if default is None:
        return None
    base_calls, parameter = 0, _parameter(init.args)
    for node in ast.walk(init):
        if isinstance(node, ast.Name) and node.id == WORKERS and not isinstance(node.ctx, ast.Load):
            return None  # bound again (an assignment, a loop target, `del`)
        if isinstance(node, (ast.Global, ast.Nonlocal)) and WORKERS in node.names:
            return None
        if isinstance(node, ast.arg) and node.arg == WORKERS and node is not parameter:
            return None  # a nested def or lambda with its own `num_workers`: not the one handed on
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            if not any(k.arg == WORKERS and isinstance(k.value, ast.Name) and k.value.id == WORKERS
                       for k in node.keywords):
                return None
            base_calls += 1
    return default if base_calls else None


def _parameter(args: ast.arguments) -> Optional[ast.arg]:
    return next((a for a in [*args.args, *args.kwonlyargs] if a.arg == WORKERS), None)


def _own_default(args: ast.arguments) -> Optional[int]:
    """The literal int default of a `num_workers` parameter that a keyword can fill."""
    positional = [*args.posonlyargs, *args.args]  # the defaults are those of the last of these
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    value = defaults.get(WORKERS)
    if isinstance(value, ast.Constant) and type(value.value) is int and value.value >= 0:
        return value.value
    return None
