"""One codemod per fixable rule: a finding in, a Plan out, or the reason it is left alone.

A codemod only rewrites what is certain to be equivalent or what the finding
intends; anything it cannot prove stays a finding, with the reason shown.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from ..compose import positive, when_workers
from ..facts.collector import is_main_guard
from ..facts.nodes import children
from ..facts.constants import DEFAULT_LOADER_NAMES
from ..facts.model import LoaderCall
from ..facts.resolve import names_in, resolve
from ..rules.base import Finding
from ..rules.dl5_correctness import iterable_classes, single_use_return
from .context import FixContext, Outcome, code
from .edits import Plan, Statement, body_statements, keyword_arg, removable, with_leading_lines
from .shutdown import delete_loader
from .tree import comments_in, walk

__all__ = ["CODEMODS", "FIXABLE", "MODULE_CODEMODS", "FixContext", "Outcome", "code"]

# Conversions that give the same value each time for the values a worker count comes in.
_PURE_CONVERSIONS = frozenset({"builtins.int", "builtins.float", "builtins.bool"})


def _reevaluable(expr: cst.BaseExpression, scope) -> bool:
    """A name, attribute chain, constant subscript or `int()` of one, or a conditional, comparison or
    `and`/`or` of those and literals (`0 if ds.cached else workers`): reading it twice gives one value."""
    if isinstance(expr, cst.Name):
        return expr.value not in ("True", "False", "None")
    if isinstance(expr, cst.Attribute):
        return _reevaluable(expr.value, scope)
    if isinstance(expr, cst.Subscript):
        return (
            _reevaluable(expr.value, scope)
            and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, (cst.Integer, cst.SimpleString))
        )
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star:
        return resolve(expr.func, scope) <= _PURE_CONVERSIONS and _reevaluable(expr.args[0].value, scope)
    if isinstance(expr, cst.IfExp):
        return all(_reevaluable_or_literal(part, scope) for part in (expr.test, expr.body, expr.orelse))
    if isinstance(expr, cst.BooleanOperation):
        return _reevaluable_or_literal(expr.left, scope) and _reevaluable_or_literal(expr.right, scope)
    if isinstance(expr, cst.Comparison):
        return _reevaluable_or_literal(expr.left, scope) and all(
            _reevaluable_or_literal(c.comparator, scope) for c in expr.comparisons
        )
    return False


def _reevaluable_or_literal(expr: cst.BaseExpression, scope) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    return _reevaluable(expr, scope)


def _workers_expr(call: LoaderCall) -> Optional[cst.BaseExpression]:
    """num_workers as written, when it can be written a second time with the same value."""
    workers = call.num_workers.expr
    if workers is None or not _reevaluable(workers, call.ctx.scope) or _single_line(workers) is None:
        return None
    return workers


def _single_line(expr: cst.BaseExpression) -> Optional[str]:
    text = code(expr)
    return None if "\n" in text or comments_in(expr) else text


def _index(call: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, candidate in enumerate(call.args) if candidate is arg)


def drop_argument(finding: Finding, ctx: FixContext) -> Outcome:
    """DL101, DL102: drop the argument, which cannot apply to a single-process loader."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    if owner is None or not isinstance(arg, cst.Arg):
        return "the argument comes through **kwargs"
    if not removable(arg):
        return "a comment inside the argument would be lost"
    call, _ = owner
    plan = Plan()
    plan.call(call.node).remove.add(_index(call.node, arg))
    return plan


def bool_drop_last(finding: Finding, ctx: FixContext) -> Outcome:
    """DL103: write `drop_last=1` / `drop_last=0` as the bool it means, `True` / `False`."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    boolean = isinstance(arg, cst.Arg) and isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False")
    if owner is None or not isinstance(arg, cst.Arg) or owner[1] != "drop_last" or boolean:
        return "the combination needs a decision the code does not show (which argument to drop or change)"
    if not (isinstance(arg.value, cst.Integer) and arg.value.value in ("0", "1")):
        return "drop_last is not the literal 0 or 1: which bool was meant is not certain"
    call, _ = owner
    plan = Plan()
    plan.call(call.node).values[_index(call.node, arg)] = cst.Name("True" if arg.value.value == "1" else "False")
    return plan


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
    if not isinstance(klass, cst.ClassDef) or not isinstance(opener, cst.Call):
        return "the opener is not a call in a class's __init__"
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


def guard_by_workers(finding: Finding, ctx: FixContext) -> Outcome:
    """DL104: guard the argument by the worker count, `persistent_workers=<workers> > 0`
    or `prefetch_factor=<v> if <workers> > 0 else None` (a conditional, `or`/`and` or comparison
    of names and constants is written again, in parentheses: `(0 if cached else workers) > 0`)."""
    arg = finding.node
    owner = ctx.keyword_owner.get(arg) if isinstance(arg, cst.Arg) else None
    if owner is None or not isinstance(arg, cst.Arg):
        return "the argument comes through **kwargs"
    call, name = owner
    workers = _workers_expr(call)
    if workers is None:
        expr = call.num_workers.expr
        written = code(expr) if expr is not None else "**kwargs"
        return f"num_workers ({written}) is not a plain name or attribute: it would be evaluated twice"
    if name == "persistent_workers":
        if not (isinstance(arg.value, cst.Name) and arg.value.value == "True") and not isinstance(
            arg.value, cst.Integer
        ):
            return "persistent_workers is not a literal True or integer"
        value = cst.parse_expression(positive(workers))
    else:
        simple = _reevaluable_or_literal(arg.value, call.ctx.scope) and _single_line(arg.value) is not None
        if not simple:
            return "prefetch_factor is not a constant, name or attribute: it would be evaluated conditionally"
        value = cst.parse_expression(when_workers(arg.value, workers))
    plan = Plan()
    plan.call(call.node).values[_index(call.node, arg)] = value
    return plan


def enable_persistent_workers(finding: Finding, ctx: FixContext) -> Outcome:
    """DL402: add `persistent_workers=True`, or `persistent_workers=<workers> > 0` when the count is unknown here."""
    if isinstance(finding.node, cst.Call) and finding.node in ctx.configs:
        return _add_persistent_workers(ctx.configs[finding.node])  # TrainingArguments(...)
    call = ctx.facts.flow.loader_calls.get(finding.node) if isinstance(finding.node, cst.Call) else None
    if call is None:
        return "the loader is built by a factory function of this file; set persistent_workers there"
    targets = resolve(call.node.func, call.ctx.scope)
    if not targets or not all(target in DEFAULT_LOADER_NAMES for target in targets):
        return "the loader class is not torch's DataLoader or StatefulDataLoader: its signature is not known"
    single_use = _single_use_dataset(call, ctx)
    if single_use is not None and call.args["persistent_workers"].omitted:
        return f"{single_use}.__iter__ returns an iterator it keeps: with persistent workers later epochs are empty"
    return _add_persistent_workers(call)


def _add_persistent_workers(call: LoaderCall) -> Outcome:
    """`persistent_workers=True` (`dataloader_persistent_workers` in TrainingArguments), or `=<workers> > 0`."""
    keyword = call.spelled("persistent_workers")
    if not call.args["persistent_workers"].omitted:
        return f"{keyword} is written explicitly as a false value; change it by hand if that was not deliberate"
    if call.num_workers.known:
        value: cst.BaseExpression = cst.Name("True")
    else:
        workers = _workers_expr(call)
        if workers is None:
            workers_keyword = call.spelled("num_workers")
            return f"{workers_keyword} is not a plain name or attribute: write {keyword}=<workers> > 0 by hand"
        value = cst.parse_expression(positive(workers))
    plan = Plan()
    plan.call(call.node).append.append(keyword_arg(call.node, keyword, value))
    return plan


def _single_use_dataset(call: LoaderCall, ctx: FixContext) -> Optional[str]:
    """The file's IterableDataset class that this loader reads and that only one epoch can use.

    DL502 reports such a class once, however many loaders use it: checked here, since a
    second lint would not show a new finding.
    """
    for klass in iterable_classes(ctx.facts):
        if single_use_return(ctx.facts, klass) is not None and call in ctx.facts.loaders.loaders_using(klass):
            return klass.name
    return None


def _existing_guard(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.If) and is_main_guard(statement.test)


def guard_entry_point(findings: List[Finding], ctx: FixContext) -> Outcome:
    """DL301: move the module's tail, from the first unguarded statement on, under `if __name__ == "__main__":`
    (its defs and classes stay at module level, where spawned workers find them)."""
    body = list(ctx.module.body)
    tops = []
    for finding in findings:
        top = finding.node
        for ancestor in ctx.ancestors(finding.node):
            if isinstance(ancestor, cst.Module):
                break
            top = ancestor
        tops.append(next(i for i, statement in enumerate(body) if statement is top))
    start = min(tops)
    tail = list(range(start, len(body)))
    kept = [i for i in tail if isinstance(body[i], (cst.FunctionDef, cst.ClassDef))]
    moved = [i for i in tail if i not in kept]
    for i in moved:
        statement = body[i]
        if isinstance(statement, cst.If) and _existing_guard(statement) and statement.orelse is not None:
            return "a main guard with an else branch follows"
    moved_nodes = list(walk([body[i] for i in moved], _existing_guard))
    moved_ids = {id(node) for node in moved_nodes}
    if any(isinstance(node, (cst.FunctionDef, cst.ClassDef)) for node in moved_nodes):
        return "a def or class inside a moved statement would be out of reach of spawned workers"
    bound_by = _module_names_bound_by(ctx, [body[i] for i in moved])
    reader = _global_reader(ctx, set().union(*bound_by.values()), moved_ids)
    if reader is not None:
        return f"{reader[0]} reads {reader[1]}, which the moved code binds: spawned workers would not see it"
    reason = _reorder_problem(body, kept, moved, bound_by)
    if reason is not None:
        return reason
    module_bindings = ctx.facts.file.module_scope.bindings
    for i in kept:
        definition = body[i]
        assert isinstance(definition, (cst.FunctionDef, cst.ClassDef))
        name = definition.name.value
        if len(module_bindings.get(name, ())) > 1:
            return f"{name} is bound more than once at module level: moving its def could change which one runs"

    def add_guard(updated: cst.Module) -> cst.Module:
        before = [*updated.body[:start], *(updated.body[i] for i in kept)]
        after_definition = bool(before) and isinstance(before[-1], (cst.FunctionDef, cst.ClassDef))
        return updated.with_changes(body=[*before, _guard([updated.body[i] for i in moved], after_definition)])

    plan = Plan(exclusive=True)
    plan.statements[ctx.module] = add_guard
    return plan


def _module_names_bound_by(ctx: FixContext, statements: List[cst.CSTNode]) -> Dict[int, Set[str]]:
    """For each statement (by id), the module-level names it binds (an existing main guard binds none here)."""
    owner: Dict[int, int] = {}
    for statement in statements:
        owner.update((id(node), id(statement)) for node in walk([statement], _existing_guard))
    bound: Dict[int, Set[str]] = {id(statement): set() for statement in statements}
    for name, bindings in ctx.facts.file.module_scope.bindings.items():
        for binding in bindings:
            if binding.node is not None and id(binding.node) in owner:
                bound[owner[id(binding.node)]].add(name)
    return bound


def _reorder_problem(body, kept: List[int], moved: List[int], bound_by: Dict[int, Set[str]]) -> Optional[str]:
    """Why the defs and classes of the tail cannot run before the moved code, if they cannot.

    They now come first: no moved statement that preceded one may bind what it reads when it
    is defined (decorators, defaults, annotations, bases, class bodies), read or bind its name.
    """
    for j in kept:
        definition = body[j]
        earlier = [body[i] for i in moved if i < j]
        bound_earlier = set().union(*(bound_by[id(statement)] for statement in earlier))
        for name in sorted(_definition_time_names(definition) & bound_earlier):
            return f"{definition.name.value} uses {name} when it is defined, and the moved code binds {name} before it"
        if definition.name.value in bound_earlier:
            return f"the moved code binds {definition.name.value} before the def or class of that name"
        if any(definition.name.value in names_in(statement) for statement in earlier):
            return f"the moved code uses {definition.name.value} before it is defined"
    return None


def _definition_time_names(definition: Union[cst.FunctionDef, cst.ClassDef]) -> Set[str]:
    """Names read when a def or class statement runs (not when the function is called)."""
    parts: List[cst.CSTNode] = [decorator.decorator for decorator in definition.decorators]
    if isinstance(definition, cst.FunctionDef):
        params = definition.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        parts += [p.default for p in every if p.default is not None]
        parts += [p.annotation for p in every if p.annotation is not None]
        parts += [definition.returns] if definition.returns is not None else []
        return set().union(*(names_in(part) for part in parts))
    parts += [arg.value for arg in (*definition.bases, *definition.keywords)]
    names = set().union(*(names_in(part) for part in parts))
    for node in walk([definition.body], lambda n: isinstance(n, cst.FunctionDef)):
        if isinstance(node, cst.Name):
            names.add(node.value)
    methods = [n for n in children(definition.body) if isinstance(n, cst.FunctionDef)]
    return names.union(*(_definition_time_names(method) for method in methods))


def _global_reader(ctx: FixContext, names: Set[str], moved_ids: Set[int]) -> Optional[Tuple[str, str]]:
    """A function or module-level lambda outside the moved code that reads one of ``names`` as a global."""
    if not names:
        return None
    module_scope = ctx.facts.file.module_scope
    for function in ctx.facts.file.functions.values():
        if id(function.node) in moved_ids:
            continue
        nested = lambda node: node is not function.node and isinstance(node, cst.FunctionDef)  # noqa: E731
        nodes = list(walk([function.node.body], nested))
        # Comprehension variables are local to the comprehension, whatever the resolver says.
        comprehension_names = set().union(*(names_in(node.target) for node in nodes if isinstance(node, cst.CompFor)))
        for node in nodes:
            if isinstance(node, cst.Name) and node.value in names - comprehension_names:
                if function.scope.lookup(node.value) in (module_scope, None):
                    return f"{function.name}()", node.value
    for node in walk(list(ctx.module.body), lambda n: isinstance(n, cst.FunctionDef) or id(n) in moved_ids):
        if isinstance(node, cst.Lambda):
            params = {p.name.value for p in node.params.params}
            used = names_in(node.body)
            for name in sorted((used - params) & names):
                return "a lambda", name
    return None


def _guard(moved: List[Statement], after_definition: bool) -> cst.If:
    """``if __name__ == "__main__":`` around ``moved``; a main guard among them is merged in.

    Blank lines follow pycodestyle: at most one between statements inside the guard, two
    before the guard when a def or class precedes it; comments stay with their statements.
    """
    test: cst.BaseExpression = cst.parse_expression('__name__ == "__main__"')
    header = cst.TrailingWhitespace()
    statements: List[Statement] = []
    pending: List[cst.EmptyLine] = []
    for statement in moved:
        if isinstance(statement, cst.If) and _existing_guard(statement):
            inner = body_statements(statement.body)
            test = statement.test
            if isinstance(statement.body, cst.IndentedBlock):
                if statement.body.header.comment is not None and header.comment is None:
                    header = statement.body.header
                footer = list(statement.body.footer)
            else:
                footer = []
            inner[0] = with_leading_lines(inner[0], [*pending, *statement.leading_lines])
            statements += inner
            pending = footer
        else:
            statements.append(with_leading_lines(statement, pending))
            pending = []
    first_lines = list(statements[0].leading_lines)
    blank = 0
    while blank < len(first_lines) and first_lines[blank].comment is None:
        blank += 1
    leading = [cst.EmptyLine(indent=False)] * (2 if after_definition else blank)
    statements[0] = statements[0].with_changes(leading_lines=first_lines[blank:])
    statements = [s.with_changes(leading_lines=_at_most_one_blank(s.leading_lines)) for s in statements]
    return cst.If(
        test=test,
        body=cst.IndentedBlock(body=statements, header=header, footer=_at_most_one_blank(pending)),
        leading_lines=leading,
    )


def _at_most_one_blank(lines) -> List[cst.EmptyLine]:
    out: List[cst.EmptyLine] = []
    for line in lines:
        if line.comment is None:
            if out and out[-1].comment is None:
                continue
            line = line.with_changes(indent=False)
        out.append(line)
    return out


# code -> codemod; DL301's takes all of a file's DL301 findings at once.
CODEMODS: Dict[str, Callable[[Finding, FixContext], Outcome]] = {
    "DL101": drop_argument,
    "DL102": drop_argument,
    "DL103": bool_drop_last,
    "DL104": guard_by_workers,
    "DL402": enable_persistent_workers,
    "DL404": delete_loader,
    "DL601": open_lazily,
}
MODULE_CODEMODS: Dict[str, Callable[[List[Finding], FixContext], Outcome]] = {"DL301": guard_entry_point}
FIXABLE = tuple(sorted([*CODEMODS, *MODULE_CODEMODS]))
