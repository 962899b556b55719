"""Edits to a LibCST tree that keep layout and comments: argument-list surgery, one transformer.

A codemod describes what it wants as a Plan keyed by nodes of the tree the rules saw;
``apply`` runs all plans of a round in one transformation. Argument edits are
indexed against the original call, so several rules can edit one call at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

import libcst as cst

from .statements import drop_imports
from .tree import comments_in

Whitespace = cst.BaseParenthesizableWhitespace
# A comment that governs its physical line: splitting the line would move it away from what it
# governs (flake8 reads `# noqa` per physical line inside brackets, mypy `# type:` per line).
LINE_BOUND = re.compile(r"#\s*(noqa\b|type:)", re.IGNORECASE)
StatementEdit = Callable[[Any], Any]  # the updated statement -> its replacement (a node or a FlattenSentinel)


def _merge(first: Whitespace, second: Whitespace, at_end: bool = False) -> Whitespace:
    """The separator left when the item between two separators goes.

    An item on lines of its own (a line break on both sides) leaves its trailing comment
    behind as a comment line where it stood, among the comment lines around it. An item that
    shares its line with the one before keeps that line's comment on that line. Between two
    spaces-only separators, the one next to the bracket wins (``at_end``: the closing one), so
    `f(a, b)` loses `b` as `f(a)` and `a` as `f(b)`.
    """
    if isinstance(first, cst.ParenthesizedWhitespace) and isinstance(second, cst.ParenthesizedWhitespace):
        own = second.first_line.comment
        left = [cst.EmptyLine(indent=first.indent, whitespace=first.last_line, comment=own)] if own else []
        return second.with_changes(
            first_line=first.first_line, empty_lines=[*first.empty_lines, *left, *second.empty_lines]
        )
    if isinstance(second, cst.ParenthesizedWhitespace):
        return second
    if at_end and not comments_in(first):
        return second
    return first


def _without_comments(ws: Whitespace) -> Whitespace:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def removable(arg: cst.Arg) -> bool:
    """True when dropping the argument loses no comment inside it (what follows its comma is not inside)."""
    kept = comments_in(arg.comma.whitespace_after) if isinstance(arg.comma, cst.Comma) else []
    return len(comments_in(arg)) == len(kept)


def _separator_after(arg: cst.Arg) -> Whitespace:
    return arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else arg.whitespace_after_arg


def _remove(call: cst.Call, args: List[cst.Arg], index: int) -> cst.Call:
    """Drop args[index] and its comma; the separators on either side merge."""
    arg = args[index]
    after = _separator_after(arg)
    if index == 0:
        before = call.whitespace_before_args
        rest = args[1:]
        if not rest:
            return call.with_changes(args=[], whitespace_before_args=_merge(before, after))
        return call.with_changes(args=rest, whitespace_before_args=_merge(before, after))
    previous = args[index - 1]
    assert isinstance(previous.comma, cst.Comma)  # every argument but the last has one
    merged = _merge(previous.comma.whitespace_after, after, at_end=index == len(args) - 1)
    if index < len(args) - 1 or isinstance(arg.comma, cst.Comma):
        previous = previous.with_changes(comma=previous.comma.with_changes(whitespace_after=merged))
    else:
        previous = previous.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=merged)
    return call.with_changes(args=[*args[: index - 1], previous, *args[index + 1:]])


def _append(call: cst.Call, new: cst.Arg) -> cst.Call:
    """Add an argument at the end, laid out like the ones before it (same line or one per line).

    The comment ending the last argument's line stays on that line; the comment lines before
    the closing bracket stay before it.
    """
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        separator = _without_comments(args[-2].comma.whitespace_after)
    elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        separator = _without_comments(call.whitespace_before_args)
    else:
        separator = cst.SimpleWhitespace(" ")
    closing = _separator_after(last)  # what stood between the last argument and the bracket
    if isinstance(separator, cst.ParenthesizedWhitespace) and isinstance(closing, cst.ParenthesizedWhitespace):
        separator = separator.with_changes(first_line=closing.first_line)
        closing = closing.with_changes(first_line=cst.TrailingWhitespace())
    if isinstance(last.comma, cst.Comma):
        new = new.with_changes(comma=last.comma.with_changes(whitespace_after=closing))
        last = last.with_changes(comma=last.comma.with_changes(whitespace_after=separator))
    else:
        new = new.with_changes(whitespace_after_arg=closing)
        last = last.with_changes(
            comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace("")
        )
    return call.with_changes(args=[*args[:-1], last, new])


def keyword_arg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Arg:
    """`name=value`, spaced around `=` like the call's other keywords."""
    equal = next((a.equal for a in call.args if a.keyword is not None), None)
    if not isinstance(equal, cst.AssignEqual):
        equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return cst.Arg(keyword=cst.Name(name), value=value, equal=equal)


def _keywords(args: List[cst.Arg]) -> Set[str]:
    return {a.keyword.value for a in args if a.keyword is not None}


@dataclass
class CallEdit:
    """Changes to one call's arguments, by their index in the original call."""

    remove: Set[int] = field(default_factory=set)
    values: Dict[int, cst.BaseExpression] = field(default_factory=dict)
    append: List[cst.Arg] = field(default_factory=list)

    def conflicts(self, other: "CallEdit") -> bool:
        names = _keywords(self.append) & _keywords(other.append)
        touched = self.remove | set(self.values)
        return bool(names or (touched & (other.remove | set(other.values))))

    def merge(self, other: "CallEdit") -> None:
        self.remove |= other.remove
        self.values.update(other.values)
        self.append += other.append

    def __call__(self, call: cst.Call) -> cst.Call:
        args = [
            arg.with_changes(value=self.values[i]) if i in self.values else arg for i, arg in enumerate(call.args)
        ]
        call = call.with_changes(args=args)
        for index in sorted(self.remove, reverse=True):
            call = _remove(call, list(call.args), index)
        for new in self.append:
            call = _append(call, new)
        return call


@dataclass
class Plan:
    """What one fix changes. ``statements`` replace whole nodes (given the updated node)."""

    calls: Dict[cst.Call, CallEdit] = field(default_factory=dict)
    statements: Dict[cst.CSTNode, StatementEdit] = field(default_factory=dict)
    # Names imported in the file whose last use the plan may remove (their import goes too).
    maybe_unused: Set[str] = field(default_factory=set)
    # Restructures the module: applied in a round of its own, never merged with other plans.
    exclusive: bool = False

    def call(self, node: cst.Call) -> CallEdit:
        return self.calls.setdefault(node, CallEdit())

    def conflicts(self, other: "Plan") -> bool:
        if set(self.statements) & set(other.statements):
            return True
        return any(node in self.calls and self.calls[node].conflicts(edit) for node, edit in other.calls.items())

    def merge(self, other: "Plan") -> None:
        for node, edit in other.calls.items():
            self.call(node).merge(edit)
        self.statements.update(other.statements)
        self.maybe_unused |= other.maybe_unused


def combined(plans) -> Plan:
    """One plan doing what all of ``plans`` do (they must not conflict); the inputs stay as they are."""
    plan = Plan()
    for other in plans:
        plan.merge(other)
    return plan


class _Apply(cst.CSTTransformer):
    """Applies a plan; an edited call whose line now passes ``max_line_length`` gets one argument per line."""

    def __init__(self, plan: Plan, module: cst.Module, max_line_length: Optional[int]) -> None:
        super().__init__()
        self.plan = plan
        self.module = module
        self.max_line_length = max_line_length
        self.indents: List[str] = [""]
        self.edited: List[cst.Call] = []  # edited calls of the statement line being left
        # Edited calls whose closing bracket shared the last argument's line and whose new
        # argument went on a line of its own: id -> how many arguments the call had.
        self.opened: Dict[int, int] = {}

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.indents.append(self.indents[-1] + (node.indent if node.indent is not None else self.module.default_indent))

    def leave_IndentedBlock(self, original_node, updated_node):
        self.indents.pop()
        return updated_node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.edited, self.opened = [], {}

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        edited, self.edited = self.edited, []
        # Rendered alone, every line of the statement lacks the block's indentation.
        text = self.module.code_for_node(updated_node.with_changes(leading_lines=[]))
        updated_node = self._keep_closing_comment(updated_node, text, edited)
        if self.max_line_length is None or not edited:
            return updated_node
        too_long: Dict[int, str] = {}  # id of an edited call -> its line's indentation inside the statement
        break_last: Dict[int, str] = {}  # id of a multi-line call -> the indentation its new last argument gets
        comment: Optional[cst.TrailingWhitespace] = None  # the statement's, moved to the line the break ends
        for call in edited:
            code = self.module.code_for_node(call)
            position = text.find(code)
            if position < 0:
                continue
            if "\n" not in code:
                line, indent = _line_at(text, position)
                if self._overflows(line):
                    too_long[id(call)] = indent
            elif len(call.args) >= 2 and _ends_on_its_line(call.args[-2]):
                # Over several lines already: a new last argument that overflows the line it shares
                # with the argument before it gets a line of its own, indented like that argument.
                last_at = position + code.rfind(self.module.code_for_node(call.args[-1]))
                line, _ = _line_at(text, last_at)
                if self._overflows(line):
                    before = position + code.rfind(self.module.code_for_node(call.args[-2]), 0, last_at - position)
                    break_last[id(call)] = _line_at(text, before)[1]
                    ends_statement = "\n" not in text[last_at:].rstrip("\r\n")
                    if ends_statement and updated_node.trailing_whitespace.comment is not None and not comment:
                        # The statement's comment ends the line the new argument leaves: it stays there.
                        comment = updated_node.trailing_whitespace
                        updated_node = updated_node.with_changes(trailing_whitespace=cst.TrailingWhitespace())
        if too_long:
            wrapped = updated_node.visit(_OnePerLine(too_long, self.module.default_indent))
            updated_node = cast(cst.SimpleStatementLine, wrapped)
        if break_last:
            breaking = _BreakBeforeLast(break_last, comment or cst.TrailingWhitespace())
            updated_node = cast(cst.SimpleStatementLine, updated_node.visit(breaking))
        return updated_node  # the transformers only rewrite calls inside the line

    def _keep_closing_comment(self, statement, text: str, edited: List[cst.Call]):
        """The statement's comment ended the line of a call's last argument and closing bracket;
        a new argument took a line of its own there: the comment stays with the old last argument."""
        comment = statement.trailing_whitespace
        for call in edited:
            count = self.opened.get(id(call))
            code = self.module.code_for_node(call)
            position = text.find(code)
            if count is None or comment.comment is None or position < 0:
                continue
            if "\n" not in text[position + len(code):].rstrip("\r\n"):  # the call ends the statement's last line
                moved = statement.visit(_CommentAfter(id(call), count - 1, comment))
                return cast(cst.SimpleStatementLine, moved).with_changes(trailing_whitespace=cst.TrailingWhitespace())
        return statement

    def _overflows(self, line: str) -> bool:
        """The line passes the limit, and no `# noqa` or `# type:` comment ties it to its text."""
        assert self.max_line_length is not None
        return len(self.indents[-1]) + len(line) > self.max_line_length and not LINE_BOUND.search(line)

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        call_edit = self.plan.calls.get(original_node)
        if call_edit is not None:
            before = updated
            updated = call_edit(updated)
            if call_edit.append or call_edit.values:
                self.edited.append(updated)
            kept = len(before.args) - len(call_edit.remove)
            if call_edit.append and kept and _opened(before, updated, kept):
                self.opened[id(updated)] = kept
        statement_edit = self.plan.statements.get(original_node)
        if statement_edit is not None:
            updated = statement_edit(updated)
        return updated


def _opened(before: cst.Call, after: cst.Call, kept: int) -> bool:
    """The bracket closed on the last argument's line, and an argument was added on a new line
    after the ``kept`` arguments left of the call's."""
    if isinstance(_separator_after(before.args[-1]), cst.ParenthesizedWhitespace) or len(after.args) <= kept:
        return False
    return not _ends_on_its_line(after.args[kept - 1])


class _CommentAfter(cst.CSTTransformer):
    """Ends the line after the call's argument ``index`` with ``comment``."""

    def __init__(self, target: int, index: int, comment: cst.TrailingWhitespace) -> None:
        super().__init__()
        self.target, self.index, self.comment = target, index, comment

    def leave_Call(self, original_node, updated_node):
        if id(original_node) != self.target:
            return updated_node
        args = list(updated_node.args)
        comma = args[self.index].comma
        assert isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)
        args[self.index] = args[self.index].with_changes(
            comma=comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=self.comment))
        )
        return updated_node.with_changes(args=args)


def _ends_on_its_line(arg: cst.Arg) -> bool:
    """The argument has a comma and the next one follows on the same line."""
    return isinstance(arg.comma, cst.Comma) and not isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace)


def _line_at(text: str, position: int) -> Tuple[str, str]:
    """The line of ``text`` holding ``position``, and that line's leading whitespace."""
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    line = text[start:end if end >= 0 else len(text)]
    return line, line[: len(line) - len(line.lstrip())]


class _BreakBeforeLast(cst.CSTTransformer):
    """Puts the last argument of the given calls on a line of its own."""

    def __init__(self, targets: Dict[int, str], first_line: cst.TrailingWhitespace) -> None:
        super().__init__()
        self.targets = targets  # id of a call -> the indentation of the new line beyond the block's
        self.first_line = first_line  # the end of the line left (the statement's comment, if it moves)

    def leave_Call(self, original_node, updated_node):
        extra = self.targets.get(id(original_node))
        args = list(updated_node.args)
        if extra is None or len(args) < 2 or not isinstance(args[-2].comma, cst.Comma):
            return updated_node
        newline = cst.ParenthesizedWhitespace(
            first_line=self.first_line, indent=True, last_line=cst.SimpleWhitespace(extra)
        )
        self.first_line = cst.TrailingWhitespace()
        args[-2] = args[-2].with_changes(comma=args[-2].comma.with_changes(whitespace_after=newline))
        return updated_node.with_changes(args=args)


class _OnePerLine(cst.CSTTransformer):
    """The arguments of the given (single-line) calls, one per line, closing bracket on its own line."""

    def __init__(self, targets: Dict[int, str], step: str) -> None:
        super().__init__()
        self.targets = targets  # id of a call -> the indentation of its line beyond the block's
        self.step = step

    def leave_Call(self, original_node, updated_node):
        extra = self.targets.get(id(original_node))
        if extra is None or not updated_node.args:
            return updated_node
        # indent=True: LibCST writes the block's indentation first; last_line adds to it.
        inner = cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(extra + self.step)
        )
        closing = cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(extra)
        )
        args = [
            arg.with_changes(
                comma=cst.Comma(whitespace_after=inner if i < len(updated_node.args) - 1 else closing),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
            for i, arg in enumerate(updated_node.args)
        ]
        return updated_node.with_changes(whitespace_before_args=inner, args=args)


def apply(module: cst.Module, plan: Plan, max_line_length: Optional[int] = None) -> cst.Module:
    """The module with the plan applied; with ``max_line_length``, calls the plan lengthened past it wrap."""
    fixed = module.visit(_Apply(plan, module, max_line_length))
    return drop_imports(fixed, plan.maybe_unused)
