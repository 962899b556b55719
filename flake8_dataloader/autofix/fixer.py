"""Fix one file's text: rounds of codemods, each fix checked by linting its result again.

A fix is kept only when the fixed text parses (and compiles where the input
did), its finding is gone, and no rule reports anything it did not report
before. Fixes that touch the same node wait for the next round; so does a
module restructure (DL301), which runs alone.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, List, Optional, Tuple

from flake8 import defaults
from flake8.violation import Violation

from ..engine import STRICT_ENV, Analysis, ParseFailure, inspect_source
from ..positions import node_starts
from ..rules.base import Finding
from ..settings import DEFAULT_SETTINGS, Settings
from .codemods import CODEMODS, FIXABLE, MODULE_CODEMODS, FixContext, Outcome
from .edits import Plan, apply

# Each round fixes everything that does not collide; two or three rounds are the most seen.
MAX_ROUNDS = 8


@dataclass(frozen=True)
class Fixed:
    line: int  # in the text the fix was applied to (the input, for fixes of the first round)
    column: int
    code: str


@dataclass(frozen=True)
class Left:
    """A finding of a fixable code that stays in the fixed text, and why."""

    line: int
    column: int
    code: str
    reason: str


@dataclass
class FixResult:
    source: str
    fixed: List[Fixed] = field(default_factory=list)
    left: List[Left] = field(default_factory=list)

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


def _candidates(analysis: Analysis, source: str, codes: Collection[str], honour_noqa: bool) -> List[_Candidate]:
    relevant = [f for f in analysis.findings if f.code in codes]
    if not relevant:
        return []
    starts = node_starts(analysis.module, {f.node for f in relevant})
    lines = source.splitlines()
    chosen = [f for f in relevant if not (honour_noqa and _suppressed(lines[starts[f.node][0] - 1], f.code))]
    ctx = FixContext(analysis)
    out = [_Candidate([f], CODEMODS[f.code](f, ctx), [starts[f.node]]) for f in chosen if f.code in CODEMODS]
    for code, codemod in MODULE_CODEMODS.items():
        group = [f for f in chosen if f.code == code]
        if group:
            out.append(_Candidate(group, codemod(group, ctx), [starts[f.node] for f in group]))
    return out


class _Checker:
    """Lints a fixed text and says what is wrong with it, if anything."""

    def __init__(self, analysis: Analysis, source: str, settings: Settings) -> None:
        self.module = analysis.module
        self.before = Counter(f.code for f in analysis.findings)
        self.settings = settings
        self.compiles = compiles(source)

    def problem(self, plan: Plan, fixed_codes: Counter) -> Tuple[Optional[str], str]:
        try:
            text = apply(self.module, plan).code
        except Exception as exc:  # our bug: the finding stays, the other fixes go ahead
            if os.environ.get(STRICT_ENV):
                raise
            return f"internal error while rewriting ({type(exc).__name__}: {exc})", ""
        try:
            after_analysis = inspect_source(text, self.settings, use_prefilter=False)
        except ParseFailure:
            return "the fixed code would not parse", text
        if self.compiles and not compiles(text):
            return "the fixed code would not compile", text
        after = Counter(f.code for f in after_analysis.findings) if after_analysis else Counter()
        new = sorted(code for code in after if after[code] > self.before[code])
        if new:
            return f"the fix would bring {', '.join(new)}", text
        if any(after[code] > self.before[code] - count for code, count in fixed_codes.items()):
            return "the finding would remain after the fix", text
        return None, text


def compiles(source: str) -> bool:
    """True when the running Python compiles the text."""
    try:
        compile(source, "<fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def fix_source(
    source: str, settings: Settings = DEFAULT_SETTINGS, codes: Collection[str] = FIXABLE, honour_noqa: bool = True
) -> FixResult:
    """The text with every safe fix of ``codes`` applied. Raises ParseFailure.

    Like flake8, a `# noqa` on the reported line and a `# flake8: noqa` line keep a finding.
    """
    result = FixResult(source)
    if honour_noqa and defaults.NOQA_FILE.search(source):
        return result
    for _ in range(MAX_ROUNDS):
        analysis = inspect_source(result.source, settings)
        if analysis is None:
            return result
        checker = _Checker(analysis, result.source, settings)
        accepted: List[_Candidate] = []
        result.left = []
        for candidate in _candidates(analysis, result.source, codes, honour_noqa):
            reason = candidate.outcome
            if isinstance(reason, Plan):
                reason, _ = checker.problem(reason, Counter(f.code for f in candidate.findings))
            if reason is None:
                accepted.append(candidate)
            else:
                pairs = zip(candidate.findings, candidate.positions)
                result.left += [Left(*position, f.code, reason) for f, position in pairs]
        if not accepted:
            return result
        result.source = _apply_round(checker, accepted, result)
    return result


def _apply_round(checker: _Checker, accepted: List[_Candidate], result: FixResult) -> str:
    """Apply every accepted fix that collides with no other; the rest wait for the next round."""
    exclusive = [c for c in accepted if c.outcome.exclusive]
    ordinary = [c for c in accepted if not c.outcome.exclusive]
    batch: List[_Candidate] = []
    plan = Plan()
    for candidate in ordinary or exclusive[:1]:
        if not plan.conflicts(candidate.outcome):
            plan.merge(candidate.outcome)
            batch.append(candidate)
    fixed_codes = Counter(f.code for c in batch for f in c.findings)
    problem, text = checker.problem(plan, fixed_codes)
    if problem is not None:  # the fixes interact: keep only the first, checked on its own above
        batch = batch[:1]
        text = apply(checker.module, batch[0].outcome).code
    for candidate in batch:
        result.fixed += [Fixed(*position, f.code) for f, position in zip(candidate.findings, candidate.positions)]
    return text
