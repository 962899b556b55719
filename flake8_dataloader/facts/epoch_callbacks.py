"""A framework's per-epoch callbacks that change a dataset: part of the epoch loop it runs (v7).

Lightning runs `on_train_epoch_start`/`_end` (and the validation ones) of every `Callback`,
`LightningModule` and `LightningDataModule` each epoch. One that changes the datamodule's dataset
(`trainer.datamodule.train_set.resample()`, `self.train_dataset.set_epoch(...)` in the data
module) is why a project turns persistent workers off on purpose: fresh workers see the change.
"""

from __future__ import annotations

from typing import FrozenSet, Iterator, Optional, Tuple

import libcst as cst

from .frameworks import LIGHTNING_BASES
from .mutation import reference_chain

_PACKAGES = ("lightning.pytorch", "lightning", "pytorch_lightning")
_CALLBACK_PATHS = ("Callback", "callbacks.Callback", "callbacks.callback.Callback")
LIGHTNING_CALLBACKS: FrozenSet[str] = frozenset(f"{pkg}.{path}" for pkg in _PACKAGES for path in _CALLBACK_PATHS)
EPOCH_HOOKS = (
    "on_train_epoch_start",
    "on_train_epoch_end",
    "on_validation_epoch_start",
    "on_validation_epoch_end",
    "on_epoch_start",
    "on_epoch_end",
)
# Attribute names that hold a dataset in the chains such callbacks change.
DATASET_WORDS = ("dataset", "datamodule")
DATASET_SUFFIXES = ("_set", "_ds", "_data")


def dataset_change_by_callback(facts) -> Optional[cst.CSTNode]:
    """The first change of a dataset made by a Lightning per-epoch hook of this file, or None."""
    for klass in facts.file.classes.values():
        if not facts.file.subclasses_any(klass, LIGHTNING_BASES | LIGHTNING_CALLBACKS):
            continue
        for name in EPOCH_HOOKS:
            method = facts.file.method(klass, name)
            if method is None:
                continue
            for expr, node in _changed_in(facts, method):
                if _names_a_dataset(expr):
                    return node
    return None


def _changed_in(facts, method) -> Iterator[Tuple[cst.BaseExpression, cst.CSTNode]]:
    """What the hook's body changes: assignment bases, and receivers of method calls."""
    for mutation in facts.mutations:
        if mutation.ctx.function is method:
            yield mutation.base, mutation.node
    for record in facts.graph.calls_in(method):
        func = record.node.func
        if isinstance(func, cst.Attribute):
            yield func.value, record.node


def _names_a_dataset(expr: cst.BaseExpression) -> bool:
    for part in reference_chain(expr):
        if isinstance(part, cst.Attribute):
            name = part.attr.value.lower()
            if any(word in name for word in DATASET_WORDS) or name.endswith(DATASET_SUFFIXES):
                return True
    return False
