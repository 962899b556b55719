"""Which names of a file may hold a class, decided on flake8's ast for the gate (gate.py).

A loader class reaches a call through its name, an import alias, an assignment (`make = DataLoader
if fast else MyLoader`), a same-file subclass, `partial(DataLoader, ...)`, or a parameter when a
class is handed to a call; ``Holders`` follows those bindings to a fixed point, in both directions.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional, Set

# Calls that take a class only to test it.
CLASS_TESTS = frozenset({"isinstance", "issubclass"})


def class_names(expr: ast.AST) -> Set[str]:
    """The names an expression may take a class from: `A`, `m.A`, `A if c else B`, `A or B`, `(A, B)`,
    `{"k": A}[k]`, `partial(A, ...)`. Any other call's result is an instance, not a class."""
    found: Set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            todo += node.values
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            todo += node.elts
        elif isinstance(node, ast.Dict):
            todo += [value for value in node.values if value is not None]
        elif isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr)):
            todo.append(node.value)
        elif isinstance(node, ast.Call) and node.args and is_partial(node):
            todo.append(node.args[0])
    return found


def is_partial(call: ast.Call) -> bool:
    func = call.func
    return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) == "partial"


class Holders:
    """Which names may hold a class: from a start set, every name bound from an expression naming one
    of them, to a fixed point (each binding read once per start)."""

    def __init__(self) -> None:
        self.flows: Dict[str, List[Set[str]]] = {}  # a name read -> the names bound from it
        self.params: List[str] = []
        self.passed: Set[str] = set()  # names handed to calls: a class passed may reach a parameter
        # Each name handed to calls -> the names those calls' callees may be ("" for a callee with none).
        self.passed_to: Dict[str, Set[str]] = {}
        self._sources: Optional[Dict[str, Set[str]]] = None

    def bind(self, targets: Iterable[ast.AST], value: ast.AST) -> None:
        read = class_names(value)
        if read:
            self.bind_names({name for target in targets for name in class_names(target)}, read)

    def bind_names(self, bound: Set[str], read: Iterable[str]) -> None:
        for name in read:
            self.flows.setdefault(name, []).append(bound)

    def parameters(self, args: ast.arguments) -> None:
        self.params.extend(arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs])
        positional = [*args.posonlyargs, *args.args]
        pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults)]
        pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None]
        for arg, default in pairs:
            self.bind_names({arg.arg}, class_names(default))

    def call(self, call: ast.Call) -> None:
        if isinstance(call.func, ast.Name) and call.func.id in CLASS_TESTS:
            return
        callees: Optional[Set[str]] = None
        for value in [*call.args, *(keyword.value for keyword in call.keywords)]:
            if isinstance(value, (ast.Name, ast.Attribute)):
                names = class_names(value)
                self.passed |= names
                callees = callees if callees is not None else (class_names(call.func) or {""})
                for name in names:
                    self.passed_to.setdefault(name, set()).update(callees)

    def closure(self, start: Iterable[str]) -> Set[str]:
        found: Set[str] = set()
        self._reach(found, start)
        if not self.passed.isdisjoint(found):  # `build(DataLoader, ds)`: any parameter may hold it
            self._reach(found, self.params)
        return found

    def sources(self, names: Iterable[str]) -> Set[str]:
        """``names`` and every name bound into one of them, transitively (the inverse of ``closure``)."""
        if self._sources is None:
            self._sources = {}
            for read, bound_sets in self.flows.items():
                for bound in bound_sets:
                    for name in bound:
                        self._sources.setdefault(name, set()).add(read)
        found = set(names)
        todo = list(found)
        while todo:
            for name in self._sources.get(todo.pop(), ()):
                if name not in found:
                    found.add(name)
                    todo.append(name)
        return found

    def _reach(self, found: Set[str], names: Iterable[str]) -> None:
        todo = [name for name in names if name not in found]
        found.update(todo)
        while todo:
            for bound in self.flows.get(todo.pop(), ()):
                for name in bound - found:
                    found.add(name)
                    todo.append(name)


def chain(expr: ast.AST) -> Set[str]:
    """The names along a callee or base: `a.b.c` -> a, b, c; `make()(...)` -> make; `fns[k]` -> fns."""
    found = class_names(expr)
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
        found |= class_names(expr)
    return found
