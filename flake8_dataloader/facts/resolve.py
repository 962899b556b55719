"""Scopes, bindings, import resolution and constant evaluation.

A small resolver of our own: an import table and every binding per scope,
filled during the one traversal. It replaces LibCST's scope and
qualified-name providers, which cost several parses' worth of time.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import Enum
from typing import Dict, FrozenSet, List, Optional, Set, Tuple, Union

import libcst as cst

from .states import Known, Unknown
from .nodes import children

# A resolved target: an external dotted name, or a definition in this file.
Target = Union[str, cst.FunctionDef, cst.ClassDef, None]


class BindingKind(str, Enum):
    """How a name is bound (a str, so `kind == "assign"` reads naturally)."""

    ASSIGN = "assign"  # `x = value` (also `x: T = value`, `(x := value)`)
    UNPACK = "unpack"  # one name of `a, b = value`; `index` says which
    IMPORT = "import"
    DEF = "def"
    CLASS = "class"
    PARAM = "param"
    FOR = "for"  # a for target; `index` is its position in a tuple target
    OTHER = "other"  # with/except/augmented assignment: the value is not followed


class ScopeKind(str, Enum):
    MODULE = "module"
    FUNCTION = "function"
    CLASS = "class"


@dataclass(eq=False)
class Binding:
    name: str
    kind: BindingKind
    scope: "Scope"
    value: Optional[cst.CSTNode] = None  # assigned expression, def/class node
    qualname: Optional[str] = None  # for imports
    index: Optional[int] = None  # position in a tuple target
    node: Optional[cst.CSTNode] = None  # the statement that binds


class Scope:
    def __init__(self, kind: ScopeKind, node: cst.CSTNode, parent: Optional["Scope"]):
        self.kind = kind
        self.node = node
        self.parent = parent
        self.bindings: Dict[str, List[Binding]] = {}
        self.params: Set[str] = set()
        self.global_names: Set[str] = set()
        self.nonlocal_names: Set[str] = set()
        self.star_imports: List[str] = []
        self.info: object = None  # the FunctionInfo or ClassInfo of a function or class scope
        self.resolver: Optional["NameResolver"] = None  # the module scope's memo of resolved names

    @property
    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def add(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    def binding_scope(self, name: str) -> "Scope":
        """Scope whose bindings a write of ``name`` here goes to."""
        if name in self.global_names:
            return self.module
        if name in self.nonlocal_names:
            scope = self.parent
            while scope is not None and scope.kind != "function":
                scope = scope.parent
            return scope or self.module
        return self

    def lookup(self, name: str) -> Optional["Scope"]:
        """The scope a read of ``name`` here resolves to (LEGB, skipping class bodies)."""
        scope: Optional[Scope] = self
        first = True
        while scope is not None:
            if scope.kind != "class" or first:
                if name in scope.global_names:
                    return self.module if name in self.module.bindings else None
                if name in scope.nonlocal_names:
                    first = False
                    scope = scope.parent
                    continue
                if name in scope.bindings:
                    return scope
            first = False
            scope = scope.parent
        return None

    def bindings_of(self, name: str) -> List[Binding]:
        scope = self.lookup(name)
        return scope.bindings[name] if scope is not None else []


def join_dotted(module: str, name: str) -> str:
    """`module.name`; after a bare relative module (`.`, `..`) the dots alone: `from . import x` is `.x`."""
    return module + name if module.endswith(".") else f"{module}.{name}"


def follow_single_binding(expr: cst.BaseExpression, scope: Scope) -> Tuple[cst.BaseExpression, Scope]:
    """The value a name is assigned when it is bound exactly once; anything else unchanged."""
    if isinstance(expr, cst.Name):
        bindings = scope.bindings_of(expr.value)
        value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == BindingKind.ASSIGN else None
        if isinstance(value, cst.BaseExpression):
            return value, bindings[0].scope
    return expr, scope


class _Cycle:
    """What a name being resolved resolves to while its own resolution is under way."""

    def __repr__(self) -> str:
        return "Cycle"


_CYCLE = _Cycle()
# Deeper chains of names (generated code) resolve to 'something else'.
MAX_RESOLVE_DEPTH = 64


class NameResolver:
    """Memoised resolution of names: each (scope, name) is resolved once per file.

    Names that depend on each other (``wrap = wrap if flag else other``, ``DataLoader =
    DataLoader``) form a strongly connected component, resolved in one Tarjan pass: every
    member gets the union of what the component's bindings denote, so resolution is linear
    in the number of bindings however they refer to each other.
    """

    def __init__(self) -> None:
        self._done: Dict[Tuple[int, str], FrozenSet] = {}
        self._depth_of: Dict[Tuple[int, str], int] = {}  # on the stack: its depth
        self._provisional: Dict[Tuple[int, str], Tuple[FrozenSet, int]] = {}  # finished inside a cycle
        self._lowlinks: List[int] = []
        self._members: List[Tuple[int, str]] = []
        self.constants: Dict[int, object] = {}  # id(binding) -> Known | Unknown, for evaluate()
        # (id(expr), id(scope)) -> (expr, scope, targets): the facts and rules ask about the same
        # expressions about 8 times each. The nodes are held, so their ids are not reused meanwhile.
        self.resolved: Dict[Tuple[int, int], Tuple[cst.CSTNode, "Scope", FrozenSet]] = {}

    def name(self, owner: "Scope", name: str) -> FrozenSet:
        key = (id(owner), name)
        done = self._done.get(key)
        if done is not None:
            return done
        if key in self._depth_of or key in self._provisional:
            depth = self._depth_of[key] if key in self._depth_of else self._provisional[key][1]
            self._lowlinks[-1] = min(self._lowlinks[-1], depth)
            return self._provisional[key][0] if key in self._provisional else frozenset({_CYCLE})
        depth = len(self._lowlinks)
        if depth >= MAX_RESOLVE_DEPTH:
            return frozenset({None})
        self._depth_of[key] = depth
        self._lowlinks.append(depth)
        first_member = len(self._members)
        try:
            out: Set = set()
            for binding in owner.bindings[name]:
                out |= self._binding(binding)
            out.discard(_CYCLE)
        finally:
            lowlink = self._lowlinks.pop()
            del self._depth_of[key]
        result = frozenset(out)
        if lowlink < depth:  # inside a component whose root is further up the stack
            self._lowlinks[-1] = min(self._lowlinks[-1], lowlink)
            self._provisional[key] = (result, lowlink)
            self._members.append(key)
            return result
        members = self._members[first_member:]
        del self._members[first_member:]
        for member in members:
            result |= self._provisional.pop(member)[0]
        for member in [key, *members]:
            self._done[member] = result
        return result

    def _binding(self, binding: Binding) -> Set:
        if binding.kind == "import":
            return {binding.qualname}
        if binding.kind in ("def", "class"):
            return {binding.value}
        if binding.kind == "assign" and binding.value is not None:
            return set(self.expression(binding.value, binding.scope))
        return {None}

    def expression(self, expr: cst.CSTNode, scope: "Scope") -> FrozenSet:
        if isinstance(expr, cst.Name):
            owner = scope.lookup(expr.value)
            if owner is None:
                stars = scope.module.star_imports
                if stars:
                    return frozenset(join_dotted(mod, expr.value) for mod in stars)
                return frozenset({f"builtins.{expr.value}"})
            return self.name(owner, expr.value)
        if isinstance(expr, cst.Attribute):
            return frozenset(
                f"{base}.{expr.attr.value}" if isinstance(base, str) else None
                for base in self.expression(expr.value, scope)
            )
        if isinstance(expr, cst.IfExp):
            return self.expression(expr.body, scope) | self.expression(expr.orelse, scope)
        return frozenset({None})


def resolve(expr: cst.CSTNode, scope: Scope) -> FrozenSet[Target]:
    """Every target the expression may denote; None among them means 'something else'."""
    module = scope.module
    if module.resolver is None:
        module.resolver = NameResolver()
    memo = module.resolver.resolved
    key = (id(expr), id(scope))
    entry = memo.get(key)
    if entry is not None and entry[0] is expr and entry[1] is scope:
        return entry[2]
    targets = module.resolver.expression(expr, scope)  # final: no resolution is under way above it
    targets = targets - {_CYCLE} if _CYCLE in targets else targets  # the memoised set itself: no copy
    memo[key] = (expr, scope, targets)
    return targets


def call_qualnames(call: cst.Call, scope: Scope) -> Set[str]:
    """The external dotted names a call's callee may be."""
    return {t for t in resolve(call.func, scope) if isinstance(t, str)}


def qualname_in(expr: cst.CSTNode, scope: Scope, names: FrozenSet[str]) -> bool:
    targets = resolve(expr, scope)
    return bool(targets) and all(isinstance(t, str) and t in names for t in targets)


_BINARY = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv,
    cst.Divide: operator.truediv,
    cst.Modulo: operator.mod,
}
_NOT_NONE_NODES = (
    cst.Call,
    cst.Lambda,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.GeneratorExp,
    cst.FormattedString,
    cst.Comparison,
)


def evaluate(expr: cst.BaseExpression, scope: Scope, _depth: int = 0):
    """Known(value) for literals and constants bound once; Unknown(why) otherwise."""
    if _depth > 20:
        return Unknown("too deep")
    if isinstance(expr, (cst.Integer, cst.Float)):
        return Known(expr.evaluated_value)
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return Known(value) if value is not None else Unknown("f-string", not_none=True)
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return Known({"True": True, "False": False, "None": None}[expr.value])
        return _evaluate_name(expr.value, scope, _depth)
    if isinstance(expr, cst.UnaryOperation):
        inner = evaluate(expr.expression, scope, _depth + 1)
        if isinstance(inner, Known):
            try:
                if isinstance(expr.operator, cst.Minus):
                    return Known(-inner.value)
                if isinstance(expr.operator, cst.Plus):
                    return Known(+inner.value)
                if isinstance(expr.operator, cst.Not):
                    return Known(not inner.value)
            except TypeError:
                pass
        return Unknown("expression", not_none=isinstance(expr.operator, cst.Not))
    if isinstance(expr, cst.BinaryOperation):
        op = _BINARY.get(type(expr.operator))
        left = evaluate(expr.left, scope, _depth + 1)
        right = evaluate(expr.right, scope, _depth + 1)
        if op and isinstance(left, Known) and isinstance(right, Known):
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left.value, right.value)):
                try:
                    return Known(op(left.value, right.value))
                except (ArithmeticError, ValueError):
                    pass
        return Unknown("expression")
    if isinstance(expr, cst.BooleanOperation):
        left = evaluate(expr.left, scope, _depth + 1)
        if isinstance(left, Known):
            is_and = isinstance(expr.operator, cst.And)
            if bool(left.value) != is_and:
                return left
            return evaluate(expr.right, scope, _depth + 1)
        return Unknown("expression")
    if isinstance(expr, _NOT_NONE_NODES):
        return Unknown("expression", not_none=True)
    return Unknown("expression")


def _evaluate_name(name: str, scope: Scope, depth: int):
    owner = scope.lookup(name)
    if owner is None:
        return Unknown(f"{name} is not bound in this file")
    if name in owner.params:
        return Unknown(f"{name} is a parameter")
    bindings = owner.bindings[name]
    if len(bindings) != 1:
        return Unknown(f"{name} is bound {len(bindings)} times")
    binding = bindings[0]
    if binding.kind != "assign" or binding.value is None:
        return Unknown(f"{name} is not a constant", not_none=binding.kind in ("def", "class", "import"))
    # Memoised per binding: `b = a + a; c = b + b; ...` would otherwise double at each step.
    module = owner.module
    if module.resolver is None:
        module.resolver = NameResolver()
    memo = module.resolver.constants
    key = id(binding)
    if key not in memo:
        memo[key] = Unknown(f"{name} is defined in terms of itself")
        value = binding.value
        memo[key] = evaluate(value, binding.scope, depth + 1) if isinstance(value, cst.BaseExpression) else memo[key]
    return memo[key]


def can_be_none(expr: cst.BaseExpression) -> bool:
    """Syntactically: a literal None, or a conditional with a branch that can be None."""
    if isinstance(expr, cst.Name) and expr.value == "None":
        return True
    if isinstance(expr, cst.IfExp):
        return can_be_none(expr.body) or can_be_none(expr.orelse)
    return False


_EMPTY_MODULE = cst.Module(body=[])


def source_of(node: cst.CSTNode) -> str:
    """The node's source text on one line."""
    return " ".join(_EMPTY_MODULE.code_for_node(node).split())


def names_in(node: cst.CSTNode) -> Set[str]:
    """Every bare name read in an expression (attribute names and keywords excluded)."""
    found: Set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, (cst.Attribute, cst.Arg)):
            stack.append(current.value)
        else:
            stack.extend(children(current))
    return found


def branch_values(expr: Optional[cst.BaseExpression]) -> List[cst.BaseExpression]:
    """Every value a conditional expression may have (`a if c else b`: a and b, nested ones too)."""
    out: List[cst.BaseExpression] = []
    stack = [expr] if expr is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, cst.IfExp):
            stack += [node.orelse, node.body]
        else:
            out.append(node)
    return out
