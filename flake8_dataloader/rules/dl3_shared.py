"""DL3xx: safety under the spawn and forkserver start methods: what several of these rules ask of the facts."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from ..facts import constants as C
from ..facts.model import LoaderCall
from ..facts.resolve import evaluate, follow_single_binding, resolve
from ..facts.states import Known


SET_START_METHOD = frozenset(f"{m}.set_start_method" for m in C.MULTIPROCESSING_MODULES)
GET_CONTEXT = frozenset(f"{m}.get_context" for m in C.MULTIPROCESSING_MODULES)


def first_arg(call: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or (arg.keyword is not None and arg.keyword.value == keyword):
            return arg.value
    return None


def calls_of(facts, names) -> List:
    return [
        r for r in facts.file.calls
        if any(t in names for t in resolve(r.node.func, r.ctx.scope) if isinstance(t, str))
    ]


def is_fork(expr, scope) -> bool:
    value = evaluate(expr, scope)
    return isinstance(value, Known) and value.value == "fork"


def file_forces_fork(facts, settings) -> bool:
    """`--dataloader-start-method=fork`, or a module-level set_start_method("fork")."""
    if settings.start_method == "fork":
        return True
    for record in calls_of(facts, SET_START_METHOD):
        method = first_arg(record.node, "method")
        if record.ctx.function is None and method is not None and is_fork(method, record.ctx.scope):
            return True
    return False


def uses_fork_context(call: LoaderCall) -> bool:
    """multiprocessing_context="fork" or get_context("fork"), directly or through a name bound once."""
    arg = call.args["multiprocessing_context"]
    if arg.known:
        return arg.value == "fork"
    if arg.expr is None:
        return False
    expr, scope = follow_single_binding(arg.expr, call.ctx.scope)
    if isinstance(expr, cst.Call) and all(t in GET_CONTEXT for t in resolve(expr.func, scope)):
        method = first_arg(expr, "method")
        return method is not None and is_fork(method, scope)
    return False
