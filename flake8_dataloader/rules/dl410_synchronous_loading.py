"""DL410 synchronous-loading: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .base import NEEDS_LOADER, WRITTEN_HERE, Finding, Rule, show_workers

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class SynchronousLoading(Rule):
    """
    ## What it does
    Flags a loader proven to run in the main process (`num_workers` 0 or omitted) that is iterated every
    epoch.

    ## Why is this bad?
    Without workers, every batch is loaded and collated in the training
    process, between training steps: the accelerator waits for data.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, batch_size=32, shuffle=True)
        for epoch in range(10):
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                pass
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def evaluate(dataset):
        for batch in DataLoader(dataset, batch_size=64):  # once, not every epoch
            pass
    ```

    ## Options
    Enable with `--extend-select=DL410`.

    ## Known limits
    - Small in-memory datasets can be faster without workers.
    - A loader subclass that defines `__iter__` (MONAI's `ThreadDataLoader`, which loads from a background
      thread) iterates its own way: its calls are not reported.
    - Anchor: the call.

    ## References
    - [Single- and multi-process data loading](https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading).
    """

    CODE = "DL410"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "synchronous-loading"
    MESSAGE = "single-process DataLoader ({workers}) in a training loop: loading blocks every step; set num_workers > 0"
    CONDITION = (("loader",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER
    DEFAULT_OFF = True

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in facts.flow.loader_calls.values():
            if call.source.node in facts.loaders.own_iteration:
                continue  # a subclass's own `__iter__` may load ahead (a thread buffer): not proven synchronous
            found = next((v for s, v in facts.iteration.versions(call) if v.single_process() and facts.iteration.iterated_repeatedly(s)), None)
            if found is not None:
                yield cls.finding(call.node, workers=show_workers(found))
