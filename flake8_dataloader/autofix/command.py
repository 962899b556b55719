"""`python -m flake8_dataloader fix`: fix what flake8 would report, in place or as a diff.

Options other than the fix command's own are flake8's, read as flake8 reads them
(config files, `--isolated`, `--select`, `--per-file-ignores`, `--exclude`,
`--dataloader-start-method`...): a finding flake8 would not report is not fixed, and
a file flake8 reports as E999 (the running Python cannot parse it) is not rewritten.
Exit status as `ruff check --fix`: 0 when nothing is left, 1 when a finding remains.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import io
import os
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Dict, FrozenSet, List, Optional, TextIO, Tuple

from flake8.options.parse_args import parse_args
from flake8.style_guide import Decision, StyleGuideManager
from flake8.violation import Violation

from ..errors import STRICT_ENV, BudgetExceeded, ParseFailure
from ..manifest import CODES as ALL_CODES
from ..manifest import FIXABLE
from ..screen.decide import may_find, may_find_in_text
from ..project.locate import project_root
from ..settings import Settings, SettingsError
from .discovery import DEFAULT_EXCLUDE, STDIN, python_files
from .line_length import LineLengths
from .writing import NotWritten, inside, replace_contents

if TYPE_CHECKING:
    from ..engine import Result
    from .fixer import FixResult

# As ruff: 0 nothing left to report, 1 a finding remains (or, with --diff, would be fixed), 2 a usage
# error or a file that could not be read or written.
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FIXED_THERE = ""  # a finding fixed in the other module that builds its loader


class Flake8View:
    """flake8's options for one command line: which files, which codes, which settings."""

    def __init__(self, flake8_argv: List[str]) -> None:
        _, self.options = parse_args(flake8_argv)
        self.settings = Settings.build(
            getattr(self.options, "dataloader_names", None) or (),
            getattr(self.options, "dataloader_start_method", "auto"),
            getattr(self.options, "dataloader_follow_imports", "on"),
            notebook=getattr(self.options, "dataloader_notebook", "auto"),
        )
        self.guides = StyleGuideManager(self.options, formatter=None)
        self.line_lengths = LineLengths(flake8_argv, self.options)

    def files(self) -> List[Tuple[str, str]]:
        """Each file to fix, with the tree it was found in (the argument; a file's own directory)."""
        return python_files(self.options)

    def reports(self, path: str, code: str) -> bool:
        """flake8 reports ``code`` in this file (select, ignore, per-file-ignores)."""
        guides = [g for g in self.guides.style_guides if g.applies_to(path)]
        guide = max(guides, key=lambda g: len(g.filename or ""))
        return guide.should_report_error(code) is Decision.Selected

    def codes_for(self, path: str) -> Tuple[str, ...]:
        """The fixable codes flake8 reports for this file."""
        return tuple(code for code in FIXABLE if self.reports(path, code))

    def remaining(self, path: str, result: "FixResult") -> List[Result]:
        """The findings of the fixed text that flake8 would report (its selection, `# noqa`)."""
        lines = result.source.splitlines()
        honour_noqa = not self.options.disable_noqa
        return [
            finding for finding in result.findings
            if self.reports(path, finding[2])
            and not (honour_noqa and _suppressed(lines[finding[0] - 1] if finding[0] <= len(lines) else "", finding[2]))
        ]


def _suppressed(line: str, code: str) -> bool:
    """flake8's own inline `# noqa` / `# noqa: DL402` decision for the reported line."""
    return Violation(code, "", 0, 0, "", line).is_inline_ignored(False)


def decode(data: bytes) -> Tuple[str, str]:
    """The text and its encoding (PEP 263 cookie or BOM); newlines kept as they are."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


class NotParsed(Exception):
    """The running Python cannot parse the file: flake8 reports E999 there, and nothing is fixed."""


@dataclass(frozen=True)
class FileFix:
    path: str
    before: str
    encoding: str
    result: Optional["FixResult"]  # None: the prefilter showed there is nothing to fix

    @property
    def changed(self) -> bool:
        return self.result is not None and self.result.changed

    @property
    def after(self) -> str:
        return self.before if self.result is None else self.result.source

    def diff(self) -> List[str]:
        old, new = self.before.splitlines(keepends=True), self.after.splitlines(keepends=True)
        return list(difflib.unified_diff(old, new, self.path, self.path))

    def encoded(self) -> bytes:
        return self.after.encode(self.encoding)


def fix_file(path: str, data: bytes, view: Flake8View, requests: FrozenSet[int] = frozenset()) -> FileFix:
    """The fix of one file's bytes, with only the codes flake8 would report for that file.

    The modules of its project it imports are read as flake8 reads them (``path``: the file on
    disk; ``-``: none). ``requests``: the lines of its DataLoader calls whose DL402 fix another
    file's finding asks for. Raises NotParsed when the running Python cannot parse the text (E999).
    """
    source, encoding = decode(data)
    nothing = FileFix(path, source, encoding, None)  # nothing to fix: LibCST is not even loaded
    if not any(view.reports(path, code) for code in ALL_CODES) or not (
        requests or may_find_in_text(source, view.settings, path)
    ):
        return nothing
    try:
        tree = compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)  # what flake8 parses with
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise NotParsed(f"Python {sys.version_info[0]}.{sys.version_info[1]} cannot parse it ({where}{message})")
    if not requests and not may_find(source, view.settings, tree, path):
        return nothing
    from .fixer import fix_source

    result = fix_source(
        source, view.settings.for_file(source, path), view.codes_for(path), honour_noqa=not view.options.disable_noqa,
        max_line_length=view.line_lengths.for_file(path), filename=path, requests=requests, tree=tree,
    )
    return FileFix(path, source, encoding, result)


def _summary(
    path: str, result: "FixResult", remaining: List[Result], elsewhere: Dict[int, str], notebook: bool = False
) -> List[str]:
    """What was fixed, what was left and why, then the other findings that remain, as flake8 prints them.

    ``elsewhere``: per line of a finding whose loader another given module builds, what its fix
    there did (FIXED_THERE, or the reason it was left). In a notebook run through nbQA, which maps
    lines back by the cells as they were before the fix, the lines of a fixed text would name the
    wrong cells: the remaining findings are counted instead.
    """
    lines = []
    if result.fixed:
        counts = Counter(fixed.code for fixed in result.fixed)
        lines.append(f"{path}: fixed " + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items())))
    left = sorted(result.left, key=lambda item: (item.line, item.column))
    for item in left:
        there = elsewhere.get(item.line) if item.elsewhere is not None else None
        if there == FIXED_THERE:
            lines.append(f"{path}:{item.line}:{item.column + 1}: {item.code} fixed at {item.elsewhere}")
        else:
            reason = item.reason if there is None else f"at {item.elsewhere}: {there}"
            lines.append(f"{path}:{item.line}:{item.column + 1}: {item.code} left as is: {reason}")
    explained = {(item.line, item.column, item.code) for item in left}
    if notebook and result.fixed:
        others = Counter(code for line, column, code, _ in remaining if (line, column, code) not in explained)
        if others:
            listed = ", ".join(f"{code} x{n}" for code, n in sorted(others.items()))
            lines.append(f"{path}: remaining {listed}: run `nbqa flake8` on the notebook for their cells")
        return lines
    for line, column, code, message in remaining:
        if (line, column, code) not in explained:
            lines.append(f"{path}:{line}:{column + 1}: {message}")
    return lines


def _read(path: str) -> bytes:
    if path == STDIN:
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


@dataclass
class _Job:
    """One path of the command line: what was read, its fix, and the exit status it calls for so far."""

    path: str
    root: str  # the tree it was found in
    name: str  # as shown: --stdin-display-name for `-`
    status: int
    data: Optional[bytes] = None
    fixed: Optional[FileFix] = None


def _prepare(path: str, root: str, view: Flake8View, err: TextIO) -> _Job:
    """Read and fix one path (``-``: stdin); nothing is written or printed but errors."""
    name = view.options.stdin_display_name if path == STDIN else path
    if path != STDIN and not inside(path, root):
        print(f"{name}: skipped: a symbolic link to {os.path.realpath(path)}, outside {root}", file=err)
        return _Job(path, root, name, EXIT_OK)
    try:
        data = _read(path)
    except OSError as exc:
        print(f"{name}: not read: {exc}", file=err)
        return _Job(path, root, name, EXIT_ERROR)
    job = _Job(path, root, name, EXIT_OK, data)
    job.status, job.fixed = _fixed(job, view, err, frozenset())
    return job


def _fixed(job: _Job, view: Flake8View, err: TextIO, requests: FrozenSet[int]) -> Tuple[int, Optional[FileFix]]:
    assert job.data is not None
    try:
        return EXIT_OK, fix_file(job.name, job.data, view, requests)
    except NotParsed as exc:
        print(f"{job.name}: not fixed: {exc}; flake8 reports E999 there", file=err)
        return (EXIT_FINDINGS if view.reports(job.name, "E999") else EXIT_OK), None
    except (UnicodeDecodeError, SyntaxError) as exc:  # SyntaxError: a bad coding cookie
        print(f"{job.name}: not read: {exc}", file=err)
        return EXIT_ERROR, None
    except (ParseFailure, RecursionError) as exc:
        print(f"{job.name}: skipped: LibCST cannot parse it ({exc})", file=err)
    except BudgetExceeded as exc:
        print(f"{job.name}: skipped: its analysis took {exc}", file=err)
    except Exception as exc:  # our bug: say so, keep going with the other files
        if os.environ.get(STRICT_ENV):
            raise
        print(f"{job.name}: internal error, file left unchanged: {type(exc).__name__}: {exc}", file=err)
        return EXIT_ERROR, None
    return EXIT_OK, None


def _across_files(jobs: List[_Job], view: Flake8View, err: TextIO) -> Dict[int, Dict[int, str]]:
    """DL402 findings whose loader is built in another given file: fixed there.

    Each such file is fixed again with the lines of those DataLoader calls. Returns, per job
    (by index), per line of such a finding, FIXED_THERE or the reason the other file gave.
    """
    given = {os.path.realpath(job.path): i for i, job in enumerate(jobs) if job.path != STDIN}
    asked: Dict[int, Dict[int, List[Tuple[int, int]]]] = {}  # target job -> its line -> (asking job, line)
    for i, job in enumerate(jobs):
        for item in job.fixed.result.left if job.fixed is not None and job.fixed.result is not None else []:
            if item.elsewhere is not None and job.path != STDIN:
                root = project_root(os.path.dirname(os.path.abspath(job.path)))
                target = given.get(os.path.realpath(os.path.join(root, item.elsewhere.path)))
                if target is not None and target != i:
                    asked.setdefault(target, {}).setdefault(item.elsewhere.line, []).append((i, item.line))
    done: Dict[int, Dict[int, str]] = {}
    for target, lines in asked.items():
        job = jobs[target]
        status, fixed = _fixed(job, view, err, frozenset(lines))
        if fixed is None or fixed.result is None:
            continue
        job.status, job.fixed = max(job.status, status), fixed
        made = {item.line for item in fixed.result.fixed if item.requested}
        for there, asking in lines.items():
            declined = fixed.result.declined.get(there, "no DataLoader call found there")
            outcome = FIXED_THERE if there in made else declined
            for i, line in asking:
                done.setdefault(i, {})[line] = outcome
    return done


def _finish(job: _Job, view: Flake8View, diff: bool, elsewhere: Dict[int, str], out: BinaryIO, err: TextIO) -> int:
    """Write (or print the diff of) one fixed path and its summary; the exit status it calls for."""
    report = err if diff or job.path == STDIN else sys.stdout
    status, fixed = job.status, job.fixed
    if job.data is None:
        return status
    remaining = view.remaining(job.name, fixed.result) if fixed is not None and fixed.result is not None else []
    remaining = [f for f in remaining if f[2] != "DL402" or elsewhere.get(f[0]) != FIXED_THERE]
    if remaining:
        status = max(status, EXIT_FINDINGS)
    if diff:
        if fixed is not None and fixed.changed:
            out.write("".join(fixed.diff()).encode("utf-8"))
            status = max(status, EXIT_FINDINGS)  # the file on disk still holds what would be fixed
    elif job.path == STDIN:
        out.write(fixed.encoded() if fixed is not None else job.data)
    elif fixed is not None and fixed.changed:
        try:
            replace_contents(job.path, job.data, fixed.encoded())
        except NotWritten as exc:
            print(f"{job.name}: {exc}", file=err)
            return EXIT_ERROR
    if fixed is not None and fixed.result is not None:
        notebook = view.settings.for_file(fixed.before, job.name).notebook == "on"
        for line in _summary(job.name, fixed.result, remaining, elsewhere, notebook):
            print(line, file=report)
    return status


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flake8_dataloader fix",
        description=f"Apply the safe fixes for {', '.join(FIXABLE)} to the given files and directories "
        "(`-`: read stdin, write the fixed text to stdout).",
        epilog="Any other option is flake8's (--select, --extend-ignore, --per-file-ignores, --exclude, "
        "--config, --isolated, --dataloader-start-method, --stdin-display-name, ...), read from the command "
        "line and config files exactly as flake8 reads it: what flake8 would not report is not fixed. "
        f"Files under {', '.join(DEFAULT_EXCLUDE)} or a virtual environment are skipped unless --exclude "
        "replaces that list (--extend-exclude adds to it). Exit status, as `ruff check --fix`: 0 nothing is left "
        "to report, 1 a finding remains (with --diff: any finding, fixable or not; --exit-zero: 0), "
        "2 a usage error or a file that could not be read or written.",
    )
    parser.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of the fixes")
    ours, flake8_argv = parser.parse_known_args(argv)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            view = Flake8View(flake8_argv)
    except SettingsError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except SystemExit:  # flake8's parser (or the plugin's option check) refused an option
        error = captured.getvalue().strip().splitlines()[-1:] or ["an option was refused"]
        if "unrecognized arguments" in error[0]:
            parser.print_usage(sys.stderr)
        print(error[0].replace("flake8: error:", f"{parser.prog}: error:"), file=sys.stderr)
        return EXIT_ERROR
    sys.stderr.write(captured.getvalue())  # flake8's warnings, if any
    jobs = [_prepare(path, root, view, sys.stderr) for path, root in view.files()]
    done = _across_files(jobs, view, sys.stderr)
    status, written = EXIT_OK, set()
    for i, job in enumerate(jobs):
        real = os.path.realpath(job.path)
        if real in written:  # another name (a symbolic link) of a file fixed above: read it as it is now
            job = _prepare(job.path, job.root, view, sys.stderr)
        status = max(status, _finish(job, view, ours.diff, done.get(i, {}), sys.stdout.buffer, sys.stderr))
        if not ours.diff and job.fixed is not None and job.fixed.changed:
            written.add(real)
        sys.stdout.flush()
    if status == EXIT_FINDINGS and view.options.exit_zero:
        return EXIT_OK
    return status
