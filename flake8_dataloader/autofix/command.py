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
from typing import TYPE_CHECKING, BinaryIO, List, Optional, TextIO, Tuple

from flake8.options.parse_args import parse_args
from flake8.style_guide import Decision, StyleGuideManager
from flake8.violation import Violation

from ..errors import STRICT_ENV, BudgetExceeded, ParseFailure
from ..manifest import CODES as ALL_CODES
from ..manifest import FIXABLE
from ..prefilter import may_find
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


class Flake8View:
    """flake8's options for one command line: which files, which codes, which settings."""

    def __init__(self, flake8_argv: List[str]) -> None:
        _, self.options = parse_args(flake8_argv)
        self.settings = Settings.build(
            getattr(self.options, "dataloader_names", None) or (),
            getattr(self.options, "dataloader_start_method", "auto"),
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


def fix_file(path: str, data: bytes, view: Flake8View) -> FileFix:
    """The fix of one file's bytes, with only the codes flake8 would report for that file.

    Raises NotParsed when the running Python cannot parse the text (flake8's E999).
    """
    source, encoding = decode(data)
    if not any(view.reports(path, code) for code in ALL_CODES) or not may_find(source, view.settings):
        return FileFix(path, source, encoding, None)  # nothing to fix: LibCST is not even loaded
    try:
        compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)  # what flake8 parses with
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise NotParsed(f"Python {sys.version_info[0]}.{sys.version_info[1]} cannot parse it ({where}{message})")
    from .fixer import fix_source

    result = fix_source(
        source, view.settings.for_file(source, path), view.codes_for(path), honour_noqa=not view.options.disable_noqa,
        max_line_length=view.line_lengths.for_file(path),
    )
    return FileFix(path, source, encoding, result)


def _summary(path: str, result: "FixResult", remaining: List[Result], notebook: bool = False) -> List[str]:
    """What was fixed, what was left and why, then the other findings that remain, as flake8 prints them.

    In a notebook run through nbQA, which maps lines back by the cells as they were before the fix,
    the lines of a fixed text would name the wrong cells: the remaining findings are counted instead.
    """
    lines = []
    if result.fixed:
        counts = Counter(fixed.code for fixed in result.fixed)
        lines.append(f"{path}: fixed " + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items())))
    left = sorted(result.left, key=lambda item: (item.line, item.column))
    for item in left:
        lines.append(f"{path}:{item.line}:{item.column + 1}: {item.code} left as is: {item.reason}")
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


def _fix_one(path: str, root: str, view: Flake8View, diff: bool, out: BinaryIO, err: TextIO) -> int:
    """Fix one path (``-``: stdin to stdout, the text always echoed); the exit status it calls for."""
    report = err if diff or path == STDIN else sys.stdout
    name = view.options.stdin_display_name if path == STDIN else path
    if path != STDIN and not inside(path, root):
        print(f"{name}: skipped: a symbolic link to {os.path.realpath(path)}, outside {root}", file=err)
        return EXIT_OK
    try:
        data = _read(path)
    except OSError as exc:
        print(f"{name}: not read: {exc}", file=err)
        return EXIT_ERROR
    status, fixed = EXIT_OK, None
    try:
        fixed = fix_file(name, data, view)
    except NotParsed as exc:
        print(f"{name}: not fixed: {exc}; flake8 reports E999 there", file=err)
        status = EXIT_FINDINGS if view.reports(name, "E999") else EXIT_OK
    except (UnicodeDecodeError, SyntaxError) as exc:  # SyntaxError: a bad coding cookie
        print(f"{name}: not read: {exc}", file=err)
        status = EXIT_ERROR
    except (ParseFailure, RecursionError) as exc:
        print(f"{name}: skipped: LibCST cannot parse it ({exc})", file=err)
    except BudgetExceeded as exc:
        print(f"{name}: skipped: its analysis took {exc}", file=err)
    except Exception as exc:  # our bug: say so, keep going with the other files
        if os.environ.get(STRICT_ENV):
            raise
        print(f"{name}: internal error, file left unchanged: {type(exc).__name__}: {exc}", file=err)
        status = EXIT_ERROR
    remaining = view.remaining(name, fixed.result) if fixed is not None and fixed.result is not None else []
    if remaining:
        status = max(status, EXIT_FINDINGS)
    if diff:
        if fixed is not None and fixed.changed:
            out.write("".join(fixed.diff()).encode("utf-8"))
            status = max(status, EXIT_FINDINGS)  # the file on disk still holds what would be fixed
    elif path == STDIN:
        out.write(fixed.encoded() if fixed is not None else data)
    elif fixed is not None and fixed.changed:
        try:
            replace_contents(path, data, fixed.encoded())
        except NotWritten as exc:
            print(f"{name}: {exc}", file=err)
            return EXIT_ERROR
    if fixed is not None and fixed.result is not None:
        notebook = view.settings.for_file(fixed.before, name).notebook == "on"
        for line in _summary(name, fixed.result, remaining, notebook):
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
    status = EXIT_OK
    for path, root in view.files():
        status = max(status, _fix_one(path, root, view, ours.diff, sys.stdout.buffer, sys.stderr))
        sys.stdout.flush()
    if status == EXIT_FINDINGS and view.options.exit_zero:
        return EXIT_OK
    return status
