"""The one traversal: scopes, bindings, calls, loops, classes, functions, guards."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from .model import STATIC_RECEIVER, CallRecord, ClassInfo, Context, FunctionInfo, LoopInfo, Mutation
from .nodes import children
from .resolve import Binding, BindingKind, Scope, ScopeKind, join_dotted

# Guard clauses (`if p: return ...`) read per block for the branch their followers run in.
MAX_GUARD_CLAUSES = 8


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``, either way round, either quote style."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal):
        return False
    sides = (test.left, comparison.comparator)
    has_name = any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
    has_main = any(
        isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides
    )
    return has_name and has_main


class Collector(cst.CSTVisitor):
    """Records everything the rules need in a single pass over the module: run it with ``walk``
    (``module.visit(collector)`` would call the handlers but not the actions ``_around`` registers)."""

    def __init__(self) -> None:
        super().__init__()
        self.module_scope: Optional[Scope] = None  # set by visit_Module
        self.scope: Scope = Scope(ScopeKind.MODULE, cst.Module(body=[]), None)  # replaced by visit_Module
        self.functions: Dict[cst.FunctionDef, FunctionInfo] = {}
        self.classes: Dict[cst.ClassDef, ClassInfo] = {}
        self.calls: List[CallRecord] = []
        self.imported_packages: Set[str] = set()  # the first name of every absolute import
        self.for_loops: List[Tuple[LoopInfo, cst.For, Context]] = []
        self.comprehension_iters: List[Tuple[cst.BaseExpression, Context]] = []
        self.yield_froms: List[Tuple[cst.BaseExpression, Context]] = []
        self.mutations: List[Mutation] = []
        # Calls in an `except StopIteration:` handler: `iter(self.loader)` there starts a new pass.
        self.restarts: Set[cst.Call] = set()
        self._restarting: List[cst.ExceptHandler] = []  # the `except StopIteration:` handlers open
        # Where a loop or iterated expression stands among the calls, in source order: the number
        # of calls that start before it (a call's own order is its index in `calls`).
        self.calls_before: Dict[cst.CSTNode, int] = {}
        # Per open function body: its loop stack and its branch stack. Index 0 is the module level.
        self._loop_stacks: List[List[LoopInfo]] = [[]]
        self._branch_stacks: List[List[Tuple[cst.BaseExpression, bool]]] = [[]]
        self._functions: List[FunctionInfo] = []
        self._guard_depth = 0
        self._top_statement: Optional[cst.CSTNode] = None
        self._top_ids: set = set()
        self._enter: Dict[int, Callable[[], None]] = {}
        self._leave: Dict[int, Callable[[], None]] = {}
        self._dispatch: Dict[type, Tuple[Optional[Callable[[Any], Any]], Optional[Callable[[Any], Any]]]] = {}

    def walk(self, root: cst.CSTNode) -> None:
        """Traverse with this visitor's visit_/leave_ methods (as ``root.visit(self)`` would).

        Several times cheaper than ``root.visit`` (no rebuild of every node, the handlers looked up
        once per node type, a node left only when something waits for it), and iterative, so a
        1,500-branch elif chain does not exhaust Python's stack.
        """
        enter, leave, dispatch = self._enter, self._leave, self._dispatch
        # Nodes to enter, and 1-tuples of nodes to leave: no tuple per node entered (a hot loop).
        stack: List[Any] = [root]
        push, pop, extend = stack.append, stack.pop, stack.extend
        while stack:
            node = pop()
            if type(node) is tuple:
                node = node[0]
                depart = (dispatch.get(type(node)) or self._handlers(type(node)))[1]
                if depart is not None:
                    depart(node)
                action = leave.pop(id(node), None)
                if action is not None:
                    action()
                continue
            visit, depart = dispatch.get(type(node)) or self._handlers(type(node))
            key = id(node)
            if key in self._top_ids:  # filled when the Module is visited
                self._top_statement = node
            action = enter.pop(key, None)
            if action is not None:
                action()
            descend = visit is None or visit(node) is not False
            if depart is not None or key in leave:
                push((node,))
            if descend:
                extend(reversed(children(node)))

    def _handlers(self, kind: type) -> Tuple[Optional[Callable[[Any], Any]], Optional[Callable[[Any], Any]]]:
        """This collector's own visit_/leave_ methods for a node type (LibCST's no-op defaults: None)."""
        found = self._dispatch.get(kind)
        if found is None:
            names = (f"visit_{kind.__name__}", f"leave_{kind.__name__}")
            own = [getattr(type(self), n, None) is not getattr(cst.CSTVisitor, n, None) for n in names]
            visit, depart = (getattr(self, n) if mine else None for n, mine in zip(names, own))
            found = self._dispatch[kind] = (visit, depart)
        return found

    # -- context -----------------------------------------------------------
    @property
    def _loops(self) -> List[LoopInfo]:
        return self._loop_stacks[-1]

    def context(self) -> Context:
        return Context(
            scope=self.scope,
            function=self._functions[-1] if self._functions else None,
            loops=tuple(self._loops),
            guarded=self._guard_depth > 0,
            top_statement=self._top_statement,
            branches=tuple(self._branch_stacks[-1]),
        )

    def _around(self, block: cst.CSTNode, enter: Callable[[], None], leave: Callable[[], None]) -> None:
        """Run ``enter`` when ``block`` is visited and ``leave`` when it is left (after earlier ones, before)."""
        key = id(block)
        earlier_enter, earlier_leave = self._enter.get(key), self._leave.get(key)
        if earlier_enter is not None and earlier_leave is not None:
            first_enter, last_leave = earlier_enter, earlier_leave

            def both_enter() -> None:
                first_enter()
                enter()

            def both_leave() -> None:
                leave()
                last_leave()

            self._enter[key], self._leave[key] = both_enter, both_leave
            return
        self._enter[key] = enter
        self._leave[key] = leave

    def _branch(self, test: cst.BaseExpression, block: Optional[cst.CSTNode], side: bool) -> None:
        if block is None:
            return
        entry = (test, side)

        def enter() -> None:
            self._branch_stacks[-1].append(entry)

        def leave() -> None:
            self._branch_stacks[-1].pop()

        self._around(block, enter, leave)

    # -- bindings ----------------------------------------------------------
    def bind(self, name: str, kind: BindingKind, **extra: Any) -> None:
        scope = self.scope.binding_scope(name)
        scope.add(Binding(name=name, kind=kind, scope=scope, **extra))
        for loop in self._loops:
            loop.bound_names.add(name)

    def _bind_target(
        self, target: cst.BaseExpression, value: Optional[cst.CSTNode], stmt: cst.CSTNode,
        kind: BindingKind = BindingKind.ASSIGN,
    ) -> None:
        if isinstance(target, cst.Name):
            self.bind(target.value, kind, value=value, node=stmt)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                inner = element.value
                if isinstance(inner, cst.Name) and not isinstance(element, cst.StarredElement):
                    unpacked = BindingKind.UNPACK if kind == BindingKind.ASSIGN else kind
                    self.bind(inner.value, unpacked, value=value, index=index, node=stmt)
                elif (isinstance(inner, cst.Attribute) and kind == BindingKind.ASSIGN
                      and isinstance(value, cst.BaseExpression) and not isinstance(element, cst.StarredElement)):
                    # `self.train_loader, self.val_loaders = build(...)`: each attribute holds its element
                    self._record_store(inner, None, element=_element_of(value, index))
                else:
                    self._bind_target(inner, None, stmt, BindingKind.OTHER)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None, stmt, BindingKind.OTHER)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            self._record_store(target, value if kind == BindingKind.ASSIGN else None)

    def _record_store(self, target, value, element: Optional[cst.BaseExpression] = None) -> None:
        self.mutations.append(Mutation(base=target.value, node=target, ctx=self.context(), value=value))
        if isinstance(target, cst.Attribute) and self._functions:
            func = self._functions[-1]
            if func.cls is not None and func.params and isinstance(target.value, cst.Name):
                if target.value.value == func.params[0]:
                    stored = value if element is None else element
                    func.cls.self_attrs.setdefault(target.attr.value, []).append((stored, func))

    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = self.scope = Scope(ScopeKind.MODULE, node, None)
        self._top_ids = {id(stmt) for stmt in node.body}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None, node, BindingKind.OTHER)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node.value, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, None, node, BindingKind.OTHER)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.bind(node.name.name.value, BindingKind.OTHER, node=node)
        caught = [e.value for e in node.type.elements] if isinstance(node.type, cst.Tuple) else [node.type]
        if any(isinstance(c, cst.Name) and c.value == "StopIteration" for c in caught):
            self._around(node.body, lambda: self._restarting.append(node), lambda: self._restarting.remove(node))

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.global_names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.nonlocal_names.update(item.name.value for item in node.names)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name)
            self.imported_packages.add(full.split(".")[0])
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind(alias.asname.name.value, BindingKind.IMPORT, qualname=full, node=node)
            else:
                head = full.split(".")[0]
                self.bind(head, BindingKind.IMPORT, qualname=head, node=node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _dotted(node.module) if node.module is not None else ""
        if not node.relative:
            self.imported_packages.add(module.split(".")[0])
        module = "." * len(node.relative) + module
        if isinstance(node.names, cst.ImportStar):
            self.scope.module.star_imports.append(module)
            return
        for alias in node.names:
            name = _dotted(alias.name)
            asname = alias.asname.name if alias.asname is not None else None
            local = asname.value if isinstance(asname, cst.Name) else name
            # The leading dots are always the level (the cross-module lookup reads them).
            self.bind(local, BindingKind.IMPORT, qualname=join_dotted(module, name), node=node)

    # -- definitions -------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bind(node.name.value, BindingKind.DEF, value=node, node=node)
        scope = Scope(ScopeKind.FUNCTION, node, self.scope)
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if isinstance(node.params.star_arg, cst.Param):
            scope.params.add(node.params.star_arg.name.value)
        for p in node.params.kwonly_params:
            scope.params.add(p.name.value)
        if node.params.star_kwarg is not None:
            scope.params.add(node.params.star_kwarg.name.value)
        scope.params.update(params)
        for name in scope.params:
            scope.add(Binding(name=name, kind=BindingKind.PARAM, scope=scope, node=node))
        owner = self.scope.info if isinstance(self.scope.info, ClassInfo) else None
        if owner is not None and _is_static(node):
            owner = None
            params = [STATIC_RECEIVER] + params  # keep the receiver-free call mapping uniform
        info = FunctionInfo(
            node=node,
            name=node.name.value,
            scope=scope,
            params=params,
            cls=owner,
            nested=bool(self._functions),
            guarded=self._guard_depth > 0,
        )
        if owner is not None:
            owner.methods.setdefault(info.name, info)
        scope.info = info
        self.functions[node] = info

        def enter() -> None:
            self.scope = scope
            self._functions.append(info)
            self._loop_stacks.append([])
            self._branch_stacks.append([])

        def leave() -> None:
            self.scope = scope.parent or scope
            self._functions.pop()
            self._loop_stacks.pop()
            self._branch_stacks.pop()

        self._around(node.body, enter, leave)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bind(node.name.value, BindingKind.CLASS, value=node, node=node)
        scope = Scope(ScopeKind.CLASS, node, self.scope)
        info = ClassInfo(
            node=node,
            name=node.name.value,
            scope=scope,
            bases=[arg.value for arg in node.bases if arg.keyword is None],
            local=bool(self._functions),
            guarded=self._guard_depth > 0,
        )
        scope.info = info
        self.classes[node] = info

        def enter() -> None:
            self.scope = scope

        def leave() -> None:
            self.scope = scope.parent or scope

        self._around(node.body, enter, leave)

    def visit_Return(self, node: cst.Return) -> None:
        if self._functions:
            self._functions[-1].returns.append(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        if self._functions:
            self._functions[-1].is_generator = True
        if isinstance(node.value, cst.From):
            self.yield_froms.append((node.value.item, self.context()))
            self.calls_before[node.value.item] = len(self.calls)

    # -- control flow ------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        self._branch(node.test, node.body, True)
        self._branch(node.test, node.orelse, False)
        if self.scope.kind == "module" and not self._functions and is_main_guard(node.test):

            def enter() -> None:
                self._guard_depth += 1

            def leave() -> None:
                self._guard_depth -= 1

            self._around(node.body, enter, leave)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        """What follows `if p: return ...` in a function runs only when `p` is false (a guard clause)."""
        if not self._functions:
            return
        guards = 0
        for index, statement in enumerate(node.body):
            if isinstance(statement, cst.If) and statement.orelse is None and _ends_in_exit(statement.body):
                guards += 1
                if guards > MAX_GUARD_CLAUSES:
                    break  # each guard marks every later statement: bounded, whatever the block's length
                for later in node.body[index + 1:]:
                    self._branch(statement.test, later, False)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._branch(node.test, node.body, True)
        self._branch(node.test, node.orelse, False)

    def _open_loop(self, node: cst.CSTNode, body: cst.CSTNode) -> LoopInfo:
        parent = self._loops[-1] if self._loops else None
        loop = LoopInfo(node=node, parent=parent)

        def enter() -> None:
            self._loops.append(loop)

        def leave() -> None:
            self._loops.pop()

        self._around(body, enter, leave)
        return loop

    def visit_For(self, node: cst.For) -> None:
        loop = self._open_loop(node, node.body)
        self.for_loops.append((loop, node, self.context()))
        self.calls_before[node] = len(self.calls)
        self._bind_target(node.target, node, node, BindingKind.FOR)
        loop.target_names.update(_target_names(node.target))
        loop.bound_names.update(loop.target_names)

    def visit_While(self, node: cst.While) -> None:
        self._open_loop(node, node.body)
        self.calls_before[node] = len(self.calls)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.comprehension_iters.append((node.iter, self.context()))
        self.calls_before[node.iter] = len(self.calls)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(CallRecord(node=node, ctx=self.context()))
        if self._restarting:
            self.restarts.add(node)


def _ends_in_exit(block: cst.BaseSuite) -> bool:
    """The block's last statement returns or raises."""
    last = block.body[-1] if block.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, (cst.Return, cst.Raise))


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _is_static(node: cst.FunctionDef) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in node.decorators
    )


def _target_names(target: cst.BaseExpression) -> set:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out = set()
        for element in target.elements:
            out |= _target_names(element.value)
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _element_of(value: cst.BaseExpression, index: int) -> cst.BaseExpression:
    """What one target of an unpacking holds: the element written in a tuple or list, else
    `value[index]`, an expression of no source text for the value flow (only `self_attrs` hold it)."""
    if isinstance(value, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[index].value if index < len(value.elements) else value
    return cst.Subscript(value=value, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(index))))])
