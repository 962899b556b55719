"""DL601 handle-shared-with-workers: the rule, the helpers only it uses and its fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from ..autofix.context import FixContext, Outcome, code
from ..autofix.edits import Plan
from ..facts.class_traits import READ_METHODS, attributes_read, held_objects, stores_in_init
from ..facts.classes import self_attribute
from ..facts.model import ClassInfo, FunctionInfo, Mutation
from ..facts.nodes import children
from ..facts.resolve import Scope, call_qualnames, evaluate
from ..facts.states import Known
from .base import DEFINED_HERE, Finding, Rule, source_of
from .dl6_shared import dataset_classes

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


PICKLING_HOOKS = ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")
HANDLE_OPENERS = frozenset(
    {
        "builtins.open", "io.open", "h5py.File", "lmdb.open", "sqlite3.connect", "zipfile.ZipFile",
        "tarfile.open", "PIL.Image.open", "zarr.open", "tables.open_file", "pandas.HDFStore",
        "pyarrow.parquet.ParquetFile", "pyarrow.ipc.open_file", "pyarrow.memory_map",
    }
)
NUMPY_LOAD = frozenset({"numpy.load"})


class Derived(NamedTuple):
    """What of an open handle is still the handle (Flow v7): an item (`f["images"]`), an attribute chain
    (`f.root.images`), or the result of one of ``methods`` (`conn.cursor()`)."""

    items: bool = False
    attributes: bool = False
    methods: FrozenSet[str] = frozenset()


# An `.npz`'s items, an HDFStore's items and a file's read() are loaded data, not the handle.
DERIVED_HANDLES: Dict[str, Derived] = {
    "h5py.File": Derived(items=True, methods=frozenset({"get", "require_dataset", "require_group"})),
    "zarr.open": Derived(items=True),
    "tables.open_file": Derived(attributes=True, methods=frozenset({"get_node"})),
    "sqlite3.connect": Derived(methods=frozenset({"cursor"})),
    "lmdb.open": Derived(methods=frozenset({"begin"})),
    "zipfile.ZipFile": Derived(methods=frozenset({"open"})),
    "tarfile.open": Derived(methods=frozenset({"extractfile"})),
}


def only_single_process_loaders(facts: FileFacts, cls: ClassInfo) -> bool:
    loaders = facts.loaders.loaders_using(cls)
    return bool(loaders) and all(facts.iteration.single_process_everywhere(call) for call in loaders)


class HandleSharedWithWorkers(Rule):
    """
    ## What it does
    Flags a Dataset or IterableDataset class of this file that stores an open
    file or connection on `self` in `__init__` (or a method it calls) and
    reads it in `__getitem__`/`__iter__` (or methods they call): `open(...)`,
    `h5py.File`, `lmdb.open`, `sqlite3.connect`, `zipfile.ZipFile`,
    `tarfile.open`, `np.load` of an `.npz`, `PIL.Image.open`, `zarr.open`,
    `tables.open_file`, `pandas.HDFStore`, pyarrow file readers.

    ## Why is this bad?
    Every worker gets a copy of the dataset object, and with it the handle.
    Under fork all workers share one file offset: reads interleave and come
    back wrong or raise (measured with a zip of 2,000 records and 4 workers:
    30 bad reads, `BadZipFile`). Under spawn and forkserver the handle cannot
    be pickled: `TypeError: cannot pickle '_io.BufferedReader' object` when
    the iterator starts.

    ## Example
    ```python
    import zipfile

    from torch.utils.data import Dataset


    class Records(Dataset):
        def __init__(self, path):
            self.archive = zipfile.ZipFile(path)
            self.names = self.archive.namelist()

        def __len__(self):
            return len(self.names)

        def __getitem__(self, index):
            return self.archive.read(self.names[index])
    ```

    ## Use instead
    ```python
    import zipfile

    from torch.utils.data import Dataset


    class Records(Dataset):
        def __init__(self, path):
            self.path = path
            self.archive = None  # opened in each worker, on first use
            with zipfile.ZipFile(path) as archive:
                self.names = archive.namelist()

        def __len__(self):
            return len(self.names)

        def __getitem__(self, index):
            if self.archive is None:
                self.archive = zipfile.ZipFile(self.path)
            return self.archive.read(self.names[index])
    ```

    ## Not reported
    ```python
    import numpy as np
    from torch.utils.data import Dataset


    class Arrays(Dataset):
        def __init__(self, path):
            self.data = np.load(path + ".npy")  # an array, not a handle

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            return self.data[index]
    ```

    ## Options
    None.

    ## Known limits
    - Not reported when the class defines `__getstate__`, `__setstate__` or
      `__reduce__` (it decides what a worker receives), when `np.load` does
      not name an `.npz` file, or when every loader of the class in the file
      is proven single-process.
    - A module that only defines the class is reported.
    - A handle opened in a `with` block and closed there is not stored.
    - A value derived from a stored handle at construction is still the
      handle, read where it is read: an item of an HDF5 file or zarr store
      (`self.images = self.h5["images"]`), an attribute chain of a PyTables
      file (`self.f.root.samples`), a connection's `cursor()`, an LMDB
      environment's `begin()`, a member a zip or tar opens.
    - Not the handle: a slice, `[()]`, an `.npz`'s or an HDFStore's items
      and other methods (`zf.namelist()`, `f.read()`): they read the data
      out.
    - A local handle of `__init__` stored (`h5 = h5py.File(path)` then
      `self.images = h5["images"]`) is reported at the store; no fix.
    - One object removed: `self.reader = Reader(path)`, a class of this file
      opening a handle in `__init__` read by the methods the dataset calls.
    - Anchor: the assignment that opens the handle.

    ## References
    - [Multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading): each worker holds a copy of the dataset object.
    - [pytorch#11887](https://github.com/pytorch/pytorch/issues/11887), [pytorch#11929](https://github.com/pytorch/pytorch/issues/11929): HDF5 files opened in `__init__` read wrong in workers.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL601"
    ACROSS_FILES = DEFINED_HERE.format(what="dataset class")
    NAME = "handle-shared-with-workers"
    MESSAGE = (
        "self.{attr} = {opener}(...){derived} is copied into every worker of {klass} (wrong reads under fork, a "
        "pickling error under spawn); set self.{attr} = None here and open it on first use in {method}"
    )
    CONDITION = (("handle",),)
    TRIGGERS = tuple(
        (base, opener)
        for base in ("Dataset", "torchvision")
        for opener in ("open", "File", "connect", "ZipFile", "load", "HDFStore", "ParquetFile", "memory_map")
    )

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        reported: Set[cst.CSTNode] = set()
        for klass in dataset_classes(facts):
            if any(facts.file.method(klass, hook) is not None for hook in PICKLING_HOOKS):
                continue
            if only_single_process_loaders(facts, klass):
                continue
            readers = facts.graph.reachable(klass, READ_METHODS)
            read = attributes_read(readers)
            entry = next((name for name in READ_METHODS if facts.file.method(klass, name) is not None), "__getitem__")
            found: List[Tuple[Mutation, str, str, str, Dict[str, cst.CSTNode]]] = [
                (*item, {}) for item in _handles_read(facts, klass, read)
            ]
            for mutation, attr, opener, derived, lines in [*found, *_held_through(facts, klass, readers)]:
                if mutation.node not in reported:
                    reported.add(mutation.node)
                    yield cls.finding(mutation.node, attr=attr, opener=opener, derived=derived, klass=klass.name,
                                      method=entry, **lines)


def _held_through(
    facts: FileFacts, klass: ClassInfo, readers: List[FunctionInfo]
) -> Iterator[Tuple[Mutation, str, str, str, Dict[str, cst.CSTNode]]]:
    """A handle one object removed: `self.reader = Reader(path)` at construction, where that class of the
    file stores a handle its methods read, and the dataset's readers call those methods on `self.reader`."""
    for mutation, attr, helper, entries in held_objects(facts, klass, readers):
        if any(facts.file.method(helper, hook) is not None for hook in PICKLING_HOOKS):
            continue
        read = attributes_read(facts.graph.reached_from(*entries)) if entries else set()
        for held, _, opener, derived in list(_handles_read(facts, helper, read))[:1]:
            text = f" holding {opener}(...){derived} (line {{line of handle}})"
            yield mutation, attr, helper.name, text, {"handle": held.node}


def _handles_read(facts: FileFacts, klass: ClassInfo, read: Set[str]) -> Iterator[Tuple[Mutation, str, str, str]]:
    """(assignment, attribute, opener, what of it is stored) for each handle stored on `self` at construction
    and read by a worker: itself, or through an attribute holding a value derived from it (`self.imgs =
    self.h["x"]`); also a value derived from a handle opened in a local variable (`self.imgs = h["x"]`)."""
    opened: Dict[str, Tuple[Mutation, str, str, str]] = {}  # attribute -> (its store, opener, qualname, derived)
    holds: Dict[str, str] = {}  # attribute -> the handle attribute it holds (itself, or derived from it)
    for mutation in stores_in_init(facts, klass):
        attr = self_attribute(mutation.node, mutation.ctx.function) if mutation.ctx.function else None
        if attr is None:
            continue
        opener = _opener(mutation.value, mutation.ctx.scope)
        if opener is not None and isinstance(mutation.value, cst.Call):
            names = call_qualnames(mutation.value, mutation.ctx.scope)
            opened.setdefault(attr, (mutation, opener, min(names), ""))
            holds[attr] = attr
        elif isinstance(mutation.value, cst.BaseExpression) and mutation.ctx.function is not None:
            source = _derived_from(mutation.value, mutation.ctx.function, holds, opened)
            local = _derived_from_local(mutation.value, mutation.ctx.function) if source is None else None
            if source is not None:
                holds.setdefault(attr, source)
            elif local is not None and attr not in opened:
                opened[attr] = (mutation, *local)
                holds[attr] = attr
    for attr, (mutation, opener, _, derived) in opened.items():
        if any(holds.get(name) == attr for name in read):
            yield mutation, attr, opener, derived


def _steps_to(
    value: cst.BaseExpression, at_base: Callable[[cst.BaseExpression], bool]
) -> Optional[Tuple[List[str], cst.BaseExpression]]:
    """The steps from ``value`` down to the first node ``at_base`` accepts ("[]" an item, "." an attribute,
    "name()" a method's result), and that node; None past anything else (`[:]`, `[()]` read the data out)."""
    steps: List[str] = []
    node = value
    while not at_base(node):
        if isinstance(node, cst.Subscript) and _picks_an_item(node):
            steps.append("[]")
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            steps.append(node.func.attr.value + "()")
            node = node.func.value
        elif isinstance(node, cst.Attribute):
            steps.append(".")
            node = node.value
        else:
            return None
    return steps, node


def _derived_from_local(value: cst.BaseExpression, method: FunctionInfo) -> Optional[Tuple[str, str, str]]:
    """(opener, its qualified name, the derivation's text) when ``value`` is a handle a local variable of
    ``method`` opens (`h = h5py.File(p)`, bound once), or a value derived from it that is still the handle
    (`h["images"]`, `conn.cursor()`: DERIVED_HANDLES)."""
    walked = _steps_to(value, lambda node: isinstance(node, cst.Name))
    if walked is None or not isinstance(walked[1], cst.Name):
        return None
    steps, node = walked[0], walked[1]
    bindings = method.scope.bindings.get(node.value, []) if method.scope.lookup(node.value) is method.scope else []
    opened = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
    opener = _opener(opened, method.scope)
    if opener is None or not isinstance(opened, cst.Call):
        return None
    qualname = min(call_qualnames(opened, method.scope))
    kind = DERIVED_HANDLES.get(qualname)
    if steps and (kind is None or not all(_keeps(kind, step) for step in steps)):
        return None
    return opener, qualname, source_of(value)[len(node.value):]


def _derived_from(value: cst.BaseExpression, method: FunctionInfo, holds: Dict[str, str],
                  opened: Dict[str, Tuple[Mutation, str, str, str]]) -> Optional[str]:
    """The handle attribute ``value`` still is: items, attributes or handle-returning methods of one,
    every step kept by what its opener returns (DERIVED_HANDLES)."""
    walked = _steps_to(value, lambda node: self_attribute(node, method) is not None)
    if walked is None:
        return None
    steps, node = walked
    handle = holds.get(self_attribute(node, method) or "")
    kind = DERIVED_HANDLES.get(opened[handle][2]) if handle is not None else None
    if handle is None or kind is None or not steps:
        return handle if not steps else None
    return handle if all(_keeps(kind, step) for step in steps) else None


def _picks_an_item(node: cst.Subscript) -> bool:
    """`h["images"]`, `h[name]`: one item (a dataset or group of the file), not a slice of data."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    index = node.slice[0].slice.value
    return not (isinstance(index, cst.Tuple) and not index.elements)


def _keeps(kind: Derived, step: str) -> bool:
    if step == "[]":
        return kind.items
    if step == ".":
        return kind.attributes
    return step[:-2] in kind.methods


def _opener(value: Optional[cst.CSTNode], scope: Scope) -> Optional[str]:
    """The opener's name when ``value`` opens a file or connection."""
    if not isinstance(value, cst.Call):
        return None
    names = call_qualnames(value, scope)
    if names and names <= HANDLE_OPENERS:
        return source_of(value.func)
    if names and names <= NUMPY_LOAD and value.args:
        path = evaluate(value.args[0].value, scope)
        if isinstance(path, Known) and isinstance(path.value, str) and path.value.endswith(".npz"):
            return source_of(value.func)
    return None


def open_lazily(finding: Finding, ctx: FixContext) -> Outcome:
    """DL601: store `None` in `__init__` and open the handle on first use: `if self.h is None: self.h = ...`
    at the top of the one method that reads it, the opener's arguments read back from `self`."""
    target = finding.node
    line = _up(ctx, target, 3)  # Attribute < AssignTarget < Assign < SimpleStatementLine
    block = _up(ctx, line, 1)
    init = _up(ctx, block, 1)
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
            and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
            and isinstance(line.body[0], cst.Assign) and len(line.body[0].targets) == 1
            and isinstance(block, cst.IndentedBlock) and isinstance(init, cst.FunctionDef)
            and init.name.value == "__init__"):
        return "the handle is not opened by a plain `self.x = ...` statement of __init__ itself"
    klass = _up(ctx, init, 2)
    opener = line.body[0].value
    if not isinstance(klass, cst.ClassDef):
        return "the opener is not a call in a class's __init__"
    scope = ctx.scope_of(opener) if isinstance(opener, cst.Call) else None
    if not isinstance(opener, cst.Call) or scope is None or _opener(opener, scope) is None:  # `conn.cursor()`
        return "the stored value is not the handle's opener (a local handle, or an object holding one)"
    me, attr = target.value.value, target.attr.value
    stored = _stored_parameters(block, me, init)
    reopened = _reopen(opener, stored, me)
    if reopened is None:
        return "an argument of the opener is neither a literal nor a parameter __init__ stores on self"
    users = [m for m in _methods(klass) if m is not init and _uses_attribute(m, me, attr)]
    if _uses_attribute(init, me, attr, skip=line) or len(users) != 1 or users[0].name.value not in READERS:
        return f"self.{attr} is used outside one __getitem__/__iter__ of the class: a lazy open would not cover that"
    reader = users[0]
    receiver = [p.name.value for p in reader.params.params[:1]]
    if not isinstance(reader.body, cst.IndentedBlock) or receiver != [me]:
        return "the reading method's body or receiver is unusual"
    guard = cst.parse_statement(f"if {me}.{attr} is None:\n    {me}.{attr} = {code(reopened)}\n")

    def add_guard(updated: cst.FunctionDef) -> cst.FunctionDef:
        body = list(updated.body.body)
        at = 1 if body and _is_docstring(body[0]) else 0
        return updated.with_changes(body=updated.body.with_changes(body=[*body[:at], guard, *body[at:]]))

    def store_none(updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        assign = updated.body[0]
        return updated.with_changes(body=[assign.with_changes(value=cst.Name("None"))])

    plan = Plan()
    plan.statements[line] = store_none
    plan.statements[reader] = add_guard
    return plan


READERS = ("__getitem__", "__getitems__", "__iter__")


def _methods(klass: cst.ClassDef) -> List[cst.FunctionDef]:
    body = klass.body.body if isinstance(klass.body, cst.IndentedBlock) else []
    return [statement for statement in body if isinstance(statement, cst.FunctionDef)]


def _stored_parameters(block: cst.IndentedBlock, me: str, init: cst.FunctionDef) -> Dict[str, str]:
    """parameter -> attribute, for `self.attr = parameter` statements of __init__."""
    params = {p.name.value for p in init.params.params}
    out: Dict[str, str] = {}
    for statement in block.body:
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Name):
                stored = small.targets[0].target
                if (isinstance(stored, cst.Attribute) and isinstance(stored.value, cst.Name)
                        and stored.value.value == me and small.value.value in params):
                    out.setdefault(small.value.value, stored.attr.value)
    return out


def _reopen(opener: cst.Call, stored: Dict[str, str], me: str) -> Optional[cst.Call]:
    """The opener with each parameter argument read back from `self`; None when one cannot be."""
    args = []
    for arg in opener.args:
        value = arg.value
        if arg.star:
            return None
        if isinstance(value, cst.Name) and value.value in stored:
            value = cst.Attribute(value=cst.Name(me), attr=cst.Name(stored[value.value]))
        elif not isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)) and not (
            isinstance(value, cst.Name) and value.value in ("True", "False", "None")
        ):
            return None
        args.append(arg.with_changes(value=value))
    return opener.with_changes(args=args)


def _uses_attribute(func: cst.FunctionDef, me: str, attr: str, skip: Optional[cst.CSTNode] = None) -> bool:
    stack: List[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if node is skip:
            continue
        if (isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(node.value, cst.Name)
                and node.value.value == me):
            return True
        stack.extend(children(node))
    return False


def _up(ctx: FixContext, node: Optional[cst.CSTNode], steps: int) -> Optional[cst.CSTNode]:
    for _ in range(steps):
        node = ctx.parent(node) if node is not None else None
    return node


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString))
