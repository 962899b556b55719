"""DL603 cuda-default-device-with-shuffle: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, FrozenSet, Iterator

import libcst as cst

from ..facts.class_traits import is_cuda_text
from ..facts.resolve import Scope, call_qualnames, evaluate, resolve
from ..facts.states import Known
from .base import NEEDS_LOADER, PER_FILE, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


CUDA_TENSOR_TYPES = "torch.cuda."


def sets_cuda_default(facts: FileFacts) -> bool:
    """`torch.set_default_device("cuda")` or `torch.set_default_tensor_type(torch.cuda.FloatTensor)`."""
    for record in facts.file.calls:
        names = call_qualnames(record.node, record.ctx.scope)
        if not record.node.args:
            continue
        value = record.node.args[0].value
        if names == {"torch.set_default_device"} and is_cuda_text(value, record.ctx.scope):
            return True
        if names == {"torch.set_default_tensor_type"}:
            text = evaluate(value, record.ctx.scope)
            if isinstance(text, Known) and isinstance(text.value, str) and text.value.startswith(CUDA_TENSOR_TYPES):
                return True
            targets = resolve(value, record.ctx.scope)
            if targets and all(isinstance(t, str) and t.startswith(CUDA_TENSOR_TYPES) for t in targets):
                return True
    return False


RANDOM_SAMPLERS: FrozenSet[str] = frozenset({"torch.utils.data.RandomSampler", "torch.utils.data.sampler.RandomSampler"})


class CudaDefaultDeviceWithShuffle(Rule):
    """
    ## What it does
    Flags a loader that shuffles (`shuffle=True`, or a `RandomSampler` built
    without `generator=`) and passes no `generator=` in a file that makes
    CUDA the default device (`torch.set_default_device("cuda")`,
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`); and the
    reverse: `generator=torch.Generator(device="cuda")` on a shuffling
    loader in a file that does not.

    ## Why is this bad?
    `RandomSampler` draws its order with `torch.randperm(n, generator=...)`
    from a CPU generator it creates; with CUDA as the default device that
    raises `RuntimeError: Expected a 'cuda' device type for generator but
    found 'cpu'` at the first iteration (`torch/utils/data/sampler.py`; the
    CUDA run in Measured cost raised exactly this, and its fix ran). The
    reverse mismatch raises "Expected a 'cpu' device type for generator but
    found 'cuda'" (read from the source, not measured).

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32, shuffle=True, generator=torch.Generator(device="cuda"))
    ```

    ## Details
    - A conditional expression is each of its values: `sampler=...Sampler(ds)
      if flag else None` may be that sampler.

    ## Not reported
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32)  # sequential: no generator drawn
    ```

    ## Options
    None.

    ## Known limits
    - The CUDA generator fix was measured on one GPU and one torch version
      (2.11 on an NVIDIA H200); building the loader before switching the
      default device was not measured.
    - A default device set in another module is not seen.
    - Anchor: the loader call.

    ## References
    - [`torch.set_default_device`](https://pytorch.org/docs/stable/generated/torch.set_default_device.html).
    - [`torch/utils/data/sampler.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/sampler.py): `RandomSampler.__iter__` builds a CPU `torch.Generator()` when none is given.
    """

    CODE = "DL603"
    ACROSS_FILES = PER_FILE
    NAME = "cuda-default-device-with-shuffle"
    MESSAGE = "{problem}"
    CONDITION = (("cuda_default", "shuffles"), ("cuda_default", "imported_builder"))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        cuda_default = sets_cuda_default(facts)
        for call in facts.flow.loader_calls.values():
            if not _shuffles(facts, call):
                continue
            generator = call.args["generator"]
            if cuda_default and generator.omitted:
                yield cls.finding(call.node, problem=(
                    "shuffling DataLoader with CUDA as the default device and no generator: RandomSampler's CPU "
                    "generator raises RuntimeError at the first batch; pass generator=torch.Generator(device='cuda')"
                ))
            elif not cuda_default and generator.expr is not None and _cuda_generator(generator.expr, call.ctx.scope):
                yield cls.finding(call.node, problem=(
                    "shuffling DataLoader given a CUDA generator while the default device is the CPU: RuntimeError "
                    "at the first batch; use torch.Generator() (CPU)"
                ))


def _shuffles(facts: FileFacts, call) -> bool:
    if call.args["shuffle"].known_truthy():
        return True
    sampler = call.args["sampler"].expr
    if sampler is None:
        return False
    for value in facts.flow.values(sampler, call.ctx.scope):
        node = value.node
        if isinstance(node, cst.Call) and call_qualnames(node, value.scope) and call_qualnames(node, value.scope) <= RANDOM_SAMPLERS:
            if not any(arg.keyword is not None and arg.keyword.value == "generator" for arg in node.args):
                return True
    return False


def _cuda_generator(expr: cst.BaseExpression, scope: Scope) -> bool:
    if not isinstance(expr, cst.Call) or call_qualnames(expr, scope) != {"torch.Generator"}:
        return False
    return any((arg.keyword is None or arg.keyword.value == "device") and is_cuda_text(arg.value, scope)
               for arg in expr.args)
