"""DL6xx: resources a worker's copy of the dataset cannot share (handles, CUDA, copied containers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from ..facts.classes import last_name, self_attribute
from ..facts.model import ClassInfo, FunctionInfo, Known, Mutation
from ..facts.nodes import children
from ..facts.resolve import Scope, call_qualnames, evaluate, resolve
from .base import DEFINED_HERE, INHERITS, NEEDS_LOADER, PER_FILE, Finding, Rule, source_of

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings

READ_METHODS = ("__getitem__", "__getitems__", "__iter__")
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


def dataset_classes(facts: FileFacts) -> List[ClassInfo]:
    return [cls for cls in facts.file.classes.values() if facts.file.dataset_kind(cls) is not None]


def attributes_read(methods: List[FunctionInfo], indexed: bool = False) -> Set[str]:
    """`self` attributes the methods use (``indexed``: only as `self.attr[...]`)."""
    out: Set[str] = set()
    for method in methods:
        stack: List[cst.CSTNode] = [method.node.body]
        while stack:
            node = stack.pop()
            if indexed and isinstance(node, cst.Subscript):
                attr = self_attribute(node.value, method)
                if attr is not None:
                    out.add(attr)
            elif not indexed:
                attr = self_attribute(node, method)
                if attr is not None:
                    out.add(attr)
            stack.extend(children(node))
    return out


def stores_in_init(facts: FileFacts, cls: ClassInfo) -> Iterator[Mutation]:
    """`self.x = value` in `__init__` of ``cls`` (or a method it calls), inherited ones included."""
    init_methods = set(facts.graph.reachable(cls, ["__init__"]))
    for mutation in facts.mutations:
        method = mutation.ctx.function
        if method in init_methods and mutation.value is not None and self_attribute(mutation.node, method):
            yield mutation


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
    Not reported when the class defines `__getstate__`, `__setstate__` or
    `__reduce__` (it decides what a worker receives), when `np.load` does not
    name an `.npz` file, or when every loader of the class in the file is
    proven single-process. A module that only defines the class is
    reported. A handle opened in a `with` block and closed there is not
    stored. A value derived from a stored handle at construction is still
    the handle, read where it is read: an item of an HDF5 file or zarr store
    (`self.images = self.h5["images"]`), an attribute chain of a PyTables
    file (`self.f.root.samples`), a connection's `cursor()`, an LMDB
    environment's `begin()`, a member a zip or tar opens; a slice, `[()]`,
    an `.npz`'s or an HDFStore's items and other methods
    (`zf.namelist()`, `f.read()`) read the data out and are not the handle.
    Anchor: the assignment that opens the handle.

    ## References
    - [Multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading): each worker holds a copy of the dataset object.
    - [pytorch#11887](https://github.com/pytorch/pytorch/issues/11887), [pytorch#11929](https://github.com/pytorch/pytorch/issues/11929): HDF5 files opened in `__init__` read wrong in workers.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL601"
    ACROSS_FILES = DEFINED_HERE.format(what="dataset class")
    NAME = "handle-shared-with-workers"
    MESSAGE = (
        "self.{attr} = {opener}(...) is copied into every worker of {klass} (wrong reads under fork, a pickling "
        "error under spawn); set self.{attr} = None here and open it on first use in {method}"
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
            for mutation, attr, opener in _handles_read(facts, klass, read):
                if mutation.node not in reported:
                    reported.add(mutation.node)
                    yield cls.finding(mutation.node, attr=attr, opener=opener, klass=klass.name, method=entry)


def _handles_read(facts: FileFacts, klass: ClassInfo, read: Set[str]) -> Iterator[Tuple[Mutation, str, str]]:
    """(assignment, attribute, opener) for each handle stored on `self` at construction and read by a
    worker: itself, or through an attribute holding a value derived from it (`self.imgs = self.h["x"]`)."""
    opened: Dict[str, Tuple[Mutation, str, str]] = {}  # attribute -> (its opening, opener, qualified name)
    holds: Dict[str, str] = {}  # attribute -> the handle attribute it holds (itself, or derived from it)
    for mutation in stores_in_init(facts, klass):
        attr = self_attribute(mutation.node, mutation.ctx.function) if mutation.ctx.function else None
        if attr is None:
            continue
        opener = _opener(mutation.value, mutation.ctx.scope)
        if opener is not None and isinstance(mutation.value, cst.Call):
            names = call_qualnames(mutation.value, mutation.ctx.scope)
            opened.setdefault(attr, (mutation, opener, min(names)))
            holds[attr] = attr
        elif isinstance(mutation.value, cst.BaseExpression) and mutation.ctx.function is not None:
            source = _derived_from(mutation.value, mutation.ctx.function, holds, opened)
            if source is not None:
                holds.setdefault(attr, source)
    for attr, (mutation, opener, _) in opened.items():
        if any(holds.get(name) == attr for name in read):
            yield mutation, attr, opener


def _derived_from(value: cst.BaseExpression, method: FunctionInfo, holds: Dict[str, str],
                  opened: Dict[str, Tuple[Mutation, str, str]]) -> Optional[str]:
    """The handle attribute ``value`` still is: items, attributes or handle-returning methods of one,
    every step kept by what its opener returns (DERIVED_HANDLES)."""
    steps: List[str] = []  # "[]", "." or "name()", from the value down to `self.attr`
    node: cst.BaseExpression = value
    while self_attribute(node, method) is None:
        if isinstance(node, cst.Subscript):
            if not _picks_an_item(node):
                return None  # `[:]`, `[()]`, `[0:100]` read the data out
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


CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.get_device_name"})


def _is_cuda_text(expr: cst.BaseExpression, scope: Scope) -> bool:
    state = evaluate(expr, scope)
    return isinstance(state, Known) and isinstance(state.value, str) and state.value.startswith("cuda")


def cuda_in_reads(facts: FileFacts, klass: ClassInfo) -> Optional[Tuple[FunctionInfo, cst.Call]]:
    """The first CUDA call in the methods a worker runs to read the class (`__getitem__`, `__iter__`...)."""
    for method in facts.graph.reachable(klass, READ_METHODS):
        for record in facts.graph.calls_in(method):
            if cuda_call(record.node, record.ctx.scope):
                return method, record.node
    return None


def containers_indexed(facts: FileFacts, klass: ClassInfo) -> List[Mutation]:
    """`self.x = <a Python list/dict built from data>` in `__init__` that `__getitem__` indexes (DL620)."""
    if facts.file.dataset_kind(klass) != "map":
        return []
    indexed = attributes_read(facts.graph.reachable(klass, ("__getitem__", "__getitems__")), indexed=True)
    found = []
    for mutation in stores_in_init(facts, klass):
        method = mutation.ctx.function
        attr = self_attribute(mutation.node, method) if method is not None else None
        if attr in indexed and _built_container(mutation.value, mutation.ctx.scope):
            found.append(mutation)
    return found


def cuda_call(call: cst.Call, scope: Scope) -> bool:
    """`.cuda()`, `.to("cuda")`, `.to(torch.device("cuda"))`, `device="cuda"`, `torch.cuda.*` (not queries)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and not call.args:
        return True
    if isinstance(func, cst.Attribute) and func.attr.value == "to":
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value == "device":
                value = arg.value
                if isinstance(value, cst.Call) and last_name(value.func) == "device" and value.args:
                    value = value.args[0].value
                if _is_cuda_text(value, scope):
                    return True
    if any(arg.keyword is not None and arg.keyword.value == "device" and _is_cuda_text(arg.value, scope)
           for arg in call.args):
        return True
    names = call_qualnames(call, scope)
    return bool(names) and all(n.startswith("torch.cuda.") for n in names) and not names <= CUDA_QUERIES


class CudaInWorkerCode(Rule):
    """
    ## What it does
    Flags CUDA work in code that runs inside loader workers: `.cuda()`,
    `.to("cuda")`, `.to(torch.device("cuda"))`, `device="cuda"` in tensor
    creation, or a `torch.cuda.*` call (other than `is_available`,
    `device_count`, `get_device_name`) in `__getitem__`/`__iter__` of a
    dataset class of this file (or what they call), in a `collate_fn` or in a
    `worker_init_fn`, when a loader with workers uses it.

    ## Why is this bad?
    Under fork, once the main process has initialised CUDA, the worker
    raises `RuntimeError: Cannot re-initialize CUDA in forked subprocess`
    (`torch/cuda/__init__.py`). Under spawn each worker creates its own CUDA
    context (hundreds of MB of GPU memory each) and the copy does not
    overlap with compute. Not verified on a GPU here: the scenario needs
    CUDA (Measured cost, below).

    ## Example
    ```python
    from torch.utils.data import DataLoader, Dataset


    class OnDevice(Dataset):
        def __init__(self, samples):
            self.samples = samples

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index].cuda()


    def make(samples):
        return DataLoader(OnDevice(samples), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, Dataset


    class OnHost(Dataset):
        def __init__(self, samples):
            self.samples = samples

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index]


    def make(samples):
        # Move batches in the training loop: batch.to(device, non_blocking=True).
        return DataLoader(OnHost(samples), batch_size=32, num_workers=4, pin_memory=True)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, Dataset


    class Configured(Dataset):
        def __init__(self, samples, device):
            self.samples, self.device = samples, device

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            return self.samples[index].to(self.device)  # the device is unknown here


    def make(samples):
        return DataLoader(Configured(samples, "cpu"), batch_size=32)  # and no workers
    ```

    ## Options
    None.

    ## Known limits
    A device that is not a known string (`.to(self.device)`, `.to(args.device)`)
    is not reported. CUDA tensors stored in `__init__` and read in
    `__getitem__` are not followed yet. Anchor: the CUDA call.

    ## References
    - [CUDA in multiprocessing](https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing): the CUDA runtime does not support fork.
    - [pytorch#40403](https://github.com/pytorch/pytorch/issues/40403): "Cannot re-initialize CUDA in forked subprocess" from a dataset.
    """

    CODE = "DL602"
    ACROSS_FILES = (
        "A dataset class imported from the project whose `__getitem__`/`__iter__` (or what they call) uses CUDA "
        "is followed: the worker-using loader call of this file is reported (or the call of an imported factory "
        "whose dataset parameter is given an instance), naming the method's file and line. collate_fn and "
        "worker_init_fn functions are followed within their file."
    ) + INHERITS
    NAME = "cuda-in-worker-code"
    MESSAGE = (
        "CUDA used in {where}, which runs in the loader's workers (fork: 'Cannot re-initialize CUDA'; spawn: a "
        "CUDA context per worker); return CPU tensors and move batches in the training loop (pin_memory=True)"
    )
    CONDITION = (("workers",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        where: Dict[FunctionInfo, str] = {}
        for klass in dataset_classes(facts):
            if any(facts.iteration.may_use_workers(call) for call in facts.loaders.loaders_using(klass)):
                for method in facts.graph.reachable(klass, READ_METHODS):
                    where.setdefault(method, f"{klass.name}.{method.name}")
        for call in facts.flow.loader_calls.values():
            if not facts.iteration.may_use_workers(call):
                continue
            for name in ("collate_fn", "worker_init_fn"):
                for func in facts.graph.reached_from(*facts.graph.functions_of(call.args[name].expr, call.ctx.scope)):
                    where.setdefault(func, f"{name} {func.name}")
        reported: Set[cst.CSTNode] = set()
        for func, label in where.items():
            for record in facts.graph.calls_in(func):
                if record.node not in reported and cuda_call(record.node, record.ctx.scope):
                    reported.add(record.node)
                    yield cls.finding(record.node, where=label)
        # Dataset classes of other project modules: reported at the loader (or imported factory) call here.
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            if dataset.cuda is not None:
                yield cls.finding(call.node, where=f"{dataset.cuda[0]} ({dataset.cuda[1]})")


CUDA_TENSOR_TYPES = "torch.cuda."


def sets_cuda_default(facts: FileFacts) -> bool:
    """`torch.set_default_device("cuda")` or `torch.set_default_tensor_type(torch.cuda.FloatTensor)`."""
    for record in facts.file.calls:
        names = call_qualnames(record.node, record.ctx.scope)
        if not record.node.args:
            continue
        value = record.node.args[0].value
        if names == {"torch.set_default_device"} and _is_cuda_text(value, record.ctx.scope):
            return True
        if names == {"torch.set_default_tensor_type"}:
            text = evaluate(value, record.ctx.scope)
            if isinstance(text, Known) and isinstance(text.value, str) and text.value.startswith(CUDA_TENSOR_TYPES):
                return True
            targets = resolve(value, record.ctx.scope)
            if targets and all(isinstance(t, str) and t.startswith(CUDA_TENSOR_TYPES) for t in targets):
                return True
    return False


RANDOM_SAMPLERS: FrozenSet[str] = frozenset({"torch.utils.data.RandomSampler", "torch.utils.data.sampler.RandomSampler"})


class CudaDefaultDeviceWithShuffle(Rule):
    """
    ## What it does
    Flags a loader that shuffles (`shuffle=True`, or a `RandomSampler` built
    without `generator=`) and passes no `generator=` in a file that makes
    CUDA the default device (`torch.set_default_device("cuda")`,
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`); and the
    reverse: `generator=torch.Generator(device="cuda")` on a shuffling
    loader in a file that does not.

    ## Why is this bad?
    `RandomSampler` draws its order with `torch.randperm(n, generator=...)`
    from a CPU generator it creates; with CUDA as the default device that
    raises `RuntimeError: Expected a 'cuda' device type for generator but
    found 'cpu'` at the first iteration (read from `torch/utils/data/sampler.py`;
    the scenario needs CUDA to confirm it, see Measured cost). The reverse
    mismatch raises "Expected a 'cpu' device type for generator but found
    'cuda'".

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32, shuffle=True, generator=torch.Generator(device="cuda"))
    ```

    ## Not reported
    ```python
    import torch
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")


    def make(dataset):
        return DataLoader(dataset, batch_size=32)  # sequential: no generator drawn
    ```

    ## Options
    None.

    ## Known limits
    Which fix PyTorch accepts on every version (a CUDA generator, or building
    the loader before switching the default device) is for the CUDA scenario
    to show; until it has run on a GPU the page says what the source implies.
    A default device set in another module is not seen. Anchor: the loader
    call.

    ## References
    - [`torch.set_default_device`](https://pytorch.org/docs/stable/generated/torch.set_default_device.html).
    - [`torch/utils/data/sampler.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/sampler.py): `RandomSampler.__iter__` builds a CPU `torch.Generator()` when none is given.
    """

    CODE = "DL603"
    ACROSS_FILES = PER_FILE
    NAME = "cuda-default-device-with-shuffle"
    MESSAGE = "{problem}"
    CONDITION = (("cuda_default", "shuffles"),)
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        cuda_default = sets_cuda_default(facts)
        for call in facts.flow.loader_calls.values():
            if not _shuffles(facts, call):
                continue
            generator = call.args["generator"]
            if cuda_default and generator.omitted:
                yield cls.finding(call.node, problem=(
                    "shuffling DataLoader with CUDA as the default device and no generator: RandomSampler's CPU "
                    "generator raises RuntimeError at the first batch; pass generator=torch.Generator(device='cuda')"
                ))
            elif not cuda_default and generator.expr is not None and _cuda_generator(generator.expr, call.ctx.scope):
                yield cls.finding(call.node, problem=(
                    "shuffling DataLoader given a CUDA generator while the default device is the CPU: RuntimeError "
                    "at the first batch; use torch.Generator() (CPU)"
                ))


def _shuffles(facts: FileFacts, call) -> bool:
    if call.args["shuffle"].known_truthy():
        return True
    sampler = call.args["sampler"].expr
    if sampler is None:
        return False
    for value in facts.flow.values(sampler, call.ctx.scope):
        node = value.node
        if isinstance(node, cst.Call) and call_qualnames(node, value.scope) and call_qualnames(node, value.scope) <= RANDOM_SAMPLERS:
            if not any(arg.keyword is not None and arg.keyword.value == "generator" for arg in node.args):
                return True
    return False


def _cuda_generator(expr: cst.BaseExpression, scope: Scope) -> bool:
    if not isinstance(expr, cst.Call) or call_qualnames(expr, scope) != {"torch.Generator"}:
        return False
    return any((arg.keyword is None or arg.keyword.value == "device") and _is_cuda_text(arg.value, scope)
               for arg in expr.args)


# Calls whose result, made a list, holds one object per file or line.
FILE_LISTINGS = frozenset({"glob", "iglob", "rglob", "listdir", "iterdir", "scandir", "walk", "readlines", "open"})
CONTAINER_BUILDERS = frozenset({"json.load", "json.loads", "pickle.load", "pickle.loads", "builtins.list",
                                "builtins.sorted", "builtins.dict"})


class ContainersCopiedOnRead(Rule):
    """
    ## What it does
    Flags a map-style dataset class of this file that stores on `self` in
    `__init__` a Python list or dict built from data (a comprehension,
    `json.load`, `pickle.load`, `.tolist()`, `.to_dict()`, `list(...)` or
    `sorted(...)` of a call) and indexes it in `__getitem__`, when a loader
    with workers of the class exists in the file.

    ## Why is this bad?
    Reading a Python object touches its reference count, so every forked
    worker gradually copies the pages it reads: memory grows toward
    (workers + 1) times the dataset's size (pytorch#13246). Measured: 2M
    strings and ints, 4 workers, after one epoch ~211 MB private memory per
    worker against ~13 MB with the same data in numpy arrays.

    ## Example
    ```python
    import json

    from torch.utils.data import DataLoader, Dataset


    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as handle:
                self.items = json.load(handle)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            return self.items[index]["caption"]


    def make(path):
        return DataLoader(Captions(path), batch_size=64, num_workers=8)
    ```

    ## Use instead
    ```python
    import json

    import numpy as np
    from torch.utils.data import DataLoader, Dataset


    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as handle:
                # One numpy array of fixed-width strings: no per-object reference counts.
                self.captions = np.array([item["caption"] for item in json.load(handle)])

        def __len__(self):
            return len(self.captions)

        def __getitem__(self, index):
            return str(self.captions[index])


    def make(path):
        return DataLoader(Captions(path), batch_size=64, num_workers=8)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, Dataset


    class Small(Dataset):
        def __init__(self):
            self.labels = ["cat", "dog"]  # a literal, not built from data

        def __len__(self):
            return 2

        def __getitem__(self, index):
            return self.labels[index]


    def make():
        return DataLoader(Small(), num_workers=2)
    ```

    ## Options
    Enable with `--extend-select=DL620`.

    ## Known limits
    The size is unknown statically: a small list is harmless. Anchor: the
    assignment.

    ## References
    - [pytorch#13246](https://github.com/pytorch/pytorch/issues/13246): memory of workers grows with a list-based dataset (copy-on-read).
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL620"
    ACROSS_FILES = (
        "A dataset class imported from the project is followed: the worker-using loader call of this file is "
        "reported (or the call of an imported factory whose dataset parameter is given an instance), naming the "
        "class's file and line; the defining file reports the assignment for its own loaders."
    ) + INHERITS
    NAME = "containers-copied-on-read"
    MESSAGE = (
        "self.{attr} is a Python container indexed by every worker of {klass}: each read copies its pages "
        "(memory grows toward workers + 1 copies); store it in numpy arrays or pyarrow instead"
    )
    CONDITION = (("workers",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER
    DEFAULT_OFF = True

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for klass in dataset_classes(facts):
            if not any(facts.iteration.may_use_workers(call) for call in facts.loaders.loaders_using(klass)):
                continue
            for mutation in containers_indexed(facts, klass):
                method = mutation.ctx.function
                attr = self_attribute(mutation.node, method) if method is not None else None
                yield cls.finding(mutation.node, attr=attr, klass=klass.name)
        # Dataset classes of other project modules: reported at the loader (or imported factory) call here.
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            for attr in dataset.containers:
                yield cls.finding(call.node, attr=attr, klass=f"{dataset.name} ({dataset.origin})")


def _built_container(value: Optional[cst.CSTNode], scope: Scope) -> bool:
    if isinstance(value, (cst.ListComp, cst.DictComp)):
        return True
    if not isinstance(value, cst.Call):
        return False
    if last_name(value.func) in ("tolist", "to_dict") and isinstance(value.func, cst.Attribute):
        return True
    names = call_qualnames(value, scope)
    if not names or not names <= CONTAINER_BUILDERS:
        return False
    if names <= {"builtins.list", "builtins.sorted", "builtins.dict"}:
        source = value.args[0].value if value.args else None
        if isinstance(source, cst.GeneratorExp):
            return True
        return isinstance(source, cst.Call) and last_name(source.func) in FILE_LISTINGS
    return True
