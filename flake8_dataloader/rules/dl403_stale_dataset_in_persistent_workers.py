"""DL403 stale-dataset-in-persistent-workers: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

import libcst as cst

from ..facts.mutation import DatasetReferences, assignments_into
from .base import FACTORY_SITES, NEEDS_LOADER, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class StaleDatasetInPersistentWorkers(Rule):
    """
    ## What it does
    Flags a change to the dataset of a loader with `persistent_workers=True`
    made inside the loop that iterates it: attribute or item assignment on
    the dataset object (or `loader.dataset`), or a call of a method of a
    dataset class of this file that assigns `self` attributes.

    ## Why is this bad?
    Persistent workers keep the dataset copy they received at start-up. The
    main process changes its own copy; the workers never see it. Measured:
    `ds.epoch = e` reached non-persistent workers every epoch, persistent
    ones kept seeing the first value.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            dataset.difficulty = epoch / 10
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader


    def train(dataset):
        # A shared-memory tensor is seen by persistent workers.
        dataset.difficulty = torch.zeros(1).share_memory_()
        loader = DataLoader(dataset, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            dataset.difficulty.fill_(epoch / 10)
            for batch in loader:
                pass
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2)  # not persistent: a fresh copy every epoch
        for epoch in range(10):
            dataset.level = epoch
            for batch in loader:
                pass
    ```

    ## Options
    None.

    ## Known limits
    - Method calls on imported datasets are not reported: some (`set_epoch`
      in several libraries) share state with workers through shared memory.
    - Anchor: the mutation.

    ## References
    - [`persistent_workers`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): with it, the workers outlive the end of an epoch and serve the next one.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL403"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the mutation")
    NAME = "stale-dataset-in-persistent-workers"
    MESSAGE = (
        "dataset changed inside the epoch loop is not seen by persistent workers (they keep their "
        "start-up copy); share the value through shared memory or drop persistent_workers"
    )
    CONDITION = (("persistent",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        reported: Set[cst.CSTNode] = set()
        for site in facts.flow.loader_sites():
            if not all(c.args["persistent_workers"].known_truthy() for c in site.calls):
                continue
            dataset = site.calls[0].args["dataset"] if len(site.calls) == 1 and site.node is site.calls[0].node else None
            for it in facts.iteration.iterations_of(site):
                loops = set(it.loops) | ({it.header} if it.header is not None else set())
                for node in cls._mutations(facts, site, dataset, it, loops):
                    if node not in reported:
                        reported.add(node)
                        yield cls.finding(node)

    @classmethod
    def _mutations(cls, facts, site, dataset, it, loops):
        references = DatasetReferences(facts, site)
        yield from assignments_into(facts, references, it, loops)
        klass = None
        if dataset is not None and dataset.expr is not None:
            klass = facts.file.instance_class(dataset.expr, site.ctx.scope)
        if klass is None:
            return
        for record in facts.graph.calls_in(it.ctx.function):
            func = record.node.func
            if not (isinstance(func, cst.Attribute) and loops & set(record.ctx.loops)):
                continue
            if not references.denotes(func.value, record.ctx.scope):
                continue
            method = facts.file.method(klass, func.attr.value)
            if method is not None and any(m is method for vals in klass.self_attrs.values() for _, m in vals):
                yield record.node
