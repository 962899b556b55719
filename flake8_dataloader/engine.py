"""Parse once, collect facts once, run every rule, contain every failure."""

from __future__ import annotations

import ast
import gc
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

from .errors import STRICT_ENV, BudgetExceeded, ParseFailure
from .facts.analysis import FileFacts, build_facts
from .facts.model import Context
from .syntax.ast_positions import Definition
from .syntax.positions import Surroundings, node_starts
from .screen.decide import may_find
from .project.service import PROJECT
from .rules import RULES
from .rules.base import Finding
from .settings import DEFAULT_SETTINGS, Settings

LOG = logging.getLogger("flake8.dataloader")

# (line, 0-based column, code, message)
Result = Tuple[int, int, str, str]


@dataclass(frozen=True)
class Analysis:
    """One file's tree, facts and findings (the fix command edits the tree the rules saw)."""

    module: cst.Module
    facts: FileFacts
    findings: List[Finding]
    source: Optional[str] = None  # the text parsed (LibCST round-trips it: module.code without a codegen)
    tree: Optional[ast.AST] = None  # flake8's ast of that text, when there is one

    def results(self) -> List[Result]:
        if not self.findings:
            return []
        # Positions cost a code-generation pass: pay it only for files with findings.
        nodes = {finding.node for finding in self.findings}
        nodes.update(node for finding in self.findings for _, node in finding.lines)
        starts = node_starts(self.module, nodes, self.source, self.tree, self.surroundings())
        return sorted({(*starts[f.node], f.code, f.text(lambda node: starts[node][0])) for f in self.findings})

    def surroundings(self) -> Surroundings:
        """What the collector saw around each node a finding can name (positions.node_starts): the
        module-level statement holding each call, argument (and its value), loop, attribute or item
        assignment and function, and each module-level statement itself; the call each argument is
        given to; the function, then the class, around each of them."""
        collector = self.facts.file.collector
        # Keyed by id: a LibCST node hashes in Python, and every call of the file is entered.
        tops: Dict[int, Optional[cst.CSTNode]] = {}
        owners: Dict[int, cst.Call] = {}
        enclosing: Dict[int, Tuple[Definition, ...]] = {}
        for record in collector.calls:
            call, top, around = record.node, record.ctx.top_statement, _definitions_around(record.ctx)
            tops[id(call)], enclosing[id(call)] = top, around
            for arg in call.args:
                tops[id(arg)] = tops[id(arg.value)] = top
                owners[id(arg)] = owners[id(arg.value)] = call
                enclosing[id(arg)] = enclosing[id(arg.value)] = around
        for _, loop, ctx in collector.for_loops:
            tops[id(loop)], enclosing[id(loop)] = ctx.top_statement, _definitions_around(ctx)
        for mutation in collector.mutations:
            tops[id(mutation.node)] = mutation.ctx.top_statement
            enclosing[id(mutation.node)] = _definitions_around(mutation.ctx)
        for function in collector.functions.values():
            outer = function.cls.node if function.cls is not None else function.node
            tops[id(function.node)] = outer  # checked below: only a module-level one is kept
        module_level = {id(statement) for statement in self.module.body}
        tops = {node: top for node, top in tops.items() if id(top) in module_level}
        tops.update((id(statement), statement) for statement in self.module.body)
        return Surroundings(tops, owners, enclosing)


def _definitions_around(ctx: Context) -> Tuple[Definition, ...]:
    function = ctx.function
    if function is None:
        return ()
    return (function.node,) if function.cls is None else (function.node, function.cls.node)


def inspect_source(
    source: str,
    settings: Settings = DEFAULT_SETTINGS,
    use_prefilter: bool = True,
    tree: Optional[ast.AST] = None,
    filename: Optional[str] = None,
) -> Optional[Analysis]:
    """The analysis of one file's text, or None when the prefilter rules every finding out.

    With ``tree`` (flake8's ast of the same source), the prefilter also checks that the
    trigger tokens are identifiers, so a mention in a docstring costs no LibCST parse.
    With ``filename`` (a file on disk) and follow_imports, what it imports from its own
    project is followed. Raises ParseFailure, or on an internal error.
    """
    if use_prefilter and not may_find(source, settings, tree, filename):
        return None
    settings = settings.for_file(source, filename or "")
    if filename is not None and settings.follow_imports and os.path.isfile(filename):
        module, facts = PROJECT.facts_of(filename, source, tree, settings)
    else:
        module, facts = build_facts(source, settings.loader_names, tree)
    findings = [finding for rule in RULES for finding in rule.check(facts, settings)]
    return Analysis(module, facts, findings, source, tree)


def analyse(
    source: str,
    settings: Settings = DEFAULT_SETTINGS,
    use_prefilter: bool = True,
    tree: Optional[ast.AST] = None,
    filename: Optional[str] = None,
) -> List[Result]:
    """Findings for one file's text. Raises ParseFailure, or on an internal error."""
    with cycles_collected_after():
        analysis = inspect_source(source, settings, use_prefilter, tree, filename)
        results = [] if analysis is None else analysis.results()
        del analysis  # freed now: the collector's first pass after it would walk the whole tree
    return results


@contextmanager
def cycles_collected_after() -> Iterator[None]:
    """Python's cycle collector paused while one file is analysed (restored as it was).

    A parse allocates a node object per token, and the collector's full passes walk every object
    alive, flake8's and the project's kept summaries included: on Lightning's tests they took 7.2 s
    of 16 s of plugin time (14 full passes). A file's trees and facts are freed by reference count
    when it is done; cycles it made wait for the next pass after it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def check_source(
    source: str,
    filename: str = "<stdin>",
    settings: Settings = DEFAULT_SETTINGS,
    use_prefilter: bool = True,
    tree: Optional[ast.AST] = None,
) -> List[Result]:
    """Like ``analyse``, but never raises: a failure yields no findings and one log line.

    Parse failures, inputs nested too deeply for Python's stack and inputs past the
    work budget (facts/walk.py) are the input's limits: logged, never raised. Anything
    else is our bug: logged as a warning, and re-raised when FLAKE8_DATALOADER_STRICT
    is set (the tests set it).
    """
    return checked(source, filename, settings, use_prefilter, tree)[0]


def checked(
    source: str,
    filename: str = "<stdin>",
    settings: Settings = DEFAULT_SETTINGS,
    use_prefilter: bool = True,
    tree: Optional[ast.AST] = None,
) -> Tuple[List[Result], bool]:
    """``check_source``'s findings, and whether the analysis completed (only then may they be cached)."""
    try:
        return analyse(source, settings, use_prefilter, tree, filename), True
    except ParseFailure as exc:
        LOG.info("flake8-dataloader: skipped %s: LibCST cannot parse it (%s)", filename, exc)
    except RecursionError:
        LOG.warning("flake8-dataloader: skipped %s: nested too deeply to analyse", filename)
    except BudgetExceeded as exc:
        LOG.warning("flake8-dataloader: skipped %s: its analysis took %s (no DL findings)", filename, exc)
    except Exception as exc:
        if os.environ.get(STRICT_ENV):
            raise
        LOG.warning("flake8-dataloader: internal error on %s: %s: %s", filename, type(exc).__name__, exc)
    return [], False
