"""What a dataset class does, as rules and module summaries both ask it.

Sharding by worker, CUDA work in the methods a worker runs, containers indexed
per sample, an `__iter__` that hands back a used-up object: facts of one class,
read by the DL5xx/DL6xx rules and by `project/summarise.py` alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from .classes import last_name, self_attribute
from .model import ClassInfo, FunctionInfo, LoaderCall, Mutation
from .nodes import children
from .resolve import Scope, call_qualnames, evaluate, resolve, source_of
from .states import Known

if TYPE_CHECKING:
    from .analysis import FileFacts


def iterable_classes(facts):
    return [k for k in facts.file.classes.values() if facts.file.dataset_kind(k) == "iterable"]


def reads_worker_info(facts, functions) -> bool:
    for function in functions:
        for record in facts.graph.calls_in(function):
            if last_name(record.node.func) == "get_worker_info":
                return True
            targets = resolve(record.node.func, record.ctx.scope)
            if any(isinstance(t, str) and t.endswith("get_worker_info") for t in targets):
                return True
    return False


def shards_by_worker(facts, klass: ClassInfo) -> bool:
    return reads_worker_info(facts, facts.graph.reachable(klass, ("__iter__", "__next__")))


def single_use_return(facts, klass: ClassInfo) -> Optional[str]:
    """'self' or 'self.<attr>' when __iter__ hands back an object that is exhausted after one pass."""
    method: Optional[FunctionInfo] = facts.file.method(klass, "__iter__")
    if method is None or method.is_generator or not method.params:
        return None
    receiver = method.params[0]
    for value in method.returns:
        if isinstance(value, cst.Name) and value.value == receiver:
            return receiver
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == receiver:
            return source_of(value)
    return None


def emptied_by(facts, call) -> Optional[str]:
    """Why a single-use dataset goes empty in this loader after one epoch; None when it does not."""
    for site, version in facts.iteration.versions(call):
        persistent = version.args["persistent_workers"].known_truthy()
        if (persistent or version.single_process()) and facts.iteration.iterated_repeatedly(site):
            if persistent:
                return "its persistent workers keep the used-up copy"
            return "a single process reuses the one dataset object"
    return None


def single_use_loaders(facts) -> Iterator[Tuple[ClassInfo, str, LoaderCall, str]]:
    """Each IterableDataset class of the file whose `__iter__` hands back a used-up object, with what it
    returns, the first loader that iterates it every epoch, and why that loader then goes empty."""
    for klass in iterable_classes(facts):
        what = single_use_return(facts, klass)
        if what is None:
            continue
        for call in facts.loaders.loaders_using(klass):
            mode = emptied_by(facts, call)
            if mode is not None:
                yield klass, what, call, mode
                break


READ_METHODS = ("__getitem__", "__getitems__", "__iter__")


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


def calls_on_attributes(facts: FileFacts, methods: List[FunctionInfo]) -> Dict[str, Set[str]]:
    """attr -> the method names ``methods`` call on `self.<attr>` (`self.x(...)` calls `__call__`): what a
    worker runs of an object the dataset holds (DL201's RNGs, DL601's handles one object removed)."""
    out: Dict[str, Set[str]] = {}
    for method in methods:
        for record in facts.graph.calls_in(method):
            func = record.node.func
            if isinstance(func, cst.Attribute) and self_attribute(func.value, method) is not None:
                out.setdefault(self_attribute(func.value, method) or "", set()).add(func.attr.value)
            elif self_attribute(func, method) is not None:
                out.setdefault(self_attribute(func, method) or "", set()).add("__call__")
    return out


def held_objects(
    facts: FileFacts, cls: ClassInfo, methods: List[FunctionInfo]
) -> Iterator[Tuple[Mutation, str, ClassInfo, List[FunctionInfo]]]:
    """Objects one step removed: `self.x = Helper(...)` stored at construction of ``cls``, Helper a class of
    the file that is not a dataset (a dataset held by a dataset reports for itself), with the methods of
    Helper that ``methods`` call on `self.x`: what a worker runs of it (DL201's RNGs, DL601's handles)."""
    called: Optional[Dict[str, Set[str]]] = None  # computed once, for the first held object
    for mutation in stores_in_init(facts, cls):
        attr = self_attribute(mutation.node, mutation.ctx.function) if mutation.ctx.function else None
        helper = facts.file.instance_class(mutation.value, mutation.ctx.scope) if attr and mutation.value else None
        if attr is None or helper is None or helper is cls or facts.file.dataset_kind(helper) is not None:
            continue
        called = calls_on_attributes(facts, methods) if called is None else called
        entries = [m for m in (facts.file.method(helper, n) for n in sorted(called.get(attr, ()))) if m]
        yield mutation, attr, helper, entries


CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.get_device_name"})


def is_cuda_text(expr: cst.BaseExpression, scope: Scope) -> bool:
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
                if is_cuda_text(value, scope):
                    return True
    if any(arg.keyword is not None and arg.keyword.value == "device" and is_cuda_text(arg.value, scope)
           for arg in call.args):
        return True
    names = call_qualnames(call, scope)
    return bool(names) and all(n.startswith("torch.cuda.") for n in names) and not names <= CUDA_QUERIES


# Calls whose result, made a list, holds one object per file or line.
FILE_LISTINGS = frozenset({"glob", "iglob", "rglob", "listdir", "iterdir", "scandir", "walk", "readlines", "open"})
CONTAINER_BUILDERS = frozenset({"json.load", "json.loads", "pickle.load", "pickle.loads", "builtins.list",
                                "builtins.sorted", "builtins.dict"})


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
