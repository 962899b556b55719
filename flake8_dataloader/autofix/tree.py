"""Queries over a LibCST tree that the codemods and the edit pass share."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, List

import libcst as cst

from ..facts.nodes import children


def never(node: cst.CSTNode) -> bool:
    return False


def walk(roots: Iterable[cst.CSTNode], skip: Callable[[cst.CSTNode], bool] = never) -> Iterator[cst.CSTNode]:
    """Every node under ``roots`` (whitespace excluded), not entering nodes ``skip`` accepts."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        if skip(node):
            continue
        yield node
        stack.extend(variable_children(node))


def variable_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """A node's children, leaving out names that are not variables (`x.attr`, `f(keyword=...)`)."""
    if isinstance(node, cst.Attribute):
        return [node.value]
    if isinstance(node, cst.Arg):
        return [node.value]
    return list(children(node))


def comments_in(node: cst.CSTNode) -> List[cst.Comment]:
    """Every comment in the subtree, whitespace included (the facts walker skips whitespace)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Comment):
            found.append(current)
        stack.extend(current.children)
    return found
