"""The gate: one pass over flake8's own ast decides whether any selected rule can report in a file.

A file that passes the prefilter's tokens still costs a LibCST parse, the facts and the rules
(about 10x ``ast.parse``); most such files hold no finding. Each rule declares ``CONDITION``: a
necessary condition of its rule-book clause, written as alternatives of predicates (any alternative
whose predicates all hold lets the rule fire), over the ``Record`` built here in one linear walk.
A file for which no selected rule's condition holds is not analysed. Predicates over-approximate:
any value the analysis could read as Known is treated as possibly Known, any call that could be a
loader (by any binding of its name) as a loader. The two project predicates (``imported_builder``,
``project_import``) ask the project index, and are evaluated last, only when they decide.

``FLAKE8_DATALOADER_GATE=off`` (or ``--dataloader-gate=off``) turns the gate off: findings must be
identical either way (tests/test_gate.py, benchmarks/real_trees.py --compare-gate).
"""

from __future__ import annotations

import ast
import os
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from . import manifest
from .settings import Settings, loader_tails
from .tokens import identifiers

GATE_ENV = "FLAKE8_DATALOADER_GATE"

# Callees that take DataLoader's keywords besides the loader classes themselves.
FRAMEWORK_CALLEES = frozenset({"auto_dataloader", "TrainingArguments", "Seq2SeqTrainingArguments", "partial"})
WORKER_KEYWORDS = frozenset({"num_workers", "dataloader_num_workers"})
PERSISTENT = frozenset({"persistent_workers", "dataloader_persistent_workers"})
PREFETCH = frozenset({"prefetch_factor", "dataloader_prefetch_factor"})
# DataLoader's positional order (the first, dataset, is never rejected by DL103).
POSITIONS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
             "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")
SET_AFTER_CONSTRUCTION = frozenset(
    {"dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers"}
)
# Substrings of identifiers, as DL601's and DL201's triggers (`open` is in `open_file`, `Random` in `RandomState`).
HANDLE_PARTS = ("open", "File", "connect", "ZipFile", "load", "HDFStore", "ParquetFile", "memory_map")
RNG_PARTS = ("default_rng", "RandomState", "Generator", "Random")
CUDA_DEFAULT_NAMES = frozenset({"set_default_device", "set_default_tensor_type", "Generator"})
SHUTDOWN_NAMES = frozenset({"closing", "_shutdown_workers"})
WORKER_FN_NAMES = frozenset({"worker_init_fn", "worker_id"})


def possibly_known(expr: ast.AST) -> bool:
    """The analysis may read this expression as Known: literals and names, operators over them, and
    `self.x` (a constructor parameter bound per construction, rule book v7). Calls, subscripts and
    other attributes are Unknown."""
    if isinstance(expr, (ast.Constant, ast.Name)):
        return True
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id == "self"
    if isinstance(expr, ast.UnaryOp):
        return possibly_known(expr.operand)
    if isinstance(expr, ast.BinOp):
        return possibly_known(expr.left) and possibly_known(expr.right)
    if isinstance(expr, ast.BoolOp):
        return any(possibly_known(value) for value in expr.values)
    if isinstance(expr, ast.IfExp):
        return possibly_known(expr.body) or possibly_known(expr.orelse)
    return False


def _literal(expr: ast.AST, test: Callable[[object], bool]) -> bool:
    return isinstance(expr, ast.Constant) and test(expr.value)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_zero(value: object) -> bool:
    return type(value) is int and value == 0


def may_be_rejected(name: str, value: ast.AST, given: Set[str], iterable_dataset: Callable[[], bool]) -> bool:
    """DL103 may reject this argument of a loader call (``given``: the call's other arguments;
    ``iterable_dataset``: its dataset may be an IterableDataset, asked only when it decides)."""
    if name in ("sampler", "batch_sampler"):
        if _literal(value, lambda v: v is None):
            return False
        return name == "batch_sampler" or "shuffle" in given or iterable_dataset()
    if name == "shuffle":
        return not _literal(value, lambda v: not v) and iterable_dataset()
    if name == "multiprocessing_context":
        return not _literal(value, lambda v: v is None)
    if not possibly_known(value):
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


class Record:
    """What one walk over flake8's ast saw (and, lazily, what the project index answers)."""

    def __init__(self, tree: ast.AST, settings: Settings, filename: Optional[str]) -> None:
        self.settings = settings
        self.filename = filename
        self.tree = tree
        self.ids: Set[str] = set(identifiers(tree))
        self.tails = loader_tails(settings)
        self.loops = False
        self.iter_defined = False
        self.classes_with_bases = False
        self.assigned_attributes: Set[str] = set()
        self.calls: List[ast.Call] = []
        self.bound: Set[str] = set()  # names a loader class could be held by (a callee may be one)
        self._project: Dict[str, bool] = {}
        bound = self.bound
        for node in ast.walk(tree):  # the one pass
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    bound.add(node.attr)
                    self.assigned_attributes.add(node.attr)
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, str) and node.value.isidentifier():
                    self.ids.add(node.value)  # a dict key splatted into a call: `**{"persistent_workers": True}`
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                bound.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self.loops = True
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.iter_defined = self.iter_defined or node.name == "__iter__"
            elif isinstance(node, ast.ClassDef):
                bound.add(node.name)
                self.classes_with_bases = self.classes_with_bases or bool(node.bases or node.keywords)
        self.candidates = [call for call in self.calls if self._may_be_loader(call.func)]

    def _may_be_loader(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            return True  # `type(loader)(...)`, `factories[k](...)`: anything
        return name in self.tails or name in FRAMEWORK_CALLEES or name in self.bound

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
        if question == "imported_builder":
            return index.names_a_builder(self.tree, self.filename, self.tails, self.ids)
        return locate.imports_own_project(self.tree, self.filename)


def _workers(record: Record) -> bool:
    """A call that may build a worker-using loader: num_workers not a literal 0, or unknowable."""
    for call in record.calls:
        for keyword in call.keywords:
            if keyword.arg in WORKER_KEYWORDS and not _literal(keyword.value, _is_zero):
                return True
    for call in record.candidates:
        if len(call.args) >= 6 or any(isinstance(arg, ast.Starred) for arg in call.args):
            return True
        if any(keyword.arg is None for keyword in call.keywords):
            return True
    return False


def _rejected_argument(record: Record) -> bool:
    named = any("IterableDataset" in name for name in record.ids)

    def iterable() -> bool:  # a class of this file, or one imported from the project
        return named or PREDICATES["project_import"](record)

    for call in record.candidates:
        if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
            return True
        arguments = [(POSITIONS[i], arg) for i, arg in enumerate(call.args[: len(POSITIONS)])]
        arguments += [(keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg]
        given = {name for name, _ in arguments}
        for name, value in arguments:
            if may_be_rejected(name, value, given, iterable):
                return True
    return False


def _module_code(record: Record) -> bool:
    """A call that runs at import time outside the `__main__` guard (DL301's module-level statement)."""
    todo: List[ast.AST] = list(getattr(record.tree, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(node.decorator_list)
            todo.extend(node.args.defaults)
            todo.extend(default for default in node.args.kw_defaults if default is not None)
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


def _any(names: FrozenSet[str]) -> Callable[[Record], bool]:
    return lambda record: not names.isdisjoint(record.ids)


def _part(parts: Tuple[str, ...]) -> Callable[[Record], bool]:
    return lambda record: any(part in name for name in record.ids for part in parts)


PREDICATES: Dict[str, Callable[[Record], bool]] = {
    "workers": _workers,
    "persistent": _any(PERSISTENT),
    "prefetch": _any(PREFETCH),
    "rejected_argument": _rejected_argument,
    "attribute_set": lambda record: not SET_AFTER_CONSTRUCTION.isdisjoint(record.assigned_attributes),
    "rng": _part(RNG_PARTS),
    "handle": lambda record: record.classes_with_bases and _part(HANDLE_PARTS)(record),
    "class_with_base": lambda record: record.classes_with_bases,
    "seed": lambda record: "seed" in record.ids,
    "worker_fn": _any(WORKER_FN_NAMES),
    "start_method": lambda record: "set_start_method" in record.ids,
    "loop": lambda record: record.loops,
    "module_code": _module_code,
    "shutdown": _any(SHUTDOWN_NAMES),
    # A DistributedSampler (built here, or by a helper of another module, v7) reaches a loader of this
    # file as `sampler=`, by position, or through a splat.
    "sampler_given": lambda record: "sampler" in record.ids or any(
        len(call.args) >= 4 or any(isinstance(arg, ast.Starred) for arg in call.args)
        or any(keyword.arg is None for keyword in call.keywords) for call in record.candidates
    ),
    "iter_defined": lambda record: record.iter_defined,
    "loader": lambda record: not record.tails.isdisjoint(record.ids) or "auto_dataloader" in record.ids,
    "cuda_default": _any(CUDA_DEFAULT_NAMES),
    # The project index (evaluated last): a loader, sampler or dataset class from another module.
    "imported_builder": lambda record: record.project("imported_builder"),
    "project_import": lambda record: record.project("project_import"),
}
LAST = ("imported_builder", "project_import")


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
