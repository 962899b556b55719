"""A class of this file that subclasses a dataset class of another project module inherits its summary.

What the summary says holds for the subclass as long as the subclass (or a same-file class between
it and the imported base) leaves alone the methods it was read from: `__init__` for what is held on
`self` (kept when the subclass's `__init__` calls `super().__init__` and does not assign that
attribute), `__getitem__`/`__getitems__`/`__iter__` for CUDA calls and indexed containers, `__iter__`
for sharding and single use. An overridden method drops what came from it; for sharding, an
overridden `__iter__` counts as one that may shard (no DL501 on a guess).
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from .calls import CallGraph
from .classes import ClassFacts
from .foreign import DatasetSummary
from .model import ClassInfo, FunctionInfo

READ_METHODS = ("__getitem__", "__getitems__", "__iter__")


def _calls_super_init(graph: CallGraph, init: FunctionInfo) -> bool:
    for record in graph.calls_in(init):
        func = record.node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "__init__"
            and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name)
            and func.value.func.value == "super"
        ):
            return True
    return False


def _reassigns(chain: List[ClassInfo], attr: str) -> bool:
    """A class of the file between the subclass and its imported base assigns `self.<attr>`."""
    return any(attr in klass.self_attrs for klass in chain)


def inherited_dataset(file: ClassFacts, graph: CallGraph, cls: ClassInfo) -> Optional[DatasetSummary]:
    """The summary of the imported dataset class ``cls`` derives from, as it holds for ``cls``."""
    if file.imports is None:
        return None
    base: Optional[DatasetSummary] = None
    for target in sorted(t for t in file.class_targets(cls) if isinstance(t, str)):
        base = file.imports.dataset(target)
        if base is not None:
            break
    if base is None:
        return None
    chain = [cls, *file.base_classes(cls)]
    defined = {name for klass in chain for name in klass.methods}
    summary = base._replace(name=f"{cls.name}, a subclass of {base.name}")
    if "__iter__" in defined:
        summary = summary._replace(shards=True, single_use=None, iter_origin=None)
    if defined & set(READ_METHODS):
        summary = summary._replace(cuda=None, containers=())
    inits = [klass.methods["__init__"] for klass in chain if "__init__" in klass.methods]
    replaced_init = any(not _calls_super_init(graph, init) for init in inits)
    if summary.held is not None and (replaced_init or _reassigns(chain, summary.held[0])):
        summary = summary._replace(held=None)
    if summary.rngs:  # the base's RNGs, unless its __init__ is replaced or the attribute assigned again
        kept = () if replaced_init else tuple(rng for rng in summary.rngs if not _reassigns(chain, rng[0]))
        summary = summary._replace(rngs=kept)
    return summary
