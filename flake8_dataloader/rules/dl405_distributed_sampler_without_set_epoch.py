"""DL405 distributed-sampler-without-set-epoch: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

import libcst as cst

from ..facts.samplers import for_evaluation, helper_origin, loader_samplers, set_epoch_reaches
from .base import NEEDS_LOADER, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags a `DistributedSampler` built in this file (shuffle not `False`)
    whose loader is iterated every epoch while no `set_epoch` call on that
    sampler (or on `loader.sampler`) exists. The sampler is followed through
    the value flow: any binding (`DistributedSampler(ds) if ddp else None`,
    if/else), a class chosen by name (`S = DistributedSampler if ddp else
    RandomSampler`), a same-file helper that returns one, a same-file
    subclass, a batch sampler built over it, a factory returning the loader
    in a tuple.

    ## Why is this bad?
    DistributedSampler shuffles with `seed + epoch`; without `set_epoch` the
    epoch stays 0 and every epoch visits the samples in the same order.

    ## Example
    ```python
    from torch.utils.data import DataLoader, DistributedSampler


    def train(dataset):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, DistributedSampler


    def train(dataset):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            sampler.set_epoch(epoch)
            for batch in loader:
                pass
    ```

    ## Details
    - A conditional expression is each of its values: `sampler=...Sampler(ds)
      if flag else None` may be that sampler.

    ## Not reported
    ```python
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    def evaluate(dataset, epochs):
        sampler = DistributedSampler(dataset, shuffle=False)  # the order is meant to repeat
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(epochs):
            for batch in loader:
                pass
    ```

    ## Options
    None.

    ## Known limits
    - Frameworks: Lightning (hooks and loaders passed to `fit`) and
      accelerate's prepared loaders call `set_epoch` themselves, and so does
      the transformers Trainer on the loaders it builds: a loader handed to
      them is never reported.
    - Ignite never calls it: a loader run by an engine for several epochs is
      reported unless a handler calls `set_epoch` on the sampler or
      `setup_common_training_handlers(..., train_sampler=sampler)` is called
      (`runtime_checks --rule DL402`: sampler epoch after 3 epochs 2 under
      Lightning and accelerate, 0 under Ignite).
    - A `set_epoch` call counts when its receiver may be that sampler: the
      sampler itself, `loader.sampler`, `batch_sampler.sampler`, or a
      parameter of a same-file function the file calls with it, also the
      `.sampler` of a loader parameter
      (`dataloader.sampler.set_epoch(epoch)` in a `_run_epoch(self, epoch,
      dataloader)` the file calls with the loader); a `set_epoch` on another
      loader's sampler does not count.
    - When a receiver cannot be followed (a parameter no call of the file
      passes, an attribute of an object made elsewhere), nothing is reported
      in the file: that call may be the fix.
    - Not reported for a loader or sampler named for evaluation (its name
      contains `val`, `test` or `eval`): its order does not matter.
    - Anchor: the sampler's construction.

    ## References
    - [`DistributedSampler`](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler): call `set_epoch(epoch)` before each epoch's iterator is created, or every epoch uses the same order.
    - [`torch/utils/data/distributed.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/distributed.py): the permutation is seeded with `seed + epoch`.
    """

    CODE = "DL405"
    ACROSS_FILES = (
        "A DistributedSampler built inside a factory imported from the project (and not given its epoch there) "
        "is followed: the factory's call here is reported, naming the sampler's file and line, unless this file "
        "calls `set_epoch` on the loader's `.sampler`. So is one returned by an imported helper "
        "(`sampler = make_sampler(ds)`, alone or as an element of a returned tuple) and given to a loader here: "
        "the helper's call is reported, unless this file calls `set_epoch` on its result or on the loader's `.sampler`."
    )
    NAME = "distributed-sampler-without-set-epoch"
    MESSAGE = (
        "DistributedSampler{where} without set_epoch(epoch): every epoch uses the same order; "
        "call sampler.set_epoch(epoch) each epoch"
    )
    CONDITION = (("sampler_given",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        epoch_set = set_epoch_reaches(facts)
        if epoch_set is None:
            return  # a set_epoch on a receiver that cannot be followed may be the fix
        reported: Set[cst.CSTNode] = set()
        for call in facts.flow.loader_calls.values():
            if facts.iteration.epoch_set_by_framework(call):
                continue  # Lightning and accelerate's prepared loaders call set_epoch themselves
            for sampler in loader_samplers(facts, call):
                if sampler in reported or sampler in epoch_set or for_evaluation(facts, call, sampler):
                    continue
                if any(facts.iteration.iterated_repeatedly(site) for site in facts.iteration.sites_of_call(call)):
                    reported.add(sampler)
                    origin = helper_origin(facts, call, sampler)  # a helper of another module built it
                    yield cls.finding(sampler, where=f" (built at {origin})" if origin is not None else "")
        for call in facts.loaders.foreign_calls:  # built by an imported factory: reported at its call here
            origin = call.foreign.sampler if call.foreign is not None else None
            if origin is None or call.node in reported or call.node in epoch_set:
                continue
            if facts.iteration.epoch_set_by_framework(call):
                continue
            if for_evaluation(facts, call, call.node):
                continue
            if any(facts.iteration.iterated_repeatedly(site) for site in facts.iteration.sites_of_call(call)):
                reported.add(call.node)
                yield cls.finding(call.node, where=f" (built at {origin})")
