"""DL602 cuda-in-worker-code: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Set

import libcst as cst

from ..facts.class_traits import READ_METHODS, cuda_call
from ..facts.model import FunctionInfo
from .base import INHERITS, NEEDS_LOADER, Finding, Rule
from .dl6_shared import dataset_classes

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class CudaInWorkerCode(Rule):
    """
    ## What it does
    Flags CUDA work in code that runs inside loader workers: `.cuda()`,
    `.to("cuda")`, `.to(torch.device("cuda"))`, `device="cuda"` in tensor
    creation, or a `torch.cuda.*` call (other than `is_available`,
    `device_count`, `get_device_name`) in `__getitem__`/`__iter__` of a
    dataset class of this file (or what they call), in a `collate_fn` or in a
    `worker_init_fn` (a function or a method of the file, `collate_fn=self.collate`),
    when a loader with workers uses it.

    ## Why is this bad?
    Under fork, once the main process has initialised CUDA, the worker
    raises `RuntimeError: Cannot re-initialize CUDA in forked subprocess`
    (`torch/cuda/__init__.py`). Under spawn each worker creates its own CUDA
    context (hundreds of MB of GPU memory each) and the copy does not
    overlap with compute. Not verified on a GPU here: the scenario needs
    CUDA (Measured cost, below).

    ## Example
    ```python
    from torch.utils.data import DataLoader, Dataset


    class OnDevice(Dataset):
        def __init__(self, samples):
            self.samples = samples

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index].cuda()


    def make(samples):
        return DataLoader(OnDevice(samples), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, Dataset


    class OnHost(Dataset):
        def __init__(self, samples):
            self.samples = samples

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index]


    def make(samples):
        # Move batches in the training loop: batch.to(device, non_blocking=True).
        return DataLoader(OnHost(samples), batch_size=32, num_workers=4, pin_memory=True)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, Dataset


    class Configured(Dataset):
        def __init__(self, samples, device):
            self.samples, self.device = samples, device

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index].to(self.device)  # the device is unknown here


    def make(samples):
        return DataLoader(Configured(samples, "cpu"), batch_size=32)  # and no workers
    ```

    ## Options
    None.

    ## Known limits
    - A device that is not a known string (`.to(self.device)`,
      `.to(args.device)`) is not reported.
    - CUDA tensors stored in `__init__` and read in `__getitem__` are not
      followed yet.
    - Anchor: the CUDA call.

    ## References
    - [CUDA in multiprocessing](https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing): the CUDA runtime does not support fork.
    - [pytorch#40403](https://github.com/pytorch/pytorch/issues/40403): "Cannot re-initialize CUDA in forked subprocess" from a dataset.
    """

    CODE = "DL602"
    ACROSS_FILES = (
        "A dataset class imported from the project whose `__getitem__`/`__iter__` (or what they call) uses CUDA "
        "is followed: the worker-using loader call of this file is reported (or the call of an imported factory "
        "whose dataset parameter is given an instance), naming the method's file and line. collate_fn and "
        "worker_init_fn functions are followed within their file."
    ) + INHERITS
    NAME = "cuda-in-worker-code"
    MESSAGE = (
        "CUDA used in {where}, which runs in the loader's workers (fork: 'Cannot re-initialize CUDA'; spawn: a "
        "CUDA context per worker); return CPU tensors and move batches in the training loop (pin_memory=True)"
    )
    CONDITION = (("workers", "cuda"), ("workers", "imported_cuda"), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        where: Dict[FunctionInfo, str] = {}
        for klass in dataset_classes(facts):
            if any(facts.iteration.may_use_workers(call) for call in facts.loaders.loaders_using(klass)):
                for method in facts.graph.reachable(klass, READ_METHODS):
                    where.setdefault(method, f"{klass.name}.{method.name}")
        for call in facts.flow.loader_calls.values():
            if not facts.iteration.may_use_workers(call):
                continue
            for name in ("collate_fn", "worker_init_fn"):
                for func in facts.graph.reached_from(*facts.graph.functions_of(call.args[name].expr, call.ctx.scope)):
                    where.setdefault(func, f"{name} {func.name}")
        reported: Set[cst.CSTNode] = set()
        for func, label in where.items():
            for record in facts.graph.calls_in(func):
                if record.node not in reported and cuda_call(record.node, record.ctx.scope):
                    reported.add(record.node)
                    yield cls.finding(record.node, where=label)
        # Dataset classes of other project modules: reported at the loader (or imported factory) call here.
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            if dataset.cuda is not None:
                yield cls.finding(call.node, where=f"{dataset.cuda[0]} ({dataset.cuda[1]})")
