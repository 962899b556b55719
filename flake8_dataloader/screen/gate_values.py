"""What the analysis may read as a Known value, decided on flake8's ast for the gate (DL103's condition).

The analysis (facts/resolve.py ``evaluate``, facts/binding.py) reads an argument as Known when it is a
literal, an operator over Known values, a name bound once by an assignment (`=`, `:=`, an annotated
`=`) to a Known value, or (per call, facts/loaders.py) a parameter of a same-file function or of an
`__init__` that stores it on `self`, at a call of this file that passes a Known argument for it or
omits it (its default). A parameter no call of the file fills is Unknown; so is a name bound by an
import, a `for`, a `with`, an unpacking, and every other call, subscript or attribute.

``KnownValues`` over-approximates that per argument test: ``may_fail(expr, valid)`` holds when the
analysis could read ``expr`` as a Known value for which ``valid`` does not hold. A name's values are
the values of every binding of that name anywhere in the file (the analysis takes one binding of one
scope: a subset), found by one propagation over the file's names (linear: each name is added once).
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Sequence, Set, Tuple, Union

Valid = Callable[[object], bool]
Node = Union[str, Tuple[str, ...]]  # a name, or the arguments of a group of calls
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# Callee names that may construct the class whose `__init__` is called (`cls(...)`, `type(self)(...)`).
CONSTRUCTORS = frozenset({"cls", "__class__", "__init__", "super"})


def possibly_known(expr: ast.AST) -> bool:
    """Literals, names and `x.attr`, operators over them (compound expressions are not followed further)."""
    if isinstance(expr, (ast.Constant, ast.Name)):
        return True
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name)
    if isinstance(expr, ast.UnaryOp):
        return possibly_known(expr.operand)
    if isinstance(expr, ast.BinOp):
        return possibly_known(expr.left) and possibly_known(expr.right)
    if isinstance(expr, (ast.BoolOp, ast.IfExp)):
        parts = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
        return any(possibly_known(part) for part in parts)
    return False


class Sources:
    """Where the values of each name of a file may come from (filled by the gate's one walk)."""

    def __init__(self) -> None:
        self.assigned: Dict[str, List[ast.expr]] = {}  # `n = v`, `n: T = v`, `(n := v)`
        self.functions: List[Tuple[Function, str]] = []  # each def and the class it is a method of ("")
        self.calls_by_name: Dict[str, List[ast.Call]] = {}  # a callee's names (class_names) -> its calls
        self.opaque_calls: List[ast.Call] = []  # `type(self)(...)`, `fns[k](...)`: callee not named

    def assign(self, target: ast.AST, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.assigned.setdefault(target.id, []).append(value)


class KnownValues:
    """The names and `x.attr` reads of one file that may be Known and fail a test (computed per test).

    One graph: a name takes the values of its assignments; a parameter those of a group of calls that
    may reach its function (its name's calls; every call when the name is also bound, subclassed or
    handed to a call that may run this file's code with it; calls whose callee is not a name), shared
    by the functions of one name, so the graph stays linear in the file."""

    def __init__(self, sources: Sources, aliased: Callable[[str], bool]) -> None:
        self.sources = sources
        self._failing: Dict[Valid, FrozenSet[Node]] = {}
        self.values: Dict[Node, List[ast.expr]] = {name: list(v) for name, v in sources.assigned.items()}
        self.edges: Dict[Node, Set[Node]] = {}  # a node -> the nodes that take its values
        self.seeds: Set[Node] = set()  # parameters a readable `**{...}` / `**dict(...)` may fill
        self.stored: Dict[str, Set[str]] = {}  # attr -> the `__init__` parameters stored on `self.attr`
        self._groups: Set[str] = set()
        for function, owner in sources.functions:
            self._parameters(function, owner, aliased)

    def _group_calls(self, group: str) -> List[ast.Call]:
        if group == "*":
            return [call for calls in self.sources.calls_by_name.values() for call in calls] + self.sources.opaque_calls
        return self.sources.opaque_calls if group == "" else self.sources.calls_by_name.get(group, [])

    def _group(self, group: str) -> None:
        """The nodes of one group of calls: its positional arguments, its keywords by name."""
        if group in self._groups:
            return
        self._groups.add(group)
        for call in self._group_calls(group):
            for value in call.args:
                if not isinstance(value, ast.Starred):
                    self.values.setdefault(("args", group), []).append(value)
            for keyword in call.keywords:
                if keyword.arg is not None:
                    self.values.setdefault(("kw", group, keyword.arg), []).append(keyword.value)
                elif self._readable(keyword.value):
                    self.values.setdefault(("splat", group), [])

    def _parameters(self, function: Function, owner: str, aliased: Callable[[str], bool]) -> None:
        args: ast.arguments = function.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        init = bool(owner) and function.name == "__init__"
        if init and every:
            self._stores(function, every[0].arg, {arg.arg for arg in every})
        names = [owner, *CONSTRUCTORS] if init else [function.name]
        groups = ["*"] if any(aliased(name) for name in names) else [*names, ""]
        groups = [g for g in groups if g == "*" or self._group_calls(g)]
        if not groups:
            return  # no call of this file binds its parameters: they stay Unknown
        defaults = dict(zip([arg.arg for arg in [*args.posonlyargs, *args.args]][::-1], args.defaults[::-1]))
        defaults.update((arg.arg, d) for arg, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        for group in groups:
            self._group(group)
            for arg in every:
                for node in (("args", group), ("kw", group, arg.arg)):
                    if node in self.values:
                        self.edges.setdefault(node, set()).add(arg.arg)
                if ("splat", group) in self.values:
                    self.seeds.add(arg.arg)
        for arg in every:
            if arg.arg in defaults:
                self.values.setdefault(arg.arg, []).append(defaults[arg.arg])

    def _readable(self, value: ast.expr) -> bool:
        """A `**` splat the analysis reads entry by entry: a dict literal, `dict(...)`, a name bound to one."""
        if isinstance(value, ast.Name):
            bound = self.sources.assigned.get(value.id, ())
            return any(self._readable(v) for v in bound if not isinstance(v, ast.Name))
        return isinstance(value, ast.Dict) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
        )

    def _stores(self, init: Function, receiver: str, params: Set[str]) -> None:
        """`receiver.x = p` in `__init__` (nested functions and classes excepted), p a parameter."""
        todo: List[ast.AST] = list(init.body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Name):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == receiver and node.value.id in params):
                        self.stored.setdefault(target.attr, set()).add(node.value.id)
            todo.extend(ast.iter_child_nodes(node))

    def may_fail(self, expr: ast.AST, valid: Valid) -> bool:
        """The analysis may read ``expr`` as Known with a value that ``valid`` rejects."""
        if isinstance(expr, ast.Constant):
            return not valid(expr.value)
        failing = self._failing_names(valid)
        if isinstance(expr, ast.Name):
            return expr.id in failing
        if isinstance(expr, ast.Attribute):  # `self.x`: per construction, from the `__init__` parameter
            return isinstance(expr.value, ast.Name) and not failing.isdisjoint(self.stored.get(expr.attr, ()))
        return possibly_known(expr)  # an operator over values: not followed, may be anything

    def _failing_names(self, valid: Valid) -> FrozenSet[Node]:
        if valid not in self._failing:
            self._failing[valid] = self._propagate(valid)
        return self._failing[valid]

    def _propagate(self, valid: Valid) -> FrozenSet[Node]:
        readers: Dict[Node, Set[Node]] = {node: set(taken) for node, taken in self.edges.items()}
        failing: Set[Node] = set(self.seeds)
        for node, exprs in self.values.items():
            for expr in exprs:
                if isinstance(expr, ast.Name):
                    readers.setdefault(expr.id, set()).add(node)
                elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
                    for param in self.stored.get(expr.attr, ()):
                        readers.setdefault(param, set()).add(node)
                elif (not valid(expr.value)) if isinstance(expr, ast.Constant) else possibly_known(expr):
                    failing.add(node)
        todo = list(failing)
        while todo:
            for node in readers.get(todo.pop(), ()):
                if node not in failing:
                    failing.add(node)
                    todo.append(node)
        return frozenset(failing)


# DataLoader's positional order.
POSITIONS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
             "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")


class Arguments(NamedTuple):
    """A call that may build a loader, its arguments as DataLoader reads them (`partial(DataLoader, ...)` too)."""

    args: Sequence[ast.expr]
    keywords: Sequence[ast.keyword]


def literal(expr: ast.AST, test: Callable[[object], bool]) -> bool:
    return isinstance(expr, ast.Constant) and test(expr.value)


def is_zero(value: object) -> bool:
    return type(value) is int and value == 0


def falsy(value: ast.AST) -> bool:
    return literal(value, lambda v: not v)


def not_none(value: ast.AST) -> bool:
    return not literal(value, lambda v: v is None)


def _valid_batch_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _valid_workers(value: object) -> bool:
    return not (isinstance(value, (int, float)) and value < 0)


def _valid_drop_last(value: object) -> bool:
    return isinstance(value, bool)


def _valid_timeout(value: object) -> bool:  # negative raises; > 0 raises without workers
    return not isinstance(value, (int, float)) or value == 0


def _valid_prefetch(value: object) -> bool:  # negative raises; 0 raises with workers
    return not (isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0)


# DL103's clauses on one argument's Known value (rule book v7; a `batch_size=None` stays possible:
# with a truthy drop_last it raises).
VALID: Dict[str, Callable[[object], bool]] = {
    "batch_size": _valid_batch_size,
    "num_workers": _valid_workers,
    "drop_last": _valid_drop_last,
    "timeout": _valid_timeout,
    "prefetch_factor": _valid_prefetch,
}


def is_falsy(value: object) -> bool:  # a test for ``may_fail``: fails on a truthy value
    return not value


def _is_one(value: object) -> bool:
    return value == 1


def may_be_rejected(
    name: str, args: Dict[str, ast.expr], iterable_dataset: Callable[[], bool], known: KnownValues
) -> bool:
    """DL103 may reject the argument ``name`` of a loader call (``args``: the call's arguments by name;
    ``iterable_dataset``: its dataset may be an IterableDataset, asked only when it decides; ``known``:
    what the analysis may read as Known in the file). A `sampler` is rejected with a Known truthy
    shuffle; a `batch_sampler` with a Known batch_size other than 1 (omitted is 1), a Known truthy
    shuffle or drop_last, a sampler; either with an IterableDataset."""
    value = args[name]

    def truthy(other: str) -> bool:
        return other in args and known.may_fail(args[other], is_falsy)

    if name == "sampler":
        return not_none(value) and (truthy("shuffle") or iterable_dataset())
    if name == "batch_sampler":
        single = "batch_size" not in args or not known.may_fail(args["batch_size"], _is_one)
        sampled = "sampler" in args and not_none(args["sampler"])
        return not_none(value) and (
            not single or sampled or truthy("shuffle") or truthy("drop_last") or iterable_dataset()
        )
    if name == "shuffle":
        return truthy("shuffle") and iterable_dataset()
    if name == "multiprocessing_context":
        return not_none(value)
    return name in VALID and known.may_fail(value, VALID[name])


def splat(call: Arguments) -> bool:
    return any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords)


def given(call: Arguments, name: str, test: Callable[[ast.AST], bool]) -> bool:
    """The loader call may pass ``name`` with a value for which ``test`` holds (by keyword, position or splat)."""
    position = POSITIONS.index(name)
    if splat(call) or (len(call.args) > position and test(call.args[position])):
        return True
    return any(keyword.arg == name and test(keyword.value) for keyword in call.keywords)
