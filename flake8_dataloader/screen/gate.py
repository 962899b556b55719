"""The gate: one pass over flake8's own ast decides whether any selected rule can report in a file.

A file that passes the prefilter's tokens still costs a LibCST parse, the facts and the rules
(about 10x ``ast.parse``); most such files hold no finding. Each rule declares ``CONDITION``: a
necessary condition of its rule-book clause, as alternatives of predicates (an alternative holds
when all its predicates do), over the ``Record`` built here in one walk. A file for which no
selected rule's condition holds is not analysed. Predicates over-approximate what the analysis
reads: a value it could read as Known may be Known (gate_values.py), a callee any binding of which
may hold a loader class may be a loader (gate_names.py). The project predicates (``imported_*``)
ask the project index, last, only when they decide, and only about the imports a call, a base or
an argument of the file may read.

``FLAKE8_DATALOADER_GATE=off`` (or ``--dataloader-gate=off``) turns the gate off; findings are the
same either way (tests/test_gate.py, benchmarks/real_trees.py --no-gate).
"""

from __future__ import annotations

import ast
import os
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from .. import manifest
from .ast_walk import nodes_of
from .gate_names import Holders, chain, class_names, is_partial
from .gate_values import (
    POSITIONS, Arguments, KnownValues, Sources, falsy, given, is_falsy, is_zero, literal, may_be_rejected, not_none,
    splat,
)
from ..settings import GATE_ENV, Settings, gate_enabled, loader_tails  # noqa: F401 - the gate's switch, here too
from .tokens import identifiers


# Callees that take DataLoader's keywords besides the loader classes.
FRAMEWORK_CALLEES = frozenset({"auto_dataloader", "TrainingArguments", "Seq2SeqTrainingArguments"})
WORKER_KEYWORDS = frozenset({"num_workers", "dataloader_num_workers"})
SET_AFTER_CONSTRUCTION = frozenset(
    {"dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers"}
)
DATASET_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__"})
# The last names of DL601's openers and DL201's RNG constructors (`np.load` only opens an `.npz`).
OPENERS = frozenset({"open", "File", "connect", "ZipFile", "open_file", "HDFStore", "ParquetFile", "memory_map"})
RNGS = frozenset({"default_rng", "RandomState", "Generator", "Random"})
SEEDERS = RNGS | {"seed", "manual_seed"}  # DL203: global seeders, RNG constructors, `rng.seed(...)`
PERSISTENT = frozenset({"persistent_workers", "dataloader_persistent_workers"})
PREFETCH = frozenset({"prefetch_factor", "dataloader_prefetch_factor"})
CUDA_DEFAULTS = frozenset({"set_default_device", "set_default_tensor_type"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Every node type Record's walk looks at.
_RECORDED = (
    ast.Call, ast.Attribute, ast.Constant, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
    ast.comprehension, ast.While, ast.withitem, ast.Import, ast.ImportFrom, ast.alias, *FUNCTIONS, ast.Lambda,
    ast.ClassDef,
)


class Record:
    """What one walk over flake8's ast saw (and, lazily, what the project index answers)."""

    def __init__(self, tree: ast.AST, settings: Settings, filename: Optional[str]) -> None:
        self.settings, self.filename, self.tree = settings, filename, tree
        self.ids: Set[str] = set(identifiers(tree))
        self.tails = loader_tails(settings)
        self.loops = self.classes_with_bases = self.npz = self.cuda_text = False
        self.dataset_methods: Set[str] = set()  # `__getitem__`, `__getitems__`, `__iter__` defined here
        self.iter_returns_self = False  # an `__iter__` returning `self` or something held on it (DL502)
        self.stored: Set[str] = set()  # attributes assigned, on anything but `self`
        self.stored_on_self: Set[str] = set()
        # The callees of calls whose result is assigned to an attribute or a name (a local handle a dataset
        # may store: `h5 = h5py.File(p)` then `self.images = h5["images"]`).
        self.stored_calls: Set[str] = set()
        self.assigned_rngs: Set[str] = set()  # the same for any assignment, `.seed(...)` chains stripped
        self.classes: Dict[str, Set[str]] = {}  # class of this file -> the names its bases read
        self.initialised: Set[str] = set()  # classes of this file defining `__init__`
        self.imports: List[ast.stmt] = []
        self.reached: Set[str] = set()  # the names along each callee and class base (`m.make` -> m, make)
        self.method_bases: Set[str] = set()  # the same for the bases of classes defining a method
        self.calls: List[ast.Call] = []
        self.callees: Set[str] = set()
        self._project: Dict[str, bool] = {}
        self.sources = Sources()
        self._known: Optional[KnownValues] = None
        holders = Holders()
        methods: Dict[ast.AST, str] = {}  # a def in a class body -> the class
        for node in nodes_of(tree):  # the one pass (the identifiers read the same list)
            if not isinstance(node, _RECORDED):
                continue  # most nodes (names, operators, contexts): one test, not the chain below
            if isinstance(node, ast.Call):
                self.calls.append(node)
                named = class_names(node.func)
                self.callees |= named
                holders.call(node)
                self.reached |= named | chain(node.func)
                for name in named:
                    self.sources.calls_by_name.setdefault(name, []).append(node)
                if not named:
                    self.sources.opaque_calls.append(node)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                    (self.stored_on_self if on_self else self.stored).add(node.attr)
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    self._text(node.value)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                holders.bind(targets, node.value)
                if isinstance(node.value, ast.Call) and any(isinstance(t, (ast.Attribute, ast.Name)) for t in targets):
                    self.stored_calls |= class_names(node.value.func)
                self.assigned_rngs |= _constructed(node.value)
                for target in targets:
                    self.sources.assign(target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self.loops = self.loops or not isinstance(node, ast.comprehension)
                holders.bind([node.target], node.iter)
            elif isinstance(node, ast.While):
                self.loops = True
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                holders.bind([node.optional_vars], node.context_expr)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)
            elif isinstance(node, ast.alias) and node.asname:
                holders.bind_names({node.asname}, [node.name.rsplit(".", 1)[-1]])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                holders.parameters(node.args)
                if not isinstance(node, ast.Lambda):
                    self.sources.functions.append((node, methods.get(node, "")))
                if not isinstance(node, ast.Lambda) and node.name in DATASET_METHODS:
                    self.dataset_methods.add(node.name)
                    self.iter_returns_self |= node.name == "__iter__" and _returns_self(node)
            elif isinstance(node, ast.ClassDef):
                self.classes_with_bases = self.classes_with_bases or bool(node.bases or node.keywords)
                self.classes[node.name] = {name for base in node.bases for name in class_names(base)}
                methods.update((item, node.name) for item in node.body if isinstance(item, FUNCTIONS))
                bases = {name for base in node.bases for name in chain(base)}
                self.reached |= bases
                if any(isinstance(item, FUNCTIONS) for item in node.body):
                    self.method_bases |= bases
                if any(isinstance(item, FUNCTIONS) and item.name == "__init__" for item in node.body):
                    self.initialised.add(node.name)
                holders.bind_names({node.name}, self.classes[node.name])
        self.holders = holders
        self.loader_names = holders.closure(self.tails | FRAMEWORK_CALLEES)
        # Loader calls, and `partial(DataLoader, ...)` (its keywords reach the calls of what it makes).
        self.candidates = [self._arguments(call) for call in self.calls if class_names(call.func) & self.loader_names
                           or (is_partial(call) and call.args and class_names(call.args[0]) & self.loader_names)]

    def _text(self, value: str) -> None:
        if value.isidentifier():
            self.ids.add(value)  # a dict key splatted into a call: `**{"persistent_workers": True}`
        self.npz = self.npz or value.endswith(".npz")
        self.cuda_text = self.cuda_text or "cuda" in value

    @staticmethod
    def _arguments(call: ast.Call) -> Arguments:
        return Arguments(call.args[1:], call.keywords) if is_partial(call) else Arguments(call.args, call.keywords)

    def calls_one_of(self, names: FrozenSet[str]) -> bool:
        """A call of one of ``names`` (or of a name bound from one: `from h5py import File as H5`)."""
        return not self.holders.closure(names).isdisjoint(self.callees)

    @property
    def known(self) -> KnownValues:
        """Which names and `self.x` reads the analysis may read as Known (gate_values.py), built on demand."""
        if self._known is None:
            holders = self.holders
            self._known = KnownValues(self.sources, lambda name: name in holders.flows or name in holders.passed)
        return self._known

    def project(self, question: str) -> bool:
        """The project index's answers, asked once and only when they decide."""
        if question not in self._project:
            self._project[question] = self._ask(question)
        return self._project[question]

    def _ask(self, question: str) -> bool:
        if self.filename is None or not self.settings.follow_imports or not os.path.isfile(self.filename):
            return False
        from ..project import index, locate

        if locate.installed(self.filename):
            return False
        kind = "" if question == "builder" else question
        imports, used = self._imports_used(question == "rng")
        return index.names_a_builder(imports, self.filename, self.tails, used, kind)

    def _imports_used(self, bases_only: bool) -> Tuple[ast.Module, Set[str]]:
        """The file's imports a finding can come through, and the names they may be used by.

        The analysis reaches another module's builder or class only by calling it, constructing it,
        subclassing it or handing it to a call, under its imported name, through a module imported
        whole (`data.make(...)`), or through a name bound from one (`make = data.make`). An RNG of an
        imported base reaches a subclass here that defines a method (Across files v7). So a name
        imported with `from` counts only when some such use may read it; star imports and modules
        imported whole are kept, their names filtered by ``used``."""
        start = self.method_bases if bases_only else self.reached | self.holders.passed
        used = self.holders.sources(start)
        kept: List[ast.stmt] = []
        for node in self.imports:
            if isinstance(node, ast.ImportFrom):
                names = [alias for alias in node.names if alias.name == "*" or (alias.asname or alias.name) in used]
                if names:
                    kept.append(ast.ImportFrom(module=node.module, names=names, level=node.level))
            else:
                kept.append(node)
        return ast.Module(body=kept, type_ignores=[]), used


def _returns_self(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            root = node.value  # `self`, `self.it`, `self.items[k]`, `self.make_iterator()`
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id == "self":
                return True
    return False


def _workers(record: Record) -> bool:
    """A loader call that may be worker-using (num_workers Known > 0 or Unknown; omitted is 0): its
    `num_workers` given not as a literal 0, by keyword, by position or through a splat (a config's
    `dataloader_num_workers` too), or a same-file loader subclass where a class of the file defines
    `__init__` (the analysis reads every argument not written at a subclass's calls as Unknown, set
    by an `__init__` of it or of a same-file base)."""
    for call in record.candidates:
        if any(k.arg in WORKER_KEYWORDS and not literal(k.value, is_zero) for k in call.keywords):
            return True
        if len(call.args) > POSITIONS.index("num_workers") or splat(call):
            return True
    # Its `__init__` may be its own or a same-file base's (`class Fast(Base, DataLoader)`).
    return bool(record.initialised) and any(name in record.loader_names for name in record.classes)


def _rejected_argument(record: Record) -> bool:
    named = any("IterableDataset" in name for name in record.ids)

    def iterable() -> bool:  # a class of this file, or one imported from the project
        return named or PREDICATES["imported_stream"](record)

    for call in record.candidates:
        if splat(call):
            return True
        arguments = dict([*zip(POSITIONS, call.args), *((k.arg, k.value) for k in call.keywords if k.arg)])
        if any(may_be_rejected(name, arguments, iterable, record.known) for name in arguments):
            return True
    return False


def _sampler_given(record: Record) -> bool:
    """A sampler reaches a loader of this file (DL405: a DistributedSampler built here, or by a helper
    of another module, rule book v7), directly or wrapped in a batch sampler."""
    return any(given(call, "sampler", not_none) or given(call, "batch_sampler", not_none)
               for call in record.candidates)


def _shuffles(record: Record) -> bool:
    """A loader that may shuffle: shuffle not a literal false, or a random sampler built in the file."""
    return any("RandomSampler" in name for name in record.ids) or any(
        given(call, "shuffle", lambda value: not falsy(value)) for call in record.candidates
    )


def _import_time_calls(record: Record) -> Iterator[ast.Call]:
    """The calls that run at import time outside the `__main__` guard (class bodies, decorators and
    defaults included; function bodies not)."""
    todo: List[ast.AST] = list(getattr(record.tree, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        elif isinstance(node, ast.Lambda):
            todo += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        elif isinstance(node, ast.If) and _is_main_guard(node.test):
            todo.extend(node.orelse)
        else:
            if isinstance(node, ast.Call):
                yield node
            todo.extend(ast.iter_child_nodes(node))


def _module_code(record: Record) -> bool:
    """A call that runs at import time outside the `__main__` guard (DL301's module-level statement)."""
    return next(_import_time_calls(record), None) is not None


def _start_method(record: Record) -> bool:
    """DL303: `set_start_method` (or an alias) called at import time outside the guard, its `force` not a
    truthy literal (a Known falsy or omitted `force` is reported), its method not the literal "fork"."""
    names = record.holders.closure({"set_start_method"})
    for call in _import_time_calls(record):
        if not class_names(call.func) & names:
            continue
        force = next((k.value for k in call.keywords if k.arg == "force"), None)
        method = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "method"), None)
        if not (force is not None and literal(force, bool)) and not literal(method or call, lambda v: v == "fork"):
            return True
    return False


def _is_main_guard(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _attribute_set(record: Record) -> bool:
    """DL105: a loader attribute assigned on an object that may hold a loader (a loader call of this
    file or an imported factory must make one: the flow starts there), or on `self` in a subclass of a
    loader class."""
    if not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored) and (record.candidates or record.project("builder")):
        return True
    return not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored_on_self) and any(
        bases & record.loader_names for bases in record.classes.values()
    )


def _rng(record: Record) -> bool:
    """DL201: a dataset class of this file drawing in `__getitem__`/`__iter__`, and an RNG constructor's
    result assigned as it is (`self.rng = np.random.default_rng(0)` in `__init__`, a class attribute, a
    module-level name; `torch.Generator().manual_seed(0)` too): the rule reads only such creations."""
    return bool(record.dataset_methods) and not record.holders.closure(RNGS).isdisjoint(record.assigned_rngs)


def _constructed(value: ast.AST) -> Set[str]:
    """The callee names of a call assigned as it is, through `.seed(...)`/`.manual_seed(...)` chained on it,
    or as an element unpacked (`self.rng, self.n = np.random.default_rng(), n`)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return set().union(*(_constructed(element) for element in value.elts))
    while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
           and value.func.attr in ("seed", "manual_seed") and isinstance(value.func.value, ast.Call)):
        value = value.func.value
    return class_names(value.func) if isinstance(value, ast.Call) else set()


def _handle(record: Record) -> bool:
    """DL601: a dataset class of this file reading what it holds, and an opener's result assigned as it
    is to an attribute or a local name (`self.h = h5py.File(...)`, `h = h5py.File(...)`; `np.load` of an
    `.npz`): the rule reads the opener only as the value stored."""
    if not record.dataset_methods:
        return False
    stored = record.stored_calls
    return not record.holders.closure(OPENERS).isdisjoint(stored) or (
        record.npz and not record.holders.closure(frozenset({"load"})).isdisjoint(stored)
    )


def _persistent(record: Record) -> bool:
    """DL101, DL403, DL104: a loader call (or config) whose `persistent_workers` may be Known truthy,
    by keyword (keyword-only in DataLoader) or through a splat."""
    return any(splat(call) or any(
        k.arg in PERSISTENT and record.known.may_fail(k.value, is_falsy) for k in call.keywords
    ) for call in record.candidates)


def _prefetch(record: Record) -> bool:
    """DL102, DL104: a loader call (or config) given a `prefetch_factor` that may not be None (DL104
    reads any expression), by keyword or through a splat."""
    return any(splat(call) or any(k.arg in PREFETCH and not_none(k.value) for k in call.keywords)
               for call in record.candidates)


def _seeded(record: Record) -> bool:
    """DL202: `random.seed` or `np.random.seed` (a `seed` call, or an alias of one) called with an
    argument: the rule's run-level seeding is a seeding call of this file with an argument."""
    seeds = record.holders.closure({"seed"})
    return any(class_names(call.func) & seeds and (call.args or call.keywords) for call in record.calls)


def _worker_fn(record: Record) -> bool:
    """DL203: a function whose first parameter is `worker_id`, or any function where `worker_init_fn`
    is named, that calls a seeder or RNG constructor with a seed in its own body (nested defs apart)."""
    seeders = record.holders.closure(SEEDERS)
    named = "worker_init_fn" in record.ids
    for function, _ in record.sources.functions:
        params = [*function.args.posonlyargs, *function.args.args]
        if (named or (params and params[0].arg == "worker_id")) and _seeds(function, seeders):
            return True
    return False


def _seeds(function: ast.AST, seeders: Set[str]) -> bool:
    todo: List[ast.AST] = list(getattr(function, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call) and class_names(node.func) & seeders and (
            node.args or any(k.arg in (None, "seed") for k in node.keywords)
        ):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _any(names: FrozenSet[str]) -> Callable[[Record], bool]:
    return lambda record: not names.isdisjoint(record.ids)


PREDICATES: Dict[str, Callable[[Record], bool]] = {
    "workers": _workers,
    "persistent": _persistent,
    "prefetch": _prefetch,
    "rejected_argument": _rejected_argument,
    "attribute_set": _attribute_set,
    "rng": _rng,
    "handle": _handle,
    "class_with_base": lambda record: record.classes_with_bases,
    "seed": _seeded,
    "shuffles": _shuffles,
    "worker_fn": _worker_fn,
    "start_method": _start_method,
    "loop": lambda record: record.loops,
    "module_code": _module_code,
    "shutdown": _any(frozenset({"closing", "_shutdown_workers"})),
    "sampler_given": _sampler_given,
    "iter_returns_self": lambda record: record.iter_returns_self,
    "loader": lambda record: bool(record.candidates),
    # DL603: a CUDA default device set, or a Generator on a device whose text names cuda.
    "cuda_default": lambda record: not CUDA_DEFAULTS.isdisjoint(record.ids) or (
        record.cuda_text and record.calls_one_of(frozenset({"Generator"}))
    ),
    # The project index (evaluated last): a loader, sampler or dataset class from another module.
    "imported_builder": lambda record: record.project("builder"),
    "imported_stream": lambda record: record.project("stream"),  # an IterableDataset class
    "imported_rng_class": lambda record: record.project("rng"),  # a dataset class that may hold an RNG
}
LAST = ("imported_builder", "imported_stream", "imported_rng_class")


def selected_conditions(settings: Settings) -> Iterable[Tuple[Tuple[str, ...], ...]]:
    return (manifest.CONDITIONS[code] for code in manifest.CODES if code in settings.selected)


def may_report(tree: ast.AST, settings: Settings, filename: Optional[str] = None) -> bool:
    """Some selected rule's condition holds for this file: it must be analysed."""
    alternatives = [alternative for condition in selected_conditions(settings) for alternative in condition]
    if not alternatives:
        return False
    record = Record(tree, settings, filename)
    # Local alternatives first: the project index is read only when nothing else decides.
    alternatives.sort(key=lambda alternative: any(name in LAST for name in alternative))
    return any(all(PREDICATES[name](record) for name in alternative) for alternative in alternatives)
