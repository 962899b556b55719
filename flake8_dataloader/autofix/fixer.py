"""Fix one file's text: rounds of codemods, each fix checked by linting its result again.

A fix is kept only when the fixed text parses (and compiles where the input
did), its finding is gone, and no rule reports anything it did not report
before. Fixes that touch the same node wait for the next round; so does a
module restructure (DL301), which runs alone.
"""

from __future__ import annotations

import ast
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, Dict, FrozenSet, List, Optional, Tuple, Union

from flake8 import defaults
from flake8.violation import Violation

from ..engine import STRICT_ENV, Analysis, ParseFailure, Result, inspect_source
from ..errors import BudgetExceeded
from ..syntax.positions import node_starts
from ..rules.base import Finding
from ..settings import DEFAULT_SETTINGS, Settings
from ..facts.foreign import Origin
from .codemods import CODEMODS, FIXABLE, MODULE_CODEMODS, FixContext, Outcome
from .context import Elsewhere
from .edits import Plan, apply, combined

# Each round fixes everything that does not collide; two or three rounds are the most seen.
MAX_ROUNDS = 20


@dataclass(frozen=True)
class Fixed:
    line: int  # in the text the fix was applied to (the input, for fixes of the first round)
    column: int
    code: str
    requested: bool = False  # asked for by another file's finding (the loader it uses is built here)


@dataclass(frozen=True)
class Left:
    """A finding of a fixable code that stays in the fixed text, and why."""

    line: int
    column: int
    code: str
    reason: str
    elsewhere: Optional[Origin] = None  # the DataLoader call of another module the fix belongs to
    requested: bool = False  # asked for by another file's finding


@dataclass
class FixResult:
    source: str
    fixed: List[Fixed] = field(default_factory=list)
    left: List[Left] = field(default_factory=list)
    # Every finding of the fixed text, of any code, before flake8's selection and `# noqa`.
    findings: List[Result] = field(default_factory=list)
    # The requested lines (DataLoader calls another file's DL402 names) left as they are, and why.
    declined: Dict[int, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.fixed)


def _suppressed(finding_line: str, code: str) -> bool:
    """flake8's own inline `# noqa` / `# noqa: DL402` decision for the reported line."""
    violation = Violation(code, "", 0, 0, "", finding_line)
    return violation.is_inline_ignored(False)


@dataclass
class _Candidate:
    findings: List[Finding]
    outcome: Outcome
    positions: List[Tuple[int, int]]
    requested: bool = False  # another file's finding, fixed here: not one of this file's findings

    @property
    def plan(self) -> Plan:
        assert isinstance(self.outcome, Plan)  # candidates with a reason are set aside before the rounds
        return self.outcome


def _candidates(
    analysis: Analysis, source: str, codes: Collection[str], honour_noqa: bool, requests: FrozenSet[int] = frozenset()
) -> List[_Candidate]:
    relevant = [f for f in analysis.findings if f.code in codes]
    asked = [c.node for c in analysis.facts.flow.loader_calls.values()] if requests else []
    if not relevant and not asked:
        return []
    starts = node_starts(analysis.module, {*(f.node for f in relevant), *asked}, analysis.source)
    lines = source.splitlines()
    chosen = [f for f in relevant if not (honour_noqa and _suppressed(lines[starts[f.node][0] - 1], f.code))]
    ctx = FixContext(analysis)
    out = [_Candidate([f], CODEMODS[f.code](f, ctx), [starts[f.node]]) for f in chosen if f.code in CODEMODS]
    own = {f.node for f in chosen if f.code == "DL402"}
    for node in asked:  # DataLoader calls of this file that an importer's DL402 names (their line)
        if starts[node][0] in requests and node not in own:
            finding = Finding(node, "DL402", "")
            out.append(_Candidate([finding], CODEMODS["DL402"](finding, ctx), [starts[node]], requested=True))
    for code, codemod in MODULE_CODEMODS.items():
        group = [f for f in chosen if f.code == code]
        if group:
            out.append(_Candidate(group, codemod(group, ctx), [starts[f.node] for f in group]))
    return out


@dataclass(frozen=True)
class _Check:
    """The verdict on one fixed text: the problem (None: acceptable), the text and its analysis."""

    problem: Optional[str]
    text: str = ""
    analysis: Optional[Analysis] = None


class _Checker:
    """Lints a fixed text and says what is wrong with it, if anything."""

    def __init__(
        self, analysis: Analysis, source: str, settings: Settings, max_line_length: Optional[int],
        filename: Optional[str],
    ) -> None:
        self.module = analysis.module
        self.before = Counter(f.code for f in analysis.findings)
        self.settings = settings
        self.max_line_length = max_line_length
        self.filename = filename
        self.compiles = compiles(source)

    def check(self, candidates: List["_Candidate"]) -> _Check:
        plan, fixed_codes = combined(c.outcome for c in candidates), _codes(*candidates)
        try:
            text = apply(self.module, plan, self.max_line_length).code
        except Exception as exc:  # our bug: the finding stays, the other fixes go ahead
            if os.environ.get(STRICT_ENV):
                raise
            return _Check(f"internal error while rewriting ({type(exc).__name__}: {exc})")
        try:
            after_analysis = inspect_source(text, self.settings, use_prefilter=False, filename=self.filename)
        except ParseFailure:
            return _Check("the fixed code would not parse", text)
        except BudgetExceeded:
            return _Check("the fixed code could not be analysed within the work budget", text)
        if self.compiles and not compiles(text):
            return _Check("the fixed code would not compile", text)
        after = Counter(f.code for f in after_analysis.findings) if after_analysis else Counter()
        new = sorted(code for code in after if after[code] > self.before[code])
        if new:
            return _Check(f"the fix would bring {', '.join(new)}", text)
        if any(after[code] > self.before[code] - count for code, count in fixed_codes.items()):
            return _Check("the finding would remain after the fix", text)
        return _Check(None, text, after_analysis)


def compiles(source: str) -> bool:
    """True when the running Python compiles the text."""
    try:
        compile(source, "<fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def fix_source(
    source: str,
    settings: Settings = DEFAULT_SETTINGS,
    codes: Collection[str] = FIXABLE,
    honour_noqa: bool = True,
    max_line_length: Optional[int] = None,
    filename: Optional[str] = None,
    requests: FrozenSet[int] = frozenset(),
    tree: Optional[ast.AST] = None,
) -> FixResult:
    """The text with every safe fix of ``codes`` applied. Raises ParseFailure.

    Like flake8, a `# noqa` on the reported line and a `# flake8: noqa` line keep a finding.
    With ``max_line_length`` (flake8's), a call a fix lengthens past it gets one argument per line.
    With ``filename`` (the file on disk), the modules of its project it imports are followed, as
    flake8 does (``tree``: flake8's ast of ``source``, which that needs). ``requests``: lines of this file's DataLoader calls that get DL402's fix for a
    finding another module reports (tried in the first round only: the call changes then).
    """
    result = FixResult(source)
    if honour_noqa and defaults.NOQA_FILE.search(source):
        return result
    analysis = inspect_source(source, settings, use_prefilter=not requests, tree=tree, filename=filename)
    for _ in range(MAX_ROUNDS):
        if analysis is None:
            return result
        checker = _Checker(analysis, result.source, settings, max_line_length, filename)
        plans: List[_Candidate] = []
        result.left = []
        for candidate in _candidates(analysis, result.source, codes, honour_noqa, requests):
            if isinstance(candidate.outcome, Plan):
                plans.append(candidate)
            else:
                result.left += _left(candidate, candidate.outcome)
        requests = frozenset()
        kept, verdict = _round(checker, plans, result)
        result.declined.update((left.line, left.reason) for left in result.left if left.requested)
        result.left = [left for left in result.left if not left.requested]
        if not kept:
            result.findings = analysis.results()
            return result
        for candidate in kept:
            pairs = zip(candidate.findings, candidate.positions)
            result.fixed += [Fixed(*position, f.code, candidate.requested) for f, position in pairs]
        result.source, analysis = verdict.text, verdict.analysis
    # Still fixing after MAX_ROUNDS rounds (never seen): what is left waits for another run.
    if analysis is not None:
        result.findings = analysis.results()
        result.left = [
            Left(*position, f.code, f"not tried: the fix command stopped after {MAX_ROUNDS} rounds; run it again")
            for candidate in _candidates(analysis, result.source, codes, honour_noqa)
            for f, position in zip(candidate.findings, candidate.positions)
        ]
    return result


def _codes(*candidates: _Candidate) -> Counter:
    """The codes of this file's findings the candidates fix (not those another file asked for)."""
    return Counter(f.code for candidate in candidates if not candidate.requested for f in candidate.findings)


def _left(candidate: _Candidate, reason: Union[str, Elsewhere]) -> List[Left]:
    origin = reason.origin if isinstance(reason, Elsewhere) else None
    text = reason.reason if isinstance(reason, Elsewhere) else reason
    pairs = zip(candidate.findings, candidate.positions)
    return [Left(*position, f.code, text, origin, candidate.requested) for f, position in pairs]


def _round(checker: _Checker, plans: List[_Candidate], result: FixResult) -> Tuple[List[_Candidate], _Check]:
    """The fixes of one round, applied together and checked with one lint in the usual case.

    Fixes that touch the same node wait for the next round. A batch that fails its check
    is halved until each failing fix is found alone (it stays, with its reason). A module
    restructure (DL301) runs alone, in a round without other fixes.
    """
    ordinary = [c for c in plans if not c.plan.exclusive]
    kept: List[_Candidate] = []
    verdict = _Check(None)
    while ordinary:
        batch: List[_Candidate] = []
        waiting: List[_Candidate] = []
        for candidate in ordinary:
            if any(c.plan.conflicts(candidate.plan) for c in [*kept, *batch]):
                waiting.append(candidate)
            else:
                batch.append(candidate)
        if not batch:
            break  # everything left collides with a kept fix: next round
        kept, verdict = _settle(checker, kept, verdict, batch, result)
        ordinary = [c for c in waiting if not any(k.plan.conflicts(c.plan) for k in kept)]
    if kept:
        return kept, verdict
    for candidate in plans:
        if candidate.plan.exclusive:
            verdict = checker.check([candidate])
            if verdict.problem is None:
                return [candidate], verdict
            result.left += _left(candidate, verdict.problem)
    return [], verdict


def _settle(
    checker: _Checker, kept: List[_Candidate], kept_verdict: _Check, batch: List[_Candidate], result: FixResult
) -> Tuple[List[_Candidate], _Check]:
    """``kept`` (whose check is ``kept_verdict``) plus what of ``batch`` passes with it.

    A fix that fails alone stays, with its reason; one that passes alone but not with the
    kept fixes waits for the next round.
    """
    verdict = checker.check([*kept, *batch])
    if verdict.problem is None:
        return [*kept, *batch], verdict
    if len(batch) == 1:
        alone = checker.check(batch) if kept else verdict
        if alone.problem is not None:
            result.left += _left(batch[0], alone.problem)
        return kept, kept_verdict
    middle = len(batch) // 2
    kept, kept_verdict = _settle(checker, kept, kept_verdict, batch[:middle], result)
    return _settle(checker, kept, kept_verdict, batch[middle:], result)
