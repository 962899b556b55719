"""Loaders built only to be looked at: bound to a name that is only read for its attributes.

`loader = DataLoader(stream, num_workers=4); print(loader.batch_size)` starts no worker and
yields nothing: a rule about what its workers yield (DL501) has nothing to say about it. Any
other read of the name (iterated, returned, stored, handed to a call other than a builtin that
only reads) may iterate it, here or elsewhere.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from .model import LoaderCall
from .mutation import READ_ONLY_BUILTINS
from .nodes import children
from .resolve import Scope, resolve

# Attributes whose read hands out the loader's iteration.
ITERATING_ATTRIBUTES = frozenset({"__iter__", "__next__"})


class Inspections:
    """Per scope, the names read anywhere in it other than as `name.attr` or `len(name)` (one walk per scope)."""

    def __init__(self) -> None:
        self._escaping: Dict[int, Tuple[Set[str], Set[str]]] = {}
        self._bound: Dict[int, Dict[int, Optional[str]]] = {}  # per scope: a bound value's id -> its one name

    def only_inspected(self, call: LoaderCall) -> bool:
        """The call is the only binding of a name of its scope, and that name is only inspected."""
        scope = call.ctx.scope
        bound = self._bound.get(id(scope))
        if bound is None:
            bound = self._bound[id(scope)] = _bound_names(scope)
        name = bound.get(id(call.node))
        if name is None or name in scope.global_names or name in scope.nonlocal_names:
            return False
        found = self._escaping.get(id(scope))
        if found is None:
            found = self._escaping[id(scope)] = _escaping_names(scope)
        escaping, inspected = found
        return name not in escaping and not importable(scope, name, inspected)


def importable(scope: Scope, name: str, inspected: Set[str]) -> bool:
    """A module-level loader this module never reads: another module may import it and iterate it."""
    return scope.parent is None and name not in inspected


def _bound_names(scope: Scope) -> Dict[int, Optional[str]]:
    """Each value bound in the scope -> the name it is bound to, when that is the name's only binding
    (one pass over the scope's bindings, not one per loader call of it)."""
    names: Dict[int, Optional[str]] = {}
    for name, bindings in scope.bindings.items():
        for binding in bindings:
            if binding.value is not None and id(binding.value) not in names:
                names[id(binding.value)] = name if len(bindings) == 1 else None
    return names


def _escaping_names(scope: Scope) -> Tuple[Set[str], Set[str]]:
    """(names read in the scope's code, nested functions included, other than for an attribute or by
    a read-only builtin; names read only so). Assignment targets are not reads."""
    escaping: Set[str] = set()
    inspected: Set[str] = set()
    stack: List[Tuple[cst.CSTNode, Optional[cst.CSTNode], Optional[cst.CSTNode]]] = [(scope.node, None, None)]
    while stack:
        node, parent, grand = stack.pop()
        if isinstance(node, cst.Name):
            if _binds(node, parent):
                continue
            (inspected if _harmless(node, parent, grand, scope) else escaping).add(node.value)
            continue
        for child in children(node):
            stack.append((child, node, parent))
    return escaping, inspected


def _binds(node: cst.Name, parent) -> bool:
    """The name is written, not read: an assignment target, a keyword, an attribute's name, a def's name."""
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return True
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Arg) and parent.keyword is node):
        return True
    return isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node


def _harmless(node: cst.Name, parent, grand, scope: Scope) -> bool:
    """A read for an attribute (`loader.batch_size`) or by a builtin that only reads (`len(loader)`)."""
    if isinstance(parent, cst.Attribute):
        return parent.attr.value not in ITERATING_ATTRIBUTES
    if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and not parent.star:
        targets = resolve(grand.func, scope)
        return bool(targets) and targets <= READ_ONLY_BUILTINS
    return False
