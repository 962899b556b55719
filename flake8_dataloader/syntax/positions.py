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
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import libcst as cst

from .ast_positions import Definition, Definitions, unique_call_starts
from .text_places import Mapper, SourceText, line_and_column, line_starts

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


# Each text placement searches the whole source: past this many nodes to place, the one code
# generation of the file costs less (and keeps a file of thousands of findings linear).
MAX_TEXT_SEARCHES = 32


@dataclass(frozen=True)
class Surroundings:
    """What the collector saw around the nodes to place (engine.Analysis.surroundings)."""

    # Keyed by the node's id: the module-level statement holding a node; the call an argument (or
    # its value) is given to; the function holding a node, then that function's class.
    tops: Mapping[int, Optional[cst.CSTNode]]
    owners: Mapping[int, cst.Call] = field(default_factory=dict)
    enclosing: Mapping[int, Tuple[Definition, ...]] = field(default_factory=dict)


def node_starts(
    module: cst.Module,
    nodes: Iterable[cst.CSTNode],
    source: Optional[str] = None,
    tree: Optional[ast.AST] = None,
    around: Optional[Surroundings] = None,
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """(1-based line, 0-based column) of each node's syntactic start; ``source``: the text the
    module was parsed from (saves generating it again). With ``tree``, flake8's ast of that text:
    a call whose shape is unique in the file, and a function or class whose name is, are placed
    from the ast; an expression whose own text occurs once in the source, from that text. With
    ``around``: a node whose text occurs once in the call it is given to, or in the function or
    class around it, from there; a node of a module-level statement whose text occurs once, from
    that statement's code generation alone. What none of them places costs one code generation."""
    nodes = list(nodes)
    if tree is None or source is None or source.startswith("\ufeff"):
        return _generated_starts(module, nodes, source)
    text = SourceText(source)
    known = unique_call_starts(tree, text, [node for node in nodes if isinstance(node, cst.Call)])
    definitions = Definitions(tree, text)
    for node in nodes:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node not in known:
            start = definitions.start(node)
            if start is not None:
                known[node] = start
    rest = [node for node in nodes if node not in known]
    if len(rest) > MAX_TEXT_SEARCHES:
        return {**_generated_starts(module, rest, source), **known}  # one linear pass places them all
    known.update(_unique_text_starts(module, rest, text))
    rest = [node for node in rest if node not in known]
    if around is not None and rest:  # the narrower texts first: a statement's code generation costs more
        known.update(_enclosed_starts(module, rest, text, around, definitions))
        rest = [node for node in rest if node not in known]
        if rest:
            known.update(_statement_starts(module, rest, around.tops, text))
            rest = [node for node in rest if node not in known]
    if not rest:
        return known
    return {**_generated_starts(module, rest, source), **known}


def _enclosed_starts(
    module: cst.Module,
    nodes: List[cst.CSTNode],
    text: SourceText,
    around: Surroundings,
    definitions: Definitions,
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """Nodes placed from a text that occurs once in a narrower stretch than the file: the call an
    argument is given to (its own generation places its arguments), anywhere in the file; then the
    node, or that call, within the function around it or that function's class (the ast's span of a
    definition whose name is unique)."""
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    generated: Dict[int, Optional[Tuple[str, Dict[int, int]]]] = {}
    for node in nodes:
        own = node if isinstance(node, (cst.BaseExpression, cst.Arg)) else None
        owner = around.owners.get(id(node))
        tries: List[Tuple[Optional[cst.CSTNode], Tuple[int, int]]] = [(owner, (0, len(text.source)))]
        for definition in around.enclosing.get(id(node), ()):
            span = definitions.span(definition)
            if span is not None:
                tries += [(own, span), (owner, span)]
        for carrier, (low, high) in tries:
            if carrier is None:
                continue
            if id(carrier) not in generated:
                generated[id(carrier)] = _generated_text(module, carrier)
            text_and_starts = generated[id(carrier)]
            if text_and_starts is None or id(node) not in text_and_starts[1]:
                continue
            mapped = text.found_once(text_and_starts[0], low, high)
            if mapped is not None:
                out[node] = text.position(mapped(text_and_starts[1][id(node)]))
                break
    return out


def _statement_starts(
    module: cst.Module,
    nodes: List[cst.CSTNode],
    tops: Mapping[int, Optional[cst.CSTNode]],
    text: SourceText,
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """Nodes inside module-level statements whose text occurs once in the source.

    A module-level statement is generated with no indentation and with its own leading comments
    and blank lines, so its code generation is its exact text in the file; occurring once, the text
    is where it stands, and every node generated with it is placed from its offset in it. One
    statement is generated however many of the nodes it holds (a call's arguments included).
    """
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    wanted = {id(node): node for node in nodes}
    statements: Dict[int, cst.CSTNode] = {}
    for node in nodes:
        top = tops.get(id(node))
        if top is not None:
            statements.setdefault(id(top), top)
    for statement in statements.values():
        found = _once_in(module, statement, text)
        if found is None:
            continue
        mapped, starts = found
        for ident in wanted.keys() & starts.keys():
            out[wanted.pop(ident)] = text.position(mapped(starts[ident]))
    return out


def _unique_text_starts(
    module: cst.Module, nodes: List[cst.CSTNode], text: SourceText
) -> Dict[cst.CSTNode, Tuple[int, int]]:
    """Expressions and arguments whose text occurs once in the source: placed from that occurrence.

    Their code generation depends on nothing around them but the indentation of their continuation
    lines (text_places), so it reproduces the text at their place in the source; occurring once,
    that is where they are. Only the node itself is generated, not the file.
    """
    out: Dict[cst.CSTNode, Tuple[int, int]] = {}
    for node in nodes:
        if not isinstance(node, (cst.BaseExpression, cst.Arg)):
            continue
        found = _once_in(module, node, text)
        if found is not None:
            out[node] = text.position(found[0](found[1][id(node)]))
    return out


def _once_in(module: cst.Module, node: cst.CSTNode, text: SourceText) -> Optional[Tuple[Mapper, Dict[int, int]]]:
    """Where ``node``'s own code generation occurs in the source (offsets in it -> offsets in the
    source), and the offsets in it of the nodes it generated (by id); None when it occurs there more
    than once (or not at all)."""
    generated = _generated_text(module, node)
    if generated is None:
        return None
    mapped = text.found_once(generated[0])
    return None if mapped is None else (mapped, generated[1])


def _generated_text(module: cst.Module, node: cst.CSTNode) -> Optional[Tuple[str, Dict[int, int]]]:
    """``node``'s own code generation, and where each node it generated starts in it (by id)."""
    if CodegenState is None:
        return None
    state = _TextState(module.default_indent, module.default_newline)
    try:
        node._codegen(state)
    except (AttributeError, TypeError):  # pragma: no cover - LibCST internals changed
        return None
    return "".join(state.pieces), state.starts


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
    starts_of_lines = line_starts(text)
    return {node: line_and_column(starts_of_lines, state.starts[id(node)]) for node in nodes}


def _fallback(module: cst.Module, nodes) -> Dict[cst.CSTNode, Tuple[int, int]]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (positions[node].start.line, positions[node].start.column) for node in nodes}
