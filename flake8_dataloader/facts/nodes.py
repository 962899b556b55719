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
    """Syntactic children in source order, without LibCST's rebuild-on-visit machinery."""
    found: List[cst.CSTNode] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(item for item in value if _is_node(type(item)))
        elif _is_node(kind):
            found.append(value)
    return found


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``root`` and every node below it (an explicit stack: deep expressions do not recurse)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))
