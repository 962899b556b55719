"""The facts one file's rules read, built once: the layers stacked in dependency order.

classes (ClassFacts) < call graph (CallGraph) < value flow (ValueFlow)
< loader sites and factories (LoaderFacts) < iteration (IterationFacts).
Rules call the typed queries of these layers, never the collector.
"""

from __future__ import annotations

from typing import FrozenSet, List, Optional

from .classes import last_name
from .collector import Collector
from .foreign import Imports
from .iteration import IterationFacts
from .loaders import read_arguments
from .loops import drop_single_pass_loops
from .model import Mutation

__all__ = ["FileFacts", "last_name", "read_arguments"]


class FileFacts(IterationFacts):
    """Everything known about one file; built once, read by every rule."""

    def __init__(self, collector: Collector, loader_names: FrozenSet[str], imports: Optional[Imports] = None) -> None:
        drop_single_pass_loops(collector)
        super().__init__(collector, loader_names, imports)

    @property
    def mutations(self) -> List[Mutation]:
        """Attribute and item assignments, in source order."""
        return self._collector.mutations
