"""What the loops around a loader's iteration change: its dataset, what it is built from, torch's seed.

Persistent workers keep the dataset copy they started with, so advice (and a fix) to
persist them is only right when nothing in that loop can change the dataset. "May
change" is deliberately wide: any assignment into it, any method called on it or on
what it holds, or the dataset handed to a call (a helper, `setattr`, `random.shuffle`)
other than a few builtins that only read. Nor is it right when the loop reseeds torch
with the same value every pass: fresh workers then replay one random stream on purpose.
A loader rebuilt by a call in a loop is rebuilt on purpose when what it is built from
changes in place there (`LoopChanges`).
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

import libcst as cst

from .model import FunctionInfo, IterationSite, LoaderSite, LoopInfo, Mutation
from .nodes import children
from . import constants as C
from .resolve import Scope, names_in, qualname_in, source_of

# Calls that only read what they are given.
READ_ONLY_BUILTINS = frozenset(
    f"builtins.{name}"
    for name in ("len", "print", "isinstance", "type", "id", "hasattr", "repr", "str", "format", "bool")
)


def reference_chain(expr: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The expression and each prefix of its attribute/subscript chain: a.b[0].c -> a.b[0].c, a.b[0], a.b, a."""
    out = [expr]
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
        out.append(expr)
    return out


_ReferenceKey = Tuple[str, int, str]


def _reference_key(expr: cst.BaseExpression, scope: Scope) -> Optional[_ReferenceKey]:
    """What `same_reference` compares: a name with the scope it resolves to, or a `self.x` text."""
    if isinstance(expr, cst.Name):
        return ("name", id(scope.lookup(expr.value)), expr.value)
    if isinstance(expr, cst.Attribute):
        text = source_of(expr)
        if text.startswith("self."):
            return ("self", 0, text)
    return None


def same_reference(a, b, scope_a: Scope, scope_b: Scope) -> bool:
    """Two expressions naming the same variable or the same `self.x`."""
    key = _reference_key(a, scope_a)
    return key is not None and key == _reference_key(b, scope_b)


class DatasetReferences:
    """Recognises expressions that denote a loader's dataset (or something it holds)."""

    def __init__(self, facts, site: LoaderSite) -> None:
        self.facts = facts
        self.site = site
        call = site.calls[0] if len(site.calls) == 1 and site.node is site.calls[0].node else None
        self.dataset = call.args["dataset"].expr if call is not None else None

    def denotes(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """``expr`` is the dataset, `loader.dataset`, or an attribute/item chain into either."""
        for prefix in reference_chain(expr):
            if self.dataset is not None and same_reference(prefix, self.dataset, scope, self.site.ctx.scope):
                return True
            if isinstance(prefix, cst.Attribute) and prefix.attr.value == "dataset":
                if self.site in self.facts.flow.sites_of(prefix.value, scope):
                    return True
        return False


def assignments_into(
    facts, references: DatasetReferences, it: IterationSite, loops: Set[LoopInfo]
) -> Iterator[cst.CSTNode]:
    """Attribute or item assignments into the dataset, in ``loops``, in the function of the iteration."""
    for mutation in facts.mutations:
        ctx = mutation.ctx
        if ctx.function is it.ctx.function and loops & set(ctx.loops) and references.denotes(mutation.base, ctx.scope):
            yield mutation.node


def dataset_change_in_loop(facts, site: LoaderSite) -> Optional[cst.CSTNode]:
    """A statement or call, inside a loop that repeats the site's iteration, that may change its dataset;
    for a loader a framework iterates every epoch, a per-epoch callback of it that changes a dataset."""
    references = DatasetReferences(facts, site)
    for it in facts.iteration.iterations_of(site):
        loops = it.repeating_loops
        if loops:
            found = facts.loop_touches.touching(it.ctx.function, loops, references)
            if found is not None:
                return found
        elif it.repeated_inside and it.node in facts.framework_epoch_nodes:
            found = facts.epoch_callback_change
            if found is not None:
                return found
    return None


class _Touches(NamedTuple):
    by_reference: Dict[_ReferenceKey, cst.CSTNode]  # a prefix a statement changes through -> that statement
    through_dataset: List[Tuple[cst.BaseExpression, Scope, cst.CSTNode]]  # X of a changed `X.dataset`, with where


class LoopTouches:
    """What the statements of a function's loops may change through (assignment targets, method
    receivers, arguments of calls other than read-only builtins), indexed once per (function, loops)
    by the references they start with: each loader's question is then a lookup, so n loaders
    iterated in one loop cost n, not n x n."""

    def __init__(self, facts) -> None:
        self._facts = facts
        self._mutations: Dict[Optional[FunctionInfo], List[Mutation]] = {}
        for mutation in facts.mutations:
            self._mutations.setdefault(mutation.ctx.function, []).append(mutation)
        self._index: Dict[Tuple[Optional[FunctionInfo], FrozenSet[LoopInfo]], _Touches] = {}
        self._holders: Dict[int, Dict[LoaderSite, cst.CSTNode]] = {}

    def _touches(self, function: Optional[FunctionInfo], loops: Set[LoopInfo]) -> _Touches:
        key = (function, frozenset(loops))
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = _Touches({}, [])

            def add(expr: cst.BaseExpression, scope: Scope, node: cst.CSTNode) -> None:
                for prefix in reference_chain(expr):
                    reference = _reference_key(prefix, scope)
                    if reference is not None:
                        found.by_reference.setdefault(reference, node)
                    if isinstance(prefix, cst.Attribute) and prefix.attr.value == "dataset":
                        found.through_dataset.append((prefix.value, scope, node))

            mutations = self._mutations.get(function, [])
            records = self._facts.graph.calls_in(function)
            self._facts.file.budget.spend(len(mutations) + len(records))
            for mutation in mutations:
                if loops & set(mutation.ctx.loops):
                    add(mutation.base, mutation.ctx.scope, mutation.node)
            for record in records:
                if not loops & set(record.ctx.loops):
                    continue
                # A method of the dataset or of what it holds, the dataset handed to a helper, setattr,
                # random.shuffle...; a same-file callee is read (v7): one that only reads changes nothing.
                for expr, flags in self._facts.changed_parameters.handed(record):
                    if False in flags:
                        add(expr, record.ctx.scope, record.node)
                    if True in flags:  # the callee changes the `.dataset` of what it is given
                        found.through_dataset.append((expr, record.ctx.scope, record.node))
        return found

    def touching(self, function: Optional[FunctionInfo], loops: Set[LoopInfo],
                 references: DatasetReferences) -> Optional[cst.CSTNode]:
        """A statement of those loops that may change the dataset ``references`` recognises."""
        touches = self._touches(function, loops)
        dataset = references.dataset
        reference = _reference_key(dataset, references.site.ctx.scope) if dataset is not None else None
        if reference is not None and reference in touches.by_reference:
            return touches.by_reference[reference]
        if not touches.through_dataset:
            return None
        holders = self._holders.get(id(touches))
        if holders is None:  # which loader each `X.dataset` may be the dataset of, worked out once
            holders = self._holders[id(touches)] = {}
            for holder, scope, node in touches.through_dataset:
                for site in self._facts.flow.sites_of(holder, scope):
                    holders.setdefault(site, node)
        return holders.get(references.site)


class LoopChanges:
    """What each loop body may change in place, as reference texts (`hyp`, `cfg.opt`, `self.data`).

    An item or attribute assignment (plain or augmented) changes the object it writes into and
    rebinds the reference it writes (`hyp[k] = v`: `hyp`; `cfg.lr = v`: `cfg` and `cfg.lr`; in a
    method, `self.x = v`: `self.x` alone); a method call changes its receiver (`hyp.update(d)`:
    `hyp`), except a call on the method's own `self`, whose effect is not followed. Calls and
    assignments are grouped by loop once; a loop's texts are made when first asked for, with the
    texts of what holds them (`cfg` holds `cfg.opt.lr`), so each question costs its chain's length.
    """

    def __init__(self, facts) -> None:
        self._written: Dict[LoopInfo, List[Tuple[Union[cst.Attribute, cst.Subscript], Optional[FunctionInfo]]]] = {}
        self._receivers: Dict[LoopInfo, List[Tuple[cst.BaseExpression, Optional[FunctionInfo]]]] = {}
        for mutation in facts.mutations:
            target = mutation.node
            if isinstance(target, (cst.Attribute, cst.Subscript)):
                for loop in mutation.ctx.loops:
                    self._written.setdefault(loop, []).append((target, mutation.ctx.function))
        for record in facts.file.calls:
            func = record.node.func
            if isinstance(func, cst.Attribute):
                for loop in record.ctx.loops:
                    self._receivers.setdefault(loop, []).append((func.value, record.ctx.function))
        self._texts: Dict[LoopInfo, Tuple[Set[str], Set[str]]] = {}

    def _changed(self, loop: LoopInfo) -> Tuple[Set[str], Set[str]]:
        """(what the loop changes, what holds something it changes)."""
        found = self._texts.get(loop)
        if found is None:
            changed: List[cst.BaseExpression] = []
            for target, function in self._written.get(loop, ()):
                changed.append(target)
                if not _is_own_self(target.value, function) or isinstance(target, cst.Subscript):
                    changed.append(target.value)
            changed.extend(r for r, function in self._receivers.get(loop, ()) if not _is_own_self(r, function))
            holders = {source_of(prefix) for node in changed for prefix in reference_chain(node)[1:]}
            found = self._texts[loop] = ({source_of(node) for node in changed}, holders)
        return found

    def changes(self, loop: LoopInfo, expr: cst.BaseExpression) -> bool:
        """``expr`` reads something the loop changes: a reference it changes or one holding it
        (`hyp["lr"]` when `hyp` is written into), or something inside it (`cfg` when `cfg.lr` is)."""
        changed, holders = self._changed(loop)
        if not changed:
            return False
        for reference in references(expr):
            if source_of(reference) in holders:
                return True
            if any(source_of(prefix) in changed for prefix in reference_chain(reference)):
                return True
        return False


def _is_own_self(expr: cst.BaseExpression, function: Optional[FunctionInfo]) -> bool:
    return (isinstance(expr, cst.Name) and function is not None and function.cls is not None
            and function.params[:1] == [expr.value])


def references(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """Every whole name, attribute or subscript chain read in ``expr`` (`a.b[0].c`, not its prefixes)."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            yield node
            for part in reference_chain(node):
                if isinstance(part, cst.Subscript):
                    stack.extend(part.slice)
            continue
        stack.extend(children(node))


class Reseeds:
    """Where torch is reseeded: the same-file functions that seed it (themselves or through the
    functions they call), and the first seeding call of each loop set, found once per file."""

    def __init__(self, facts) -> None:
        self._facts = facts
        direct = {r.ctx.function for r in facts.file.calls if r.ctx.function is not None and self._seeds_torch(r)}
        self.functions: Set[FunctionInfo] = facts.graph.calling(direct) if direct else set()
        self._first: Dict[Tuple[Optional[FunctionInfo], FrozenSet[LoopInfo]], Optional[cst.Call]] = {}

    @staticmethod
    def _seeds_torch(record) -> bool:
        return qualname_in(record.node.func, record.ctx.scope, C.TORCH_SEEDERS)

    def seeds(self, record) -> bool:
        """The call seeds torch, directly or through a same-file function."""
        called = self._facts.graph.callees.get(record.node)
        return self._seeds_torch(record) or (called is not None and called.function in self.functions)

    def first(self, function: Optional[FunctionInfo], loops: Set[LoopInfo]) -> Optional[cst.Call]:
        """The first call in ``function``, inside ``loops``, that seeds torch with a value they do not change."""
        key = (function, frozenset(loops))
        if key not in self._first:
            records = self._facts.graph.calls_in(function)
            self._facts.file.budget.spend(len(records))
            seeding = (r.node for r in records if loops & set(r.ctx.loops) and self.seeds(r))
            self._first[key] = next((node for node in seeding if not arguments_bound_in(node, loops)), None)
        return self._first[key]


def reseeded_each_pass(facts, site: LoaderSite) -> Optional[cst.Call]:
    """A call, in a loop that repeats the site's iteration and before that iteration, that seeds torch
    with a value the loop does not change (`torch.manual_seed(42)`, a same-file helper that calls it,
    or the iterating function seeding itself): each pass then replays one random stream, which
    persistent workers would change."""
    reseeds = facts.reseeds
    for it in facts.iteration.iterations_of(site):
        loops = it.repeating_loops
        if not loops:
            continue
        callee = facts.graph.callees.get(it.node) if isinstance(it.node, cst.Call) else None
        if callee is not None and callee.function in reseeds.functions and not arguments_bound_in(it.node, loops):
            return it.node
        seed = reseeds.first(it.ctx.function, loops)
        if seed is not None and facts.starts_before(seed, it.node):
            return seed
    return None


def arguments_bound_in(call: cst.Call, loops: Iterable[LoopInfo]) -> bool:
    """A name the call's arguments read is bound in one of the loops (the loop target included)."""
    used: Set[str] = set()
    for arg in call.args:
        used |= names_in(arg.value)
    return any(used & loop.bound_names for loop in loops)
