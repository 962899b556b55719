"""What several rules' codemods use (each rule's module holds its own codemod).

A codemod only rewrites what is certain to be equivalent or what the finding
intends; anything it cannot prove stays a finding, with the reason shown.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..facts.model import LoaderCall
from ..facts.resolve import resolve
from ..rules.base import Finding
from .context import FixContext, Outcome, code
from .edits import Plan, removable
from .tree import comments_in


# Conversions that give the same value each time for the values a worker count comes in.
_PURE_CONVERSIONS = frozenset({"builtins.int", "builtins.float", "builtins.bool"})


def _reevaluable(expr: cst.BaseExpression, scope) -> bool:
    """A name, attribute chain, constant subscript or `int()` of one, or a conditional, comparison or
    `and`/`or` of those and literals (`0 if ds.cached else workers`): reading it twice gives one value."""
    if isinstance(expr, cst.Name):
        return expr.value not in ("True", "False", "None")
    if isinstance(expr, cst.Attribute):
        return _reevaluable(expr.value, scope)
    if isinstance(expr, cst.Subscript):
        return (
            _reevaluable(expr.value, scope)
            and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, (cst.Integer, cst.SimpleString))
        )
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star:
        return resolve(expr.func, scope) <= _PURE_CONVERSIONS and _reevaluable(expr.args[0].value, scope)
    if isinstance(expr, cst.IfExp):
        return all(reevaluable_or_literal(part, scope) for part in (expr.test, expr.body, expr.orelse))
    if isinstance(expr, cst.BooleanOperation):
        return reevaluable_or_literal(expr.left, scope) and reevaluable_or_literal(expr.right, scope)
    if isinstance(expr, cst.Comparison):
        return reevaluable_or_literal(expr.left, scope) and all(
            reevaluable_or_literal(c.comparator, scope) for c in expr.comparisons
        )
    return False


def reevaluable_or_literal(expr: cst.BaseExpression, scope) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    return _reevaluable(expr, scope)


def workers_expr(call: LoaderCall) -> Optional[cst.BaseExpression]:
    """num_workers as written, when it can be written a second time with the same value."""
    workers = call.num_workers.expr
    if workers is None or not _reevaluable(workers, call.ctx.scope) or single_line(workers) is None:
        return None
    return workers


def single_line(expr: cst.BaseExpression) -> Optional[str]:
    text = code(expr)
    return None if "\n" in text or comments_in(expr) else text


def index(call: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, candidate in enumerate(call.args) if candidate is arg)


def drop_argument(finding: Finding, ctx: FixContext) -> Outcome:
    """DL101, DL102: drop the argument, which cannot apply to a single-process loader."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    if owner is None or not isinstance(arg, cst.Arg):
        return "the argument comes through **kwargs"
    if not removable(arg):
        return "a comment inside the argument would be lost"
    call, _ = owner
    plan = Plan()
    plan.call(call.node).remove.add(index(call.node, arg))
    return plan
