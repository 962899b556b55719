"""The gate: one pass over flake8's own ast decides whether any selected rule can report in a file.

A file that passes the prefilter's tokens still costs a LibCST parse, the facts and the rules
(about 10x ``ast.parse``); most such files hold no finding. Each rule declares ``CONDITION``: a
necessary condition of its rule-book clause, as alternatives of predicates (an alternative holds
when all its predicates do), over the ``Record`` built here in one walk. A file for which no
selected rule's condition holds is not analysed. Predicates over-approximate: a value the analysis
could read as Known is possibly Known, a callee any binding of which may hold a loader class may
be a loader. The project predicates (``imported_*``) ask the project index, last and only when
they decide.

``FLAKE8_DATALOADER_GATE=off`` (or ``--dataloader-gate=off``) turns the gate off; findings are the
same either way (tests/test_gate.py, benchmarks/real_trees.py --no-gate).
"""

from __future__ import annotations

import ast
import os
from typing import Callable, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from . import manifest
from .settings import Settings, loader_tails
from .tokens import identifiers

GATE_ENV = "FLAKE8_DATALOADER_GATE"

# Callees that take DataLoader's keywords besides the loader classes.
FRAMEWORK_CALLEES = frozenset({"auto_dataloader", "TrainingArguments", "Seq2SeqTrainingArguments"})
WORKER_KEYWORDS = frozenset({"num_workers", "dataloader_num_workers"})
# DataLoader's positional order.
POSITIONS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
             "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")
SET_AFTER_CONSTRUCTION = frozenset(
    {"dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers"}
)
DATASET_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__"})
# The last names of DL601's openers and DL201's RNG constructors (`np.load` only opens an `.npz`).
OPENERS = frozenset({"open", "File", "connect", "ZipFile", "open_file", "HDFStore", "ParquetFile", "memory_map"})
RNGS = frozenset({"default_rng", "RandomState", "Generator", "Random"})
CUDA_DEFAULTS = frozenset({"set_default_device", "set_default_tensor_type"})
# Calls that take a class only to test it.
CLASS_TESTS = frozenset({"isinstance", "issubclass"})


class Arguments(NamedTuple):
    """A call that may build a loader, its arguments as DataLoader reads them (`partial(DataLoader, ...)` too)."""

    args: Sequence[ast.expr]
    keywords: Sequence[ast.keyword]


def class_names(expr: ast.AST) -> Set[str]:
    """The names an expression may take a class from: `A`, `m.A`, `A if c else B`, `A or B`, `(A, B)`,
    `{"k": A}[k]`, `partial(A, ...)`. Any other call's result is an instance, not a class."""
    found: Set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            todo += node.values
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            todo += node.elts
        elif isinstance(node, ast.Dict):
            todo += [value for value in node.values if value is not None]
        elif isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr)):
            todo.append(node.value)
        elif isinstance(node, ast.Call) and node.args and _is_partial(node):
            todo.append(node.args[0])
    return found


def _is_partial(call: ast.Call) -> bool:
    func = call.func
    return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) == "partial"


class Holders:
    """Which names may hold a class: from a start set, every name bound from an expression naming one
    of them, to a fixed point (each binding read once per start)."""

    def __init__(self) -> None:
        self.flows: Dict[str, List[Set[str]]] = {}  # a name read -> the names bound from it
        self.params: List[str] = []
        self.passed: Set[str] = set()  # names handed to calls: a class passed may reach a parameter

    def bind(self, targets: Iterable[ast.AST], value: ast.AST) -> None:
        read = class_names(value)
        if read:
            self.bind_names({name for target in targets for name in class_names(target)}, read)

    def bind_names(self, bound: Set[str], read: Iterable[str]) -> None:
        for name in read:
            self.flows.setdefault(name, []).append(bound)

    def parameters(self, args: ast.arguments) -> None:
        self.params.extend(arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs])
        positional = [*args.posonlyargs, *args.args]
        pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults)]
        pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None]
        for arg, default in pairs:
            self.bind_names({arg.arg}, class_names(default))

    def call(self, call: ast.Call) -> None:
        if isinstance(call.func, ast.Name) and call.func.id in CLASS_TESTS:
            return
        for value in [*call.args, *(keyword.value for keyword in call.keywords)]:
            if isinstance(value, (ast.Name, ast.Attribute)):
                self.passed |= class_names(value)

    def closure(self, start: Iterable[str]) -> Set[str]:
        found: Set[str] = set()
        self._reach(found, start)
        if not self.passed.isdisjoint(found):  # `build(DataLoader, ds)`: any parameter may hold it
            self._reach(found, self.params)
        return found

    def _reach(self, found: Set[str], names: Iterable[str]) -> None:
        todo = [name for name in names if name not in found]
        found.update(todo)
        while todo:
            for bound in self.flows.get(todo.pop(), ()):
                for name in bound - found:
                    found.add(name)
                    todo.append(name)


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
        self.classes: Dict[str, Set[str]] = {}  # class of this file -> the names its bases read
        self.calls: List[ast.Call] = []
        self.callees: Set[str] = set()
        self._project: Dict[str, bool] = {}
        holders = Holders()
        for node in ast.walk(tree):  # the one pass
            if isinstance(node, ast.Call):
                self.calls.append(node)
                self.callees |= class_names(node.func)
                holders.call(node)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                    (self.stored_on_self if on_self else self.stored).add(node.attr)
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    self._text(node.value)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                holders.bind(node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self.loops = self.loops or not isinstance(node, ast.comprehension)
                holders.bind([node.target], node.iter)
            elif isinstance(node, ast.While):
                self.loops = True
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                holders.bind([node.optional_vars], node.context_expr)
            elif isinstance(node, ast.alias) and node.asname:
                holders.bind_names({node.asname}, [node.name.rsplit(".", 1)[-1]])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                holders.parameters(node.args)
                if not isinstance(node, ast.Lambda) and node.name in DATASET_METHODS:
                    self.dataset_methods.add(node.name)
                    self.iter_returns_self |= node.name == "__iter__" and _returns_self(node)
            elif isinstance(node, ast.ClassDef):
                self.classes_with_bases = self.classes_with_bases or bool(node.bases or node.keywords)
                self.classes[node.name] = {name for base in node.bases for name in class_names(base)}
                holders.bind_names({node.name}, self.classes[node.name])
        self.holders = holders
        self.loader_names = holders.closure(self.tails | FRAMEWORK_CALLEES)
        self.candidates = [self._arguments(call) for call in self.calls if class_names(call.func) & self.loader_names]

    def _text(self, value: str) -> None:
        if value.isidentifier():
            self.ids.add(value)  # a dict key splatted into a call: `**{"persistent_workers": True}`
        self.npz = self.npz or value.endswith(".npz")
        self.cuda_text = self.cuda_text or "cuda" in value

    @staticmethod
    def _arguments(call: ast.Call) -> Arguments:
        return Arguments(call.args[1:], call.keywords) if _is_partial(call) else Arguments(call.args, call.keywords)

    def calls_one_of(self, names: FrozenSet[str]) -> bool:
        """A call of one of ``names`` (or of a name bound from one: `from h5py import File as H5`)."""
        return not self.holders.closure(names).isdisjoint(self.callees)

    def constructs_own_class(self) -> bool:
        """A class of this file is called here: its `self.x` may be read per construction (rule book v7)."""
        return not self.callees.isdisjoint(self.classes) or any(
            isinstance(call.func, ast.Attribute) and class_names(call.func.value) & self.classes.keys()
            for call in self.calls
        )

    def project(self, question: str) -> bool:
        """The project index's answers, asked once and only when they decide."""
        if question not in self._project:
            self._project[question] = self._ask(question)
        return self._project[question]

    def _ask(self, question: str) -> bool:
        if self.filename is None or not self.settings.follow_imports or not os.path.isfile(self.filename):
            return False
        from .project import index, locate

        if locate.installed(self.filename):
            return False
        kind = "" if question == "builder" else question
        return index.names_a_builder(self.tree, self.filename, self.tails, self.ids, kind)


def _returns_self(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            root = node.value  # `self`, `self.it`, `self.items[k]`, `self.make_iterator()`
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id == "self":
                return True
    return False


def possibly_known(expr: ast.AST, self_known: bool) -> bool:
    """The analysis may read this expression as Known: literals and names, operators over them, and
    `self.x` when a class of the file is constructed here (``self_known``). Calls, subscripts and other
    attributes are Unknown."""
    if isinstance(expr, (ast.Constant, ast.Name)):
        return True
    if isinstance(expr, ast.Attribute):
        return self_known and isinstance(expr.value, ast.Name) and expr.value.id == "self"
    if isinstance(expr, ast.UnaryOp):
        return possibly_known(expr.operand, self_known)
    if isinstance(expr, ast.BinOp):
        return possibly_known(expr.left, self_known) and possibly_known(expr.right, self_known)
    if isinstance(expr, (ast.BoolOp, ast.IfExp)):
        parts = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
        return any(possibly_known(part, self_known) for part in parts)
    return False


def _literal(expr: ast.AST, test: Callable[[object], bool]) -> bool:
    return isinstance(expr, ast.Constant) and test(expr.value)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_zero(value: object) -> bool:
    return type(value) is int and value == 0


def _falsy(value: ast.AST) -> bool:
    return _literal(value, lambda v: not v)


def _not_none(value: ast.AST) -> bool:
    return not _literal(value, lambda v: v is None)


def may_be_rejected(
    name: str, value: ast.AST, given: Set[str], iterable_dataset: Callable[[], bool], self_known: bool = True
) -> bool:
    """DL103 may reject this argument of a loader call (``given``: the call's other arguments;
    ``iterable_dataset``: its dataset may be an IterableDataset, asked only when it decides)."""
    if name in ("sampler", "batch_sampler"):
        return _not_none(value) and (name == "batch_sampler" or "shuffle" in given or iterable_dataset())
    if name == "shuffle":
        return not _falsy(value) and iterable_dataset()
    if name == "multiprocessing_context":
        return _not_none(value)
    if not possibly_known(value, self_known):
        return False
    if name == "batch_size":
        return not _literal(value, _positive_int)
    if name == "num_workers":
        return not _literal(value, lambda v: type(v) is int and v >= 0)
    if name == "drop_last":
        return not _literal(value, lambda v: isinstance(v, bool))
    if name in ("timeout", "prefetch_factor"):
        return not _literal(value, lambda v: v is None or _is_zero(v))
    return False


def _splat(call: Arguments) -> bool:
    return any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords)


def _given(call: Arguments, name: str, test: Callable[[ast.AST], bool]) -> bool:
    """The loader call may pass ``name`` with a value for which ``test`` holds (by keyword, position or splat)."""
    position = POSITIONS.index(name)
    if _splat(call) or (len(call.args) > position and test(call.args[position])):
        return True
    return any(keyword.arg == name and test(keyword.value) for keyword in call.keywords)


def _workers(record: Record) -> bool:
    """A call that may build a worker-using loader: num_workers not a literal 0, by keyword (any call,
    `dict(num_workers=...)` included), by position or through a splat."""
    for call in record.calls:
        if any(k.arg in WORKER_KEYWORDS and not _literal(k.value, _is_zero) for k in call.keywords):
            return True
    return any(len(call.args) > POSITIONS.index("num_workers") or _splat(call) for call in record.candidates)


def _rejected_argument(record: Record) -> bool:
    named = any("IterableDataset" in name for name in record.ids)
    self_known = record.constructs_own_class()

    def iterable() -> bool:  # a class of this file, or one imported from the project
        return named or PREDICATES["imported_stream"](record)

    for call in record.candidates:
        if _splat(call):
            return True
        arguments = [*zip(POSITIONS, call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]
        given = {name for name, _ in arguments}
        if any(may_be_rejected(name, value, given, iterable, self_known) for name, value in arguments):
            return True
    return False


def _sampler_given(record: Record) -> bool:
    """A sampler reaches a loader of this file (DL405: a DistributedSampler built here, or by a helper
    of another module, rule book v7), directly or wrapped in a batch sampler."""
    return any(_given(call, "sampler", _not_none) or _given(call, "batch_sampler", _not_none)
               for call in record.candidates)


def _shuffles(record: Record) -> bool:
    """A loader that may shuffle: shuffle not a literal false, or a random sampler built in the file."""
    return any("RandomSampler" in name for name in record.ids) or any(
        _given(call, "shuffle", lambda value: not _falsy(value)) for call in record.candidates
    )


def _module_code(record: Record) -> bool:
    """A call that runs at import time outside the `__main__` guard (DL301's module-level statement)."""
    todo: List[ast.AST] = list(getattr(record.tree, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        elif isinstance(node, ast.If) and _is_main_guard(node.test):
            todo.extend(node.orelse)
        elif isinstance(node, ast.Call):
            return True
        else:
            todo.extend(ast.iter_child_nodes(node))
    return False


def _is_main_guard(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _attribute_set(record: Record) -> bool:
    """DL105: a loader attribute assigned on an object, or on `self` in a subclass of a loader class."""
    if not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored):
        return True
    return not SET_AFTER_CONSTRUCTION.isdisjoint(record.stored_on_self) and any(
        bases & record.loader_names for bases in record.classes.values()
    )


def _handle(record: Record) -> bool:
    """DL601: a dataset class of this file reading what it holds, and an opener called (`np.load` of an `.npz`)."""
    if not record.dataset_methods:
        return False
    return record.calls_one_of(OPENERS) or (record.npz and record.calls_one_of(frozenset({"load"})))


def _any(names: FrozenSet[str]) -> Callable[[Record], bool]:
    return lambda record: not names.isdisjoint(record.ids)


PREDICATES: Dict[str, Callable[[Record], bool]] = {
    "workers": _workers,
    "persistent": _any(frozenset({"persistent_workers", "dataloader_persistent_workers"})),
    "prefetch": _any(frozenset({"prefetch_factor", "dataloader_prefetch_factor"})),
    "rejected_argument": _rejected_argument,
    "attribute_set": _attribute_set,
    # DL201: an RNG constructed, and a dataset class of this file drawing in `__getitem__`/`__iter__`.
    "rng": lambda record: bool(record.dataset_methods) and record.calls_one_of(RNGS),
    "handle": _handle,
    "class_with_base": lambda record: record.classes_with_bases,
    "seed": lambda record: "seed" in record.ids,
    "shuffles": _shuffles,
    "worker_fn": _any(frozenset({"worker_init_fn", "worker_id"})),
    "start_method": lambda record: "set_start_method" in record.ids,
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


def gate_enabled(settings: Settings) -> bool:
    return settings.gate and os.environ.get(GATE_ENV, "").lower() not in ("off", "0", "false", "no")


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
