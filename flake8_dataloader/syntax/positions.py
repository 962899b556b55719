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
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

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

    class _TextState(_OffsetState):
        """Also keeps the text generated (for one node, not the file)."""

        def __init__(self, default_indent: str, default_newline: str) -> None:
            super().__init__(default_indent, default_newline)
            self.pieces: List[str] = []

        def add_indent_tokens(self) -> None:
            for token in self.indent_tokens:
                self.add_token(token)

        def add_token(self, value: str) -> None:
            self.offset += len(value)
            self.pieces.append(value)

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


# Each text placement searches the whole source: past this many nodes to place, the one code
# generation of the file costs less (and keeps a file of thousands of findings linear).
MAX_TEXT_SEARCHES = 32


def node_starts(
    module: cst.Module,
    nodes: Iterable[cst.CSTNode],
    source: Optional[str] = None,
    tree: Optional[ast.AST] = None,
    tops: Optional[Mapping[cst.CSTNode, Optional[cst.CSTNode]]] = None,
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """(1-based line, 0-based column) of each node's syntactic start; ``source``: the text the
    module was parsed from (saves generating it again); with ``tree``, flake8's ast of that text,
    a call whose shape is unique in the file is placed from the ast, an expression whose text
    occurs once in the source from that text, and with ``tops`` (a node -> the module-level
    statement holding it) a node of a statement whose text occurs once in the source from that
    statement's code generation alone. What none of them places costs one code generation."""
    nodes = list(nodes)
    if tree is None or source is None or source.startswith("\ufeff"):
        return _generated_starts(module, nodes, source)
    known = unique_call_starts(tree, source, [node for node in nodes if isinstance(node, cst.Call)])
    rest = [node for node in nodes if node not in known]
    if len(rest) > MAX_TEXT_SEARCHES:
        return {**_generated_starts(module, rest, source), **known}  # one linear pass places them all
    known.update(_unique_text_starts(module, rest, source))
    if tops:  # after the expressions' own texts: a statement's code generation costs more
        known.update(_statement_starts(module, [node for node in nodes if node not in known], tops, source))
    rest = [node for node in nodes if node not in known]
    if not rest:
        return known
    return {**_generated_starts(module, rest, source), **known}


def _statement_starts(
    module: cst.Module,
    nodes: List[cst.CSTNode],
    tops: Mapping[cst.CSTNode, Optional[cst.CSTNode]],
    source: str,
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """Nodes inside module-level statements whose text occurs once in ``source``.

    A module-level statement is generated with no indentation and with its own leading comments
    and blank lines, so its code generation is its exact text in the file; occurring once, the text
    is where it stands, and every node generated with it is placed from its offset in it. One
    statement is generated however many of the nodes it holds (a call's arguments included).
    """
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    wanted = {id(node): node for node in nodes}
    statements: Dict[int, cst.CSTNode] = {}
    for node in nodes:
        top = tops.get(node)
        if top is not None:
            statements.setdefault(id(top), top)
    if CodegenState is None or not statements:
        return out
    line_starts: Optional[List[int]] = None
    for statement in statements.values():
        found = _once_in(module, statement, source)
        if found is None:
            continue
        at, starts = found
        if line_starts is None:
            line_starts = _line_starts_fast(source)
        for ident in wanted.keys() & starts.keys():
            out[wanted.pop(ident)] = _line_and_column(line_starts, at + starts[ident])
    return out


def _unique_text_starts(
    module: cst.Module, nodes: List[cst.CSTNode], source: str
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """Expressions and arguments whose text occurs once in ``source``: placed from that occurrence.

    Their code generation depends on nothing around them (no indentation, no separator chosen by
    the parent), so it reproduces the text at their place in the source; occurring once, that is
    where they are. Only the node itself is generated, not the file.
    """
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    if CodegenState is None:
        return out
    line_starts: Optional[List[int]] = None
    for node in nodes:
        if not isinstance(node, (cst.BaseExpression, cst.Arg)):
            continue
        found = _once_in(module, node, source)
        if found is None:
            continue
        if line_starts is None:
            line_starts = _line_starts_fast(source)
        out[node] = _line_and_column(line_starts, found[0] + found[1][id(node)])
    return out


def _once_in(module: cst.Module, node: cst.CSTNode, source: str) -> Optional[Tuple[int, Dict[int, int]]]:
    """Where ``node``'s own code generation occurs in ``source``, and the offsets in it of the nodes
    it generated (by id); None when it occurs there more than once (or not at all)."""
    state = _TextState(module.default_indent, module.default_newline)
    try:
        node._codegen(state)
    except (AttributeError, TypeError):  # pragma: no cover - LibCST internals changed
        return None
    text = "".join(state.pieces)
    at = source.find(text) if text else -1
    if at < 0 or source.find(text, at + 1) >= 0:
        return None
    return at, state.starts


def _line_and_column(line_starts: List[int], offset: int) -> Tuple[int, int]:
    line = bisect.bisect_right(line_starts, offset)
    return line, offset - line_starts[line - 1]


def _generated_starts(
    module: cst.Module, nodes: List[cst.CSTNode], source: Optional[str]
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """One code generation of the whole module, recording where each node starts."""
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
    return {node: _line_and_column(line_starts, state.starts[id(node)]) for node in nodes}


def _fallback(module: cst.Module, nodes) -> Dict[cst.CSTNode, Tuple[int, int]]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (positions[node].start.line, positions[node].start.column) for node in nodes}
