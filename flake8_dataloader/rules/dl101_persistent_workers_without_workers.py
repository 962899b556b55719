"""DL101 persistent-workers-without-workers: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .base import NEEDS_LOADER_OR_CONFIG, WRITTEN_HERE, Finding, Rule, show, show_workers
from .dl1_shared import _anchor, calls_and_configs, names

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


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
    - A `num_workers` that is a parameter, a CLI value or bound twice is
      unknown: DL104 covers the crash that waits for `--workers 0`.
    - Through `**kwargs`, `num_workers` is unknown and nothing is reported.
    - Anchor: the `persistent_workers=` keyword.

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
        for call in calls_and_configs(facts):
            persistent = call.args["persistent_workers"]
            if call.single_process() and persistent.known_truthy():
                values = dict(value=show(persistent), workers=show_workers(call))
                if call.keywords is None:
                    yield cls.finding(_anchor(call, "persistent_workers"), **values)
                else:
                    yield cls.framework_finding(
                        _anchor(call, "persistent_workers"), where=call.keywords.raises_at, **names(call), **values
                    )
