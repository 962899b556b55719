"""The linted file's window on its project: imported names looked up in the summaries of their modules."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from ..facts.analysis import FileFacts
from ..facts.foreign import CallableSummary, DatasetSummary, FactorySummary, Origin, SubclassLink
from ..facts.resolve import join_dotted
from ..facts.subclass_init import SubclassInit, over_base
from ..settings import Settings, loader_tails
from . import index, store
from .locate import Location, imports_own_project, installed, locate

# `from .data import Stream` where data/__init__.py re-exports it from .stream, and so on.
MAX_REEXPORTS = index.MAX_REEXPORTS
# Distinct modules one linted file may consult, for summaries and the cheap index together (in the
# order its calls are met: the same every run).
MAX_MODULES_PER_FILE = index.MAX_MODULES_PER_FILE


class Defined(NamedTuple):
    """What one imported name is, in the summary of the module that defines it."""

    dataset: Optional[DatasetSummary] = None
    factory: Optional[FactorySummary] = None
    callable: Optional[CallableSummary] = None
    shards: Optional[bool] = None  # a function: whether it reads get_worker_info() (a worker_init_fn)
    lightning: bool = False  # a class subclassing a Lightning module or datamodule
    samplers: Tuple[Tuple[Tuple[int, ...], Origin], ...] = ()  # a function returning DistributedSamplers
    engine: bool = False  # a function returning an Ignite engine
    trainer: bool = False  # a Lightning Trainer subclass, or a function returning a Trainer
    loader_class: Optional[bool] = None  # a loader subclass: whether it forwards DataLoader's arguments as they are
    loader_init: Optional[SubclassInit] = None  # one that does not forward: what its `__init__` leaves known
    loader_iterates: bool = False  # a loader subclass defining `__iter__`
    path: Optional[str] = None  # the module it was found in (set only when something was found)


NOTHING = Defined()


class ImportView:
    """Answers the facts' questions about imported names (facts.foreign.Imports)."""

    def __init__(self, filename: str, settings: Settings) -> None:
        self.importer = os.path.abspath(filename)
        self.settings = settings
        self._memo: Dict[str, Defined] = {}
        self._factories: Dict[str, FactorySummary] = {}  # with their dataset classes' summaries
        self.used = False  # some imported name was found: the file's facts depend on other modules
        self.enabled = not installed(self.importer)
        self._consulted: Set[str] = set()
        self._tails = loader_tails(settings)

    def dataset(self, qualname: str) -> Optional[DatasetSummary]:
        return self._find(qualname).dataset

    def factory(self, qualname: str) -> Optional[FactorySummary]:
        # Every imported call is asked: the cheap index answers for names that build no loader,
        # so a module is summarised (a LibCST parse) only for a name that may be a factory.
        if self.enabled and qualname not in self._memo and not index.may_build(
            qualname, self.importer, self._tails, self._consulted, MAX_MODULES_PER_FILE
        ):
            return None
        found = self._find(qualname)
        if found.factory is None or found.path is None:
            return found.factory
        enriched = self._factories.get(qualname)
        if enriched is None:
            enriched = self._factories[qualname] = self._with_datasets(found.factory, found.path)
        return enriched

    def _with_datasets(self, factory: FactorySummary, path: str) -> FactorySummary:
        """The factory with the summaries of the dataset classes its loaders are built from, looked up
        from its own module (a summary of summaries, one level: those summaries are not followed on)."""
        loaders = []
        for element, summaries in factory.loaders:
            filled = []
            for loader in summaries:
                found: List[DatasetSummary] = []
                if loader.own_datasets:
                    own = store.entry(path, self.settings).summary.datasets
                    found += [own[name] for name in loader.own_datasets if name in own]
                for name in loader.datasets:
                    dataset = self._lookup(name, path, MAX_REEXPORTS, set()).dataset
                    if dataset is not None:
                        found.append(dataset)
                filled.append(loader._replace(dataset_summaries=tuple(found)) if found else loader)
            loaders.append((element, tuple(filled)))
        return factory._replace(loaders=tuple(loaders))

    def callable(self, qualname: str) -> Optional[CallableSummary]:
        return self._find(qualname).callable

    def worker_init_shards(self, qualname: str) -> Optional[bool]:
        return self._find(qualname).shards

    def lightning_class(self, qualname: str) -> bool:
        return self._find(qualname).lightning

    def sampler_helper(self, qualname: str) -> Tuple[Tuple[Tuple[int, ...], Origin], ...]:
        return self._find(qualname).samplers

    def engine_helper(self, qualname: str) -> bool:
        return self._find(qualname).engine

    def trainer_helper(self, qualname: str) -> bool:
        return self._find(qualname).trainer

    def loader_class(self, qualname: str) -> Optional[bool]:
        # Asked of every imported callee: as for factories, the cheap index answers for most names.
        if self.enabled and qualname not in self._memo and not index.may_build(
            qualname, self.importer, self._tails, self._consulted, MAX_MODULES_PER_FILE
        ):
            return None
        return self._find(qualname).loader_class

    def loader_init(self, qualname: str) -> Optional[SubclassInit]:
        return self._find(qualname).loader_init

    def loader_iterates(self, qualname: str) -> bool:
        return self._find(qualname).loader_iterates

    def defines(self, qualname: str) -> bool:
        """A module of the project summarises something under that name (directly or re-exported)."""
        return self._find(qualname) != NOTHING

    def may_define(self, qualname: str) -> bool:
        """Another module of the project is where the name would be defined (no summary read): when
        not, every question about it answers nothing."""
        location = _defining(qualname, self.importer) if self.enabled else None
        return location is not None and location.path != self.importer

    def _find(self, qualname: str) -> Defined:
        if not self.enabled:
            return NOTHING
        found = self._memo.get(qualname)
        if found is None:
            found = self._memo[qualname] = self._lookup(qualname, self.importer, MAX_REEXPORTS, set())
            self.used = self.used or found != NOTHING
        return found

    def imports_own_modules(self, tree: Optional[ast.AST]) -> bool:
        """Some import of the file names another module of its project: only then can its facts
        differ from the file's facts alone."""
        return self.enabled and (tree is None or imports_own_project(tree, self.importer))

    def remember(self, source: str, tree: Optional[ast.AST], module: cst.Module, facts: FileFacts) -> None:
        """Keep the linted file's own summary for the files that import it, when its facts are those of
        the file alone (nothing imported was found) and it is the text on disk: no second parse."""
        if self.enabled and not self.used:
            store.remember(self.importer, source, tree, module, facts, self.settings)

    def _lookup(self, qualname: str, importer: str, budget: int, seen: Set[Tuple[str, str]]) -> Defined:
        location = _defining(qualname, importer)
        if location is None or location.path == self.importer:
            return NOTHING
        name = location.rest[0]
        if (location.path, name) in seen:  # re-exports that import each other
            return NOTHING
        seen.add((location.path, name))
        if location.path not in self._consulted:
            if len(self._consulted) >= MAX_MODULES_PER_FILE:
                return NOTHING
            self._consulted.add(location.path)
        entry = store.entry(location.path, self.settings)
        summary = entry.summary
        found = Defined(
            summary.datasets.get(name), summary.factories.get(name), summary.callables.get(name),
            summary.shards.get(name), name in summary.lightning, summary.samplers.get(name, ()),
            name in summary.engines, name in summary.trainers, summary.loader_classes.get(name),
            SubclassInit(name, summary.loader_workers.get(name)) if summary.loader_classes.get(name) is False else None,
            name in summary.loader_iterators,
        )
        link = summary.subclass_links.get(name)
        if link is not None and found.loader_class is None and budget > 0:
            found = self._chained(name, found, link, location.path, budget - 1, seen)
        if found != NOTHING:
            return found._replace(path=location.path)
        if budget <= 0:
            return found
        if name in entry.exports:
            return self._lookup(entry.exports[name], location.path, budget - 1, seen)
        for module in entry.stars:
            star = join_dotted(module, name)
            found = self._lookup(star, location.path, budget - 1, seen)
            if found != NOTHING:
                return found
        return NOTHING

    def _chained(
        self, name: str, found: Defined, link: SubclassLink, path: str, budget: int, seen: Set[Tuple[str, str]]
    ) -> Defined:
        """A class whose imported base is a loader subclass of the project is one too (Across files: loader
        subclasses of the project, at any depth within the lookup's bounds): its calls read as its base's
        when it adds nothing, otherwise what it omits is unknown but the `num_workers` it decides or hands on."""
        base = self._lookup(link.base, path, budget, seen)
        if base.loader_class is None:
            return found
        found = found._replace(loader_iterates=link.iterates or base.loader_iterates)
        if link.forwards:
            return found._replace(loader_class=base.loader_class, loader_init=base.loader_init)
        init = over_base(name, link.workers, link.hands_on, base.loader_init)
        return found._replace(loader_class=False, loader_init=init)


def _defining(qualname: str, importer: str) -> Optional[Location]:
    """The module of the project whose top level would define ``qualname``, seen from ``importer``;
    None when no module of the project would."""
    location = locate(qualname, importer)
    return location if location is not None and len(location.rest) == 1 else None
