"""What every codemod receives and returns: the round's tree and facts with their indexes, a Plan or a reason.

It reads the facts, never the engine (which imports the rules, whose codemods import this module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Protocol, Tuple, Union

import libcst as cst

from ..facts.analysis import FileFacts
from ..facts.foreign import Origin
from ..facts.model import LoaderCall
from ..facts.nodes import children
from ..facts.resolve import Scope
from .edits import Plan


@dataclass(frozen=True)
class Elsewhere:
    """The fix belongs to the DataLoader call of another module of the project (its path as
    messages show it, relative to the project root, and line): the fix command applies it there
    when that module is among the files it fixes."""

    origin: Origin

    @property
    def reason(self) -> str:
        return f"the DataLoader is built at {self.origin}, which was not given to the fix command; give it too"


Outcome = Union[Plan, str, Elsewhere]  # a str is the reason the finding is left alone


class Analysed(Protocol):
    """What a fix reads of one round's analysis (the engine's ``Analysis`` is one): the tree and its facts."""

    @property
    def module(self) -> cst.Module: ...

    @property
    def facts(self) -> FileFacts: ...


class FixContext:
    """The analysis of one round, with the indexes codemods look findings up in."""

    def __init__(self, analysis: Analysed) -> None:
        self.module = analysis.module
        self.facts = analysis.facts
        self.keyword_owner: Dict[cst.Arg, Tuple[LoaderCall, str]] = {}
        # A framework's configuration call (`TrainingArguments(...)`) spells the parameters its own way.
        self.configs: Dict[cst.Call, LoaderCall] = {c.call.node: c.call for c in self.facts.frameworks.config_calls}
        for call in [*self.facts.flow.loader_calls.values(), *self.configs.values()]:
            for name, argument in call.args.items():
                anchor = argument.anchor
                keyword = anchor.keyword if isinstance(anchor, cst.Arg) else None
                if isinstance(anchor, cst.Arg) and keyword is not None and keyword.value == call.spelled(name):
                    self.keyword_owner[anchor] = (call, name)
        self._parents: Optional[Dict[cst.CSTNode, cst.CSTNode]] = None
        self._scopes: Optional[Dict[cst.Call, Scope]] = None

    def scope_of(self, call: cst.Call) -> Optional[Scope]:
        """The scope a call of the file runs in."""
        if self._scopes is None:
            self._scopes = {record.node: record.ctx.scope for record in self.facts.file.calls}
        return self._scopes.get(call)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parents is None:
            self._parents = {}
            stack: List[cst.CSTNode] = [self.module]
            while stack:
                current = stack.pop()
                for child in children(current):
                    self._parents[child] = current
                    stack.append(child)
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
