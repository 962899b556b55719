"""DL203 worker-seed-ignores-epoch: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ..facts import constants as C
from ..facts.dataset_rngs import RESEED_METHODS
from ..facts.model import FunctionInfo
from ..facts.resolve import call_qualnames, evaluate, resolve
from ..facts.states import Known
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
    `functools.partial` or a splatted dict, or any function whose first
    parameter is `worker_id`) that seeds an RNG from `worker_id` and
    constants alone.

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
    - Attributes of a parameter (`cfg.seed`) are constants.
    - Anchor: the `def`.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch/utils/data/_utils/worker.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/_utils/worker.py): each worker seeds `random`, `torch` and `np.random` from the iterator's base seed.
    """

    CODE = "DL203"
    ACROSS_FILES = DEFINED_HERE.format(what="function (its first parameter named `worker_id`)") + " An imported worker_init_fn with another parameter name is not followed."
    NAME = "worker-seed-ignores-epoch"
    MESSAGE = (
        "worker_init_fn {name} seeds from worker_id and constants only: every epoch and every run "
        "replays the same random stream; seed from torch.initial_seed() or get_worker_info().seed"
    )
    CONDITION = (("worker_fn",),)
    TRIGGERS = ("worker_init_fn", "worker_id")

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for func in worker_init_functions(facts):
            if cls._seeds_statically(facts, func):
                yield cls.finding(func.node, name=func.name)

    @classmethod
    def _seeds_statically(cls, facts, func: FunctionInfo) -> bool:
        for record in facts.graph.calls_in(func):
            call, scope = record.node, record.ctx.scope
            names = call_qualnames(call, scope)
            is_seeding = bool(names & SEEDING_CALLS) or (
                isinstance(call.func, cst.Attribute) and call.func.attr.value in RESEED_METHODS
            )
            if not is_seeding:
                continue
            seed = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "seed"), None)
            if seed is not None and cls._static(seed, scope, func, Visited()):
                return True
        return False

    @classmethod
    def _static(cls, expr, scope, func: FunctionInfo, seen: Visited[str]) -> bool:
        """True when the value depends only on parameters and constants."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in func.scope.params:
                return True
            if not seen.first(expr.value):
                return False
            owner = scope.lookup(expr.value)
            if owner is func.scope:
                bindings = owner.bindings[expr.value]
                return all(
                    b.kind == "assign" and b.value is not None and cls._static(b.value, b.scope, func, seen)
                    for b in bindings
                )
            return isinstance(evaluate(expr, scope), Known)
        if isinstance(expr, cst.BinaryOperation):
            return cls._static(expr.left, scope, func, seen) and cls._static(expr.right, scope, func, seen)
        if isinstance(expr, cst.UnaryOperation):
            return cls._static(expr.expression, scope, func, seen)
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            base = expr.value
            return isinstance(base, cst.Name) and base.value in func.scope.params
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            return bool(targets) and targets <= _PURE_BUILTINS and all(
                cls._static(a.value, scope, func, seen) for a in expr.args
            )
        return False
