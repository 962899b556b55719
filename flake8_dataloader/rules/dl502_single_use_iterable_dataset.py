"""DL502 single-use-iterable-dataset: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ..facts.class_traits import emptied_by, single_use_loaders
from .base import INHERITS, NEEDS_LOADER, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


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
    - Reported once per class, naming the first loader (by line) that
      empties and why: persistent workers, or a single process.
    - A loader whose workers are fresh every epoch is no trigger (each gets
      a new copy).
    - Anchor: the `__iter__` definition.

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
    # A class of this file or an imported one is reported only through a loader call of this file that
    # uses it (single_use_loaders, foreign_datasets); an imported factory's loader at the factory's call.
    CONDITION = (("iter_returns_self", "loader"), ("loader", "imported_stream"), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for klass, returned, loader, emptied in single_use_loaders(facts):
            method = facts.file.method(klass, "__iter__")
            assert method is not None  # single_use_return found its return
            yield cls.finding(method.node, klass=klass.name, what=returned, loader=loader.node, mode=emptied)
        for call in facts.flow.loader_calls.values():
            for dataset in facts.loaders.foreign_datasets(call):
                if dataset.single_use is None or dataset.single_use_reported:
                    continue  # not single-use, or reported at its __iter__ in the module that defines it
                mode = emptied_by(facts, call)
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
                mode = emptied_by(facts, call)
                if mode is not None:
                    what = f"{dataset.single_use} ({dataset.iter_origin})"
                    yield cls.finding(call.node, klass=dataset.name, what=what, loader=call.node, mode=mode)
                    break
