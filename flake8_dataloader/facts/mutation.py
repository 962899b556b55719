"""Whether the loop that repeats a loader's iteration may change the loader's dataset.

Persistent workers keep the dataset copy they started with, so advice (and a fix) to
persist them is only right when nothing in that loop can change the dataset. "May
change" is deliberately wide: any assignment into it, any method called on it or on
what it holds, or the dataset handed to a call (a helper, `setattr`, `random.shuffle`)
other than a few builtins that only read.
"""

from __future__ import annotations

from typing import FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from .model import FunctionInfo, IterationSite, LoaderSite, LoopInfo
from .resolve import Scope, resolve, source_of

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


def same_reference(a, b, scope_a: Scope, scope_b: Scope) -> bool:
    """Two expressions naming the same variable or the same `self.x`."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        return a.value == b.value and scope_a.lookup(a.value) is scope_b.lookup(b.value)
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        text_a, text_b = source_of(a), source_of(b)
        return text_a == text_b and text_a.startswith("self.")
    return False


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
                if self.site in self.facts.sites_of(prefix.value, scope):
                    return True
        return False


def repeating_loops(site: LoaderSite, it: IterationSite) -> Set[LoopInfo]:
    """The loops around an iteration that did not build the loader: those that repeat it."""
    return {loop for loop in it.loops if loop not in site.ctx.loops}


def assignments_into(
    facts, references: DatasetReferences, it: IterationSite, loops: Set[LoopInfo]
) -> Iterator[cst.CSTNode]:
    """Attribute or item assignments into the dataset, in ``loops``, in the function of the iteration."""
    for mutation in facts.mutations:
        ctx = mutation.ctx
        if ctx.function is it.ctx.function and loops & set(ctx.loops) and references.denotes(mutation.base, ctx.scope):
            yield mutation.node


def dataset_change_in_loop(facts, site: LoaderSite) -> Optional[cst.CSTNode]:
    """A statement or call, inside a loop that repeats the site's iteration, that may change its dataset."""
    references = DatasetReferences(facts, site)
    checked: Set[Tuple[Optional[FunctionInfo], FrozenSet[LoopInfo]]] = set()
    for it in facts.iterations_of(site):
        loops = repeating_loops(site, it)
        seen = (it.ctx.function, frozenset(loops))
        if not loops or seen in checked:
            continue  # iterations in the same function under the same loops see the same statements
        checked.add(seen)
        for node in assignments_into(facts, references, it, loops):
            return node
        records = facts.calls_in(it.ctx.function)
        facts.budget.spend(len(records))
        for record in records:
            if not loops & set(record.ctx.loops):
                continue
            call, scope = record.node, record.ctx.scope
            if isinstance(call.func, cst.Attribute) and references.denotes(call.func.value, scope):
                return call  # a method of the dataset or of something it holds
            if resolve(call.func, scope) <= READ_ONLY_BUILTINS:
                continue
            if any(references.denotes(arg.value, scope) for arg in call.args):
                return call  # handed to a helper, setattr, random.shuffle...
    return None
