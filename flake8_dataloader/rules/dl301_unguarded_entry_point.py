"""DL301 unguarded-entry-point: the rule, the helpers only it uses and its fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from ..autofix.context import FixContext, Outcome
from ..autofix.edits import Plan
from ..autofix.statements import Statement, body_statements, with_leading_lines
from ..autofix.tree import walk
from ..facts.collector import is_main_guard
from ..facts.model import CallRecord, FunctionInfo, LoaderSite
from ..facts.nodes import children
from ..facts.resolve import names_in
from .base import FACTORY_SITES, NEEDS_LOADER, Finding, Rule
from .dl3_shared import file_forces_fork, uses_fork_context

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def spawn_exposed(site: LoaderSite) -> bool:
    """A worker-using loader that does not pin the fork start method."""
    return site.worker_using() and not all(uses_fork_context(c) for c in site.calls)


def generator_run_at(facts, record: CallRecord) -> Tuple[Optional[cst.CSTNode], Optional[cst.CSTNode]]:
    """(anchor, statement) where the object a module-level call of a generator function returns is
    first consumed unguarded at module level: the call itself when consumed in place (`for b in
    cycle(loader)`), the consuming statement, or a module-level call of a function that consumes it.
    (None, None) when nothing unguarded runs it: making a generator runs none of its body."""
    functions: Set[FunctionInfo] = set()
    for ctx in facts.iteration.generator_uses.get(record.node, ()):
        if ctx.function is not None:
            functions.add(ctx.function)
        elif not ctx.guarded:
            if ctx.top_statement is record.ctx.top_statement:
                return record.node, ctx.top_statement
            return ctx.top_statement, ctx.top_statement
    consumers = facts.graph.calling(functions)
    for call in facts.graph.calls_in(None):
        found = facts.graph.callees.get(call.node)
        if found is not None and found.function in consumers and not call.ctx.guarded:
            return call.node, call.ctx.top_statement
    return None, None


class UnguardedEntryPoint(Rule):
    """
    ## What it does
    Flags module-level code outside `if __name__ == "__main__":` that iterates
    a loader with workers, or calls a function of this file that (directly or
    through other calls) iterates one.
    A framework call that iterates loaders counts the same: a Lightning
    `trainer.fit(...)` (or `validate`/`test`/`predict`) with the loaders
    passed to it and those the hooks of the model or datamodule passed to it
    return, and an Ignite engine's `run(loader, ...)`.

    ## Why is this bad?
    Under spawn (Windows, macOS) and forkserver (Linux from Python 3.14) each
    worker imports the main module again. Unguarded, that import tries to
    start workers of its own: each worker dies with `RuntimeError: An attempt
    has been made to start a new process before the current process has
    finished its bootstrapping phase`, and the main process raises
    `RuntimeError: DataLoader worker (pid(s) ...) exited unexpectedly` at the
    first batch.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            pass


    main()
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            pass


    if __name__ == "__main__":
        main()
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(list(range(8)), num_workers=2)  # built at module level: allowed


    def main():
        for batch in loader:
            pass


    if __name__ == "__main__":
        main()
    ```

    - Jupyter notebooks (linted through nbQA, see Options): a kernel's main
      module has no file, so spawn and forkserver workers never re-run its
      cells; a loop over a loader at the top level of a cell is safe there,
      and the fix command adds no guard. What workers cannot import from a
      notebook is DL302's.

    ## Options
    `--dataloader-start-method=fork` turns the rule off (Linux up to Python
    3.13 only); so does a module-level `set_start_method("fork")` or
    `multiprocessing_context="fork"` on the loader.
    `--dataloader-notebook`: `auto` (default) treats the files nbQA writes
    (`nbqa flake8 notebook.ipynb`) as notebooks, `on` every file, `off` none.

    ## Known limits
    - Calls are followed within the file only (functions, methods through
      `self` and module-level instances of classes of the file).
    - A generator over a loader runs where it is consumed: one made at
      module level is reported at the module-level statement that iterates
      it or calls `next()` on it, at a module-level call handed it, or at a
      module-level call of a function that consumes it; one made and never
      consumed unguarded is not reported.
    - Calling a Lightning hook directly (`first = dm.train_dataloader()`)
      builds the loader and iterates nothing: reported only where its result
      is iterated.
    - Anchor: the module-level statement, or the call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [Multi-process data loading: platform-specific behaviors](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors).
    """

    CODE = "DL301"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the module-level statement")
    NAME = "unguarded-entry-point"
    MESSAGE = (
        "{what} at module level without an `if __name__ == \"__main__\":` guard: under spawn/forkserver "
        "every worker re-imports this module and dies; move it under the guard"
    )
    CONDITION = (("workers", "module_code"), ("imported_builder", "module_code"))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        if settings.notebook == "on" or file_forces_fork(facts, settings):
            return  # a notebook's kernel has no main file: spawn workers do not re-run it
        iterating = cls._functions_iterating(facts)
        reported: Set[cst.CSTNode] = set()
        iterating_calls: Set[cst.CSTNode] = set()  # module-level calls that iterate the loader they pass
        for it in facts.iteration.iterations:
            if it.node in facts.graph.callees:
                if spawn_exposed(it.site):
                    iterating_calls.add(it.node)
                continue  # a call of a same-file function: reported below, naming the function
            if it.ctx.function is None and not it.ctx.guarded and spawn_exposed(it.site):
                statement = it.ctx.top_statement
                if statement is not None and statement not in reported:
                    reported.add(statement)
                    yield cls.finding(statement, what="a loader with workers is iterated")
        for record in facts.graph.calls_in(None):
            found = facts.graph.callees.get(record.node)
            if record.ctx.guarded or found is None:
                continue
            if found.function not in iterating and record.node not in iterating_calls:
                continue
            anchor: Optional[cst.CSTNode] = record.node
            statement = record.ctx.top_statement
            if found.function.is_generator:
                anchor, statement = generator_run_at(facts, record)
            if anchor is not None and statement is not None and statement not in reported:
                reported.add(statement)
                yield cls.finding(anchor, what=f"{found.function.name}() iterates a loader with workers and runs")

    @staticmethod
    def _functions_iterating(facts) -> Set[FunctionInfo]:
        # A Lightning hook's return is iterated by the Trainer, not by the hook: calling the hook
        # directly (`first = dm.train_dataloader()`) only builds the loader.
        hook_returns = facts.frameworks.hook_returns
        return facts.graph.calling(
            it.ctx.function for it in facts.iteration.iterations
            if it.ctx.function is not None and spawn_exposed(it.site) and it.node not in hook_returns
        )


def _existing_guard(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.If) and is_main_guard(statement.test)


def guard_entry_point(findings: List[Finding], ctx: FixContext) -> Outcome:
    """DL301: move the module's tail, from the first unguarded statement on, under `if __name__ == "__main__":`
    (its defs and classes stay at module level, where spawned workers find them)."""
    body = list(ctx.module.body)
    tops = []
    for finding in findings:
        top = finding.node
        for ancestor in ctx.ancestors(finding.node):
            if isinstance(ancestor, cst.Module):
                break
            top = ancestor
        tops.append(next(i for i, statement in enumerate(body) if statement is top))
    start = min(tops)
    tail = list(range(start, len(body)))
    kept = [i for i in tail if isinstance(body[i], (cst.FunctionDef, cst.ClassDef))]
    moved = [i for i in tail if i not in kept]
    for i in moved:
        statement = body[i]
        if isinstance(statement, cst.If) and _existing_guard(statement) and statement.orelse is not None:
            return "a main guard with an else branch follows"
    moved_nodes = list(walk([body[i] for i in moved], _existing_guard))
    moved_ids = {id(node) for node in moved_nodes}
    if any(isinstance(node, (cst.FunctionDef, cst.ClassDef)) for node in moved_nodes):
        return "a def or class inside a moved statement would be out of reach of spawned workers"
    bound_by = _module_names_bound_by(ctx, [body[i] for i in moved])
    reader = _global_reader(ctx, set().union(*bound_by.values()), moved_ids)
    if reader is not None:
        return f"{reader[0]} reads {reader[1]}, which the moved code binds: spawned workers would not see it"
    reason = _reorder_problem(body, kept, moved, bound_by)
    if reason is not None:
        return reason
    module_bindings = ctx.facts.file.module_scope.bindings
    for i in kept:
        definition = body[i]
        assert isinstance(definition, (cst.FunctionDef, cst.ClassDef))
        name = definition.name.value
        if len(module_bindings.get(name, ())) > 1:
            return f"{name} is bound more than once at module level: moving its def could change which one runs"

    def add_guard(updated: cst.Module) -> cst.Module:
        before = [*updated.body[:start], *(updated.body[i] for i in kept)]
        after_definition = bool(before) and isinstance(before[-1], (cst.FunctionDef, cst.ClassDef))
        return updated.with_changes(body=[*before, _guard([updated.body[i] for i in moved], after_definition)])

    plan = Plan(exclusive=True)
    plan.statements[ctx.module] = add_guard
    return plan


def _module_names_bound_by(ctx: FixContext, statements: List[cst.CSTNode]) -> Dict[int, Set[str]]:
    """For each statement (by id), the module-level names it binds (an existing main guard binds none here)."""
    owner: Dict[int, int] = {}
    for statement in statements:
        owner.update((id(node), id(statement)) for node in walk([statement], _existing_guard))
    bound: Dict[int, Set[str]] = {id(statement): set() for statement in statements}
    for name, bindings in ctx.facts.file.module_scope.bindings.items():
        for binding in bindings:
            if binding.node is not None and id(binding.node) in owner:
                bound[owner[id(binding.node)]].add(name)
    return bound


def _reorder_problem(body, kept: List[int], moved: List[int], bound_by: Dict[int, Set[str]]) -> Optional[str]:
    """Why the defs and classes of the tail cannot run before the moved code, if they cannot.

    They now come first: no moved statement that preceded one may bind what it reads when it
    is defined (decorators, defaults, annotations, bases, class bodies), read or bind its name.
    """
    for j in kept:
        definition = body[j]
        earlier = [body[i] for i in moved if i < j]
        bound_earlier = set().union(*(bound_by[id(statement)] for statement in earlier))
        for name in sorted(_definition_time_names(definition) & bound_earlier):
            return f"{definition.name.value} uses {name} when it is defined, and the moved code binds {name} before it"
        if definition.name.value in bound_earlier:
            return f"the moved code binds {definition.name.value} before the def or class of that name"
        if any(definition.name.value in names_in(statement) for statement in earlier):
            return f"the moved code uses {definition.name.value} before it is defined"
    return None


def _definition_time_names(definition: Union[cst.FunctionDef, cst.ClassDef]) -> Set[str]:
    """Names read when a def or class statement runs (not when the function is called)."""
    parts: List[cst.CSTNode] = [decorator.decorator for decorator in definition.decorators]
    if isinstance(definition, cst.FunctionDef):
        params = definition.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        parts += [p.default for p in every if p.default is not None]
        parts += [p.annotation for p in every if p.annotation is not None]
        parts += [definition.returns] if definition.returns is not None else []
        return set().union(*(names_in(part) for part in parts))
    parts += [arg.value for arg in (*definition.bases, *definition.keywords)]
    names = set().union(*(names_in(part) for part in parts))
    for node in walk([definition.body], lambda n: isinstance(n, cst.FunctionDef)):
        if isinstance(node, cst.Name):
            names.add(node.value)
    methods = [n for n in children(definition.body) if isinstance(n, cst.FunctionDef)]
    return names.union(*(_definition_time_names(method) for method in methods))


def _global_reader(ctx: FixContext, names: Set[str], moved_ids: Set[int]) -> Optional[Tuple[str, str]]:
    """A function or module-level lambda outside the moved code that reads one of ``names`` as a global."""
    if not names:
        return None
    module_scope = ctx.facts.file.module_scope
    for function in ctx.facts.file.functions.values():
        if id(function.node) in moved_ids:
            continue
        nested = lambda node: node is not function.node and isinstance(node, cst.FunctionDef)  # noqa: E731
        nodes = list(walk([function.node.body], nested))
        # Comprehension variables are local to the comprehension, whatever the resolver says.
        comprehension_names = set().union(*(names_in(node.target) for node in nodes if isinstance(node, cst.CompFor)))
        for node in nodes:
            if isinstance(node, cst.Name) and node.value in names - comprehension_names:
                if function.scope.lookup(node.value) in (module_scope, None):
                    return f"{function.name}()", node.value
    for node in walk(list(ctx.module.body), lambda n: isinstance(n, cst.FunctionDef) or id(n) in moved_ids):
        if isinstance(node, cst.Lambda):
            params = {p.name.value for p in node.params.params}
            used = names_in(node.body)
            for name in sorted((used - params) & names):
                return "a lambda", name
    return None


def _guard(moved: List[Statement], after_definition: bool) -> cst.If:
    """``if __name__ == "__main__":`` around ``moved``; a main guard among them is merged in.

    Blank lines follow pycodestyle: at most one between statements inside the guard, two
    before the guard when a def or class precedes it; comments stay with their statements.
    """
    test: cst.BaseExpression = cst.parse_expression('__name__ == "__main__"')
    header = cst.TrailingWhitespace()
    statements: List[Statement] = []
    pending: List[cst.EmptyLine] = []
    for statement in moved:
        if isinstance(statement, cst.If) and _existing_guard(statement):
            inner = body_statements(statement.body)
            test = statement.test
            if isinstance(statement.body, cst.IndentedBlock):
                if statement.body.header.comment is not None and header.comment is None:
                    header = statement.body.header
                footer = list(statement.body.footer)
            else:
                footer = []
            inner[0] = with_leading_lines(inner[0], [*pending, *statement.leading_lines])
            statements += inner
            pending = footer
        else:
            statements.append(with_leading_lines(statement, pending))
            pending = []
    first_lines = list(statements[0].leading_lines)
    blank = 0
    while blank < len(first_lines) and first_lines[blank].comment is None:
        blank += 1
    leading = [cst.EmptyLine(indent=False)] * (2 if after_definition else blank)
    statements[0] = statements[0].with_changes(leading_lines=first_lines[blank:])
    statements = [s.with_changes(leading_lines=_at_most_one_blank(s.leading_lines)) for s in statements]
    return cst.If(
        test=test,
        body=cst.IndentedBlock(body=statements, header=header, footer=_at_most_one_blank(pending)),
        leading_lines=leading,
    )


def _at_most_one_blank(lines) -> List[cst.EmptyLine]:
    out: List[cst.EmptyLine] = []
    for line in lines:
        if line.comment is None:
            if out and out[-1].comment is None:
                continue
            line = line.with_changes(indent=False)
        out.append(line)
    return out
