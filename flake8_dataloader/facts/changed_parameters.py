"""What each same-file function may change in what it is given, at any depth of calls (v7).

A loop that hands its dataset to `log_stats(val_set)` changes nothing when `log_stats` only
reads it, and a loop that calls `validate(loader)` changes the loader's dataset when
`validate` calls `loader.dataset.set_scale(s)`. Each function is read once: a parameter is
changed by an attribute or item assignment into it, by a method called on it (or on what it
holds) other than a same-file method that changes nothing, by being handed to a call this file
cannot see into (builtins that only read aside), or by being handed to a same-file function
that changes it. A factory's change to what it builds a new loader from is seen by that
loader's new workers: it does not count.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from .model import FunctionInfo
from .mutation import READ_ONLY_BUILTINS, reference_chain
from .resolve import resolve

# (parameter, through its `.dataset`): `p.x = 1` gives (p, False); `p.dataset.set_scale(s)` both.
Change = Tuple[str, bool]
# Calls that only read what they are given (or hold it, as a Subset holds its dataset).
_READING_BUILTINS = ("range", "min", "max", "sum", "sorted", "list", "tuple", "enumerate", "zip", "iter", "next",
                     "any", "all", "float", "int", "round", "abs", "getattr")
_HOLDERS = ("Subset", "ConcatDataset", "dataset.Subset", "dataset.ConcatDataset")
ONLY_READ = (READ_ONLY_BUILTINS | frozenset(f"builtins.{name}" for name in _READING_BUILTINS)
             | frozenset(f"torch.utils.data.{name}" for name in _HOLDERS))
# Past this depth of same-file calls, a function is taken to change every parameter.
MAX_DEPTH = 64


class ChangedParameters:
    """The parameters each same-file function may change, the receiver (`self`) included."""

    def __init__(self, facts) -> None:
        self._facts = facts
        self._memo: Dict[FunctionInfo, FrozenSet[Change]] = {}
        self._only_read = ONLY_READ | facts.file.loader_names  # a loader built over a dataset reads it
        self._foreign_readers: Optional[FrozenSet[str]] = None
        self._mutations: Dict[Optional[FunctionInfo], List[cst.BaseExpression]] = {}
        for mutation in facts.mutations:
            self._mutations.setdefault(mutation.ctx.function, []).append(mutation.base)

    @property
    def foreign_readers(self) -> FrozenSet[str]:
        """Methods of the imported dataset classes this file's loaders read that change nothing on
        `self` there (their module summaries say so), unless a class of this file has one so named."""
        if self._foreign_readers is None:
            facts = self._facts
            names: Set[str] = set()
            if facts.file.imports is not None:
                for call in [*facts.flow.loader_calls.values(), *facts.loaders.foreign_calls]:
                    held = call.foreign.dataset_summaries if call.foreign is not None else ()
                    for dataset in [*facts.loaders.foreign_datasets(call), *held]:
                        names.update(dataset.readers)
            own = {name for cls in facts.file.classes.values() for name in cls.methods}
            self._foreign_readers = frozenset(names - own)
        return self._foreign_readers

    def of(self, func: FunctionInfo, depth: int = 0) -> FrozenSet[Change]:
        found = self._memo.get(func)
        if found is not None:
            return found
        if depth > MAX_DEPTH:
            return frozenset((p, True) for p in func.params) | frozenset((p, False) for p in func.params)
        self._memo[func] = frozenset()  # a recursive call adds nothing to what the cycle finds
        changes: Set[Change] = set()
        params = set(func.params)
        records = self._facts.graph.calls_in(func)
        self._facts.file.budget.spend(len(records) + len(self._mutations.get(func, ())))
        for base in self._mutations.get(func, ()):
            changes |= _rooted(base, params)
        for record in records:
            for expr, changed in self.handed(record, depth + 1):
                if changed:
                    changes |= _rooted(expr, params, changed)
        result = self._memo[func] = frozenset(changes)
        return result

    def handed(self, record, depth: int = 0) -> Iterator[Tuple[cst.BaseExpression, FrozenSet[bool]]]:
        """What one call may change: each expression it is given (receiver included), with
        {False}: the value itself, {True}: its `.dataset`, or both; empty: only read."""
        call, scope = record.node, record.ctx.scope
        callee = self._facts.graph.callees.get(call)
        if callee is None:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value not in self.foreign_readers:
                yield call.func.value, SELF  # a method this file cannot see may change its receiver
            if not resolve(call.func, scope) <= self._only_read:  # unresolved: not followed, as before
                for arg in call.args:
                    yield arg.value, SELF
            return
        function = callee.function
        if builds_new_loader(self._facts, function):
            return  # its new loader's workers see what it changes
        changed = self.of(function, depth)
        mapped = self._facts.graph.map_arguments(call, function, callee.offset)
        if callee.offset and isinstance(call.func, cst.Attribute) and function.params:
            mapped.append((function.params[0], call.func.value))
        seen = set()
        for param, expr in mapped:
            seen.add(id(expr))
            flags = frozenset(through for name, through in changed if name == param)
            if flags:
                yield expr, flags
        for arg in call.args:
            if id(arg.value) not in seen:
                yield arg.value, SELF  # into *args/**kwargs, or a splat: not followed


def builds_new_loader(facts, function: FunctionInfo) -> bool:
    """A factory: what it changes before building its loader is what that loader's new workers get."""
    return function in facts.flow.factories


SELF: FrozenSet[bool] = frozenset({False})


def _rooted(expr: cst.BaseExpression, params: Set[str], flags: FrozenSet[bool] = SELF) -> Set[Change]:
    """The changes an expression's change makes to the parameter its chain starts with."""
    chain = reference_chain(expr)
    root = chain[-1]
    if not isinstance(root, cst.Name) or root.value not in params:
        return set()
    name = root.value
    out = {(name, False)}
    through_dataset = len(chain) > 1 and isinstance(chain[-2], cst.Attribute) and chain[-2].attr.value == "dataset"
    if through_dataset or (len(chain) == 1 and True in flags):
        out.add((name, True))
    return out
