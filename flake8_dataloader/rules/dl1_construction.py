"""DL1xx: DataLoader settings PyTorch rejects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple

import libcst as cst

from ..compose import method_of, positive, when_workers
from ..facts.model import Known, LoaderCall, Mutation
from ..facts.nodes import children
from ..facts.resolve import can_be_none, evaluate, resolve
from .base import INHERITS, NEEDS_LOADER, NEEDS_LOADER_OR_CONFIG, WRITTEN_HERE, Finding, Rule, show, show_workers, source_of

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def _anchor(call: LoaderCall, name: str) -> cst.CSTNode:
    return call.args[name].anchor or call.node


def _calls_and_configs(facts: FileFacts) -> Iterator[LoaderCall]:
    """The file's DataLoader calls, then its `TrainingArguments(...)` calls read as DataLoader settings."""
    yield from facts.flow.loader_calls.values()
    for config in facts.frameworks.config_calls:
        yield config.call


def _names(call: LoaderCall, name: str = "persistent_workers") -> dict:
    return dict(name=call.spelled(name), workers_name=call.spelled("num_workers"))


class PersistentWorkersWithoutWorkers(Rule):
    """
    ## What it does
    Flags `persistent_workers=True` on a loader that is proven single-process:
    `num_workers` is `0` (a literal or a constant bound once) or omitted.

    ## Why is this bad?
    `DataLoader.__init__` raises `ValueError: persistent_workers option needs
    num_workers > 0`. The script dies before the first batch.

    `TrainingArguments(dataloader_persistent_workers=True)` (also
    `Seq2SeqTrainingArguments`) with `dataloader_num_workers` 0 or omitted
    is reported at that keyword: the arguments construct, and
    `trainer.train()` raises the same `ValueError` when it builds the train
    loader (`runtime_checks --rule DL101`).

    ## Example
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, persistent_workers=True)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=4, persistent_workers=True)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def make(dataset, workers):
        with_workers = DataLoader(dataset, num_workers=2, persistent_workers=True)
        guarded = DataLoader(dataset, num_workers=workers, persistent_workers=workers > 0)
        off = DataLoader(dataset, persistent_workers=False)
        return with_workers, guarded, off
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    A `num_workers` that is a parameter, a CLI value or bound twice is unknown:
    DL104 covers the crash that waits for `--workers 0`. Through `**kwargs`,
    `num_workers` is unknown and nothing is reported.

    Anchor: the `persistent_workers=` keyword.

    ## References
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): the parameters and their defaults.
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__init__` raises these errors.
    """

    CODE = "DL101"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "persistent-workers-without-workers"
    MESSAGE = (
        "persistent_workers={value} with {workers} raises ValueError; "
        "drop persistent_workers or set num_workers > 0"
    )
    FRAMEWORK_MESSAGE = (
        "{name}={value} with {workers} raises ValueError at {where}; drop {name} or set {workers_name} > 0"
    )
    CONDITION = (("persistent",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER_OR_CONFIG

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in _calls_and_configs(facts):
            persistent = call.args["persistent_workers"]
            if call.single_process() and persistent.known_truthy():
                values = dict(value=show(persistent), workers=show_workers(call))
                if call.keywords is None:
                    yield cls.finding(_anchor(call, "persistent_workers"), **values)
                else:
                    yield cls.framework_finding(
                        _anchor(call, "persistent_workers"), where=call.keywords.raises_at, **_names(call), **values
                    )


class PrefetchWithoutWorkers(Rule):
    """
    ## What it does
    Flags `prefetch_factor` set to anything but `None` on a loader that is
    proven single-process (`num_workers` 0 or omitted).

    ## Why is this bad?
    Since torch 2.0, `DataLoader.__init__` raises `ValueError: prefetch_factor
    option could only be specified in multiprocessing.let num_workers > 0 to
    enable multiprocessing, otherwise set prefetch_factor to None.`
    (torch 1.7–1.13 raised only for values other than 2.)

    `TrainingArguments(dataloader_prefetch_factor=...)` with
    `dataloader_num_workers` 0 or omitted raises at construction:
    `ValueError: --dataloader_prefetch_factor can only be set when data is
    loaded in a different process, i.e. when --dataloader_num_workers > 0.`

    ## Example
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=0, prefetch_factor=4)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=0)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def make(dataset):
        with_workers = DataLoader(dataset, num_workers=2, prefetch_factor=4)
        default = DataLoader(dataset, prefetch_factor=None)
        return with_workers, default
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    Unknown `num_workers` is DL104's business. Anchor: the `prefetch_factor=` keyword.

    ## References
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): the parameters and their defaults.
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__init__` raises these errors.
    """

    CODE = "DL102"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "prefetch-without-workers"
    MESSAGE = (
        "prefetch_factor={value} with {workers} raises ValueError (torch>=2.0); "
        "drop prefetch_factor or set num_workers > 0"
    )
    FRAMEWORK_MESSAGE = (
        "{name}={value} with {workers} raises ValueError when {config} is built; drop {name} or set {workers_name} > 0"
    )
    CONDITION = (("prefetch",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER_OR_CONFIG

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in _calls_and_configs(facts):
            prefetch = call.args["prefetch_factor"]
            if call.single_process() and prefetch.known_not_none():
                values = dict(value=show(prefetch), workers=show_workers(call))
                if call.keywords is None:
                    yield cls.finding(_anchor(call, "prefetch_factor"), **values)
                else:
                    yield cls.framework_finding(
                        _anchor(call, "prefetch_factor"), config=source_of(call.node.func), **_names(call, "prefetch_factor"), **values
                    )


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
    A sampler counts as given when it is a call or a constant that is not
    `None`; a name that may be `None` (`sampler = S(ds) if ddp else None`) is
    not reported. Anchor: the offending keyword (for mutually exclusive
    pairs, the one to remove).

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
    Not reported through a `**kwargs` splat, nor when `num_workers` is
    `max(k, ...)` with a known `k > 0` or `os.cpu_count()`, which cannot be 0.
    Anchor: the `persistent_workers=` or `prefetch_factor=` keyword.

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
        for call in _calls_and_configs(facts):
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
                    **_names(call),
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
                    **_names(call, "prefetch_factor"),
                )


LOCKED_ATTRIBUTES = ("dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers")


class AttributeSetAfterConstruction(Rule):
    """
    ## What it does
    Flags an assignment to `dataset`, `batch_size`, `sampler`,
    `batch_sampler`, `drop_last` or `persistent_workers` of a loader that is
    already built (however the file carries it: a name, `self.loader`, a
    list element, a factory's result), and to `self.<those>` in a
    DataLoader subclass of this file after its `super().__init__(...)`.

    ## Why is this bad?
    `DataLoader.__setattr__` refuses them once `__init__` has run: `ValueError:
    dataset attribute should not be set after DataLoader is initialized`.
    The sampler and batch sampler are built from these values in
    `__init__`, so a later change could not take effect anyway. Reproduced
    by `python -m runtime_checks --rule DL105` (Measured cost, below).

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def curriculum(easy, hard):
        loader = DataLoader(easy, batch_size=32, num_workers=2)
        loader.dataset = hard
        return loader
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def curriculum(easy, hard):
        return DataLoader(hard, batch_size=32, num_workers=2)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    class Loader(DataLoader):
        def __init__(self, dataset, **kwargs):
            self.note = "before"  # not a locked attribute
            super().__init__(dataset, **kwargs)
            self.num_workers = 0  # num_workers, collate_fn, pin_memory may be set


    def settable(dataset):
        loader = DataLoader(dataset, num_workers=2)
        loader.collate_fn = None
        loader.pin_memory = True
        return loader


    class MultiEpochs(DataLoader):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._DataLoader__initialized = False  # PyTorch's guard cleared first: accepted
            self.batch_sampler = list(self.batch_sampler)
            self._DataLoader__initialized = True
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    `num_workers`, `collate_fn`, `pin_memory` and `shuffle` can be set and
    are not reported; `setattr(loader, "dataset", ...)` with a string is not
    followed. In a subclass, an assignment counts as after `super().__init__`
    when it is in a later statement of the same method, and is not reported
    when a statement between them sets `self._DataLoader__initialized =
    False` (and none sets it back to `True` before it), as timm's
    `MultiEpochsDataLoader` does: PyTorch's guard is then off. Anchor: the
    assignment.

    ## References
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__setattr__` raises for these attributes once the loader is initialized.
    """

    CODE = "DL105"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "attribute-set-after-construction"
    MESSAGE = (
        "{attr} of a built DataLoader cannot be set: PyTorch raises ValueError; "
        "pass {attr}= when building the loader (or build a new one)"
    )
    CONDITION = (("attribute_set",),)
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for mutation in facts.mutations:
            target = mutation.node
            if not isinstance(target, cst.Attribute) or target.attr.value not in LOCKED_ATTRIBUTES:
                continue
            if facts.flow.may_be_loader(target.value, mutation.ctx.scope) or _after_super_init(facts, mutation):
                yield cls.finding(target, attr=target.attr.value)


def _after_super_init(facts: FileFacts, mutation: Mutation) -> bool:
    """`self.<attr> = ...` in a method of a same-file loader subclass, after `super().__init__(...)`."""
    func = mutation.ctx.function
    base = mutation.node.value if isinstance(mutation.node, cst.Attribute) else None
    if func is None or func.cls is None or not isinstance(base, cst.Name) or func.params[:1] != [base.value]:
        return False
    if not facts.file.is_loader_class(func.cls) or not isinstance(func.node.body, cst.IndentedBlock):
        return False
    statements = list(func.node.body.body)
    inits = [r.node for r in facts.graph.calls_in(func) if _is_super_init(r.node)]
    first_init = min((i for i, s in enumerate(statements) if any(_contains(s, c) for c in inits)), default=None)
    here = next((i for i, s in enumerate(statements) if _contains(s, mutation.node)), None)
    if first_init is None or here is None or here <= first_init:
        return False
    # `self._DataLoader__initialized = False` first (timm's MultiEpochsDataLoader): PyTorch then accepts it.
    cleared = False
    for statement in statements[first_init + 1:here]:
        guard = _initialized_flag(statement, base.value)
        if guard is not None:
            cleared = not guard
    return not cleared


def _initialized_flag(statement: cst.CSTNode, me: str) -> Optional[bool]:
    """The value a statement `self._DataLoader__initialized = <True/False>` gives DataLoader's guard."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == me):
        return None
    if target.attr.value != "_DataLoader__initialized" or not isinstance(value, cst.Name):
        return None
    return {"True": True, "False": False}.get(value.value)


def _is_super_init(call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    stack = [root]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(children(current))
    return False
