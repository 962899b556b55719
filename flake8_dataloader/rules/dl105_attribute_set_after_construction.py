"""DL105 attribute-set-after-construction: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from ..facts.model import Mutation
from ..facts.nodes import children
from .base import NEEDS_LOADER, WRITTEN_HERE, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


LOCKED_ATTRIBUTES = ("dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers")


class AttributeSetAfterConstruction(Rule):
    """
    ## What it does
    Flags an assignment to `dataset`, `batch_size`, `sampler`,
    `batch_sampler`, `drop_last` or `persistent_workers` of a loader that is
    already built (however the file carries it: a name, `self.loader`, a
    list element, a factory's result), and to `self.<those>` in a
    DataLoader subclass of this file after its `super().__init__(...)`.

    ## Why is this bad?
    `DataLoader.__setattr__` refuses them once `__init__` has run: `ValueError:
    dataset attribute should not be set after DataLoader is initialized`.
    The sampler and batch sampler are built from these values in
    `__init__`, so a later change could not take effect anyway. Reproduced
    by `python -m runtime_checks --rule DL105` (Measured cost, below).

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def curriculum(easy, hard):
        loader = DataLoader(easy, batch_size=32, num_workers=2)
        loader.dataset = hard
        return loader
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def curriculum(easy, hard):
        return DataLoader(hard, batch_size=32, num_workers=2)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    class Loader(DataLoader):
        def __init__(self, dataset, **kwargs):
            self.note = "before"  # not a locked attribute
            super().__init__(dataset, **kwargs)
            self.num_workers = 0  # num_workers, collate_fn, pin_memory may be set


    def settable(dataset):
        loader = DataLoader(dataset, num_workers=2)
        loader.collate_fn = None
        loader.pin_memory = True
        return loader


    class MultiEpochs(DataLoader):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._DataLoader__initialized = False  # PyTorch's guard cleared first: accepted
            self.batch_sampler = list(self.batch_sampler)
            self._DataLoader__initialized = True
    ```

    ## Options
    `--dataloader-names` adds loader classes.

    ## Known limits
    - `num_workers`, `collate_fn`, `pin_memory` and `shuffle` can be set and
      are not reported.
    - `setattr(loader, "dataset", ...)` with a string is not followed.
    - In a subclass, an assignment counts as after `super().__init__` when
      it is in a later statement of the same method. It is not reported when
      a statement between them sets `self._DataLoader__initialized = False`
      (and none sets it back to `True` before it), as timm's
      `MultiEpochsDataLoader` does: PyTorch's guard is then off.
    - Inside a class named `DataLoader`, `self.__initialized = False` is that
      same guard (name mangling spells it `_DataLoader__initialized`); in a
      class of another name it is not.
    - Anchor: the assignment.

    ## References
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `DataLoader.__setattr__` raises for these attributes once the loader is initialized.
    """

    CODE = "DL105"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "attribute-set-after-construction"
    MESSAGE = (
        "{attr} of a built DataLoader cannot be set: PyTorch raises ValueError; "
        "pass {attr}= when building the loader (or build a new one)"
    )
    CONDITION = (("attribute_set",),)
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for mutation in facts.mutations:
            target = mutation.node
            if not isinstance(target, cst.Attribute) or target.attr.value not in LOCKED_ATTRIBUTES:
                continue
            if facts.flow.may_be_loader(target.value, mutation.ctx.scope) or _after_super_init(facts, mutation):
                yield cls.finding(target, attr=target.attr.value)


def _after_super_init(facts: FileFacts, mutation: Mutation) -> bool:
    """`self.<attr> = ...` in a method of a same-file loader subclass, after `super().__init__(...)`."""
    func = mutation.ctx.function
    base = mutation.node.value if isinstance(mutation.node, cst.Attribute) else None
    if func is None or func.cls is None or not isinstance(base, cst.Name) or func.params[:1] != [base.value]:
        return False
    if not facts.file.is_loader_class(func.cls) or not isinstance(func.node.body, cst.IndentedBlock):
        return False
    statements = list(func.node.body.body)
    inits = [r.node for r in facts.graph.calls_in(func) if _is_super_init(r.node)]
    first_init = min((i for i, s in enumerate(statements) if any(_contains(s, c) for c in inits)), default=None)
    here = next((i for i, s in enumerate(statements) if _contains(s, mutation.node)), None)
    if first_init is None or here is None or here <= first_init:
        return False
    # `self._DataLoader__initialized = False` first (timm's MultiEpochsDataLoader): PyTorch then accepts it.
    cleared = False
    for statement in statements[first_init + 1:here]:
        guard = _initialized_flag(statement, base.value, func.cls.name)
        if guard is not None:
            cleared = not guard
    return not cleared


def _initialized_flag(statement: cst.CSTNode, me: str, cls_name: str) -> Optional[bool]:
    """The value a statement `self._DataLoader__initialized = <True/False>` gives DataLoader's guard."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == me):
        return None
    if _mangled(target.attr.value, cls_name) != "_DataLoader__initialized" or not isinstance(value, cst.Name):
        return None
    return {"True": True, "False": False}.get(value.value)


def _mangled(attr: str, cls_name: str) -> str:
    """`attr` as Python stores it when written inside class `cls_name` (private name mangling)."""
    owner = cls_name.lstrip("_")
    if attr.startswith("__") and not attr.endswith("__") and owner:
        return f"_{owner}{attr}"
    return attr


def _is_super_init(call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    stack = [root]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(children(current))
    return False
