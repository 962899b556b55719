"""DL102 prefetch-without-workers: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .base import NEEDS_LOADER_OR_CONFIG, WRITTEN_HERE, Finding, Rule, show, show_workers, source_of
from .dl1_shared import _anchor, calls_and_configs, names

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


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
    - Unknown `num_workers` is DL104's business.
    - Anchor: the `prefetch_factor=` keyword.

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
        for call in calls_and_configs(facts):
            prefetch = call.args["prefetch_factor"]
            if call.single_process() and prefetch.known_not_none():
                values = dict(value=show(prefetch), workers=show_workers(call))
                if call.keywords is None:
                    yield cls.finding(_anchor(call, "prefetch_factor"), **values)
                else:
                    yield cls.framework_finding(
                        _anchor(call, "prefetch_factor"), config=source_of(call.node.func), **names(call, "prefetch_factor"), **values
                    )
