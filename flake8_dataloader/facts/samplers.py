"""Samplers through the value flow: which DistributedSampler a loader draws from, and
which samplers the file's `set_epoch` calls reach."""

from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from . import constants as C
from .flow import ANY, OBJECT_FLOW, Value
from .foreign import Origin
from .model import LoaderCall
from .states import Known
from .resolve import Scope, evaluate, qualname_in, resolve

EVALUATION_WORDS = ("val", "test", "eval")


def _is_distributed_class(facts, func: cst.BaseExpression, scope: Scope) -> bool:
    """The callee is DistributedSampler, an alias chosen among classes, or a same-file subclass."""
    for value in facts.flow.values(func, scope, (), OBJECT_FLOW):
        if value.path or not isinstance(value.node, (cst.Name, cst.Attribute)):
            continue
        if qualname_in(value.node, value.scope, C.DISTRIBUTED_SAMPLERS):
            return True
        for target in resolve(value.node, value.scope):
            cls = facts.file.class_of_def(target)
            if cls is not None and facts.file.subclasses_any(cls, C.DISTRIBUTED_SAMPLERS):
                return True
    return False


def _shuffles(call: cst.Call, scope: Scope, subclass: bool) -> bool:
    keyword = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "shuffle"]
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    # DistributedSampler(dataset, num_replicas, rank, shuffle, ...): shuffle is the fourth.
    value = keyword[0] if keyword else positional[3] if len(positional) > 3 and not subclass else None
    if value is None:
        return True
    state = evaluate(value, scope)
    return not (isinstance(state, Known) and not state.value)


def _calls_in(facts, expr: cst.BaseExpression, scope: Scope) -> Iterator[Value]:
    for value in facts.flow.values(expr, scope, (), OBJECT_FLOW):
        if not value.path and isinstance(value.node, cst.Call):
            yield value


def _wrapped_sampler(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The sampler a batch sampler is built over (`BatchSampler(sampler, 32, False)`)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "sampler":
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[0] if positional else None


def distributed_samplers(facts, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> List[cst.Call]:
    """DistributedSampler constructions (shuffling) an expression may hold, through batch samplers."""
    out: List[cst.Call] = []
    for value in _calls_in(facts, expr, scope):
        call = value.node
        assert isinstance(call, cst.Call)
        if _is_distributed_class(facts, call.func, value.scope):
            subclass = not qualname_in(call.func, value.scope, C.DISTRIBUTED_SAMPLERS)
            if _shuffles(call, value.scope, subclass) and call not in out:
                out.append(call)
        elif depth < 2:
            inner = _wrapped_sampler(call)
            if inner is not None:
                out.extend(c for c in distributed_samplers(facts, inner, value.scope, depth + 1) if c not in out)
    return out


def loader_samplers(facts, call: LoaderCall) -> List[cst.Call]:
    """The shuffling DistributedSamplers a loader call is given (as sampler or inside its batch_sampler);
    for one a function of another project module returns, the call of that function here."""
    out: List[cst.Call] = []
    for name in ("sampler", "batch_sampler"):
        argument = call.args[name]
        if argument.expr is not None:
            out.extend(c for c in distributed_samplers(facts, argument.expr, call.ctx.scope) if c not in out)
            out.extend(c for c, _ in imported_samplers(facts, argument.expr, call.ctx.scope) if c not in out)
    return out


def imported_samplers(facts, expr: cst.BaseExpression, scope: Scope) -> List[Tuple[cst.Call, Origin]]:
    """(call here, where the sampler is built) for each call of a project helper of another module whose
    result (or the element of it an expression takes) is a shuffling DistributedSampler (Across files v7)."""
    out: List[Tuple[cst.Call, Origin]] = []
    if facts.file.imports is None:
        return out
    for value in facts.flow.values(expr, scope, (), OBJECT_FLOW):
        for origin in _helper_samplers(facts, value):
            if (value.node, origin) not in out:
                out.append((value.node, origin))
    return out


def helper_origin(facts, call: LoaderCall, sampler: cst.Call) -> Optional[Origin]:
    """Where the sampler is built when ``sampler`` is the call of an imported helper returning it."""
    for name in ("sampler", "batch_sampler"):
        expr = call.args[name].expr
        for helper, origin in imported_samplers(facts, expr, call.ctx.scope) if expr is not None else ():
            if helper is sampler:
                return origin
    return None


def _helper_samplers(facts, value: Value) -> List[Origin]:
    """Where the DistributedSamplers a call of an imported helper returns (or the element of its result
    the value is) are built."""
    if facts.file.imports is None or not isinstance(value.node, cst.Call) or len(value.path) > 1:
        return []
    qualname = facts.loaders.imported(value.node.func, value.scope)
    found = facts.file.imports.sampler_helper(qualname) if qualname else ()
    return [origin for path, origin in found if tuple(value.path) in (path, (ANY,))]


def set_epoch_reaches(facts) -> Optional[Set[cst.Call]]:
    """Every DistributedSampler some `set_epoch` call of the file may run on.

    None when a receiver cannot be followed (a parameter nobody in the file passes,
    an attribute of an unknown object): then any sampler may be the one it sets.
    """
    out: Set[cst.Call] = set()
    for expr, scope in facts.frameworks.sampler_epoch:  # Ignite's setup_common_training_handlers(train_sampler=)
        out.update(distributed_samplers(facts, expr, scope))
    for record in facts.file.calls:
        func = record.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "set_epoch"):
            continue
        receiver, scope = func.value, record.ctx.scope
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "sampler":
            # `loader.sampler.set_epoch(epoch)`, also on a parameter: the loaders the file passes for it.
            holders = facts.flow.sites_of(receiver.value, scope) or facts.flow.loaders_passed(receiver.value, scope)
            if holders:
                for site in holders:
                    for call in site.calls:
                        out.update(loader_samplers(facts, call))
                        if call.foreign is not None and call.foreign.sampler is not None:
                            out.add(call.node)  # the sampler an imported factory built: its call stands for it
                continue
            owners = list(_calls_in(facts, receiver.value, scope))
            if not owners:
                return None
            for owner in owners:  # `batch_sampler.sampler.set_epoch(epoch)`
                assert isinstance(owner.node, cst.Call)
                inner = _wrapped_sampler(owner.node)
                if inner is not None:
                    out.update(distributed_samplers(facts, inner, owner.scope))
            continue
        values = facts.flow.values(receiver, scope, (), OBJECT_FLOW)
        for value in values:
            if _never_a_sampler(value):
                continue  # the None branch of `sampler = DistributedSampler(ds) if ddp else None`
            if _helper_samplers(facts, value):
                out.add(value.node)  # an imported helper's sampler: its call stands for it
                continue
            if value.path or not isinstance(value.node, cst.Call):
                return None
            if facts.file.instance_class(value.node, value.scope) is None:
                out.update(distributed_samplers(facts, value.node, value.scope))
                inner = _wrapped_sampler(value.node)
                if inner is not None:
                    out.update(distributed_samplers(facts, inner, value.scope))
    return out


def _never_a_sampler(value: Value) -> bool:
    node = value.node
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False") and facts_free_name(node, value.scope)
    return isinstance(node, (cst.BaseNumber, cst.BaseString))


def facts_free_name(node: cst.Name, scope: Scope) -> bool:
    """A builtin constant name not rebound in the file."""
    return scope.lookup(node.value) is None


def for_evaluation(facts, call: LoaderCall, sampler: cst.Call) -> bool:
    """The loader (or its sampler) is named for evaluation: its order does not matter."""
    names = set(facts.flow.names_of(call.node)) | set(facts.flow.names_of(sampler))
    for site in facts.iteration.sites_of_call(call):
        names |= facts.loaders.site_names(site)
    return any(word in name.lower() for name in names for word in EVALUATION_WORDS)
