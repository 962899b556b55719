"""DL203 worker-seed-ignores-epoch: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from ..facts import constants as C
from ..facts.dataset_rngs import RESEED_METHODS
from ..facts.calls import partial_target
from ..facts.model import FunctionInfo
from ..facts.nodes import children
from ..facts.resolve import call_qualnames, follow_single_binding, names_in, resolve
from ..facts.walk import Visited
from .base import DEFINED_HERE, Finding, Rule
from .dl2_shared import worker_init_functions

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


SEEDING_CALLS = C.GLOBAL_NONTORCH_SEEDERS | {"torch.manual_seed", "torch.random.manual_seed"} | C.RNG_CONSTRUCTORS
_PURE_BUILTINS = frozenset({"builtins.int", "builtins.abs", "builtins.hash", "builtins.str"})


class WorkerSeedIgnoresEpoch(Rule):
    """
    ## What it does
    Flags a `worker_init_fn` (passed as `worker_init_fn=` directly, through
    `functools.partial` or a splatted dict, a method of the file passed as
    `self.seed_worker` or `Trainer.seed_worker`, or any function whose first
    parameter is `worker_id`, a method's first after `self`/`cls`) that seeds
    an RNG from `worker_id` and constants alone.

    ## Why is this bad?
    PyTorch already gives every worker a unique seed, drawn afresh for each
    epoch's iterator. Reseeding from `worker_id` overrides that: without
    persistent workers every epoch replays the same random stream, and so
    does every run (measured below).

    ## Example
    ```python
    import numpy as np


    def seed_worker(worker_id):
        np.random.seed(42 + worker_id)
    ```

    ## Use instead
    ```python
    import numpy as np
    import torch


    def seed_worker(worker_id):
        np.random.seed(torch.initial_seed() % 2**32)
    ```

    ## Not reported
    ```python
    import numpy as np
    import torch


    def seed_worker(worker_id):
        np.random.seed((torch.initial_seed() + worker_id) % 2**32)
    ```

    ## Options
    None.

    ## Known limits
    - Seeds derived from any call other than `int`/`abs`/`hash`/`str` (for
      example `torch.initial_seed()`, `np.random.get_state()`,
      `time.time()`) count as per-iterator sources.
    - Run-level values are constants: a module constant, `args.seed`,
      `cfg.SEED`, `self.seed`, an enclosing function's variable read by a
      nested worker_init_fn, an argument bound by `functools.partial`.
    - Not constant: a value re-bound in a loop that also builds the loader
      each pass (a new seed for each new loader), a variable a `for` loop of
      its own scope re-binds (a nested function reads it when each epoch's
      workers start), one drawn from `time`, `os.urandom`, `secrets` or
      `torch.initial_seed()`.
    - Anchor: the `def`.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch/utils/data/_utils/worker.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/_utils/worker.py): each worker seeds `random`, `torch` and `np.random` from the iterator's base seed.
    """

    CODE = "DL203"
    ACROSS_FILES = DEFINED_HERE.format(what="function (its first parameter named `worker_id`)") + " An imported worker_init_fn with another parameter name is not followed."
    NAME = "worker-seed-ignores-epoch"
    MESSAGE = (
        "{function} seeds from worker_id and constants only: every epoch and every run "
        "replays the same random stream; seed from torch.initial_seed() or get_worker_info().seed"
    )
    CONDITION = (("worker_fn",),)
    TRIGGERS = ("worker_init_fn", "worker_id")

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        fresh, looped = _rebound_per_loader(facts), _loop_bound(facts)
        for func in worker_init_functions(facts):
            if cls._seeds_statically(facts, func, PerPass(fresh.get(func, set()), looped)):
                # `worker_init_fn worker_init_fn seeds ...` would name it twice
                named = "worker_init_fn" if func.name == "worker_init_fn" else f"worker_init_fn {func.name}"
                yield cls.finding(func.node, function=named)

    @classmethod
    def _seeds_statically(cls, facts, func: FunctionInfo, fresh: PerPass) -> bool:
        for record in facts.graph.calls_in(func):
            call, scope = record.node, record.ctx.scope
            names = call_qualnames(call, scope)
            is_seeding = bool(names & SEEDING_CALLS) or (
                isinstance(call.func, cst.Attribute) and call.func.attr.value in RESEED_METHODS
            )
            if not is_seeding:
                continue
            seed = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "seed"), None)
            if seed is not None and cls._static(seed, scope, func, fresh, Visited()):
                return True
        return False

    @classmethod
    def _static(cls, expr, scope, func: FunctionInfo, fresh: "PerPass", seen: Visited[str]) -> bool:
        """True when the value reads no per-iterator source: parameters, constants and run-level values."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in func.scope.params:
                return expr.value not in fresh.names
            if not seen.first(expr.value):
                return False
            owner = scope.lookup(expr.value)
            if owner is func.scope:
                bindings = owner.bindings[expr.value]
                return all(
                    b.kind == "assign" and b.value is not None and cls._static(b.value, b.scope, func, fresh, seen)
                    for b in bindings
                )
            # A run-level value (module constant, `args`, an enclosing function's variable), unless a
            # loop that builds a new loader each pass re-binds it, or (read at each fork) a loop of its own.
            if owner is None or expr.value in fresh.names or (owner, expr.value) in fresh.looped:
                return False
            return not any(_entropy(b.value, owner) for b in owner.bindings[expr.value])  # `int(time.time())`
        if isinstance(expr, cst.BinaryOperation):
            return cls._static(expr.left, scope, func, fresh, seen) and cls._static(expr.right, scope, func, fresh, seen)
        if isinstance(expr, cst.UnaryOperation):
            return cls._static(expr.expression, scope, func, fresh, seen)
        if isinstance(expr, cst.Attribute):
            return cls._static(expr.value, scope, func, fresh, seen)
        if isinstance(expr, cst.Subscript):
            indexes = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
            return len(indexes) == len(expr.slice) and all(
                cls._static(e, scope, func, fresh, seen) for e in [expr.value, *indexes]
            )
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            return bool(targets) and targets <= _PURE_BUILTINS and all(
                cls._static(a.value, scope, func, fresh, seen) for a in expr.args
            )
        return False


class PerPass(NamedTuple):
    """What a worker_init_fn's seed may read that changes with each pass: ``names`` re-bound in a loop that
    builds a new loader each pass (and parameters a `functools.partial` there binds from them), and
    ``looped``, (scope, name) bound by a `for` loop of that scope (a nested worker_init_fn reads such a
    variable's value when each epoch's workers start)."""

    names: Set[str]
    looped: Set[Tuple[object, str]]


def _entropy(value: Optional[cst.CSTNode], scope) -> bool:
    """Whether a run-level value is drawn from time, `os.urandom`, `secrets` or torch's per-iterator seed."""
    stack: List[cst.CSTNode] = [value] if value is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            names = call_qualnames(node, scope)
            if names & C.PER_ITERATOR_SEED_SOURCES or any(
                n == "os.urandom" or n.startswith(C.ENTROPY_MODULES) for n in names
            ):
                return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(children(node))
    return False


def _loop_bound(facts: FileFacts) -> Set[Tuple[object, str]]:
    return {(ctx.scope.binding_scope(name), name) for loop, _, ctx in facts.file.collector.for_loops
            for name in loop.bound_names}


def _rebound_per_loader(facts: FileFacts) -> Dict[FunctionInfo, Set[str]]:
    """For each worker_init_fn, the names its seed may not count as run-level: re-bound in a loop that
    builds a new loader each pass and hands it the function (a per-epoch seed given to a fresh loader),
    and then the parameters that a `functools.partial` there binds from such names."""
    fresh: Dict[FunctionInfo, Set[str]] = {}
    for call in facts.flow.loader_calls.values():
        given = call.args["worker_init_fn"].expr
        if given is None or not call.ctx.loops:
            continue
        rebound = set().union(*(loop.bound_names | loop.target_names for loop in call.ctx.loops))
        value, _ = follow_single_binding(given, call.ctx.scope)
        partial = isinstance(value, cst.Call) and partial_target(value) is not value
        for func in facts.graph.functions_of(given, call.ctx.scope):
            names = fresh.setdefault(func, set())
            names |= rebound
            if partial and isinstance(value, cst.Call):
                names |= _bound_from(value, func, rebound)
    return fresh


def _bound_from(partial: cst.Call, func: FunctionInfo, rebound: Set[str]) -> Set[str]:
    """The parameters of ``func`` that `functools.partial(func, ...)` binds from names in ``rebound``."""
    params = func.own_params
    out: Set[str] = set()
    for i, arg in enumerate(partial.args[1:]):
        param = arg.keyword.value if arg.keyword is not None else None
        if param is None and not arg.star and i < len(params):
            param = params[i]
        if param is not None and names_in(arg.value) & rebound:
            out.add(param)
    return out
