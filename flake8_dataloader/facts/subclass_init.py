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
from typing import AbstractSet, NamedTuple, Optional, Set

WORKERS = "num_workers"
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class SubclassInit(NamedTuple):
    """A loader subclass's `__init__` that may set what a call omits: all omitted arguments are unknown
    but `num_workers` when ``omitted_workers`` decides it."""

    owner: str  # the class's name, for messages
    omitted_workers: Optional[int]


# What a forwarding chain down to DataLoader gives a call that omits `num_workers`: DataLoader's default.
DATALOADER_DEFAULT = SubclassInit("DataLoader", 0)


def class_omitted_workers(cls: ast.ClassDef, module_classes: AbstractSet[str]) -> Optional[int]:
    """``omitted_workers`` of the class's own `__init__` (see ``_own_init``)."""
    init = _own_init(cls, module_classes)
    return None if init is None else omitted_workers(init)


def class_hands_on_workers(cls: ast.ClassDef, module_classes: AbstractSet[str]) -> bool:
    """``hands_on_workers`` of the class's own `__init__` (see ``_own_init``): a call omitting `num_workers`
    then gets what its one base gives a call omitting it."""
    init = _own_init(cls, module_classes)
    return init is not None and hands_on_workers(init)


def _own_init(cls: ast.ClassDef, module_classes: AbstractSet[str]) -> Optional[ast.stmt]:
    """The class's own `__init__`, when the class has one base and it is not a class of its module
    (``module_classes``: the names of every class the module defines, at any depth) whose `__init__` could
    change what is handed on."""
    base = cls.bases[0] if len(cls.bases) == 1 and not cls.keywords else None
    if not isinstance(base, (ast.Name, ast.Attribute)) or _tail(base) in module_classes:
        return None
    return next((item for item in cls.body if isinstance(item, FUNCTIONS) and item.name == "__init__"), None)


def over_base(owner: str, workers: Optional[int], hands_on: bool, base: Optional[SubclassInit]) -> SubclassInit:
    """What a subclass with its own `__init__` over a loader subclass leaves known: the count it decides
    (``workers``), else, when it hands an omitted one on, its base's reading (``base`` None: the base reads
    as DataLoader itself). One rule for a chain in the summaries and for a class of the linted file."""
    if workers is None and hands_on:
        return base or DATALOADER_DEFAULT
    return SubclassInit(owner, workers)


def hands_on_workers(init: ast.AST) -> bool:
    """This `__init__` leaves an omitted `num_workers` omitted: it takes no parameter of that name, and
    hands its `**kwargs` unchanged in that key to every base `__init__` it calls (at least one), with at
    most one positional argument and no `num_workers=` there. Its `kwargs` may be read (`.get`, `[k]`,
    `in`) and given other string keys (`kwargs["persistent_workers"] = False`); any other use of it may
    add the count (`kwargs.update(...)`, handing it to a helper), so it decides nothing."""
    if not isinstance(init, ast.FunctionDef) or init.decorator_list or init.args.kwarg is None:
        return False
    if any(a.arg == WORKERS for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]):
        return False
    kwargs = init.args.kwarg.arg
    allowed: Set[int] = set()  # the ids of the Name nodes of the uses read above
    base_calls = 0
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            spread = [k for k in node.keywords if k.arg is None]
            if (len(node.args) > 1 or any(isinstance(a, ast.Starred) for a in node.args)
                    or any(k.arg == WORKERS for k in node.keywords) or len(spread) != 1
                    or not _is_name(spread[0].value, kwargs)):
                return False
            allowed.add(id(spread[0].value))
            base_calls += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if _is_name(node.func.value, kwargs):
                allowed.add(id(node.func.value))
        elif isinstance(node, ast.Subscript) and _is_name(node.value, kwargs):
            key = node.slice
            if isinstance(node.ctx, ast.Load) or (
                isinstance(node.ctx, ast.Store) and isinstance(key, ast.Constant)
                and isinstance(key.value, str) and key.value != WORKERS
            ):
                allowed.add(id(node.value))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            if _is_name(node.comparators[0], kwargs):
                allowed.add(id(node.comparators[0]))
    uses = [node for node in ast.walk(init) if isinstance(node, ast.Name) and node.id == kwargs]
    nested = [node for node in ast.walk(init) if isinstance(node, ast.arg) and node.arg == kwargs]
    return base_calls > 0 and len(nested) == 1 and all(id(node) in allowed for node in uses)


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


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
