"""Whether a module without loaders can iterate what its callers give it: an ast check.

A module with no trigger token (a training loop, a model) matters to its importers only
through a module-level function that iterates a parameter, or hands it to a call inside a
loop, or a class whose `__init__` stores a parameter that a method iterates that way.
Anything else would summarise to nothing, so it is not parsed with LibCST at all.
"""

from __future__ import annotations

import ast
from typing import Set

from ..facts import constants as C

_ITERATING = {name.rsplit(".", 1)[-1] for name in C.ITERATING_BUILTINS} | set(C.ITERABLE_WRAPPERS_LAST_NAME)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def uses_what_it_is_given(tree: ast.AST) -> bool:
    for node in getattr(tree, "body", ()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _iterates(node, _params(node), set()):
                return True
        elif isinstance(node, ast.ClassDef):
            stored = _stored_parameters(node)
            if stored and any(_iterates(m, set(), stored) for m in node.body if isinstance(m, ast.FunctionDef)):
                return True
    return False


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Set[str]:
    args = func.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def _stored_parameters(cls: ast.ClassDef) -> Set[str]:
    """Attributes `__init__` sets from one of its parameters (`self.loader = loader`)."""
    out: Set[str] = set()
    for init in cls.body:
        if isinstance(init, ast.FunctionDef) and init.name == "__init__":
            params = _params(init)
            for node in ast.walk(init):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
                    out.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return out


def _iterates(func: ast.AST, names: Set[str], attrs: Set[str]) -> bool:
    def mentions(expr: ast.AST) -> bool:
        return any(
            (isinstance(n, ast.Name) and n.id in names) or (isinstance(n, ast.Attribute) and n.attr in attrs)
            for n in ast.walk(expr)
        )

    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and mentions(node.iter):
            return True
        if isinstance(node, ast.YieldFrom) and mentions(node.value):
            return True
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if callee in _ITERATING and any(mentions(arg) for arg in node.args):
                return True
        if isinstance(node, _LOOPS):
            for call in (n for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.Call)):
                if any(mentions(arg) for arg in [*call.args, *(k.value for k in call.keywords)]):
                    return True
    return False
