"""Walking LibCST nodes cheaply: syntactic children without the visitor machinery."""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Tuple

import libcst as cst

# Fields that hold only tokens and whitespace: never walked.
_TOKEN_FIELDS = frozenset(
    {
        "leading_lines", "lines_after_decorators", "lpar", "rpar", "header", "footer", "comma", "semicolon",
        "equal", "colon", "operator", "asynchronous", "dot", "lbracket", "rbracket", "lbrace", "rbrace",
        "star_tok", "arrow", "lines_after_docstring",
    }
)
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(cls: type) -> Tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(cls) if f.name not in _TOKEN_FIELDS and "whitespace" not in f.name
        )
        _CHILD_FIELDS[cls] = fields
    return fields


_IS_NODE: Dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    # CSTNode is an ABC: an isinstance per field would go through its subclass hook every time.
    found = _IS_NODE.get(kind)
    if found is None:
        found = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return found


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """Syntactic children in field order, without LibCST's rebuild-on-visit machinery. Field order is
    not always source order: decorators, a return annotation and class bases come after the body,
    a keyword argument's name after its value, the test of `a if test else b` first."""
    found: List[cst.CSTNode] = []
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind) or _child_fields(kind)
    is_node = _IS_NODE
    for name in fields:  # a hot loop: every node of every analysed file
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                flag = is_node.get(type(item))
                if flag is None:
                    flag = _is_node(type(item))
                if flag:
                    found.append(item)
        else:
            flag = is_node.get(kind)
            if flag is None:
                flag = _is_node(kind)
            if flag:
                found.append(value)
    return found


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``root`` and every node below it (an explicit stack: deep expressions do not recurse)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))
