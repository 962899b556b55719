"""What a call binds to a function's parameters: Known where the call shows it, Unknown otherwise.

A factory called `make(ds, is_training=True)` or `make(ds, **dict(is_training=True))` runs one
branch of `if is_training:` at that call; the rules read the loaders of that branch only. A
parameter the call omits takes its default (Known when the default is a constant); one a
splat may carry (`*args`, `**cfg`) is Unknown, except the entries of a dict literal or
`dict(...)` splatted in place or bound once to a name that nothing changes in place, which are
read. A key given explicitly cannot also come from a splat (Python raises), so it stays Known.
"""

from __future__ import annotations

from typing import Callable, Dict, Mapping, NamedTuple, Optional, Tuple

import libcst as cst

from .states import ArgState, Known, Unknown
from .resolve import Scope, evaluate, follow_single_binding, resolve

# Parameter -> the truth value a branch needs it to have.
Conditions = Tuple[Tuple[str, bool], ...]


class Signature(NamedTuple):
    """A function's parameters as a caller fills them."""

    positional: Tuple[str, ...]  # in order, the receiver (self, cls) included where there is one
    keywords: Tuple[str, ...]  # every parameter a keyword can fill
    defaults: Tuple[Tuple[str, ArgState], ...]  # the default of each parameter that has one


def signature_of(node: cst.FunctionDef, params: Tuple[str, ...], scope: Scope) -> Signature:
    """``params`` as FunctionInfo lists them; defaults evaluated where the def stands (``scope``)."""
    every = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
    defaults = tuple((p.name.value, evaluate(p.default, scope)) for p in every if p.default is not None)
    keywords = tuple(p.name.value for p in (*node.params.params, *node.params.kwonly_params))
    return Signature(params, keywords, defaults)


NO_DEFAULT = Unknown("no default")
# In a bound call: the call passes a splat this file cannot read (`**cfg`), so any keyword may come from it.
SPLAT = "**"
# In `LoaderCall.reads`: the keyword comes from the factory's own `**kwargs` splat.
KWARGS = "**kwargs"  # a parameter neither written, splatted nor defaulted


class Bound(NamedTuple):
    """A parameter at one call: its state there, and the argument expression when one is written."""

    state: ArgState
    expr: Optional[cst.BaseExpression] = None


def bind(call: cst.Call, scope: Scope, signature: Signature, offset: int,
         changed: Callable[[cst.Name, Scope], bool] = lambda name, scope: True) -> Dict[str, Bound]:
    """Every parameter of ``signature`` (the first ``offset`` filled by a receiver excepted) at ``call``.

    A splatted name bound once to a dict literal or `dict(...)` is read like one written in place,
    unless ``changed`` says the name is changed in place somewhere (`kwargs["x"] = ...`, `.update`)."""
    positional = signature.positional[offset:]
    out: Dict[str, Bound] = {}
    splat = False
    index = 0

    def written(value: cst.BaseExpression) -> Bound:
        return Bound(evaluate(value, scope), value)

    for arg in call.args:
        if arg.star == "*":
            splat = True
            for name in positional[index:]:
                out.setdefault(name, Bound(Unknown("may come from *args")))
            index = len(positional)
        elif arg.star == "**":
            entries = _literal_entries(arg.value, scope, changed)
            if entries is None:
                splat = True
            else:
                for name, value in entries.items():
                    out[name] = written(value)
        elif arg.keyword is not None:
            out[arg.keyword.value] = written(arg.value)
        elif index < len(positional):
            out[positional[index]] = written(arg.value)
            index += 1
    if splat:
        out[SPLAT] = Bound(Unknown("a splat"))
    defaults = dict(signature.defaults)
    for name in (*positional, *signature.keywords):
        if name not in out:
            out[name] = Bound(Unknown("may come from **kwargs") if splat else defaults.get(name, NO_DEFAULT))
    return out


def _literal_entries(
    expr: cst.BaseExpression, scope: Scope, changed: Callable[[cst.Name, Scope], bool]
) -> Optional[Dict[str, cst.BaseExpression]]:
    """The keys and values of `{"k": v}` or `dict(k=v)`, written in place or bound once to a name that
    nothing changes; None for anything else."""
    if isinstance(expr, cst.Name) and not changed(expr, scope):
        expr, scope = follow_single_binding(expr, scope)
        if isinstance(expr, cst.Name):
            return None
    if isinstance(expr, cst.Dict):
        out: Dict[str, cst.BaseExpression] = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            key = element.key.evaluated_value
            if not isinstance(key, str):
                return None
            out[key] = element.value
        return out
    if isinstance(expr, cst.Call) and resolve(expr.func, scope) == {"builtins.dict"}:
        if any(arg.keyword is None for arg in expr.args):
            return None
        return {arg.keyword.value: arg.value for arg in expr.args if arg.keyword is not None}
    return None


def conditions_of(branches, params, is_param) -> Conditions:
    """The parameters whose truth decides whether code inside ``branches`` runs: `if p:` and `if not p:`
    tests on a parameter (``is_param`` says which names are); other tests decide nothing here."""
    out = []
    for test, side in branches:
        negated = False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negated = test.expression, True
        if isinstance(test, cst.Name) and test.value in params and is_param(test):
            out.append((test.value, side != negated))
    return tuple(out)


def taken(conditions: Conditions, bound: Mapping[str, Bound]) -> bool:
    """No condition is decided against by a Known argument."""
    for name, needed in conditions:
        state = bound[name].state if name in bound else None
        if isinstance(state, Known) and bool(state.value) != needed:
            return False
    return True


def reads_parameter(expr: Optional[cst.BaseExpression], function) -> Optional[str]:
    """The parameter of ``function`` that ``expr`` is, when it is one the function never rebinds."""
    if function is None or not isinstance(expr, cst.Name) or expr.value not in function.scope.params:
        return None
    bindings = function.scope.bindings.get(expr.value, ())
    if function.scope.lookup(expr.value) is not function.scope or any(b.kind != "param" for b in bindings):
        return None
    return expr.value


def own_kwargs(call: cst.Call, function) -> Optional[str]:
    """The function's own `**kwargs` parameter, when ``call`` splats it as it is (`DataLoader(ds, **kwargs)`)."""
    star = function.node.params.star_kwarg if function is not None else None
    if star is None or not isinstance(star.name, cst.Name):
        return None
    for arg in call.args:
        if arg.star == "**" and reads_parameter(arg.value, function) == star.name.value:
            return star.name.value
    return None
