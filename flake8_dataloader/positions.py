"""Line and column of the few nodes we report, from one code-generation pass.

LibCST's PositionProvider builds a CodeRange object for every node through the
metadata machinery; we need the start of a handful of anchors. This state
records plain character offsets during code generation (LibCST's syntactic
start, whitespace excluded, exactly as PositionProvider defines it) and maps
them to (line, column) afterwards. If LibCST's internal code-generation API
ever changes, we fall back to PositionProvider.
"""

from __future__ import annotations

import ast
import bisect
from typing import Dict, Iterable, List, Optional, Tuple

import libcst as cst

from .ast_positions import unique_call_starts

try:
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - depends on LibCST's internals
    CodegenState = None  # type: ignore[assignment,misc]  # LibCST internals moved: the slow path


if CodegenState is not None:

    class _OffsetState(CodegenState):
        def __init__(self, default_indent: str, default_newline: str) -> None:
            super().__init__(default_indent=default_indent, default_newline=default_newline)
            self.offset = 0
            self.starts: Dict[int, int] = {}
            self._stack: List[int] = []

        def add_indent_tokens(self) -> None:
            for token in self.indent_tokens:
                self.offset += len(token)

        def add_token(self, value: str) -> None:
            self.offset += len(value)

        def pop_trailing_newline(self) -> None:
            pass  # nothing follows the last token: offsets before it are unaffected

        def before_codegen(self, node: cst.CSTNode) -> None:
            self._stack.append(self.offset)

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = self._stack.pop()
            self.starts.setdefault(id(node), start)

        def record_syntactic_position(  # type: ignore[override]  # LibCST only enters it with `with`
            self,
            node: cst.CSTNode,
            *,
            start_node: Optional[cst.CSTNode] = None,
            end_node: Optional[cst.CSTNode] = None,
        ) -> "_Recording":
            return _Recording(self, node, start_node)

    class _Recording:
        """`with state.record_syntactic_position(node):` as a plain class: LibCST enters one per
        expression, and a generator-based context manager costs several times more."""

        __slots__ = ("state", "node", "start_node", "start")

        def __init__(self, state: _OffsetState, node: cst.CSTNode, start_node: Optional[cst.CSTNode]) -> None:
            self.state, self.node, self.start_node = state, node, start_node
            self.start = 0

        def __enter__(self) -> None:
            self.start = self.state.offset

        def __exit__(self, *exc: object) -> None:
            start = self.start
            starts = self.state.starts
            if self.start_node is not None and id(self.start_node) in starts:
                start = starts[id(self.start_node)]
            starts[id(self.node)] = start


def _line_starts(source: str) -> List[int]:
    starts = [0]
    index = 0
    length = len(source)
    while index < length:
        char = source[index]
        if char == "\n" or (char == "\r" and (index + 1 >= length or source[index + 1] != "\n")):
            starts.append(index + 1)
        index += 1
    return starts


def _line_starts_fast(source: str) -> List[int]:
    if "\r" in source:
        return _line_starts(source)
    starts = [0]
    position = source.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = source.find("\n", position + 1)
    return starts


def node_starts(
    module: cst.Module, nodes: Iterable[cst.CSTNode], source: Optional[str] = None, tree: Optional[ast.AST] = None
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """(1-based line, 0-based column) of each node's syntactic start; ``source``: the text the
    module was parsed from (saves generating it again); ``tree``: flake8's ast of that text, which
    places a call whose shape is unique in the file without a code generation."""
    nodes = list(nodes)
    if tree is not None and source is not None and not source.startswith("\ufeff"):
        known = unique_call_starts(tree, source, [node for node in nodes if isinstance(node, cst.Call)])
        rest = [node for node in nodes if node not in known]
        if not rest:
            return known
        if known:
            return {**node_starts(module, rest, source), **known}
    if CodegenState is None:
        return _fallback(module, nodes)
    try:
        state = _OffsetState(module.default_indent, module.default_newline)
        module._codegen(state)
    except (AttributeError, TypeError):  # pragma: no cover - LibCST internals changed
        return _fallback(module, nodes)
    # LibCST drops a byte-order mark: offsets then count from after it.
    text = module.code if source is None or source.startswith("\ufeff") else source
    line_starts = _line_starts_fast(text)
    out = {}
    for node in nodes:
        offset = state.starts[id(node)]
        line = bisect.bisect_right(line_starts, offset)
        out[node] = (line, offset - line_starts[line - 1])
    return out


def _fallback(module: cst.Module, nodes) -> Dict[cst.CSTNode, Tuple[int, int]]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (positions[node].start.line, positions[node].start.column) for node in nodes}
