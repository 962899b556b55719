"""DL103 rejected-argument-combination: the rule, the helpers only it uses and its fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Tuple

import libcst as cst

from ..autofix.context import FixContext, Outcome
from ..autofix.edits import Plan
from ..autofix.shared import index
from .compose import method_of
from ..facts.model import LoaderCall
from ..facts.resolve import resolve
from .base import INHERITS, NEEDS_LOADER, WRITTEN_HERE, Finding, Rule, show, show_workers, source_of
from .dl1_shared import _anchor

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class RejectedCombination(Rule):
    """
    ## What it does
    Flags argument combinations `DataLoader` rejects, when the values are known:
    negative `num_workers` or `timeout`; `sampler` with `shuffle=True`;
    `batch_sampler` with `batch_size` other than 1 (`None` included),
    `shuffle=True`, a `sampler` or `drop_last=True`; `batch_size=None` with
    `drop_last=True`; `multiprocessing_context` or `timeout > 0` without
    workers; an `IterableDataset` subclass of this file given `shuffle=True`,
    a `sampler` or a `batch_sampler`. Also values the constructor refuses:
    a `batch_size` that is not a positive int (`0`, `n / 2` = a float,
    `True`), a `drop_last` that is not a bool (`1`, `None`), a
    `multiprocessing_context` string other than `fork`, `spawn`,
    `forkserver` (case matters) or a module instead of a context, and a
    `prefetch_factor` that is negative, or 0 with workers.

    ## Why is this bad?
    Each raises at construction (`ValueError`, `TypeError` for a module as
    context) or at the first `iter()` (`AssertionError:
    _SingleProcessDataLoaderIter requires timeout == 0`, `prefetch_factor
    must be greater than 0 for MultiProcessingDataLoaderIter`).
    The exact texts are those of `DataLoader.__init__` and the iterators in
    PyTorch's `torch/utils/data/dataloader.py` (torch 2.13), reproduced by
    `python -m runtime_checks --rule DL103` (Measured cost, below).

    ## Example
    ```python
    from torch.utils.data import DataLoader, RandomSampler

    loader = DataLoader(dataset, sampler=RandomSampler(dataset), shuffle=True, num_workers=2)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, RandomSampler

    loader = DataLoader(dataset, sampler=RandomSampler(dataset), num_workers=2)
    ```

    ## Not reported
    ```python
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler


    def make(dataset):
        sampled = DataLoader(dataset, sampler=RandomSampler(dataset), shuffle=False)
        batches = BatchSampler(RandomSampler(dataset), batch_size=8, drop_last=False)
        batched = DataLoader(dataset, batch_sampler=batches)
        unbatched = DataLoader(dataset, batch_size=None)
        return sampled, batched, unbatched
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    - A sampler counts as given when it is a call or a constant that is not
      `None`; a name that may be `None` (`sampler = S(ds) if ddp else None`)
      is not reported.
    - Anchor: the offending keyword (for mutually exclusive pairs, the one
      to remove).

    ## References
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): the parameters and their defaults.
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__init__` raises these errors.
    """

    CODE = "DL103"
    ACROSS_FILES = WRITTEN_HERE + " An IterableDataset class imported from the project is followed for its clause, naming the class's file and line." + INHERITS + " An imported factory whose `shuffle` is a parameter, called here with `shuffle=True`, that builds its loader from an IterableDataset class (of its own module or one it imports) is reported at this call, naming the DataLoader's file and line."
    NAME = "rejected-argument-combination"
    MESSAGE = "{detail}"
    CONDITION = (("rejected_argument",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in facts.flow.loader_calls.values():
            for name, detail in cls._problems(call, facts):
                yield cls.finding(_anchor(call, name), detail=detail)
        # An imported factory whose `shuffle` is a parameter, called here with shuffle=True, building its
        # loader from an IterableDataset class (of its module or one it imports): it raises at this call.
        for call in facts.loaders.foreign_calls:
            foreign = call.foreign
            if foreign is None or "shuffle" not in dict(foreign.reads) or not call.args["shuffle"].known_truthy():
                continue
            iterables = [f"{d.name} ({d.origin})" for d in foreign.dataset_summaries if d.kind == "iterable"]
            if iterables:
                detail = _with_iterable("shuffle", iterables[0])
                yield cls.finding(call.node, detail=f"{detail} (the DataLoader at {foreign.origin})")

    @staticmethod
    def _problems(call: LoaderCall, facts):
        a = call.args
        workers = show_workers(call)
        for name in ("num_workers", "timeout"):
            arg = a[name]
            if arg.known and isinstance(arg.value, (int, float)) and arg.value < 0:
                fix = "0 to load in the main process" if name == "num_workers" else "0 (no timeout) or seconds > 0"
                yield name, f"{name}={show(arg)} is negative and raises ValueError; use {fix}"
        sampler, batch_sampler = a["sampler"], a["batch_sampler"]
        if sampler.known_not_none() and a["shuffle"].known_truthy():
            yield "shuffle", (
                f"shuffle={show(a['shuffle'])} with a sampler raises ValueError (mutually exclusive); "
                "drop shuffle, the sampler decides the order"
            )
        if batch_sampler.known_not_none():
            batch_size = a["batch_size"]
            if batch_size.known and batch_size.value != 1:
                yield "batch_size", _with_batch_sampler("batch_size", show(batch_size))
            if a["shuffle"].known_truthy():
                yield "shuffle", _with_batch_sampler("shuffle", show(a["shuffle"]))
            if sampler.known_not_none():
                yield "sampler", _with_batch_sampler("sampler", show(sampler))
            if a["drop_last"].known_truthy():
                yield "drop_last", _with_batch_sampler("drop_last", show(a["drop_last"]))
        if a["batch_size"].known and a["batch_size"].value is None and a["drop_last"].known_truthy():
            yield "drop_last", "drop_last=True with batch_size=None raises ValueError; drop drop_last"
        if batch_sampler.omitted or (batch_sampler.known and batch_sampler.value is None):
            yield from _batching_values(call)
        yield from _context_and_prefetch(call)
        if call.single_process():
            context = a["multiprocessing_context"]
            if context.given and not (context.known and context.value is None):
                yield "multiprocessing_context", (
                    f"multiprocessing_context with {workers} raises ValueError; "
                    "drop it or set num_workers > 0"
                )
            timeout = a["timeout"]
            if timeout.known and isinstance(timeout.value, (int, float)) and timeout.value > 0:
                yield "timeout", (
                    f"timeout={show(timeout)} with {workers} raises AssertionError at the "
                    "first batch; drop timeout or set num_workers > 0"
                )
        dataset = a["dataset"]
        if dataset.expr is not None:
            cls = facts.file.instance_class(dataset.expr, call.ctx.scope)
            iterables = [cls.name] if cls is not None and facts.file.dataset_kind(cls) == "iterable" else []
            iterables += [f"{d.name} ({d.origin})" for d in facts.loaders.foreign_datasets(call) if d.kind == "iterable"]
            if iterables:  # the first such class names the finding
                if a["shuffle"].known_truthy():
                    yield "shuffle", _with_iterable("shuffle", iterables[0])
                for name in ("sampler", "batch_sampler"):
                    if a[name].known_not_none():
                        yield name, _with_iterable(name, iterables[0])


START_METHODS = ("fork", "spawn", "forkserver")
CONTEXT_MODULES = frozenset({"multiprocessing", "torch.multiprocessing"})


def _batching_values(call: LoaderCall) -> Iterator[Tuple[str, str]]:
    """batch_size and drop_last values BatchSampler rejects (no batch_sampler given)."""
    batch_size, drop_last = call.args["batch_size"], call.args["drop_last"]
    if batch_size.known and batch_size.value is not None:
        value = batch_size.value
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            yield "batch_size", (
                f"batch_size={show(batch_size)} is not a positive int and raises ValueError; "
                "use an int >= 1 (`//` for division), or None to disable batching"
            )
    batching = not (batch_size.known and batch_size.value is None)
    if batching and drop_last.known and not isinstance(drop_last.value, bool):
        yield "drop_last", f"drop_last={show(drop_last)} is not a bool and raises ValueError; use True or False"


def _context_and_prefetch(call: LoaderCall) -> Iterator[Tuple[str, str]]:
    """A start method DataLoader does not know, a module for a context, a prefetch it rejects."""
    if call.single_process():
        return  # the without-workers clauses and DL102 report these
    context, prefetch = call.args["multiprocessing_context"], call.args["prefetch_factor"]
    if context.known and isinstance(context.value, str) and context.value not in START_METHODS:
        yield "multiprocessing_context", (
            f"multiprocessing_context={show(context)} is not a start method and raises ValueError; "
            "use 'fork', 'spawn' or 'forkserver' (lower case)"
        )
    elif context.expr is not None and _names_a_module(context.expr, call):
        spawn = method_of(context.expr, "get_context('spawn')")
        yield "multiprocessing_context", (
            f"multiprocessing_context={source_of(context.expr)} is a module, not a context, and raises TypeError; "
            f"use {spawn} or the string 'spawn'"
        )
    if prefetch.known and isinstance(prefetch.value, (int, float)) and not isinstance(prefetch.value, bool):
        if prefetch.value < 0:
            yield "prefetch_factor", (
                f"prefetch_factor={show(prefetch)} is negative and raises ValueError; use a count >= 1 "
                "(batches loaded ahead per worker)"
            )
        elif prefetch.value == 0:
            yield "prefetch_factor", (
                "prefetch_factor=0 with workers raises AssertionError at the first batch; use a count >= 1"
            )


def _names_a_module(expr: cst.BaseExpression, call: LoaderCall) -> bool:
    targets = resolve(expr, call.ctx.scope)
    return bool(targets) and all(t in CONTEXT_MODULES for t in targets)


def _with_batch_sampler(name: str, value: str) -> str:
    return f"{name}={value} with a batch_sampler raises ValueError (mutually exclusive); drop {name}"


def _with_iterable(name: str, cls: str) -> str:
    return f"{name} with IterableDataset {cls} raises ValueError; shuffle or sample inside the dataset"


def bool_drop_last(finding: Finding, ctx: FixContext) -> Outcome:
    """DL103: write `drop_last=1` / `drop_last=0` as the bool it means, `True` / `False`."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    boolean = isinstance(arg, cst.Arg) and isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False")
    if owner is None or not isinstance(arg, cst.Arg) or owner[1] != "drop_last" or boolean:
        return "the combination needs a decision the code does not show (which argument to drop or change)"
    if not (isinstance(arg.value, cst.Integer) and arg.value.value in ("0", "1")):
        return "drop_last is not the literal 0 or 1: which bool was meant is not certain"
    call, _ = owner
    plan = Plan()
    plan.call(call.node).values[index(call.node, arg)] = cst.Name("True" if arg.value.value == "1" else "False")
    return plan
