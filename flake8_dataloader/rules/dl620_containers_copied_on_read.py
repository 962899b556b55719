"""DL620 containers-copied-on-read: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ..facts.class_traits import containers_indexed
from ..facts.classes import self_attribute
from .base import INHERITS, NEEDS_LOADER, Finding, Rule
from .dl6_shared import dataset_classes

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class ContainersCopiedOnRead(Rule):
    """
    ## What it does
    Flags a map-style dataset class of this file that stores on `self` in
    `__init__` a Python list or dict built from data (a comprehension,
    `json.load`, `pickle.load`, `.tolist()`, `.to_dict()`, `list(...)` or
    `sorted(...)` of a call) and indexes it in `__getitem__`, when a loader
    with workers of the class exists in the file.

    ## Why is this bad?
    Reading a Python object touches its reference count, so every forked
    worker gradually copies the pages it reads: memory grows toward
    (workers + 1) times the dataset's size (pytorch#13246). Measured: 2M
    strings and ints, 4 workers, after one epoch ~211 MB private memory per
    worker against ~13 MB with the same data in numpy arrays.

    ## Example
    ```python
    import json

    from torch.utils.data import DataLoader, Dataset


    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as handle:
                self.items = json.load(handle)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            return self.items[index]["caption"]


    def make(path):
        return DataLoader(Captions(path), batch_size=64, num_workers=8)
    ```

    ## Use instead
    ```python
    import json

    import numpy as np
    from torch.utils.data import DataLoader, Dataset


    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as handle:
                # One numpy array of fixed-width strings: no per-object reference counts.
                self.captions = np.array([item["caption"] for item in json.load(handle)])

        def __len__(self):
            return len(self.captions)

        def __getitem__(self, index):
            return str(self.captions[index])


    def make(path):
        return DataLoader(Captions(path), batch_size=64, num_workers=8)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, Dataset


    class Small(Dataset):
        def __init__(self):
            self.labels = ["cat", "dog"]  # a literal, not built from data

        def __len__(self):
            return 2

        def __getitem__(self, index):
            return self.labels[index]


    def make():
        return DataLoader(Small(), num_workers=2)
    ```

    ## Options
    Enable with `--extend-select=DL620`.

    ## Known limits
    - The size is unknown statically: a small list is harmless.
    - Anchor: the assignment.

    ## References
    - [pytorch#13246](https://github.com/pytorch/pytorch/issues/13246): memory of workers grows with a list-based dataset (copy-on-read).
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL620"
    ACROSS_FILES = (
        "A dataset class imported from the project is followed: the worker-using loader call of this file is "
        "reported (or the call of an imported factory whose dataset parameter is given an instance), naming the "
        "class's file and line; the defining file reports the assignment for its own loaders."
    ) + INHERITS
    NAME = "containers-copied-on-read"
    MESSAGE = (
        "self.{attr} is a Python container indexed by every worker of {klass}: each read copies its pages "
        "(memory grows toward workers + 1 copies); store it in numpy arrays or pyarrow instead"
    )
    CONDITION = (("workers",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER
    DEFAULT_OFF = True

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for klass in dataset_classes(facts):
            if not any(facts.iteration.may_use_workers(call) for call in facts.loaders.loaders_using(klass)):
                continue
            for mutation in containers_indexed(facts, klass):
                method = mutation.ctx.function
                attr = self_attribute(mutation.node, method) if method is not None else None
                yield cls.finding(mutation.node, attr=attr, klass=klass.name)
        # Dataset classes of other project modules: reported at the loader (or imported factory) call here.
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            for attr in dataset.containers:
                yield cls.finding(call.node, attr=attr, klass=f"{dataset.name} ({dataset.origin})")
