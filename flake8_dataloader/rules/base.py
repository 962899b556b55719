"""What a rule is: a code, a name, a message template, its triggers, a check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterator, Tuple

import libcst as cst

from ..facts.frameworks import CONFIG_TRIGGER, IGNITE_LOADER_TRIGGER
from ..facts.resolve import source_of  # noqa: F401 - the rules' one spelling of "the node as written"

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


@dataclass(frozen=True)
class Finding:
    node: cst.CSTNode
    code: str
    message: str
    # Message values that are nodes: their line number replaces `{line of NAME}` once positions are known.
    lines: Tuple[Tuple[str, cst.CSTNode], ...] = ()

    def text(self, line_of: Callable[[cst.CSTNode], int]) -> str:
        message = self.message
        for name, node in self.lines:
            message = message.replace(f"{{line of {name}}}", str(line_of(node)))
        return message


# Rules that report on loader calls cannot fire without the loader's name in the text
# (configured loader names join the prefilter's tokens on their own).
NEEDS_LOADER = ("DataLoader", IGNITE_LOADER_TRIGGER)
# Rules that also read a framework's configuration call (`TrainingArguments(...)`).
NEEDS_LOADER_OR_CONFIG = (*NEEDS_LOADER, CONFIG_TRIGGER)


# Which file reports a finding when what it needs is split across the project's modules
# (`--dataloader-follow-imports`); each rule page prints its rule's sentence.
WRITTEN_HERE = (
    "Reported in the file where the call or assignment is written; a loader built in another module "
    "is reported in that module."
)
DEFINED_HERE = (
    "Reported in the file that defines the {what}, at its definition, also when no loader of that file "
    "uses it; never repeated in the files that import it."
)
FACTORY_SITES = (
    "A loader built by a factory imported from the project (`loader = make_loader(cfg)`) counts as a "
    "loader of this file, with its arguments as written there: the finding is reported here, at {anchor}."
)
FOLLOWS_CALLABLES = (
    " Functions and classes imported from the project that iterate what they are given "
    "(`fit(model, loader, epochs)`, `Trainer(model, loader).fit()`) are followed, also through a class "
    "of this file that keeps the imported class's `__init__` (`class LoggingTrainer(Trainer)`)."
)
# What a class of the linted file inherits from a dataset class of another project module.
INHERITS = (
    " A class of this file that subclasses such a class inherits what is known of it, unless it "
    "overrides the method that fact comes from (`__init__` without `super().__init__()`, or an "
    "assignment of the same `self` attribute, for what is held on `self`; `__getitem__`, "
    "`__getitems__` or `__iter__` for what the workers run)."
)
PER_FILE = "Per file: names imported from the project's other modules are not followed for this rule."


class Rule:
    """Base class. The subclass docstring is the rule's documentation page."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    # The prefilter's input: alternatives, any of which must occur in the source for the rule to
    # fire; an alternative is a substring, or a tuple of substrings that must all occur.
    TRIGGERS: ClassVar[tuple]
    # The gate's input (gate.py): a necessary condition of the rule's clause on flake8's ast, as
    # alternatives of predicates (gate.PREDICATES) that must all hold; no alternative holding, the
    # rule cannot fire in the file. Weakest cheap condition of the rule book's text, not of today's code.
    CONDITION: ClassVar[tuple]
    DEFAULT_OFF: ClassVar[bool] = False
    ACROSS_FILES: ClassVar[str] = PER_FILE

    # The message for a framework's call (`TrainingArguments(...)`, `accelerator.prepare(...)`), if any.
    FRAMEWORK_MESSAGE: ClassVar[str] = ""

    @classmethod
    def finding(cls, node: cst.CSTNode, **values) -> Finding:
        """The finding at ``node``; a value that is a node stands for its line number in the message."""
        return cls._finding(cls.MESSAGE, node, values)

    @classmethod
    def framework_finding(cls, node: cst.CSTNode, **values) -> Finding:
        return cls._finding(cls.FRAMEWORK_MESSAGE, node, values)

    @classmethod
    def _finding(cls, template: str, node: cst.CSTNode, values: dict) -> Finding:
        lines = tuple((name, value) for name, value in values.items() if isinstance(value, cst.CSTNode))
        shown = {name: f"{{line of {name}}}" if isinstance(value, cst.CSTNode) else value for name, value in values.items()}
        return Finding(node=node, code=cls.CODE, message=f"{cls.CODE} {template.format(**shown)}", lines=lines)

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        raise NotImplementedError


def show(argument) -> str:
    """How an argument is written, for messages: `0`, `NW (= 0)`, `args.workers`."""
    if argument.omitted:
        return "omitted"
    if argument.default_of and argument.known:
        return f"omitted ({argument.default_of} defaults it to {argument.value!r})"
    if argument.expr is None:  # from a splat, or read from another module's summary
        return repr(argument.state.value) if argument.known else f"unknown ({argument.state.why})"
    text = source_of(argument.expr)
    if argument.known and text != repr(argument.state.value) and text not in ("True", "False", "None"):
        return f"{text} (= {argument.state.value!r})"
    return text


def show_workers(call) -> str:
    """`num_workers=0`, `num_workers=NW (= 0)` or `num_workers omitted (defaults to 0)`."""
    workers, name = call.num_workers, call.spelled("num_workers")
    if workers.omitted:
        return f"{name} omitted (defaults to 0)"
    if workers.default_of and workers.known:
        return f"{name} {show(workers)}"
    return f"{name}={show(workers)}"
