"""Whether a loader draws random numbers: what a reseed before each pass would fix.

Reseeding torch with the same value before every pass replays one random stream on purpose
(a fixed random validation set), which persistent workers would change. A loader that draws
nothing (no shuffling, a sequential sampler, a dataset whose reads are deterministic) replays
the same batches with persistent workers too, so the reseed is no reason to keep them off.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from . import constants as C
from .model import ClassInfo, LoaderCall
from .resolve import call_qualnames, follow_single_binding, qualname_in

SEQUENTIAL_SAMPLERS = frozenset({"torch.utils.data.SequentialSampler", "torch.utils.data.sampler.SequentialSampler"})
BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
# Where a dataset's reads draw from: the global generators PyTorch reseeds in every worker.
RANDOM_MODULES = ("random.", "numpy.random.")
TORCH_RANDOM = frozenset(
    f"torch.{name}"
    for name in ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                 "bernoulli", "multinomial", "normal", "poisson")
)
READ_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")


def draws_random(facts, call: LoaderCall) -> bool:
    """The loader shuffles (shuffle Known true or Unknown), samples with anything but a sequential
    sampler, or reads a dataset class of this file whose reads draw random numbers."""
    shuffle = call.args["shuffle"]
    if shuffle.unknown or (shuffle.known and shuffle.value):
        return True
    for name in ("sampler", "batch_sampler"):
        sampler = call.args[name]
        if sampler.unknown or (sampler.known and sampler.value is not None):
            if not _sequential(sampler.expr, call.ctx.scope):
                return True
    dataset = call.args["dataset"]
    if dataset.expr is None:
        return False
    klass = facts.file.instance_class(dataset.expr, call.ctx.scope)
    return klass is not None and _reads_draw(facts, klass)


def _sequential(expr: Optional[cst.BaseExpression], scope) -> bool:
    """A `SequentialSampler(...)`, or a `BatchSampler` over one (names bound once followed)."""
    if expr is None:
        return False
    expr, scope = follow_single_binding(expr, scope)
    if not isinstance(expr, cst.Call):
        return False
    if qualname_in(expr.func, scope, SEQUENTIAL_SAMPLERS):
        return True
    return qualname_in(expr.func, scope, BATCH_SAMPLERS) and bool(expr.args) and _sequential(expr.args[0].value, scope)


def _reads_draw(facts, klass: ClassInfo) -> bool:
    """A method a worker runs to read the class draws: a global generator or an RNG it holds."""
    held = {
        attr
        for owner in [klass, *facts.file.base_classes(klass)]
        for attr, values in owner.self_attrs.items()
        if any(isinstance(v, cst.Call) and qualname_in(v.func, m.scope, C.RNG_CONSTRUCTORS) for v, m in values)
    }
    for method in facts.graph.reachable(klass, READ_METHODS):
        for record in facts.graph.calls_in(method):
            names = call_qualnames(record.node, record.ctx.scope)
            if names & TORCH_RANDOM or any(n.startswith(RANDOM_MODULES) for n in names):
                return True
            func = record.node.func
            receiver = func.value if isinstance(func, cst.Attribute) else None
            if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
                if method.params[:1] == [receiver.value.value] and receiver.attr.value in held:
                    return True
    return False
