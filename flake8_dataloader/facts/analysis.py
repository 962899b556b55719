"""The facts one file's rules read, built once: the layers stacked in dependency order.

classes (ClassFacts) < call graph (CallGraph) < value flow (ValueFlow)
< loader sites and factories (LoaderFacts) < iteration (IterationFacts).
Rules call the typed queries of these layers, never the collector.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional

import libcst as cst

from .classes import last_name
from .collector import Collector
from .foreign import Imports
from .iteration import IterationFacts
from .loaders import read_arguments
from .loops import drop_single_pass_loops
from .model import Mutation
from .mutation import LoopChanges, LoopTouches, Reseeds

__all__ = ["FileFacts", "last_name", "read_arguments"]


class FileFacts(IterationFacts):
    """Everything known about one file; built once, read by every rule."""

    def __init__(self, collector: Collector, loader_names: FrozenSet[str], imports: Optional[Imports] = None) -> None:
        drop_single_pass_loops(collector)
        super().__init__(collector, loader_names, imports)
        self._loop_changes: Optional[LoopChanges] = None
        self._reseeds: Optional[Reseeds] = None
        self._loop_touches: Optional[LoopTouches] = None
        self._call_order: Optional[Dict[cst.CSTNode, int]] = None

    @property
    def mutations(self) -> List[Mutation]:
        """Attribute and item assignments, in source order."""
        return self._collector.mutations

    @property
    def loop_changes(self) -> LoopChanges:
        """What each loop body changes in place (built when a rule first asks)."""
        if self._loop_changes is None:
            self._loop_changes = LoopChanges(self)
        return self._loop_changes

    def starts_before(self, call: cst.Call, node: cst.CSTNode) -> bool:
        """``call`` starts before ``node`` (a call, a loop, an iterated expression) in the source."""
        if self._call_order is None:
            self._call_order = {record.node: index for index, record in enumerate(self.calls)}
        order = self._call_order.get(node)
        if order is None:
            order = self._collector.calls_before.get(node, 0)
        return self._call_order.get(call, order) < order

    @property
    def loop_touches(self) -> LoopTouches:
        """What each loop's statements may change through, indexed (built when a rule first asks)."""
        if self._loop_touches is None:
            self._loop_touches = LoopTouches(self)
        return self._loop_touches

    @property
    def reseeds(self) -> Reseeds:
        """Where the file reseeds torch (built when a rule first asks)."""
        if self._reseeds is None:
            self._reseeds = Reseeds(self)
        return self._reseeds
