"""DL2xx: randomness in worker processes: what several of these rules ask of the facts."""

from __future__ import annotations

from typing import Iterator, List, Tuple

import libcst as cst

from ..facts.classes import last_name
from ..facts.model import FunctionInfo
from ..facts.resolve import Scope, follow_single_binding


def worker_init_functions(facts) -> List[FunctionInfo]:
    """Functions passed as `worker_init_fn` (directly, via `functools.partial` or a splatted
    dict) and functions whose first parameter is `worker_id`."""
    found: List[FunctionInfo] = [f for f in facts.file.functions.values() if f.own_params[:1] == ["worker_id"]]
    for expr, scope in worker_init_values(facts):
        found.extend(func for func in facts.graph.functions_of(expr, scope) if func not in found)
    return found


def worker_init_values(facts) -> Iterator[Tuple[cst.BaseExpression, Scope]]:
    """What the file's loaders are given as `worker_init_fn`, directly or through a splatted dict."""
    for call in facts.flow.loader_calls.values():
        given = call.args["worker_init_fn"].expr
        if given is not None:
            yield given, call.ctx.scope
        for arg in call.node.args:
            if arg.star == "**":
                yield from _dict_sources(arg.value, call.ctx.scope)


def _dict_sources(expr, scope):
    """The `worker_init_fn` values of a dict literal or `dict(...)` a splat reads."""
    expr, scope = follow_single_binding(expr, scope)
    if isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                if element.key.evaluated_value == "worker_init_fn":
                    yield element.value, scope
    elif isinstance(expr, cst.Call) and last_name(expr.func) == "dict":
        for arg in expr.args:
            if arg.keyword is not None and arg.keyword.value == "worker_init_fn":
                yield arg.value, scope
