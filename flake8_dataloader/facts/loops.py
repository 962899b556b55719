"""Which loops repeat a value: not those that run at most once (`for epoch in range(1)`), nor one
whose target is, or picks, the value.

A loop whose body runs at most once is not a loop for any rule (an iteration inside it is
not repeated, a loader built in it is not rebuilt), so such loops are taken out of every
recorded context once the traversal is over (their bounds may be constants bound later
in the file).
"""

from __future__ import annotations

import libcst as cst

from .collector import Collector
from typing import Tuple

from .model import Context, LoopInfo
from .states import Known
from .resolve import Scope, evaluate, names_in, resolve


def runs_at_most_once(loop: cst.For, scope: Scope) -> bool:
    """`range(K)` / `range(a, b)` with Known bounds of at most one step, or a literal of at most one element."""
    source = loop.iter
    if isinstance(source, (cst.List, cst.Tuple)):
        return len(source.elements) <= 1 and not any(isinstance(e, cst.StarredElement) for e in source.elements)
    if not isinstance(source, cst.Call) or resolve(source.func, scope) != {"builtins.range"}:
        return False
    args = source.args
    if not 1 <= len(args) <= 2 or any(arg.keyword is not None or arg.star for arg in args):
        return False
    bounds = [evaluate(arg.value, scope) for arg in args]
    if not all(isinstance(b, Known) and isinstance(b.value, int) and not isinstance(b.value, bool) for b in bounds):
        return False
    start, stop = (0, bounds[0].value) if len(bounds) == 1 else (bounds[0].value, bounds[1].value)
    return stop - start <= 1


def drop_single_pass_loops(collector: Collector) -> None:
    """Remove loops that run at most once from every context the traversal recorded."""
    once = {id(loop) for loop, node, ctx in collector.for_loops if runs_at_most_once(node, ctx.scope)}
    if not once:
        return
    contexts = [
        *(record.ctx for record in collector.calls),
        *(ctx for _, _, ctx in collector.for_loops),
        *(ctx for _, ctx in collector.comprehension_iters),
        *(ctx for _, ctx in collector.yield_froms),
        *(mutation.ctx for mutation in collector.mutations),
    ]
    for ctx in contexts:
        if any(id(loop) in once for loop in ctx.loops):
            ctx.loops = tuple(loop for loop in ctx.loops if id(loop) not in once)


def repeating_loops(expr: cst.BaseExpression, ctx: Context) -> Tuple[LoopInfo, ...]:
    """The loops around ``expr`` that repeat its value: not one whose target it is
    (`for loader in loaders: for batch in loader:` visits each loader once), nor one whose target
    picks it (`for phase in ["train", "val"]: for batch in loaders[phase]:`)."""
    if isinstance(expr, cst.Name):
        return tuple(loop for loop in ctx.loops if expr.value not in loop.target_names)
    if isinstance(expr, cst.Subscript):
        keys = set().union(*(names_in(element.slice) for element in expr.slice))
        return tuple(loop for loop in ctx.loops if not keys & loop.target_names)
    return ctx.loops
