"""The facts model: the records rules read (argument values: facts/states.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

import libcst as cst

from .states import OMITTED, ArgState, Known, Unknown

if TYPE_CHECKING:
    from .foreign import LoaderSummary
    from .frameworks import ConfigKeywords


@dataclass
class Argument:
    """One DataLoader parameter as written at a call: state plus where it came from."""

    name: str
    state: ArgState
    expr: Optional[cst.BaseExpression] = None
    anchor: Optional[cst.CSTNode] = None  # the keyword Arg or positional Arg node
    via_splat: bool = False
    default_of: str = ""  # omitted, and Known from this instead (a loader subclass's `__init__`)

    @property
    def known(self) -> bool:
        return isinstance(self.state, Known)

    @property
    def value(self) -> Any:
        """The Known value; ask `known` first."""
        assert isinstance(self.state, Known), f"{self.name} is not Known"
        return self.state.value

    @property
    def omitted(self) -> bool:
        return self.state is OMITTED

    @property
    def unknown(self) -> bool:
        return isinstance(self.state, Unknown)

    @property
    def given(self) -> bool:
        """Explicitly written as a keyword or positional argument (not via a splat)."""
        return self.expr is not None

    def known_truthy(self) -> bool:
        return isinstance(self.state, Known) and bool(self.state.value)

    def known_not_none(self) -> bool:
        if isinstance(self.state, Known):
            return self.state.value is not None
        return isinstance(self.state, Unknown) and self.state.not_none


@dataclass(eq=False)
class LoopInfo:
    node: cst.CSTNode  # For or While
    parent: Optional["LoopInfo"]
    bound_names: Set[str] = field(default_factory=set)
    target_names: Set[str] = field(default_factory=set)


@dataclass(eq=False)
class Context:
    """Where a node sits: its scope, enclosing function, loops and main-guard status."""

    scope: Any  # resolve.Scope
    function: Optional["FunctionInfo"]
    loops: Tuple[LoopInfo, ...]
    guarded: bool
    top_statement: Optional[cst.CSTNode]
    # The `if` / conditional-expression branches around it in its function: (test, side taken).
    branches: Tuple[Tuple[cst.BaseExpression, bool], ...] = ()


@dataclass(eq=False)
class CallRecord:
    node: cst.Call
    ctx: Context


# The first parameter the collector gives a staticmethod, so that every method's callers fill its
# parameters from the second on (`Callee.offset`).
STATIC_RECEIVER = "<static>"


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    name: str
    scope: Any  # the function's own Scope
    params: List[str]
    cls: Optional["ClassInfo"] = None
    returns: List[Optional[cst.BaseExpression]] = field(default_factory=list)
    is_generator: bool = False
    nested: bool = False  # defined inside another function
    guarded: bool = False  # defined under the module's `if __name__ == "__main__":` (spawn workers lack it)

    @property
    def own_params(self) -> List[str]:
        """The parameters a caller fills: a method's after its receiver (`self`, `cls`, STATIC_RECEIVER)."""
        return self.params[1:] if self.cls is not None or self.params[:1] == [STATIC_RECEIVER] else self.params


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    scope: Any  # class body Scope
    bases: List[cst.BaseExpression]
    methods: Dict[str, FunctionInfo] = field(default_factory=dict)
    # self.<attr> = <value> assignments in any method: attr -> [(value, method)]
    self_attrs: Dict[str, List[Tuple[Optional[cst.BaseExpression], FunctionInfo]]] = field(
        default_factory=dict
    )
    local: bool = False  # defined inside a function
    guarded: bool = False  # defined under the module's `if __name__ == "__main__":` (spawn workers lack it)


@dataclass(eq=False)
class LoaderCall:
    """A direct call of a DataLoader (or configured/subclassed loader).

    With ``foreign``, the DataLoader call is in another module of the project (returned by
    an imported factory): ``node`` is the factory's call here, the arguments are as read there.
    """

    node: cst.Call
    ctx: Context
    args: Dict[str, Argument]
    foreign: Optional["LoaderSummary"] = None
    # Arguments that are a parameter of the function the loader is made for (argument -> parameter):
    # a call of that function binds them (`make(ds, num_workers=0)`).
    reads: Dict[str, str] = field(default_factory=dict)
    # For the call as one call of a factory binds it: the DataLoader call it is a version of.
    original: Optional["LoaderCall"] = None
    # A framework's configuration call (`TrainingArguments(...)`): its spelling of the parameters.
    keywords: Optional["ConfigKeywords"] = None

    def spelled(self, name: str) -> str:
        """How this call spells a DataLoader parameter (`dataloader_num_workers` in TrainingArguments)."""
        return self.keywords.keywords.get(name, name) if self.keywords is not None else name

    @property
    def source(self) -> "LoaderCall":
        """The DataLoader call as written (itself, unless this is a version bound by a factory's call)."""
        return self.original if self.original is not None else self

    @property
    def num_workers(self) -> Argument:
        return self.args["num_workers"]

    def worker_using(self) -> bool:
        state = self.num_workers.state
        if isinstance(state, Known):
            return isinstance(state.value, (int, float)) and state.value > 0
        return isinstance(state, Unknown)

    def single_process(self) -> bool:
        state = self.num_workers.state
        return state is OMITTED or (isinstance(state, Known) and state.value == 0)

    def several_workers(self) -> bool:
        """num_workers Known > 1 or Unknown: more than one worker may run."""
        state = self.num_workers.state
        if isinstance(state, Known):
            return isinstance(state.value, (int, float)) and state.value > 1
        return isinstance(state, Unknown)


@dataclass(eq=False)
class LoaderSite:
    """A place where a loader object comes into being, seen from its own scope.

    For a direct call, ``calls`` is that call; for a call of a same-file
    factory, it is the loader calls the factory returns.
    """

    node: cst.Call
    ctx: Context
    calls: List[LoaderCall]

    def worker_using(self) -> bool:
        return any(c.worker_using() for c in self.calls)

    def single_process(self) -> bool:
        return all(c.single_process() for c in self.calls)

    def version_of(self, call: "LoaderCall") -> "LoaderCall":
        """The DataLoader call ``call`` as this site builds it (its arguments bound by a factory's call)."""
        return next((c for c in self.calls if c.source is call.source), call)


@dataclass(eq=False)
class IterationSite:
    """A loader iterated at ``node``; ``loops`` are the non-header loops around it.

    Repetition is defined here, once, for every rule: an iteration is repeated when something
    runs it several times for one run of the loader's construction: a loop around it that is
    not around the construction too (built once, or once per pass of an outer loop, and
    iterated in a loop inside), or, from inside (``repeated_inside``), a callee's own loop, a
    framework's run, a handler a framework runs every pass, a generator's endless loop, or an
    iterator started again on `StopIteration`."""

    site: LoaderSite
    node: cst.CSTNode
    ctx: Context
    loops: Tuple[LoopInfo, ...]
    header: Optional[LoopInfo] = None
    repeated_inside: bool = False  # the callee iterates it in a loop of its own

    @property
    def repeating_loops(self) -> Set[LoopInfo]:
        """The loops around the iteration that did not build the loader: those that repeat it."""
        return {loop for loop in self.loops if loop not in self.site.ctx.loops}

    @property
    def repeated(self) -> bool:
        return self.repeated_inside or bool(self.repeating_loops)


@dataclass(eq=False)
class Mutation:
    """Attribute/item assignment on ``base``, or a method call on it."""

    base: cst.BaseExpression
    node: cst.CSTNode
    ctx: Context
    value: Optional[cst.CSTNode] = None  # what a plain assignment stores (None: augmented, unpacked...)
