"""`python -m flake8_dataloader fix`: fix what flake8 would report, in place or as a diff.

Options other than the fix command's own are flake8's, read as flake8 reads them
(config files, `--isolated`, `--select`, `--per-file-ignores`, `--exclude`,
`--dataloader-start-method`...): a finding flake8 would not report is not fixed.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Dict, List, Optional, TextIO, Tuple

from flake8.discover_files import expand_paths
from flake8.options.parse_args import parse_args
from flake8.style_guide import Decision, StyleGuideManager

from ..errors import STRICT_ENV, BudgetExceeded, ParseFailure
from ..manifest import FIXABLE
from ..prefilter import may_find
from ..settings import Settings, SettingsError
from .writing import NotWritten, inside, replace_contents

if TYPE_CHECKING:
    from .fixer import FixResult

EXIT_OK, EXIT_WOULD_CHANGE, EXIT_ERROR = 0, 1, 2


class Flake8View:
    """flake8's options for one command line: which files, which codes, which settings."""

    def __init__(self, flake8_argv: List[str]) -> None:
        _, self.options = parse_args(flake8_argv)
        self.settings = Settings.build(
            getattr(self.options, "dataloader_names", None) or (),
            getattr(self.options, "dataloader_start_method", "auto"),
        )
        self.guides = StyleGuideManager(self.options, formatter=None)

    def files(self) -> List[Tuple[str, str]]:
        """Each file to fix, with the tree it was found in (the argument; a file's own directory)."""
        found: Dict[str, str] = {}
        for argument in self.options.filenames or ["."]:
            root = argument if argument == STDIN or os.path.isdir(argument) else os.path.dirname(argument) or "."
            for path in expand_paths(
                paths=[argument],
                stdin_display_name=self.options.stdin_display_name,
                filename_patterns=self.options.filename,
                exclude=self.options.exclude,
            ):
                found.setdefault(path, root)
        return sorted(found.items())

    def codes_for(self, path: str) -> Tuple[str, ...]:
        """The fixable codes flake8 reports for this file (select, ignore, per-file-ignores)."""
        guides = [g for g in self.guides.style_guides if g.applies_to(path)]
        guide = max(guides, key=lambda g: len(g.filename or ""))
        return tuple(code for code in FIXABLE if guide.should_report_error(code) is Decision.Selected)


STDIN = "-"


def decode(data: bytes) -> Tuple[str, str]:
    """The text and its encoding (PEP 263 cookie or BOM); newlines kept as they are."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


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
    """The fix of one file's bytes, with only the codes flake8 would report for that file."""
    source, encoding = decode(data)
    codes = view.codes_for(path)
    if not codes or not may_find(source, view.settings):
        return FileFix(path, source, encoding, None)  # nothing to fix: LibCST is not even loaded
    from .fixer import fix_source

    result = fix_source(
        source, view.settings, codes, honour_noqa=not view.options.disable_noqa,
        max_line_length=view.options.max_line_length,
    )
    return FileFix(path, source, encoding, result)


def _summary(path: str, result: "FixResult") -> List[str]:
    lines = []
    if result.fixed:
        counts = Counter(fixed.code for fixed in result.fixed)
        lines.append(f"{path}: fixed " + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items())))
    for left in sorted(result.left, key=lambda item: (item.line, item.column)):
        lines.append(f"{path}:{left.line}:{left.column + 1}: {left.code} left as is: {left.reason}")
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
    if diff:
        if fixed is not None and fixed.changed:
            out.write("".join(fixed.diff()).encode("utf-8"))
            status = max(status, EXIT_WOULD_CHANGE)
    elif path == STDIN:
        out.write(fixed.encoded() if fixed is not None else data)
    elif fixed is not None and fixed.changed:
        try:
            replace_contents(path, data, fixed.encoded())
        except NotWritten as exc:
            print(f"{name}: {exc}", file=err)
            return EXIT_ERROR
    if fixed is not None and fixed.result is not None:
        for line in _summary(name, fixed.result):
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
        "Exit status: 0 done (or nothing to change), 1 with --diff when a file would change, 2 on errors.",
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
    return status
