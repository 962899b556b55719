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
        self._escaping: Dict[int, Set[str]] = {}

    def only_inspected(self, call: LoaderCall) -> bool:
        """The call is the only binding of a name of its scope, and that name is only inspected."""
        scope = call.ctx.scope
        name = _bound_name(scope, call.node)
        if name is None or name in scope.global_names or name in scope.nonlocal_names:
            return False
        escaping = self._escaping.get(id(scope))
        if escaping is None:
            escaping = self._escaping[id(scope)] = _escaping_names(scope)
        return name not in escaping


def _bound_name(scope: Scope, node: cst.Call) -> Optional[str]:
    for name, bindings in scope.bindings.items():
        if any(binding.value is node for binding in bindings):
            return name if len(bindings) == 1 else None
    return None


def _escaping_names(scope: Scope) -> Set[str]:
    """Names read in the scope's code (nested functions included) other than for an attribute or by a
    read-only builtin; assignment targets are not reads."""
    out: Set[str] = set()
    stack: List[Tuple[cst.CSTNode, Optional[cst.CSTNode], Optional[cst.CSTNode]]] = [(scope.node, None, None)]
    while stack:
        node, parent, grand = stack.pop()
        if isinstance(node, cst.Name):
            if not _harmless(node, parent, grand, scope):
                out.add(node.value)
            continue
        for child in children(node):
            stack.append((child, node, parent))
    return out


def _harmless(node: cst.Name, parent, grand, scope: Scope) -> bool:
    if isinstance(parent, cst.Attribute):
        return parent.attr is node or parent.attr.value not in ITERATING_ATTRIBUTES
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Arg) and parent.keyword is node):
        return True
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
        return True
    if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and not parent.star:
        targets = resolve(grand.func, scope)
        return bool(targets) and targets <= READ_ONLY_BUILTINS
    return False
