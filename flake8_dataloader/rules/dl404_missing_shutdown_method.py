"""DL404 missing-shutdown-method: the rule, the helpers only it uses and its fix.

The fix: `del loader` for `_shutdown_workers()`, a `closing()` block unwrapped.

Only where the result is certain: a local name no later code reads, a `with` whose target is
a plain name. A block left with nothing but `pass` goes, its comments staying where it stood.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple, Union, cast

import libcst as cst

from ..autofix.context import FixContext, Outcome, code
from ..autofix.edits import Plan
from ..autofix.statements import Statement, body_statements, comment_line, with_leading_lines
from ..autofix.tree import variable_children
from ..facts import constants as C
from ..facts.flow import Value
from ..facts.nodes import children
from ..facts.resolve import Scope, qualname_in
from .base import FACTORY_SITES, NEEDS_LOADER, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def _only_loaders(facts: FileFacts, expr: cst.BaseExpression, scope: Scope) -> bool:
    """Every value the expression may hold is a loader (a `None` placeholder aside), never an
    iterator: a loader call, or a name, attribute, element or factory result that carries one."""
    values = [v for v in facts.flow.values(expr, scope) if not _is_none(v)]
    return bool(values) and all(facts.flow.site_of_value(v) is not None for v in values)


def _is_none(value: Value) -> bool:
    return isinstance(value.node, cst.Name) and value.node.value == "None" and value.scope.lookup("None") is None


class MissingShutdownMethod(Rule):
    """
    ## What it does
    Flags `contextlib.closing(loader)` and `loader._shutdown_workers()` where
    `loader` is a DataLoader (a loader call, or a name or `self` attribute
    bound only from loader calls), never an iterator.

    ## Why is this bad?
    DataLoader has neither `close()` nor `_shutdown_workers()` (only its
    iterator has the latter). `closing()` raises `AttributeError:
    'DataLoader' object has no attribute 'close'` when the `with` block exits;
    a `hasattr` guard around `_shutdown_workers` silently does nothing.

    ## Example
    ```python
    from contextlib import closing

    from torch.utils.data import DataLoader


    def evaluate(dataset):
        with closing(DataLoader(dataset, num_workers=2)) as loader:
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2)
        for batch in loader:
            pass
        del loader  # workers stop when the loader and its iterator are gone
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def first_batch(dataset):
        iterator = iter(DataLoader(dataset, num_workers=2))
        batch = next(iterator)
        iterator._shutdown_workers()  # the iterator has one
        return batch
    ```

    ## Options
    None.

    ## Known limits
    - Anchor: the call.

    ## References
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `_shutdown_workers` belongs to `_MultiProcessingDataLoaderIter`; `DataLoader` has no `close()`.
    """

    CODE = "DL404"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the call")
    NAME = "missing-shutdown-method"
    MESSAGE = "DataLoader has no {method}: {effect}; drop it, workers stop when the loader is deleted (del loader)"
    CONDITION = (("shutdown",),)
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for record in facts.file.calls:
            call, scope = record.node, record.ctx.scope
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "_shutdown_workers":
                if _only_loaders(facts, func.value, scope):
                    yield cls.finding(call, method="_shutdown_workers()", effect="only its iterator has one")
            elif call.args and qualname_in(func, scope, C.CONTEXTLIB_CLOSING):
                if _only_loaders(facts, call.args[0].value, scope):
                    yield cls.finding(call, method="close()", effect="closing() raises AttributeError on exit")


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _scope_node(ctx: FixContext, node: cst.CSTNode) -> Tuple[cst.CSTNode, bool]:
    """The function (or module) around ``node``, and whether a loop lies in between."""
    in_loop = False
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
            return ancestor, in_loop
        in_loop = in_loop or isinstance(ancestor, (cst.For, cst.While))
    return ctx.module, in_loop


def _used_after(scope: cst.CSTNode, statement: cst.CSTNode, name: str) -> bool:
    """``name`` occurs after ``statement`` in source order, or in a nested function or lambda."""
    after = False
    stack: List[Tuple[cst.CSTNode, bool]] = [(child, False) for child in reversed(list(children(scope)))]
    while stack:
        node, nested = stack.pop()
        if node is statement:
            after = True
            continue
        if isinstance(node, cst.Name) and node.value == name and (after or nested):
            return True
        inner = nested or isinstance(node, (cst.FunctionDef, cst.Lambda))
        stack.extend((child, inner) for child in reversed(variable_children(node)))
    return False


def _not_local(ctx: FixContext, call: cst.Call, name: str) -> Optional[str]:
    """Why ``del name`` where ``call`` stands would not just drop a local reference, if it would not.

    Inside a function, a name the function does not bind is a global or a closure's: `del`
    there raises UnboundLocalError or NameError, or removes the module's variable.
    """
    scope = ctx.scope_of(call)
    if scope is None:
        return "the call's scope is unknown"
    if scope.kind == "class":
        return "the call is in a class body"
    if name in scope.global_names or name in scope.nonlocal_names:
        return f"{name} is declared global or nonlocal here: del would remove the shared variable"
    if scope.lookup(name) is not scope:
        return f"{name} is not bound in this function: del would raise UnboundLocalError"
    return None


def _hasattr_guard(ctx: FixContext, line: cst.SimpleStatementLine, name: str) -> Optional[cst.If]:
    """The `if hasattr(name, "_shutdown_workers"):` whose only statement is ``line``."""
    block = ctx.parent(line)
    if not isinstance(block, cst.IndentedBlock):
        return None
    guard = ctx.parent(block)
    if not isinstance(guard, cst.If) or guard.orelse is not None or len(block.body) != 1 or len(line.body) != 1:
        return None
    if not isinstance(ctx.parent(guard), (cst.IndentedBlock, cst.Module)):  # an `elif`
        return None
    test = guard.test
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "hasattr"):
        return None
    if len(test.args) != 2 or code(test.args[0].value) != name:
        return None
    attribute = test.args[1].value
    if not (isinstance(attribute, cst.SimpleString) and attribute.evaluated_value == "_shutdown_workers"):
        return None
    if block.header.comment is not None or any(line.comment is not None for line in block.footer):
        return None
    return guard


def delete_loader(finding: Finding, ctx: FixContext) -> Outcome:
    """DL404: replace `loader._shutdown_workers()` (and its `hasattr` guard) with `del loader`;
    unwrap `with closing(x) as y:` into `y = x`."""
    call = finding.node
    if not isinstance(call, cst.Call):
        return "the finding is not on a call"
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "_shutdown_workers":
        return _replace_shutdown_call(call, ctx)
    return _unwrap_closing(call, ctx)


def _replace_shutdown_call(call: cst.Call, ctx: FixContext) -> Outcome:
    target = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not isinstance(target, cst.Name):
        return "del of an attribute would break later uses of it; delete the reference by hand"
    expression = ctx.parent(call)
    line = ctx.parent(expression) if expression is not None else None
    if not isinstance(expression, cst.Expr) or not isinstance(line, cst.SimpleStatementLine):
        return "the call is part of a larger expression"
    not_local = _not_local(ctx, call, target.value)
    if not_local is not None:
        return not_local
    scope, in_loop = _scope_node(ctx, line)
    if in_loop:
        return "the call is inside a loop: a del could run before a later use"
    if _used_after(scope, line, target.value):
        return f"{target.value} is used after this point"
    plan = Plan()
    guard = _hasattr_guard(ctx, line, target.value)
    if guard is not None:

        def replace_guard(updated: cst.If) -> cst.SimpleStatementLine:
            inner = updated.body.body[0]
            assert isinstance(inner, cst.SimpleStatementLine)  # checked by _hasattr_guard
            return cst.SimpleStatementLine(
                body=[cst.Del(target=cst.Name(target.value))],
                leading_lines=[*updated.leading_lines, *inner.leading_lines],
                trailing_whitespace=inner.trailing_whitespace,
            )

        plan.statements[guard] = replace_guard
    else:
        plan.statements[expression] = lambda updated: cst.Del(
            target=cst.Name(target.value), semicolon=updated.semicolon
        )
    return plan


def _unwrap_closing(call: cst.Call, ctx: FixContext) -> Outcome:
    item = ctx.parent(call)
    statement = ctx.parent(item) if item is not None else None
    if not isinstance(item, cst.WithItem) or item.item is not call or not isinstance(statement, cst.With):
        return "closing() is not used as a with item"
    if statement.asynchronous is not None or isinstance(statement.lpar, cst.LeftParen):
        return "the with statement is asynchronous or parenthesized"
    if statement.items[0] is not item:
        return "closing() is not the first item of the with statement"
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return "closing() is not called with one plain argument"
    target = item.asname.name if item.asname is not None else None
    if target is not None and not isinstance(target, cst.Name):
        return "the with target is not a plain name"
    footer = statement.body.footer if isinstance(statement.body, cst.IndentedBlock) else ()
    if any(line.comment is not None for line in footer):
        return "comments at the end of the with block would move"

    def unwrap(updated: cst.With) -> cst.FlattenSentinel:
        closing = updated.items[0].item
        assert isinstance(closing, cst.Call)  # the closing(x) call checked above
        loader = closing.args[0].value
        header = updated.body.header if isinstance(updated.body, cst.IndentedBlock) else None
        first: List[Statement] = []
        if target is not None and not (isinstance(loader, cst.Name) and loader.value == target.value):
            assign = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(target.value))], value=loader)
            first = [cst.SimpleStatementLine(body=[assign], trailing_whitespace=header or cst.TrailingWhitespace())]
            header = None
        elif target is None and isinstance(loader, cst.Call):
            expression = cst.Expr(loader)
            first = [cst.SimpleStatementLine(body=[expression], trailing_whitespace=header or cst.TrailingWhitespace())]
            header = None
        if len(updated.items) == 1:
            rest = body_statements(updated.body)
            if first or not all(map(_is_pass, rest)):
                rest = _without_pass(rest)  # it only filled the with block
        else:
            rest = [updated.with_changes(items=updated.items[1:], leading_lines=[])]
        if first:
            statements = [with_leading_lines(first[0], updated.leading_lines), *rest]
        else:
            # No new line to carry the with's trailing comment: it becomes a comment line.
            moved_comment = [comment_line(header)] if header is not None and header.comment is not None else []
            statements = [with_leading_lines(rest[0], [*updated.leading_lines, *moved_comment]), *rest[1:]]
        return cst.FlattenSentinel(statements)

    plan = Plan(maybe_unused={name for name in [_root_name(call.func)] if name})
    loader = call.args[0].value
    same_name = target is not None and isinstance(loader, cst.Name) and loader.value == target.value
    new_line = not same_name and (target is not None or isinstance(loader, cst.Call))
    body = body_statements(statement.body)
    block = ctx.parent(statement)
    if not new_line and len(statement.items) == 1 and all(map(_is_pass, body)):
        if isinstance(block, (cst.IndentedBlock, cst.Module)) and len(block.body) > 1:
            return _remove_statement(plan, statement, block, body)
    plan.statements[statement] = unwrap
    return plan


def _is_pass(statement: Statement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in statement.body)


def _comments_of(line: cst.SimpleStatementLine) -> List[cst.EmptyLine]:
    """A statement line's comment lines and trailing comment, as comment lines."""
    own = [comment_line(line.trailing_whitespace)] if line.trailing_whitespace.comment is not None else []
    return [*(empty for empty in line.leading_lines if empty.comment is not None), *own]


def _without_pass(statements: List[Statement]) -> List[Statement]:
    """The statements without `pass` lines; their comments join the next statement (a commented
    `pass` that nothing follows stays, with its comments)."""
    out: List[Statement] = []
    carried: List[cst.EmptyLine] = []
    waiting: List[Statement] = []
    for statement in statements:
        if _is_pass(statement):
            assert isinstance(statement, cst.SimpleStatementLine)
            carried += _comments_of(statement)
            waiting.append(statement)
            continue
        out.append(statement.with_changes(leading_lines=[*carried, *statement.leading_lines]))
        carried, waiting = [], []
    return out + (waiting if carried else [])


def _remove_statement(plan: Plan, statement: cst.With, block: Union[cst.IndentedBlock, cst.Module],
                      body: List[Statement]) -> Plan:
    """The with statement goes (its body is only `pass`: unwrapped, nothing is left); its comments
    stay where it stood, before the next statement of its block or at the block's end."""
    suite = statement.body
    one_line = cast(cst.SimpleStatementSuite, suite)
    header = suite.header if isinstance(suite, cst.IndentedBlock) else one_line.trailing_whitespace
    comments = [line for line in statement.leading_lines if line.comment is not None]
    comments += [comment_line(header)] if header.comment is not None else []
    comments += [line for b in body if isinstance(b, cst.SimpleStatementLine) for line in _comments_of(b)]
    plan.statements[statement] = lambda updated: cst.RemoveFromParent()
    siblings = list(block.body)
    index = next(i for i, sibling in enumerate(siblings) if sibling is statement)
    if index + 1 < len(siblings):
        plan.statements[siblings[index + 1]] = lambda updated: updated.with_changes(
            leading_lines=[*comments, *updated.leading_lines]
        )
    elif comments:
        plan.statements[block] = lambda updated: updated.with_changes(footer=[*comments, *updated.footer])
    return plan
