"""Line numbers of a summary's definitions from the module's ast, without a LibCST code generation.

A summary names a handful of lines (a class, a factory, the DataLoader calls it makes); a
code-generation pass over every summarised module would cost about half its parse. The ast
(flake8's, or one `ast.parse`) has them: a definition's first line (its first decorator, as
LibCST starts it), and the calls of one name inside a function in source order, which is the
order LibCST's pre-order walk meets them.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple, Union

import libcst as cst

from ..facts.nodes import children

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


def _callee_name(func: Union[ast.expr, cst.BaseExpression]) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _shape(call: Union[ast.Call, cst.Call]) -> tuple:
    """Positional count and keywords: what pairs an ast call with its LibCST twin (a check of the order)."""
    if isinstance(call, ast.Call):
        return len(call.args), tuple(k.arg for k in call.keywords)
    positional = sum(1 for arg in call.args if arg.keyword is None and arg.star != "**")
    written = [arg for arg in call.args if arg.keyword is not None or arg.star == "**"]
    keywords = tuple(arg.keyword.value if arg.keyword is not None else None for arg in written)
    return positional, keywords


class CallLines:
    """Lines of calls inside module-level functions, each function's calls of a name paired once."""

    def __init__(self) -> None:
        self._paired: Dict[Tuple[int, str], Optional[Dict[int, int]]] = {}

    def line(self, function: Definition, libcst_function: cst.CSTNode, call: cst.Call) -> Optional[int]:
        """The line of ``call`` inside ``function``, by its rank among the calls of the same name; None
        when the two trees do not pair up call by call."""
        name = _callee_name(call.func)
        if name is None:
            return None
        key = (id(libcst_function), name)
        if key not in self._paired:
            self._paired[key] = _pair(function, libcst_function, name)
        paired = self._paired[key]
        return None if paired is None else paired.get(id(call))


def _pair(function: Definition, libcst_function: cst.CSTNode, name: str) -> Optional[Dict[int, int]]:
    ours = _cst_calls_of(libcst_function, name)
    theirs = sorted(
        (n for n in ast.walk(function) if isinstance(n, ast.Call) and _callee_name(n.func) == name),
        key=lambda n: (n.lineno, n.col_offset),
    )
    if len(ours) != len(theirs) or any(_shape(a) != _shape(b) for a, b in zip(ours, theirs)):
        return None
    return {id(a): b.lineno for a, b in zip(ours, theirs)}


def _cst_calls_of(function: cst.CSTNode, name: str) -> List[cst.Call]:
    found: List[cst.Call] = []
    stack: List[cst.CSTNode] = [function]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and _callee_name(node.func) == name:
            found.append(node)
        stack.extend(reversed(list(children(node))))
    return found
