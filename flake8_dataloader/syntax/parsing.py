"""LibCST parsing that cannot crash, hang or exhaust the stack of the process it runs in.

LibCST's native parser recurses once per level of an expression chain on the C stack, and
its time grows with the square of a chain's length. Measured with a bare parse on the main
thread (8 MiB stack), libcst 1.9.0, Python 3.11 (`python benchmarks/parser_limits.py`):
SIGSEGV at 7,100 `and`/`or` operands, 6,000 attribute segments, 10,400 `not`s, 3,500
nested lambdas and 8,300 `elif` branches; longer than 20 s for one parse at 3,200
subscripts, 6,400 calls (`f()()...`), 6,400 conditional expressions or `**` operands and
12,800 unary minuses or `+` operands (1,000 subscripts: 1.3 s); comparisons and tuples
parse to 400,000; 3,200 implicitly concatenated strings raise an exception (contained).

So, before LibCST sees a file:
- brackets nested deeper than CPython accepts (200) are refused (text scan);
- expressions nested deeper than MAX_EXPRESSION_DEPTH levels (on the `ast` tree:
  flake8's own, or one parsed here; a boolean chain counts one level per operand) are
  refused, which bounds both the recursion and the quadratic time; text Python cannot
  parse is bounded by a token count per logical line instead; statements nested deeper
  than MAX_STATEMENT_DEPTH (long `elif` chains) are refused too;
- the parse itself runs in a thread with a PARSE_STACK_BYTES stack, so what the limits let
  through has ample room (virtual memory: only the pages used are committed); one such thread
  serves the whole process.
A refused file yields ParseFailure, logged like any other file LibCST cannot parse.
"""

from __future__ import annotations

import ast
import io
import os
import queue
import re
import threading
import tokenize
from typing import List, Optional, Tuple

import libcst as cst

from ..errors import ParseFailure


# CPython refuses more nested brackets than this (flake8 then reports E999 and never runs plugins).
MAX_BRACKET_DEPTH = 200
# Deeper than any hand-written expression; a chain this deep parses in well under 0.1 s.
MAX_EXPRESSION_DEPTH = 200
# A 1,000-branch elif chain: LibCST's native parser crashed at 8,300 on an 8 MiB stack.
MAX_STATEMENT_DEPTH = 1000
PARSE_STACK_BYTES = 256 * 1024 * 1024
_BRACKETS = re.compile(r"[][(){}]")


def too_deeply_nested(source: str) -> bool:
    depth = 0
    for match in _BRACKETS.finditer(source):
        depth += 1 if match.group() in "([{" else -1
        if depth > MAX_BRACKET_DEPTH:
            return True
    return False


def nesting_depths(tree: ast.AST) -> Tuple[int, int]:
    """The deepest nesting of expressions (a boolean chain counting one level per operand)
    and of statements (an `elif` is a statement inside the previous branch) in the tree."""
    deepest_expression = deepest_statement = 0
    stack: List[Tuple[ast.AST, int, int]] = [(tree, 0, 0)]
    push, pop, node_type = stack.append, stack.pop, ast.AST  # a hot loop: every node of every file
    while stack:
        node, expression, statement = pop()
        if isinstance(node, ast.expr):
            expression += len(node.values) - 1 if isinstance(node, ast.BoolOp) else 1
            if expression > deepest_expression:
                deepest_expression = expression
        elif isinstance(node, ast.stmt):
            expression, statement = 0, statement + 1
            if statement > deepest_statement:
                deepest_statement = statement
        for field in node._fields:  # ast.iter_child_nodes without its generator
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        push((item, expression, statement))
            elif isinstance(value, node_type):
                push((value, expression, statement))
    return deepest_expression, deepest_statement


class _TooDeep(Exception):
    pass


def _python_tree(source: str) -> Optional[ast.AST]:
    """Python's own tree; None when Python cannot parse the text; _TooDeep when it is too deep even for Python."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        raise _TooDeep from None


# Tokens that open one more level of an expression chain in LibCST's parser.
_CHAIN_OPERATORS = frozenset(
    "( [ . + - * / // % @ ** ~ << >> & | ^ < > <= >= == != := ->".split()
) | {"and", "or", "not", "await", "lambda", "if"}


def chain_estimate(source: str) -> Optional[int]:
    """For text Python cannot parse: the most chain-opening tokens in one logical line.

    An upper bound of the expression depth (a long flat literal of calls counts too, which
    only costs the findings of a file Python cannot run anyway). None: not tokenizable.
    """
    most = count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                count = 0
            elif token.type in (tokenize.OP, tokenize.NAME) and token.string in _CHAIN_OPERATORS:
                count += 1
                most = max(most, count)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return most


def refusal(source: str, tree: Optional[ast.AST] = None) -> Optional[str]:
    """Why LibCST must not be given this text, if it must not."""
    if too_deeply_nested(source):
        return f"brackets nested deeper than {MAX_BRACKET_DEPTH} levels"
    if tree is None:
        try:
            tree = _python_tree(source)
        except _TooDeep:
            return "nested too deeply for Python's own parser"
    if tree is None:
        # Python cannot parse it (Python 2, or syntax newer than this interpreter): LibCST may.
        estimate = chain_estimate(source)
        if estimate is None:
            return "Python can neither parse nor tokenize it"
        if estimate > 2 * MAX_EXPRESSION_DEPTH:
            return f"Python cannot parse it, and a line of it may nest deeper than {MAX_EXPRESSION_DEPTH} levels"
        return None
    expression, statement = nesting_depths(tree)
    if expression > MAX_EXPRESSION_DEPTH:
        return f"an expression nested {expression} levels deep (more than {MAX_EXPRESSION_DEPTH})"
    if statement > MAX_STATEMENT_DEPTH:
        return f"statements nested {statement} levels deep (more than {MAX_STATEMENT_DEPTH}; an elif counts one)"
    return None


class _ParseThread:
    """One long-lived thread with a PARSE_STACK_BYTES stack that parses every file of the process.

    LibCST's native parser keeps per-thread state that a fresh thread builds again on its first
    parse (about 2 ms a file: a thread per file cost a third of the parse itself on the loader-heavy
    files); one thread keeps it. Each request carries its own slot and event, so a result is never
    handed to another request (an interrupted wait leaves its request to finish unread). A fork
    (flake8 -j) keeps no threads: the child starts its own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: "queue.SimpleQueue[_Request]" = queue.SimpleQueue()
        self._pid = -1

    def parse(self, source: str) -> object:
        """The module, or the exception LibCST raised (any BaseException, handed over)."""
        request = _Request(source)
        with self._lock:
            if self._pid != os.getpid():
                self._start()
            self._requests.put(request)
        request.done.wait()
        return request.outcome

    def _start(self) -> None:
        self._requests = queue.SimpleQueue()
        previous = threading.stack_size(PARSE_STACK_BYTES)
        try:
            worker = threading.Thread(
                target=self._serve, args=(self._requests,), name="flake8-dataloader-parse", daemon=True
            )
            worker.start()
        finally:
            threading.stack_size(previous)
        self._pid = os.getpid()

    @staticmethod
    def _serve(requests: "queue.SimpleQueue[_Request]") -> None:
        while True:
            request = requests.get()
            try:
                request.outcome = cst.parse_module(request.source)
            except BaseException as exc:  # handed to the calling thread
                request.outcome = exc
            request.done.set()


class _Request:
    __slots__ = ("source", "outcome", "done")

    def __init__(self, source: str) -> None:
        self.source = source
        self.outcome: object = None
        self.done = threading.Event()


_PARSER = _ParseThread()


def parse(source: str, tree: Optional[ast.AST] = None) -> cst.Module:
    """The LibCST module of ``source`` (``tree``: flake8's ast of it, when there is one).

    Raises ParseFailure; RecursionError when the tree is too deep for Python code.
    """
    reason = refusal(source, tree)
    if reason is not None:
        raise ParseFailure(reason)
    result = _PARSER.parse(source)
    if isinstance(result, cst.Module):
        return result
    if isinstance(result, RecursionError):
        raise result
    if isinstance(result, Exception):  # ParserSyntaxError, TypeError on `() if 0 else(lambda:())`, ...
        raise ParseFailure(f"{type(result).__name__}: {result}".splitlines()[0]) from result
    assert isinstance(result, BaseException)
    raise result  # KeyboardInterrupt, SystemExit, MemoryError
