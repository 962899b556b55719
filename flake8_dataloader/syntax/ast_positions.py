"""Where a LibCST call starts, read from flake8's ast of the same text, when that is certain.

Most findings are anchored on a call (the DataLoader, a factory's call). A call whose callee
name and argument shape (positional count, keywords) no other call of the file shares is the
ast's only call of that name and shape, so its line and column are the ast's, with no LibCST
code generation. So is a function or class whose name no other definition shares, and the
stretch of the source it spans. Anything ambiguous is left to positions.node_starts.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterable, List, Optional, Tuple, Union

import libcst as cst

from ..screen.ast_walk import DEFINITIONS, nodes_of
from .text_places import SourceText

Shape = Tuple[Optional[str], int, Tuple[Optional[str], ...]]


def callee_name(func: Union[ast.expr, cst.BaseExpression]) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def shape(call: Union[ast.Call, cst.Call]) -> Shape:
    """Callee name, positional count (`*args` included) and keywords (`**kw` as None), in order."""
    if isinstance(call, ast.Call):
        return callee_name(call.func), len(call.args), tuple(k.arg for k in call.keywords)
    positional = sum(1 for arg in call.args if arg.keyword is None and arg.star != "**")
    written = [arg for arg in call.args if arg.keyword is not None or arg.star == "**"]
    keywords = tuple(a.keyword.value if a.keyword is not None else None for a in written)
    return callee_name(call.func), positional, keywords


def unique_call_starts(
    tree: ast.AST, text: SourceText, calls: Iterable[cst.Call]
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """(1-based line, 0-based column in characters) of each call whose shape no other call of the
    file has. Calls inside f-strings count for uniqueness but never give a position (the ast's
    positions there are not reliable before Python 3.12)."""
    wanted: Dict[Shape, cst.Call] = {shape(call): call for call in calls if callee_name(call.func) is not None}
    if not wanted:
        return {}
    found: Dict[Shape, List[Tuple[ast.Call, bool]]] = {}
    nodes = nodes_of(tree)  # the walk the prefilter and the gate made of this tree
    in_fstrings = {id(node) for string in nodes if isinstance(string, ast.JoinedStr) for node in ast.walk(string)}
    for node in nodes:
        if isinstance(node, ast.Call):
            key = shape(node)
            if key in wanted:
                found.setdefault(key, []).append((node, id(node) in in_fstrings))
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    for key, call in wanted.items():
        twins = found.get(key, [])
        if len(twins) != 1 or twins[0][1]:
            continue
        offset = text.offset(twins[0][0].lineno, twins[0][0].col_offset)
        if offset is not None:
            out[call] = text.position(offset)
    return out


Definition = Union[cst.FunctionDef, cst.ClassDef]


_HEADER = {True: re.compile(r"class\s+"), False: re.compile(r"(?:async\s+)?def\s+")}
_AstDefinition = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]


class Definitions:
    """Functions and classes whose name no other definition of the same kind in the file has:
    where each starts (its `def`, `async` or `class` keyword, as LibCST's syntactic start) and the
    stretch of the source it spans, read from flake8's ast. Built on first use, placed when asked."""

    def __init__(self, tree: ast.AST, text: SourceText) -> None:
        self._tree, self._text = tree, text
        self._named: Optional[Dict[Tuple[bool, str], List[_AstDefinition]]] = None
        self._spans: Dict[Tuple[bool, str], Optional[Tuple[int, int]]] = {}

    def start(self, node: Definition) -> Optional[Tuple[int, int]]:
        span = self.span(node)
        return None if span is None else self._text.position(span[0])

    def span(self, node: Definition) -> Optional[Tuple[int, int]]:
        """Source offsets [start, end) of the definition, decorators excluded; None unless its name
        is unique among the file's definitions of its kind."""
        key = (isinstance(node, cst.ClassDef), node.name.value)
        if key not in self._spans:
            self._spans[key] = self._span(*key)
        return self._spans[key]

    def _span(self, is_class: bool, name: str) -> Optional[Tuple[int, int]]:
        if self._named is None:
            self._named = {}
            for node in nodes_of(self._tree):
                if isinstance(node, DEFINITIONS):
                    self._named.setdefault((isinstance(node, ast.ClassDef), node.name), []).append(node)
        twins = self._named.get((is_class, name), [])
        if len(twins) != 1:
            return None
        node, source = twins[0], self._text.source
        end_line, end_column = node.end_lineno, node.end_col_offset
        start = self._text.offset(node.lineno, node.col_offset)
        end = None if end_line is None or end_column is None else self._text.offset(end_line, end_column)
        header = _HEADER[is_class].match(source, start) if start is not None else None
        if end is None or header is None or not source.startswith(name, header.end()) or _name_goes_on(
            source, header.end() + len(name)
        ):
            return None  # not where the ast says (a position the ast counts otherwise): left to LibCST
        return header.start(), end


def _name_goes_on(source: str, offset: int) -> bool:
    """The character at ``offset`` would continue an identifier."""
    return offset < len(source) and (source[offset].isalnum() or source[offset] == "_")
