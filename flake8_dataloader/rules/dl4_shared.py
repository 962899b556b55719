"""DL4xx: worker lifecycle and its cost across epochs: what several of these rules ask of the facts."""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from ..facts.model import LoaderSite, LoopInfo
from ..facts.mutation import reference_chain, references
from ..facts.resolve import names_in, source_of


def rebuilt_loop(facts, site: LoaderSite) -> Optional[LoopInfo]:
    """The innermost loop that builds the loader, iterates it, and leaves its arguments unchanged.

    Not when the construction sits under a condition reading a name that loop binds
    (`if feats is None: loader = DataLoader(...)` with `feats` bound again in the loop):
    a cache, built in some passes only."""
    iterations = facts.iteration.iterations_of(site)
    used: Set[str] = set()
    for arg in site.node.args:
        used |= names_in(arg.value)
    for test, _ in site.ctx.branches:
        used |= names_in(test)
    for loop in reversed(site.ctx.loops):
        if any(loop in it.loops for it in iterations):
            return loop if not (used & loop.bound_names) else None
    return None


def rebuilt_by_calls(facts, site: LoaderSite) -> bool:
    """Built and iterated by a same-file function that a loop calls with loop-invariant arguments.

    `for epoch ...: validate(model, val_set)` where validate() builds and iterates its
    own loader: the workers start again at every call. Not when the function returns
    the loader (a factory: its call is the site), builds it inside a loop of its own, or
    iterates it in a loop of its own (a whole training run per call, such as a
    hyper-parameter search calling `train(hyp)`). An argument changes in the loop when
    a name in it is bound there, or when what reaches the loader's arguments is changed
    in place there (`hyp[k] = ...; train(hyp.copy())`).
    """
    func = site.ctx.function
    if func is None or site.ctx.loops or func in facts.flow.factories:
        return False
    own = [it for it in facts.iteration.iterations_of(site) if it.ctx.function is func]
    if not own or any(it.repeated for it in own):  # built outside any loop: every loop repeats
        return False
    reaching, free = _reaching(func, [arg.value for arg in site.node.args])
    for caller in facts.graph.callers.get(func, ()):
        loops = caller.record.ctx.loops
        if not loops:
            continue
        # Only what reaches the loader counts (v7): `validate(model, val_set, step)` with `step += 1`
        # in the loop still builds the same loader, and `self.tokens += n` leaves `self.data` as it is.
        passed = [arg for param, arg in facts.graph.map_arguments(caller.record.node, func, caller.offset) if param in reaching]
        if not any(_changed_in(facts, loop, expr) for loop in loops for expr in [*passed, *free]):
            return True
    return False


def _changed_in(facts, loop: LoopInfo, expr: cst.BaseExpression) -> bool:
    """The loop binds a name the expression reads, or changes in place what it reads."""
    return bool(names_in(expr) & loop.bound_names) or facts.loop_changes.changes(loop, expr)


def _reaching(func, exprs) -> Tuple[Set[str], List[cst.BaseExpression]]:
    """What the expressions read from outside ``func``, directly or through the function's own
    assignments (`data = Subset(dataset, idx); DataLoader(data)` reads `dataset` and `idx`): its
    parameters, and the references (`VAL`, `self.train_dataset`) read from an enclosing scope or
    through the method's own `self`."""
    todo: List[cst.BaseExpression] = [ref for expr in exprs for ref in references(expr)]
    seen: Set[str] = set()
    params: Set[str] = set()
    free: List[cst.BaseExpression] = []
    own_self = func.params[0] if func.cls is not None and func.params else None
    while todo:
        ref = todo.pop()
        base = reference_chain(ref)[-1]
        if not isinstance(base, cst.Name):
            continue
        text = source_of(ref)
        if text in seen:
            continue
        seen.add(text)
        name = base.value
        if name in func.scope.params and name != own_self:
            params.add(name)
        elif name not in func.scope.bindings or name == own_self:
            free.append(ref)
        for binding in func.scope.bindings.get(name, ()):  # a parameter bound again too (`model = load(weights)`)
            value = binding.value
            if isinstance(value, cst.For):
                value = value.iter
            if isinstance(value, cst.BaseExpression):
                todo.extend(references(value))
    return params, free
