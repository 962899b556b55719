"""DL501 unsharded-iterable-dataset: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from ..facts.calls import partial_target
from ..facts.class_traits import iterable_classes, reads_worker_info, shards_by_worker
from .base import INHERITS, NEEDS_LOADER, Finding, Rule, show_workers

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


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
    - A `worker_init_fn` defined in this file silences the finding only when
      it can shard, i.e. it reads `get_worker_info()` (itself or through the
      functions it calls); one that only seeds leaves the stream reported.
    - A `worker_init_fn` imported from the project is read in its module the
      same way; one defined elsewhere (a library's, a parameter) is assumed
      to shard.
    - A loader that is never iterated is not reported: bound to a name that
      is only read for its attributes (`loader.batch_size`) or by a builtin
      that only reads (`len`, `print`), it starts no worker. Any other use
      (iterated, returned, stored on an object, handed to a call) may
      iterate it and keeps the finding, and so does a module-level loader
      its module never reads (another module may import it).
    - Anchor: the loader call.

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
    CONDITION = (("workers", "stream_class"), ("workers", "imported_stream"), ("imported_builder",))
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
