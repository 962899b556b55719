"""What the facts of one file may know about the project's other modules: plain summaries.

A summary holds only what the rules ask of an imported name (a dataset class, a
loader factory, a function or class that iterates what it is given), with the
file and line it is defined at. Summaries are built from the other module's own
facts, never following its imports in turn, so they do not depend on which file
is linted first: `-j1` and `-j2` give the same findings.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, NamedTuple, Optional, Protocol, Tuple

from .binding import Conditions, Signature
from .states import ArgState
from .subclass_init import SubclassInit


class Origin(NamedTuple):
    """Where something of another module is defined: its path (relative to its project root) and line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class DatasetSummary(NamedTuple):
    name: str
    origin: Origin
    kind: Optional[str]  # "iterable" / "map"
    shards: bool  # __iter__ (or what it calls) reads get_worker_info()
    single_use: Optional[str]  # what __iter__ returns when that is used up after one pass ("self")
    iter_origin: Optional[Origin]  # where that __iter__ is
    single_use_reported: bool  # a loader of the defining module already triggers DL502 there
    # (attribute, what) when the class holds something a worker cannot unpickle on self (DL302).
    held: Optional[Tuple[str, str]] = None
    # ("Class.method", "path:line") of a CUDA call in the methods a worker runs to read it (DL602).
    cuda: Optional[Tuple[str, str]] = None
    # `self` attributes holding Python containers built from data that `__getitem__` indexes (DL620).
    containers: Tuple[str, ...] = ()
    # (attribute, "path:line") of each RNG object created in `__init__` or the class body that the class
    # does not draw from itself without reseeding it (its module reports those): a subclass that draws
    # from one is reported where it is defined (DL201).
    rngs: Tuple[Tuple[str, str], ...] = ()
    # Methods that change nothing on `self` (no assignment into it, no call on it its module cannot see
    # into): calling one in an epoch loop does not change the dataset (DL402).
    readers: Tuple[str, ...] = ()


class LoaderSummary(NamedTuple):
    """A DataLoader call a factory returns: its arguments as read in the defining module."""

    origin: Origin
    states: Tuple[Tuple[str, ArgState], ...]
    workers_text: Optional[str]  # num_workers as written there, for the message
    repeated_here: bool  # the defining module iterates it every epoch itself (and reports it)
    # The factory's `if <parameter>:` branches it is built under, one entry per place it is returned
    # from ((): unconditionally); a call whose Known arguments decide every entry against it does not build it.
    conditions: Tuple[Conditions, ...] = ()
    # Arguments that are a parameter of the factory (argument -> parameter), bound at each call of it.
    reads: Tuple[Tuple[str, str], ...] = ()
    # Where the shuffling DistributedSampler it is built with stands, when the defining module never
    # calls set_epoch on it (DL405 in the importer, which may).
    sampler: Optional[Origin] = None
    # The dataset it is built with, when that is an instance of a class the defining module imports
    # (the dotted name as it resolves there) or defines at module level (its name there).
    datasets: Tuple[str, ...] = ()
    own_datasets: Tuple[str, ...] = ()
    # Those classes' summaries, filled in by the importer's view (a summary of summaries: never stored).
    dataset_summaries: Tuple["DatasetSummary", ...] = ()


class FactorySummary(NamedTuple):
    name: str
    origin: Origin
    # Element path (empty: the whole result) -> the loaders returned there.
    loaders: Tuple[Tuple[Tuple[object, ...], Tuple[LoaderSummary, ...]], ...]
    signature: Signature = Signature((), (), ())


class CallableSummary(NamedTuple):
    """A module-level function (or a class, through its `__init__`) and what it does with each parameter."""

    name: str
    origin: Origin
    params: Tuple[str, ...]
    offset: int  # parameters filled by the receiver (1 for a class: self)
    uses: Tuple[Tuple[str, int], ...]  # parameter -> iteration.Use level


class SubclassLink(NamedTuple):
    """A module-level class with one base imported from elsewhere, read as a loader subclass when another
    module of the project defines that base as one (a chain of the project's loader subclasses)."""

    base: str  # the base's dotted name, as it resolves in the class's module
    forwards: bool  # no `__init__` of its own, or one that only forwards: its calls read as its base's
    workers: Optional[int]  # otherwise: what its `__init__` gives a call omitting `num_workers`, if decided
    hands_on: bool  # ... or whether it leaves an omitted `num_workers` omitted for the base to decide
    iterates: bool  # it defines `__iter__` (itself or through a base of its module)


class ModuleSummary(NamedTuple):
    datasets: Dict[str, DatasetSummary]
    factories: Dict[str, FactorySummary]
    callables: Dict[str, CallableSummary]
    # Module-level functions a loader may take as worker_init_fn -> whether each reads get_worker_info()
    # (itself or through the functions of its module it calls): only such a one can shard a stream.
    shards: Dict[str, bool] = {}
    # Module-level classes that subclass a Lightning LightningModule or LightningDataModule: their
    # subclasses in other modules are Lightning classes too (their loader hooks run every epoch).
    lightning: FrozenSet[str] = frozenset()
    # Module-level functions returning a shuffling DistributedSampler whose epoch the module never sets:
    # name -> (element path of the result ((): the whole result), where the sampler is built) (DL405).
    samplers: Dict[str, Tuple[Tuple[Tuple[int, ...], Origin], ...]] = {}
    # Module-level functions returning an Ignite engine (`return create_supervised_trainer(...)`).
    engines: FrozenSet[str] = frozenset()
    # Module-level subclasses of Lightning's Trainer, and functions returning a Lightning Trainer.
    trainers: FrozenSet[str] = frozenset()
    # Module-level loader subclasses -> whether they take DataLoader's arguments as DataLoader does (no
    # `__init__` of their own, or one that only forwards `*args, **kwargs`): their calls are read as
    # DataLoader's; otherwise what the call omits is Unknown (their `__init__` may set it).
    loader_classes: Dict[str, bool] = {}
    # Of those that do not forward, the worker count a call omitting `num_workers` gets from their own
    # `__init__` (facts/subclass_init.py), where it decides one.
    loader_workers: Dict[str, int] = {}
    # Module-level classes that are no loader subclass here, with one imported base: a loader subclass
    # when that base is one of another module (project/view.py follows the chain).
    subclass_links: Dict[str, SubclassLink] = {}
    # Loader subclasses that define `__iter__` (themselves or through a base of the module): they iterate
    # their own way, so no rule reads their loading as DataLoader's (DL410).
    loader_iterators: FrozenSet[str] = frozenset()


EMPTY_SUMMARY = ModuleSummary({}, {}, {})


class Imports(Protocol):
    """The linted file's window on its project's other modules (project.view.ImportView)."""

    def dataset(self, qualname: str) -> Optional[DatasetSummary]: ...

    def factory(self, qualname: str) -> Optional[FactorySummary]: ...

    def callable(self, qualname: str) -> Optional[CallableSummary]: ...

    def worker_init_shards(self, qualname: str) -> Optional[bool]: ...

    def lightning_class(self, qualname: str) -> bool: ...

    def sampler_helper(self, qualname: str) -> Tuple[Tuple[Tuple[int, ...], Origin], ...]: ...

    def engine_helper(self, qualname: str) -> bool: ...

    def trainer_helper(self, qualname: str) -> bool: ...

    def loader_class(self, qualname: str) -> Optional[bool]: ...

    def loader_init(self, qualname: str) -> Optional[SubclassInit]: ...

    def loader_iterates(self, qualname: str) -> bool: ...

    def defines(self, qualname: str) -> bool: ...

    def may_define(self, qualname: str) -> bool: ...
