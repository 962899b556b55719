"""RNG objects a dataset class holds, and which of them its sample methods draw from.

Read by DL201 and by module summaries: PyTorch reseeds `random`, `torch` and the global
`np.random` in every worker, but an RNG object the dataset holds is copied into each worker
with one state, unless a method the worker runs reseeds it.
"""

from __future__ import annotations

from typing import Dict, Optional, Set, Tuple

import libcst as cst

from . import constants as C
from .classes import self_attribute
from .model import ClassInfo, FunctionInfo
from .resolve import call_qualnames, qualname_in


DRAW_ROOTS = ("__getitem__", "__getitems__", "__iter__", "__next__")
RESEED_METHODS = frozenset({"seed", "manual_seed"})


def is_rng_constructor(expr, scope) -> bool:
    """An RNG constructor call, also chained: `torch.Generator().manual_seed(0)`."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in RESEED_METHODS and isinstance(func.value, cst.Call):
        return is_rng_constructor(func.value, scope)
    return qualname_in(func, scope, C.RNG_CONSTRUCTORS)


def _is_self_attr(expr, method: FunctionInfo, attr: Optional[str] = None) -> bool:
    name = self_attribute(expr, method)
    return name is not None and (attr is None or name == attr)


def held_rngs(facts, klass: ClassInfo) -> Dict[str, Tuple[cst.Call, ClassInfo]]:
    """self.<attr> RNGs created in __init__ or the class body (own or inherited), with the class creating each."""
    out: Dict[str, Tuple[cst.Call, ClassInfo]] = {}
    for owner in [klass, *facts.file.base_classes(klass)]:
        for name, bindings in owner.scope.bindings.items():
            for binding in bindings:
                if binding.kind == "assign" and is_rng_constructor(binding.value, owner.scope):
                    out.setdefault(name, (binding.value, owner))
        for attr, values in owner.self_attrs.items():
            for value, method in values:
                if method.name == "__init__" and is_rng_constructor(value, method.scope):
                    out.setdefault(attr, (value, owner))
    return out


def _per_worker_call(call: cst.Call, scope) -> bool:
    names = call_qualnames(call, scope)
    return any(n.endswith("get_worker_info") for n in names) or bool(names & C.PER_ITERATOR_SEED_SOURCES)


def per_worker_seeded(facts, methods) -> bool:
    """Whether the methods read a per-worker source (`get_worker_info()`, `torch.initial_seed()`)."""
    return any(_per_worker_call(r.node, r.ctx.scope) for m in methods for r in facts.graph.calls_in(m))


def drawn_and_reseeded(facts, klass, methods, rngs, module_rngs) -> Tuple[Set[str], Set[str]]:
    drawn: Set[str] = set()
    reseeded: Set[str] = set()
    per_worker = False
    for method in methods:
        for record in facts.graph.calls_in(method):
            call, scope = record.node, record.ctx.scope
            if _per_worker_call(call, scope):
                per_worker = True
            func = call.func
            receiver = func.value if isinstance(func, cst.Attribute) else None
            key = None
            if isinstance(receiver, cst.Attribute) and _is_self_attr(receiver, method) and receiver.attr.value in rngs:
                key = receiver.attr.value
            elif isinstance(receiver, cst.Name) and receiver.value in module_rngs:
                if scope.lookup(receiver.value) is facts.file.module_scope:
                    key = receiver.value
            if key is not None:
                (reseeded if func.attr.value in RESEED_METHODS else drawn).add(key)
            for arg in call.args:
                value = arg.value
                if _is_self_attr(value, method) and value.attr.value in rngs:
                    drawn.add(value.attr.value)
                elif isinstance(value, cst.Name) and value.value in module_rngs:
                    if scope.lookup(value.value) is facts.file.module_scope:
                        drawn.add(value.value)
        for attr, values in klass.self_attrs.items():
            for value, where in values:
                if where is method and attr in rngs and is_rng_constructor(value, method.scope):
                    reseeded.add(attr)
    if per_worker:
        reseeded |= drawn
    return drawn, reseeded
