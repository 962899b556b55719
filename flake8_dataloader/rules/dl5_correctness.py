"""DL5xx: data correctness when workers copy an IterableDataset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from ..facts.analysis import last_name
from ..facts.calls import partial_target
from ..facts.model import ClassInfo, FunctionInfo
from ..facts.resolve import resolve
from .base import INHERITS, NEEDS_LOADER, Finding, Rule, show_workers, source_of

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def iterable_classes(facts):
    return [k for k in facts.file.classes.values() if facts.file.dataset_kind(k) == "iterable"]


def reads_worker_info(facts, functions) -> bool:
    for function in functions:
        for record in facts.graph.calls_in(function):
            if last_name(record.node.func) == "get_worker_info":
                return True
            if any(isinstance(t, str) and t.endswith("get_worker_info") for t in resolve(record.node.func, record.ctx.scope)):
                return True
    return False


def shards_by_worker(facts, klass: ClassInfo) -> bool:
    return reads_worker_info(facts, facts.graph.reachable(klass, ("__iter__", "__next__")))


def _init_fn_can_shard(facts, call) -> bool:
    """The loader's worker_init_fn may configure each worker's copy: it reads get_worker_info().

    One this file defines, or imports from its project, must read get_worker_info() (itself or
    through the functions of its module it calls); any other (a parameter, a splat, a library's)
    is assumed to shard.
    """
    init_fn = call.args["worker_init_fn"]
    if init_fn.omitted or (init_fn.known and init_fn.state.value is None):
        return False
    functions = facts.graph.functions_of(init_fn.expr, call.ctx.scope)
    if not functions:
        imported = _imported_shards(facts, init_fn.expr, call.ctx.scope)
        return True if imported is None else imported
    return any(reads_worker_info(facts, facts.graph.reached_from(function)) for function in functions)


def _imported_shards(facts, expr, scope) -> Optional[bool]:
    """Whether a worker_init_fn imported from the project (or `partial` of one) reads get_worker_info()."""
    if expr is None or facts.file.imports is None:
        return None
    qualname = facts.loaders.imported(partial_target(expr), scope)
    return facts.file.imports.worker_init_shards(qualname) if qualname else None


class UnshardedIterableDataset(Rule):
    """
    ## What it does
    Flags a loader with more than one worker (`num_workers` a constant above
    1, or unknown here) and no `worker_init_fn` given an instance of an
    `IterableDataset` subclass of this file whose `__iter__` (or what it
    calls) never consults `get_worker_info()`.

    ## Why is this bad?
    Each worker receives its own copy of the dataset and iterates all of it:
    every sample comes out once per worker. Measured: 2 workers, every sample
    twice; 3 workers, three times. No error, just a silently multiplied epoch.

    ## Example
    ```python
    from torch.utils.data import DataLoader, IterableDataset


    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            with open(self.path) as handle:
                yield from handle


    loader = DataLoader(Lines("train.txt"), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    import itertools

    from torch.utils.data import DataLoader, IterableDataset, get_worker_info


    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            info = get_worker_info()
            worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
            with open(self.path) as handle:
                yield from itertools.islice(handle, worker, None, workers)


    loader = DataLoader(Lines("train.txt"), batch_size=32, num_workers=4)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, IterableDataset


    class Lines(IterableDataset):
        def __iter__(self):
            yield from range(10)


    in_process = DataLoader(Lines())  # one process: nothing is duplicated
    one_worker = DataLoader(Lines(), num_workers=1)  # one copy of the stream: nothing is duplicated
    ```

    ## Options
    None.

    ## Known limits
    A `worker_init_fn` defined in this file silences the finding only when it
    can shard, i.e. it reads `get_worker_info()` (itself or through the
    functions it calls); one that only seeds leaves the stream reported. A
    `worker_init_fn` imported from the project is read in its module the same
    way; one defined elsewhere (a library's, a parameter) is assumed to
    shard. A loader that is never iterated is not reported: bound to a name
    that is only read for its attributes (`loader.batch_size`) or by a
    builtin that only reads (`len`, `print`), it starts no worker. Any other
    use (iterated, returned, stored on an object, handed to a call) may
    iterate it and keeps the finding, and so does a module-level loader its
    module never reads (another module may import it). Anchor: the loader call.

    ## References
    - [`torch.utils.data.IterableDataset`](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset): the documented sharding by `get_worker_info()`.
    """

    CODE = "DL501"
    ACROSS_FILES = "An IterableDataset class imported from the project is followed: the loader call of this file is reported, naming the class's file and line (`StreamDataset (data/stream.py:14)`). The defining file reports its own loaders only." + INHERITS + " An imported factory whose `worker_init_fn` is a parameter (assumed to shard in its module), called here with one that cannot (or none), that builds a worker-using loader from an unsharded IterableDataset class (of its module or one it imports) is reported at this call."
    NAME = "unsharded-iterable-dataset"
    MESSAGE = (
        "IterableDataset {klass} is not split by get_worker_info(): each worker yields the whole stream "
        "({workers}: every sample once per worker); shard it in __iter__ by worker id"
    )
    CONDITION = (("workers",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for klass in iterable_classes(facts):
            if shards_by_worker(facts, klass):
                continue
            for call in facts.loaders.loaders_using(klass):
                if _several_workers(facts, call) and not _init_fn_can_shard(facts, call) and not facts.never_iterated(call):
                    yield cls.finding(call.node, klass=klass.name, workers=show_workers(call))
        for call in facts.flow.loader_calls.values():
            if not _several_workers(facts, call) or _init_fn_can_shard(facts, call) or facts.never_iterated(call):
                continue
            for dataset in facts.loaders.foreign_datasets(call):
                if dataset.kind == "iterable" and not dataset.shards:
                    yield cls.finding(call.node, klass=f"{dataset.name} ({dataset.origin})", workers=show_workers(call))
        # An imported factory whose worker_init_fn is a parameter (its module assumes the one passed shards),
        # called here with one that cannot (or none), building its loader from an unsharded IterableDataset.
        for call in facts.loaders.foreign_calls:
            foreign = call.foreign
            if foreign is None or "worker_init_fn" not in dict(foreign.reads):
                continue
            if not _several_workers(facts, call) or _init_fn_can_shard(facts, call) or facts.never_iterated(call):
                continue
            for dataset in foreign.dataset_summaries:
                if dataset.kind == "iterable" and not dataset.shards:
                    yield cls.finding(call.node, klass=f"{dataset.name} ({dataset.origin})", workers=show_workers(call))
                    break


def _several_workers(facts, call) -> bool:
    return any(version.several_workers() for version in facts.iteration.runs_as(call))


def single_use_return(facts, klass: ClassInfo) -> Optional[str]:
    """'self' or 'self.<attr>' when __iter__ hands back an object that is exhausted after one pass."""
    method: Optional[FunctionInfo] = facts.file.method(klass, "__iter__")
    if method is None or method.is_generator or not method.params:
        return None
    receiver = method.params[0]
    for value in method.returns:
        if isinstance(value, cst.Name) and value.value == receiver:
            return receiver
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == receiver:
            return source_of(value)
    return None


def _emptied_by(facts, call) -> Optional[str]:
    """Why a single-use dataset goes empty in this loader after one epoch; None when it does not."""
    for site, version in facts.iteration.versions(call):
        persistent = version.args["persistent_workers"].known_truthy()
        if (persistent or version.single_process()) and facts.iteration.iterated_repeatedly(site):
            return "its persistent workers keep the used-up copy" if persistent else "a single process reuses the one dataset object"
    return None


class SingleUseIterableDataset(Rule):
    """
    ## What it does
    Flags an `IterableDataset` subclass of this file whose `__iter__` returns
    `self` or an iterator stored on `self` (instead of being a generator or
    building a fresh iterator), when a loader iterated every epoch uses it
    with persistent workers or in a single process.

    ## Why is this bad?
    The first epoch exhausts the iterator; every later epoch is silently
    empty. Measured: 20, 0, 0 samples over 3 epochs with persistent workers;
    10, 0, 0 with `num_workers=0`. There is no "cannot re-enter" error.
    Non-persistent workers get a fresh copy each epoch and keep working.

    ## Example
    ```python
    from torch.utils.data import DataLoader, IterableDataset


    class Stream(IterableDataset):
        def __init__(self, items):
            self.items = iter(items)

        def __iter__(self):
            return self

        def __next__(self):
            return next(self.items)


    def train(items):
        loader = DataLoader(Stream(items), batch_size=8, num_workers=2, persistent_workers=True)
        for epoch in range(3):
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info


    class Stream(IterableDataset):
        def __init__(self, items):
            self.items = items

        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            yield from self.items[start::step]


    def train(items):
        loader = DataLoader(Stream(items), batch_size=8, num_workers=2, persistent_workers=True)
        for epoch in range(3):
            for batch in loader:
                pass
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info


    class Stream(IterableDataset):
        def __init__(self, items):
            self.items = items

        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(self.items[start::step])  # a fresh iterator on every call


    def train(items):
        loader = DataLoader(Stream(items), num_workers=2, persistent_workers=True)
        for epoch in range(3):
            for batch in loader:
                pass
    ```

    ## Options
    None.

    ## Known limits
    Reported once per class, naming the first loader (by line) that empties
    and why: persistent workers, or a single process. A loader whose workers
    are fresh every epoch is no trigger (each gets a new copy). Anchor: the
    `__iter__` definition.

    ## References
    - [`torch.utils.data.IterableDataset`](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset): the documented sharding by `get_worker_info()`.
    """

    CODE = "DL502"
    ACROSS_FILES = "An IterableDataset class imported from the project is followed: the loader call of this file is reported, naming `__iter__`'s file and line, unless a loader of the defining module already triggers the rule (it is then reported once, at `__iter__`, there)." + INHERITS + " A loader an imported factory builds from such a class (of the factory's module or one it imports) and this file iterates every epoch is reported at the factory's call, unless the factory's module iterates it every epoch itself."
    NAME = "single-use-iterable-dataset"
    MESSAGE = (
        "{klass}.__iter__ returns {what}: the loader on line {loader} ({mode}) gets an empty stream "
        "after its first epoch; make __iter__ a generator (yield)"
    )
    CONDITION = (("iter_returns_self",), ("imported_stream",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for klass in iterable_classes(facts):
            what = single_use_return(facts, klass)
            if what is None:
                continue
            for call in facts.loaders.loaders_using(klass):
                mode = _emptied_by(facts, call)
                if mode is not None:
                    method = facts.file.method(klass, "__iter__")
                    assert method is not None  # single_use_return found its return
                    yield cls.finding(method.node, klass=klass.name, what=what, loader=call.node, mode=mode)
                    break
        for call in facts.flow.loader_calls.values():
            for dataset in facts.loaders.foreign_datasets(call):
                if dataset.single_use is None or dataset.single_use_reported:
                    continue  # not single-use, or reported at its __iter__ in the module that defines it
                mode = _emptied_by(facts, call)
                if mode is not None:
                    what = f"{dataset.single_use} ({dataset.iter_origin})"
                    yield cls.finding(call.node, klass=dataset.name, what=what, loader=call.node, mode=mode)
        # A loader an imported factory builds from a dataset class of a third module (or its own), iterated
        # every epoch here: the factory's module cannot see this loop; reported at the factory's call.
        for call in facts.loaders.foreign_calls:
            foreign = call.foreign
            if foreign is None or foreign.repeated_here:
                continue
            for dataset in foreign.dataset_summaries:
                if dataset.single_use is None or dataset.single_use_reported:
                    continue
                mode = _emptied_by(facts, call)
                if mode is not None:
                    what = f"{dataset.single_use} ({dataset.iter_origin})"
                    yield cls.finding(call.node, klass=dataset.name, what=what, loader=call.node, mode=mode)
                    break
