"""Statement-level edits that keep comments: dropping imports left unused, moving statements.

An import line that goes leaves its comments where it stood; a statement that moves takes
the comment lines before it along.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Set, Tuple, Union, cast

import libcst as cst

from .tree import walk


def drop_imports(module: cst.Module, names: Set[str]) -> cst.Module:
    """The module without the imports of those of ``names`` it no longer uses."""
    unused = names - _used_names(module)
    return module.visit(_DropImports(unused)) if unused else module


class _DropImports(cst.CSTTransformer):
    """Remove the import of each name in ``names`` (the caller checked that nothing uses them).

    The comments of an import line that goes stay where it stood: the comment lines before it
    and its trailing comment, as a line of its own, join what follows.
    """

    def __init__(self, names: Set[str]) -> None:
        super().__init__()
        self.names = names
        # Lines whose imports all went, kept (as `pass`) until their block moves their comments.
        self.emptied: List[cst.SimpleStatementLine] = []

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if updated_node.body:
            return updated_node
        placeholder = updated_node.with_changes(body=[cst.Pass()])
        self.emptied.append(placeholder)
        return placeholder

    def leave_Module(self, original_node, updated_node):
        body, footer = _without_lines(updated_node.body, updated_node.footer, self.emptied)
        if body and body[0] is not updated_node.body[0]:
            # The file's first line went: the blank lines that separated it go too.
            lines = list(body[0].leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            body[0] = body[0].with_changes(leading_lines=lines)
        return updated_node.with_changes(body=body, footer=footer)

    def leave_IndentedBlock(self, original_node, updated_node):
        body, footer = _without_lines(updated_node.body, updated_node.footer, self.emptied)
        return updated_node.with_changes(body=body or [cst.SimpleStatementLine([cst.Pass()])], footer=footer)

    def _kept(self, aliases):
        kept = [a for a in aliases if _bound_name(a) not in self.names]
        if kept and len(kept) < len(aliases):
            kept[-1] = kept[-1].with_changes(comma=aliases[-1].comma)
        return kept

    def leave_Import(self, original_node, updated_node):
        kept = self._kept(updated_node.names)
        return updated_node.with_changes(names=kept) if kept else cst.RemoveFromParent()

    def leave_ImportFrom(self, original_node, updated_node):
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        kept = self._kept(updated_node.names)
        return updated_node.with_changes(names=kept) if kept else cst.RemoveFromParent()


def _without_lines(
    body: Sequence[Any], footer: Sequence[cst.EmptyLine], removed: List[cst.SimpleStatementLine]
) -> Tuple[List[Any], List[cst.EmptyLine]]:
    """``body`` without the ``removed`` lines; their comments join the next statement (or the footer)."""
    kept: List[Any] = []
    carried: List[cst.EmptyLine] = []
    gone = {id(line) for line in removed}
    for statement in body:
        if id(statement) in gone:
            carried += [line for line in statement.leading_lines if line.comment is not None]
            if statement.trailing_whitespace.comment is not None:
                carried.append(comment_line(statement.trailing_whitespace))
            continue
        if carried:
            statement = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
            carried = []
        kept.append(statement)
    return kept, [*carried, *footer]


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    node: cst.BaseExpression = alias.name
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _used_names(module: cst.Module) -> Set[str]:
    imports = (cst.Import, cst.ImportFrom)
    return {node.value for node in walk([module], lambda n: isinstance(n, imports)) if isinstance(node, cst.Name)}


Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


def body_statements(block: cst.BaseSuite) -> List[Statement]:
    """A block's statements as lines that can stand at any indentation."""
    if isinstance(block, cst.IndentedBlock):
        return [cast(Statement, statement) for statement in block.body]
    assert isinstance(block, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=list(block.body), trailing_whitespace=block.trailing_whitespace)]


def with_leading_lines(statement: Statement, lines: Sequence[cst.EmptyLine]) -> Statement:
    """``lines`` added before the statement's own; blank lines carry no indentation wherever it moves."""
    merged = [*lines, *statement.leading_lines]
    return statement.with_changes(
        leading_lines=[line.with_changes(indent=False) if line.comment is None else line for line in merged]
    )


def comment_line(whitespace: cst.TrailingWhitespace) -> cst.EmptyLine:
    """A header's trailing comment as a comment line of its own."""
    return cst.EmptyLine(comment=whitespace.comment)
