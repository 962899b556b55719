"""The call graph: which same-file function or method each call runs, and with what."""

from __future__ import annotations

from collections import defaultdict
from typing import DefaultDict, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from .classes import ClassFacts, last_name
from .foreign import CallableSummary
from .model import CallRecord, ClassInfo, FunctionInfo
from .resolve import Scope, resolve
from .walk import Visited


def partial_target(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The callable `functools.partial(f, ...)` wraps (f); any other expression as it is."""
    if isinstance(expr, cst.Call) and last_name(expr.func) == "partial" and expr.args:
        return expr.args[0].value
    return expr


class Callee(NamedTuple):
    """The function a call runs; ``offset`` parameters are filled by the receiver (self, cls)."""

    function: FunctionInfo
    offset: int


class Caller(NamedTuple):
    record: CallRecord
    offset: int


class CallGraph:
    """Which same-file function each call runs, and who calls each function."""

    def __init__(self, file: ClassFacts) -> None:
        self.file = file
        self.callees: Dict[cst.Call, Callee] = {}
        self.callers: DefaultDict[FunctionInfo, List[Caller]] = defaultdict(list)
        self._by_function: DefaultDict[Optional[FunctionInfo], List[CallRecord]] = defaultdict(list)
        for record in self.file.calls:
            self._by_function[record.ctx.function].append(record)
            callee = self.function_called(record.node, record.ctx.scope)
            if callee is not None:
                self.callees[record.node] = callee
                self.callers[callee.function].append(Caller(record, callee.offset))

    def calls_in(self, func: Optional[FunctionInfo]) -> List[CallRecord]:
        """The calls written in ``func``'s body (None: at module level), nested functions excluded."""
        return self._by_function.get(func, [])

    def functions_of(self, expr: Optional[cst.BaseExpression], scope: Scope) -> List[FunctionInfo]:
        """The same-file functions an expression may denote (`functools.partial(f, ...)` is f)."""
        if expr is None:
            return []
        expr = partial_target(expr)
        if isinstance(expr, cst.Attribute):  # `self.seed_worker`, `Trainer.collate`: a method of the file
            method = self.method_of(expr, scope)
            return [method] if method is not None else []
        found: List[FunctionInfo] = []
        for target in resolve(expr, scope):
            func = self.file.functions.get(target) if isinstance(target, cst.FunctionDef) else None
            if func is not None and func not in found:
                found.append(func)
        return found

    def reached_from(self, *roots: FunctionInfo) -> List[FunctionInfo]:
        """The roots and every same-file function or method they call, transitively."""
        order: List[FunctionInfo] = []
        seen: Visited[FunctionInfo] = Visited()
        todo = list(roots)
        while todo:
            current = todo.pop()
            if not seen.first(current):
                continue
            order.append(current)
            for record in self.calls_in(current):
                callee = self.callees.get(record.node)
                if callee is not None:
                    todo.append(callee.function)
        return order

    def calling(self, roots: Iterable[FunctionInfo]) -> Set[FunctionInfo]:
        """The roots and every same-file function that calls one of them, transitively."""
        found = set(roots)
        todo = list(found)
        while todo:
            for caller in self.callers.get(todo.pop(), ()):
                func = caller.record.ctx.function
                if func is not None and func not in found:
                    found.add(func)
                    todo.append(func)
        return found

    def called_only_from(self, roots: Iterable[FunctionInfo]) -> Set[FunctionInfo]:
        """The roots and every function called, and only called, from inside that set, transitively."""
        found = set(roots)
        outside: Dict[FunctionInfo, int] = {}  # calls of each candidate made outside the set so far
        made_in: DefaultDict[Optional[FunctionInfo], List[FunctionInfo]] = defaultdict(list)
        for func, callers in self.callers.items():
            if func in found or not callers:
                continue
            outside[func] = 0
            for caller in callers:
                if caller.record.ctx.function not in found:
                    outside[func] += 1
                    made_in[caller.record.ctx.function].append(func)
        todo = [func for func, count in outside.items() if count == 0]
        while todo:  # each call is counted down once, when the function making it joins
            joined = todo.pop()
            found.add(joined)
            for callee in made_in.get(joined, ()):
                outside[callee] -= 1
                if outside[callee] == 0:
                    todo.append(callee)
        return found

    def reachable(self, cls: ClassInfo, roots: Iterable[str]) -> List[FunctionInfo]:
        """Methods of ``cls`` run from the methods named ``roots``, following calls."""
        return self.reached_from(*[m for m in (self.file.method(cls, name) for name in roots) if m is not None])

    def function_called(self, call: cst.Call, scope: Scope) -> Optional[Callee]:
        """The same-file function (or method) a call runs."""
        func = call.func
        if isinstance(func, cst.Name):
            targets = resolve(func, scope)
            if len(targets) != 1:
                return None
            target = next(iter(targets))
            if isinstance(target, cst.FunctionDef) and target in self.file.functions:
                return Callee(self.file.functions[target], 0)
            cls = self.file.class_of_def(target)
            if cls is not None:
                init = self.file.method(cls, "__init__")
                return Callee(init, 1) if init is not None else None
            return None
        if isinstance(func, cst.Attribute):
            method = self.method_of(func, scope)
            return Callee(method, 1) if method is not None else None
        return None

    def method_of(self, attribute: cst.Attribute, scope: Scope) -> Optional[FunctionInfo]:
        """The same-file method `receiver.name` denotes: on `self`/`cls` inside a method of its class, on
        a class of the file (`Class.method`), or on an instance of one."""
        receiver = attribute.value
        cls = None
        if isinstance(receiver, cst.Name):
            enclosing, method = self.file.enclosing_class(scope)
            if enclosing is not None and method is not None and method.params[:1] == [receiver.value]:
                cls = enclosing
            else:
                targets = resolve(receiver, scope)
                if len(targets) == 1:
                    cls = self.file.class_of_def(next(iter(targets)))  # Class.method(...)
                if cls is None:
                    cls = self.file.instance_class(receiver, scope)
        elif isinstance(receiver, cst.Call):
            cls = self.file.instance_class(receiver, scope)
        return self.file.method(cls, attribute.attr.value) if cls is not None else None

    def _builds(self, record: CallRecord, cls: ClassInfo) -> bool:
        if not isinstance(record.node.func, cst.Name):
            return True
        made = self.file.class_of_def(next(iter(resolve(record.node.func, record.ctx.scope)), None))
        return made is None or made is cls or cls in self.file.base_classes(made)

    @staticmethod
    def map_arguments(call: cst.Call, func: FunctionInfo, offset: int) -> List[Tuple[str, cst.BaseExpression]]:
        """(parameter, argument expression) pairs of a call of ``func``; splats are skipped."""
        params = func.params[offset:]
        out = []
        index = 0
        for arg in call.args:
            if arg.star:
                continue
            if arg.keyword is not None:
                if arg.keyword.value in func.scope.params:
                    out.append((arg.keyword.value, arg.value))
            elif index < len(params):
                out.append((params[index], arg.value))
                index += 1
        return out

    def arguments_for(
        self, func: FunctionInfo, param: str, built: Optional[ClassInfo] = None
    ) -> List[Tuple[cst.BaseExpression, Scope]]:
        """Every argument the file's calls pass for one parameter of ``func``; with ``built``,
        only constructions of that class or of its subclasses (and calls that are not
        constructions, such as `super().__init__(...)`)."""
        out = []
        for caller in self.callers.get(func, ()):
            if built is not None and not self._builds(caller.record, built):
                continue
            for name, arg in self.map_arguments(caller.record.node, func, caller.offset):
                if name == param:
                    out.append((arg, caller.record.ctx.scope))
        return out


def foreign_arguments(call: cst.Call, callee: CallableSummary) -> List[Tuple[str, cst.BaseExpression]]:
    """(parameter, argument) pairs of a call of another module's function or class."""
    out: List[Tuple[str, cst.BaseExpression]] = []
    params = callee.params[callee.offset:]
    for index, arg in enumerate(call.args):
        if arg.star:
            break
        if arg.keyword is None and index < len(params):
            out.append((params[index], arg.value))
        elif arg.keyword is not None and arg.keyword.value in params:
            out.append((arg.keyword.value, arg.value))
    return out
