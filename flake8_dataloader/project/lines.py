"""Line numbers of a summary's definitions from the module's ast, without a LibCST code generation.

A summary names a handful of lines (a class, a factory, the DataLoader calls it makes); a
code-generation pass over every summarised module would cost about half its parse. The ast
(flake8's, or one `ast.parse`) has them: a definition's first line (its first decorator, as
LibCST starts it), and the calls of one name inside a function in source order, which is the
order LibCST's pre-order walk meets them.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Tuple, Union

import libcst as cst

from ..syntax.ast_positions import callee_name, shape
from ..facts.model import CallRecord, FunctionInfo

Definition = Union[ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef]


def first_line(node: Definition) -> int:
    return min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])


def top_level(tree: ast.AST) -> Dict[str, Definition]:
    """The module-level classes and functions defined once, by name (a name defined twice: not here)."""
    out: Dict[str, Definition] = {}
    twice = set()
    for node in getattr(tree, "body", ()):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in out:
                twice.add(node.name)
            out[node.name] = node
    return {name: node for name, node in out.items() if name not in twice}


def method_line(cls: Optional[Definition], name: str) -> Optional[int]:
    for node in getattr(cls, "body", ()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return first_line(node)
    return None


class CallLines:
    """Lines of calls inside module-level functions, each function's calls of a name paired once.

    LibCST's side is the collector's record of the function's calls (its own body, nested
    functions excluded, in the order the walk met them); the ast's side, the same calls sorted by
    position. The pairing is checked call by call (positional count and keywords).
    """

    def __init__(self, calls_in: Callable[[FunctionInfo], List[CallRecord]]) -> None:
        self._calls_in = calls_in
        self._paired: Dict[Tuple[int, str], Optional[Dict[int, int]]] = {}

    def line(self, function: Definition, info: FunctionInfo, call: cst.Call) -> Optional[int]:
        """The line of ``call`` inside ``function``; None when the two trees do not pair up."""
        name = callee_name(call.func)
        if name is None:
            return None
        key = (id(info), name)
        if key not in self._paired:
            ours = [r.node for r in self._calls_in(info) if callee_name(r.node.func) == name]
            self._paired[key] = _pair(ours, _ast_calls(function, name))
        paired = self._paired[key]
        return None if paired is None else paired.get(id(call))


def _ast_calls(function: Definition, name: str) -> List[ast.Call]:
    """The calls of ``name`` in ``function`` outside its nested functions, by position."""
    found: List[ast.Call] = []
    stack: List[ast.AST] = [function]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and callee_name(node.func) == name:
            found.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append(child)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _pair(ours: List[cst.Call], theirs: List[ast.Call]) -> Optional[Dict[int, int]]:
    if len(ours) != len(theirs) or any(shape(a) != shape(b) for a, b in zip(ours, theirs)):
        return None
    return {id(a): b.lineno for a, b in zip(ours, theirs)}
