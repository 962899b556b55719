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
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from .. import manifest
from .gate_names import class_names
from .gate_values import (
    POSITIONS, Arguments, falsy, given, is_falsy, is_zero, literal, may_be_rejected, not_none,
    splat,
)
from ..settings import GATE_ENV, Settings, gate_enabled, loader_tails  # noqa: F401 - the gate's switch, here too
from .record import DATASET_METHODS, FRAMEWORK_CALLEES, FUNCTIONS, Record, constructed  # noqa: F401
from .ast_walk import nodes_of
from .tokens import DEFINITIONS, holds_payload


WORKER_KEYWORDS = frozenset({"num_workers", "dataloader_num_workers"})
SET_AFTER_CONSTRUCTION = frozenset(
    {"dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers"}
)
# The last names of DL601's openers and DL201's RNG constructors (`np.load` only opens an `.npz`).
OPENERS = frozenset({"open", "File", "connect", "ZipFile", "open_file", "HDFStore", "ParquetFile", "memory_map"})
RNGS = frozenset({"default_rng", "RandomState", "Generator", "Random"})
SEEDERS = RNGS | {"seed", "manual_seed"}  # DL203: global seeders, RNG constructors, `rng.seed(...)`
PERSISTENT = frozenset({"persistent_workers", "dataloader_persistent_workers"})
PREFETCH = frozenset({"prefetch_factor", "dataloader_prefetch_factor"})
CUDA_DEFAULTS = frozenset({"set_default_device", "set_default_tensor_type"})


def _workers(record: Record) -> bool:
    """A loader call that may be worker-using (num_workers Known > 0 or Unknown; omitted is 0): its
    `num_workers` given not as a literal 0, by keyword, by position or through a splat (a config's
    `dataloader_num_workers` too), or a same-file loader subclass where a class of the file defines
    `__init__` (the analysis reads every argument not written at a subclass's calls as Unknown, set
    by an `__init__` of it or of a same-file base), or a call of a loader subclass imported from the
    project whose `__init__` may give a call omitting `num_workers` workers, or that passes more than
    the dataset by position (its `__init__` orders its parameters its own way)."""
    if any(_worker_using(call) for call in record.candidates) or _initialised_subclass(record):
        return True
    return any(record.is_custom(call, workers=len(call.args) < 2) for call in record.candidate_calls)


def _worker_using(call: Arguments) -> bool:
    if any(k.arg in WORKER_KEYWORDS and not literal(k.value, is_zero) for k in call.keywords):
        return True
    return len(call.args) > POSITIONS.index("num_workers") or splat(call)


def _initialised_subclass(record: Record) -> bool:
    # Its `__init__` may be its own or a same-file base's (`class Fast(Base, DataLoader)`).
    return bool(record.initialised) and any(name in record.loader_names for name in record.classes)


def _restartable(record: Record) -> bool:
    """DL402: a loader call that may be worker-using, whose `persistent_workers` may be omitted or Known
    False: omitted (at a call whose omitted arguments are not set by an imported subclass's `__init__`),
    or given as anything but a literal bool (a literal False is a decision the rule leaves alone)."""
    if _initialised_subclass(record):
        return True
    for node, call in zip(record.candidate_calls, record.candidates):
        given = [k for k in call.keywords if k.arg in PERSISTENT]
        if splat(call) or any(not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool))
                              for k in given):
            return True
        if not given and _worker_using(call) and not record.is_custom(node):
            return True
    return False


def _payload(record: Record) -> bool:
    """DL302: something the rule may read as unpicklable (a lambda, a generator, a def or class inside a
    function), a def or class inside a module-level statement (the `__main__` guard's), or in a notebook
    (or a file not yet decided to be none) any def or class."""
    body = getattr(record.tree, "body", ())
    top = [node for node in body if isinstance(node, DEFINITIONS)]
    if record.settings.notebook != "off" and top:
        return True
    # A def or class besides the module's own and its classes' methods is nested somewhere (the guard's too).
    return holds_payload(nodes_of(record.tree), top)


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
    loader class, or of a class imported from the project that may be a loader subclass."""
    if not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored) and (record.candidates or record.project("builder")):
        return True
    return not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored_on_self) and (
        any(bases & record.loader_names for bases in record.classes.values()) or record.project("builder")
    )


def _rng(record: Record) -> bool:
    """DL201: a dataset class of this file drawing in `__getitem__`/`__iter__`, and an RNG constructor's
    result assigned as it is (`self.rng = np.random.default_rng(0)` in `__init__`, a class attribute, a
    module-level name; `torch.Generator().manual_seed(0)` too): the rule reads only such creations."""
    return bool(record.dataset_methods) and not record.holders.closure(RNGS).isdisjoint(record.assigned_rngs)


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
    """DL203: a function whose first parameter is `worker_id` (a method's, after its receiver, or a
    staticmethod's first), or any function where `worker_init_fn` is named, that calls a seeder or RNG
    constructor with a seed in its own body (nested defs apart)."""
    seeders = record.holders.closure(SEEDERS)
    named = "worker_init_fn" in record.ids
    for function, owner in record.sources.functions:
        params = [arg.arg for arg in [*function.args.posonlyargs, *function.args.args]]
        if (named or "worker_id" in params[:2 if owner else 1]) and _seeds(function, seeders):
            return True
    return False


def _seeds(function: ast.AST, seeders: Set[str]) -> bool:
    todo: List[ast.AST] = list(getattr(function, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, DEFINITIONS):
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
    "restartable": _restartable,
    "payload": _payload,
    "cuda": lambda record: "cuda" in record.ids or record.cuda_text,
    "stream_class": lambda record: "__iter__" in record.dataset_methods,
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
    "imported_payload": lambda record: record.project("payload"),  # a class that may hold a lambda (DL302)
    "imported_cuda": lambda record: record.project("cuda"),  # a class whose code may name CUDA (DL602)
}
LAST = ("imported_builder", "imported_stream", "imported_rng_class", "imported_payload", "imported_cuda")


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
