"""The facts one file's rules read, built once: layers composed in dependency order.

    file (ClassFacts: the traversal's records, classes, the work budget)
    graph (CallGraph: file)                 which function each call runs
    flow (ValueFlow: file, graph)           what each expression may hold
    loaders (LoaderFacts: file, graph, flow) loader calls and factories; fills flow's site tables
    frameworks (FrameworkUses: the four)    what Lightning, transformers, accelerate, Ignite get
    iteration (IterationFacts: all five)    where each loader is iterated, every epoch or once

Each layer holds the layers it reads and nothing above it. Rules read this facade: the layers by
name (``facts.flow.sites_of(...)``) and the in-place change indexes built here on first use.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from ..syntax.parsing import parse
from .calls import CallGraph
from .changed_parameters import ChangedParameters
from .classes import ClassFacts, last_name
from .epoch_callbacks import dataset_change_by_callback
from .collector import Collector
from .flow import ValueFlow
from .foreign import Imports
from .inspection import Inspections
from .payload import PassedPayloads
from .framework_uses import FrameworkUses
from .iteration import IterationFacts
from .loader_arguments import read_arguments
from .loaders import LoaderFacts
from .loops import drop_single_pass_loops
from .model import LoaderCall, Mutation
from .mutation import LoopChanges, LoopTouches, Reseeds

__all__ = ["FileFacts", "build_facts", "last_name", "read_arguments"]


class FileFacts:
    """Everything known about one file; built once, read by every rule."""

    def __init__(self, collector: Collector, loader_names: FrozenSet[str], imports: Optional[Imports] = None) -> None:
        drop_single_pass_loops(collector)
        self.file = ClassFacts(collector, loader_names, imports)
        self.graph = CallGraph(self.file)
        self.flow = ValueFlow(self.file, self.graph)
        self.loaders = LoaderFacts(self.file, self.graph, self.flow)
        self.frameworks = FrameworkUses(self.file, self.graph, self.flow, self.loaders)
        self.iteration = IterationFacts(self.file, self.graph, self.flow, self.loaders, self.frameworks)
        self._loop_changes: Optional[LoopChanges] = None
        self._reseeds: Optional[Reseeds] = None
        self._loop_touches: Optional[LoopTouches] = None
        self._call_order: Optional[Dict[cst.CSTNode, int]] = None
        self._inspections: Optional[Inspections] = None
        self._passed_payloads: Optional[PassedPayloads] = None
        self._changed_parameters: Optional[ChangedParameters] = None
        self._epoch_callback: Optional[Tuple[Optional[cst.CSTNode]]] = None
        self._framework_epoch_nodes: Optional[Set[cst.CSTNode]] = None

    @property
    def mutations(self) -> List[Mutation]:
        """Attribute and item assignments, in source order."""
        return self.file.collector.mutations

    @property
    def loop_changes(self) -> LoopChanges:
        """What each loop body changes in place (built when a rule first asks)."""
        if self._loop_changes is None:
            self._loop_changes = LoopChanges(self)
        return self._loop_changes

    def starts_before(self, call: cst.Call, node: cst.CSTNode) -> bool:
        """``call`` starts before ``node`` (a call, a loop, an iterated expression) in the source."""
        if self._call_order is None:
            self._call_order = {record.node: index for index, record in enumerate(self.file.calls)}
        order = self._call_order.get(node)
        if order is None:
            order = self.file.collector.calls_before.get(node, 0)
        return self._call_order.get(call, order) < order

    @property
    def loop_touches(self) -> LoopTouches:
        """What each loop's statements may change through, indexed (built when a rule first asks)."""
        if self._loop_touches is None:
            self._loop_touches = LoopTouches(self)
        return self._loop_touches

    @property
    def framework_epoch_nodes(self) -> Set[cst.CSTNode]:
        """Where a framework iterates the loaders it is handed every epoch."""
        if self._framework_epoch_nodes is None:
            self._framework_epoch_nodes = {handed.node for handed in self.frameworks.handed if handed.repeats}
        return self._framework_epoch_nodes

    @property
    def epoch_callback_change(self) -> Optional[cst.CSTNode]:
        """A dataset change made by a framework's per-epoch callback of this file (found once)."""
        if self._epoch_callback is None:
            self._epoch_callback = (dataset_change_by_callback(self),)
        return self._epoch_callback[0]

    @property
    def changed_parameters(self) -> ChangedParameters:
        """What each same-file function may change in what it is given (built when a rule first asks)."""
        if self._changed_parameters is None:
            self._changed_parameters = ChangedParameters(self)
        return self._changed_parameters

    @property
    def passed_payloads(self) -> PassedPayloads:
        """What the file's calls pass to each parameter that workers cannot import (found when first asked)."""
        if self._passed_payloads is None:
            self._passed_payloads = PassedPayloads(self)
        return self._passed_payloads

    @property
    def inspections(self) -> Inspections:
        """Which loaders are only looked at, never iterated (built when a rule first asks)."""
        if self._inspections is None:
            self._inspections = Inspections()
        return self._inspections

    def never_iterated(self, call: LoaderCall) -> bool:
        """No site of the call is iterated and its name is only read for attributes (v7: built to inspect it)."""
        sites = self.iteration.sites_of_call(call)
        if any(self.iteration.iterations_of(site) for site in sites):
            return False
        return self.inspections.only_inspected(call)

    @property
    def reseeds(self) -> Reseeds:
        """Where the file reseeds torch (built when a rule first asks)."""
        if self._reseeds is None:
            self._reseeds = Reseeds(self)
        return self._reseeds


def build_facts(
    source: str,
    loader_names: FrozenSet[str],
    tree: Optional[ast.AST] = None,
    imports: Optional[Imports] = None,
    parsed: Optional[Tuple[cst.Module, FileFacts]] = None,
) -> Tuple[cst.Module, FileFacts]:
    """One file's tree and facts; with ``imports``, names imported from the project are followed.

    ``parsed``: the module and facts of this same text from an earlier traversal, whose collector
    is reused (the layers only read it, and taking out loops that run once is idempotent).
    Raises ParseFailure.
    """
    if parsed is not None:
        module, collector = parsed[0], parsed[1].file.collector
    else:
        module = parse(source, tree)
        collector = Collector()
        collector.walk(module)
    return module, FileFacts(collector, loader_names, imports)
