"""`python -m flake8_dataloader fix`: fix what flake8 would report, in place or as a diff.

Options other than the fix command's own are flake8's, read as flake8 reads them
(config files, `--isolated`, `--select`, `--per-file-ignores`, `--exclude`,
`--dataloader-start-method`...): a finding flake8 would not report is not fixed.
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import sys
import tokenize
from dataclasses import dataclass
from typing import List, Optional, TextIO, Tuple

from flake8.discover_files import expand_paths
from flake8.options.parse_args import parse_args
from flake8.style_guide import Decision, StyleGuideManager

from ..engine import STRICT_ENV, ParseFailure
from ..settings import Settings, SettingsError
from .codemods import FIXABLE
from .fixer import FixResult, fix_source

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

    def files(self) -> List[str]:
        return sorted(
            expand_paths(
                paths=self.options.filenames or ["."],
                stdin_display_name=self.options.stdin_display_name,
                filename_patterns=self.options.filename,
                exclude=self.options.exclude,
            )
        )

    def codes_for(self, path: str) -> Tuple[str, ...]:
        """The fixable codes flake8 reports for this file (select, ignore, per-file-ignores)."""
        guides = [g for g in self.guides.style_guides if g.applies_to(path)]
        guide = max(guides, key=lambda g: len(g.filename or ""))
        return tuple(code for code in FIXABLE if guide.should_report_error(code) is Decision.Selected)


def read_source(path: str) -> Tuple[str, str]:
    """The text and its encoding (PEP 263 cookie or BOM); newlines kept as they are."""
    with open(path, "rb") as handle:
        data = handle.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


@dataclass(frozen=True)
class FileFix:
    path: str
    before: str
    encoding: str
    result: FixResult

    def diff(self) -> List[str]:
        old, new = self.before.splitlines(keepends=True), self.result.source.splitlines(keepends=True)
        return list(difflib.unified_diff(old, new, self.path, self.path))

    def write(self) -> None:
        with open(self.path, "wb") as handle:
            handle.write(self.result.source.encode(self.encoding))


def fix_file(path: str, view: Flake8View) -> Optional[FileFix]:
    """The fix of one file; None when flake8 would report none of the fixable codes there."""
    codes = view.codes_for(path)
    if not codes:
        return None
    source, encoding = read_source(path)
    result = fix_source(source, view.settings, codes, honour_noqa=not view.options.disable_noqa)
    return FileFix(path, source, encoding, result)


def _summary(path: str, result: FixResult) -> List[str]:
    lines = []
    if result.fixed:
        counts = {}
        for fixed in result.fixed:
            counts[fixed.code] = counts.get(fixed.code, 0) + 1
        lines.append(f"{path}: fixed " + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items())))
    for left in sorted(result.left, key=lambda item: (item.line, item.column)):
        lines.append(f"{path}:{left.line}:{left.column + 1}: {left.code} left as is: {left.reason}")
    return lines


def main(argv: Optional[List[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flake8_dataloader fix",
        description=f"Apply the safe fixes for {', '.join(FIXABLE)} to the given files and directories.",
        epilog="Any other option is flake8's (--select, --extend-ignore, --per-file-ignores, --exclude, "
        "--config, --isolated, --dataloader-start-method, ...), read from the command line and "
        "config files exactly as flake8 reads it: what flake8 would not report is not fixed. "
        "Exit status: 0 done (or nothing to change), 1 with --diff when a file would change, 2 on errors.",
    )
    parser.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of the fixes")
    ours, flake8_argv = parser.parse_known_args(argv)
    try:
        view = Flake8View(flake8_argv)
    except SettingsError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_ERROR
    except SystemExit as exc:  # the plugin's own option check, run by flake8's parser
        if not isinstance(exc.code, str):
            raise
        print(exc.code, file=err)
        return EXIT_ERROR
    report = err if ours.diff else out
    status = EXIT_OK
    for path in view.files():
        try:
            fixed = fix_file(path, view)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:  # SyntaxError: a bad coding cookie
            print(f"{path}: not read: {exc}", file=err)
            status = EXIT_ERROR
            continue
        except (ParseFailure, RecursionError) as exc:
            print(f"{path}: skipped: LibCST cannot parse it ({exc})", file=err)
            continue
        except Exception as exc:  # our bug: say so, keep going with the other files
            if os.environ.get(STRICT_ENV):
                raise
            print(f"{path}: internal error, file left unchanged: {type(exc).__name__}: {exc}", file=err)
            status = EXIT_ERROR
            continue
        if fixed is None:
            continue
        if fixed.result.changed:
            if ours.diff:
                out.writelines(fixed.diff())
                status = max(status, EXIT_WOULD_CHANGE)
            else:
                fixed.write()
        for line in _summary(path, fixed.result):
            print(line, file=report)
    return status
