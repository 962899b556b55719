"""What a rule is: a code, a name, a message template, its triggers, a check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator

import libcst as cst


@dataclass(frozen=True)
class Finding:
    node: cst.CSTNode
    code: str
    message: str


# Rules that report on loader calls cannot fire without the loader's name in the text
# (configured loader names join the prefilter's tokens on their own).
NEEDS_LOADER = ("DataLoader",)


class Rule:
    """Base class. The subclass docstring is the rule's documentation page."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    # The prefilter's input: alternatives, any of which must occur in the source for the rule to
    # fire; an alternative is a substring, or a tuple of substrings that must all occur.
    TRIGGERS: ClassVar[tuple]
    DEFAULT_OFF: ClassVar[bool] = False

    @classmethod
    def finding(cls, node: cst.CSTNode, **values) -> Finding:
        return Finding(node=node, code=cls.CODE, message=f"{cls.CODE} {cls.MESSAGE.format(**values)}")

    @classmethod
    def check(cls, facts, settings) -> Iterator[Finding]:
        raise NotImplementedError


_EMPTY_MODULE = cst.Module(body=[])


def source_of(node: cst.CSTNode) -> str:
    """The node's source text on one line."""
    return " ".join(_EMPTY_MODULE.code_for_node(node).split())


def show(argument) -> str:
    """How an argument is written, for messages: `0`, `NW (= 0)`, `args.workers`."""
    if argument.omitted:
        return "omitted"
    if argument.expr is None:
        return f"unknown ({argument.state.why})"
    text = source_of(argument.expr)
    if argument.known and text != repr(argument.state.value) and text not in ("True", "False", "None"):
        return f"{text} (= {argument.state.value!r})"
    return text


def show_workers(call) -> str:
    """`num_workers=0`, `num_workers=NW (= 0)` or `num_workers omitted (defaults to 0)`."""
    workers = call.num_workers
    if workers.omitted:
        return "num_workers omitted (defaults to 0)"
    return f"num_workers={show(workers)}"
