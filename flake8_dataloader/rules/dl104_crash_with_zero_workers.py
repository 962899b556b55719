"""DL104 crash-with-zero-workers: the rule, the helpers only it uses and its fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ..autofix.context import FixContext, Outcome, code
from ..autofix.edits import Plan
from ..autofix.shared import index, reevaluable_or_literal, single_line, workers_expr
from .compose import positive, when_workers
from ..facts.resolve import can_be_none, evaluate, resolve
from ..facts.states import Known
from .base import NEEDS_LOADER_OR_CONFIG, WRITTEN_HERE, Finding, Rule, show, source_of
from .dl1_shared import _anchor, calls_and_configs, names

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


_POSITIVE_CALLS = frozenset({"os.cpu_count", "multiprocessing.cpu_count", "os.process_cpu_count"})


def _provably_positive(expr: cst.BaseExpression, scope) -> bool:
    """`max(1, ...)`, `os.cpu_count()`: unknown values that cannot be 0."""
    if not isinstance(expr, cst.Call):
        return False
    targets = resolve(expr.func, scope)
    if targets and all(t in _POSITIVE_CALLS for t in targets):
        return True
    if targets == frozenset({"builtins.max"}):
        for arg in expr.args:
            value = evaluate(arg.value, scope)
            if isinstance(value, Known) and isinstance(value.value, int) and value.value > 0:
                return True
    return False


class CrashWithZeroWorkers(Rule):
    """
    ## What it does
    Flags `persistent_workers` set to a truthy constant (`True`, `1`), or an explicit `prefetch_factor` that
    cannot be `None`, when `num_workers` is written as an expression whose
    value is unknown here (a CLI flag, a parameter, a config value).

    The suggested guard is valid Python with the meaning intended: a worker
    count (or prefetch value) written as a conditional, a lambda, `or`/`and`,
    `not` or a comparison is parenthesised
    (`persistent_workers=(0 if cached else workers) > 0`,
    `prefetch_factor=(a if c else 2) if (0 if cached else workers) > 0 else None`),
    in the message and in what the fix command writes.

    ## Why is this bad?
    The script works until someone runs it with `--workers 0`, the usual way
    to debug a loader in one process; then `DataLoader.__init__` raises
    `ValueError` (`persistent_workers option needs num_workers > 0`, or the
    `prefetch_factor` error).

    The same holds for `TrainingArguments(dataloader_num_workers=args.workers,
    dataloader_persistent_workers=True)`; the fix writes
    `dataloader_persistent_workers=args.workers > 0`.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def make_loader(dataset, workers):
        return DataLoader(dataset, batch_size=32, num_workers=workers, persistent_workers=True)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def make_loader(dataset, workers):
        return DataLoader(dataset, batch_size=32, num_workers=workers, persistent_workers=workers > 0)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def make(dataset, workers):
        guarded = DataLoader(
            dataset, num_workers=workers, persistent_workers=workers > 0, prefetch_factor=2 if workers > 0 else None
        )
        at_least_one = DataLoader(dataset, num_workers=max(1, workers), persistent_workers=True)
        return guarded, at_least_one
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    - Not reported through a `**kwargs` splat, nor when `num_workers` is
      `max(k, ...)` with a known `k > 0` or `os.cpu_count()`, which cannot
      be 0.
    - Anchor: the `persistent_workers=` or `prefetch_factor=` keyword.

    ## References
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): the parameters and their defaults.
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__init__` raises these errors.
    """

    CODE = "DL104"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "crash-with-zero-workers"
    MESSAGE = "{name}={value} raises ValueError when num_workers ({workers}) is 0; use {fix}"
    FRAMEWORK_MESSAGE = "{name}={value} raises ValueError when {workers_name} ({workers}) is 0; use {fix}"
    CONDITION = (("persistent", "workers"), ("prefetch", "workers"), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER_OR_CONFIG

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in calls_and_configs(facts):
            workers = call.num_workers
            if workers.expr is None or not workers.unknown:
                continue
            if _provably_positive(workers.expr, call.ctx.scope):
                continue
            expr = source_of(workers.expr)
            finding = cls.finding if call.keywords is None else cls.framework_finding
            persistent = call.args["persistent_workers"]
            if persistent.known_truthy():
                name = call.spelled("persistent_workers")
                yield finding(
                    _anchor(call, "persistent_workers"),
                    value=show(persistent),
                    workers=expr,
                    fix=f"{name}={positive(workers.expr)}",
                    **names(call),
                )
            prefetch = call.args["prefetch_factor"]
            if prefetch.expr is not None and not can_be_none(prefetch.expr):
                if prefetch.known and prefetch.value is None:
                    continue
                name = call.spelled("prefetch_factor")
                yield finding(
                    _anchor(call, "prefetch_factor"),
                    value=show(prefetch),
                    workers=expr,
                    fix=f"{name}={when_workers(prefetch.expr, workers.expr)}",
                    **names(call, "prefetch_factor"),
                )


def guard_by_workers(finding: Finding, ctx: FixContext) -> Outcome:
    """DL104: guard the argument by the worker count, `persistent_workers=<workers> > 0`
    or `prefetch_factor=<v> if <workers> > 0 else None` (a conditional, `or`/`and` or comparison
    of names and constants is written again, in parentheses: `(0 if cached else workers) > 0`)."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    if owner is None or not isinstance(arg, cst.Arg):
        return "the argument comes through **kwargs"
    call, name = owner
    workers = workers_expr(call)
    if workers is None:
        expr = call.num_workers.expr
        written = code(expr) if expr is not None else "**kwargs"
        return f"num_workers ({written}) is not a plain name or attribute: it would be evaluated twice"
    if name == "persistent_workers":
        if not (isinstance(arg.value, cst.Name) and arg.value.value == "True") and not isinstance(
            arg.value, cst.Integer
        ):
            return "persistent_workers is not a literal True or integer"
        value = cst.parse_expression(positive(workers))
    else:
        simple = reevaluable_or_literal(arg.value, call.ctx.scope) and single_line(arg.value) is not None
        if not simple:
            return "prefetch_factor is not a constant, name or attribute: it would be evaluated conditionally"
        value = cst.parse_expression(when_workers(arg.value, workers))
    plan = Plan()
    plan.call(call.node).values[index(call.node, arg)] = value
    return plan
