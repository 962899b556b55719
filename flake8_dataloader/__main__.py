"""`python -m flake8_dataloader fix ...`: apply the safe fixes. `--version`: the installed version.

`docs` regenerates docs/rules/*.md from the rule docstrings: a maintainer command, left
out of the help, that writes only inside this project's own checkout (or under --output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__

PROG = "python -m flake8_dataloader"


def is_checkout(root: Path) -> bool:
    """``root`` is a checkout of this project: its package and its docs beside it."""
    pyproject = root / "pyproject.toml"
    return (
        (root / "flake8_dataloader" / "rules").is_dir()
        and pyproject.is_file()
        and 'name = "flake8-dataloader"' in pyproject.read_text(encoding="utf-8")
    )


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["fix"]:  # its options pass through to flake8's parser
        from .autofix.command import main as fix

        return fix(argv[1:])
    parser = argparse.ArgumentParser(prog=PROG, description="flake8-dataloader's own commands.")
    parser.add_argument("--version", action="version", version=f"flake8-dataloader {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="fix")
    commands.add_parser("fix", help="apply the safe fixes (see: python -m flake8_dataloader fix --help)")
    docs = commands.add_parser("docs")  # maintainers only: not listed in the help
    docs.add_argument("--root", type=Path, default=Path.cwd(), help="this project's checkout (default: .)")
    docs.add_argument("--output", type=Path, help="write the pages under this directory instead of ROOT/docs/rules")
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    args = parser.parse_args(argv)
    if args.command == "docs":
        return _docs(args)
    return 0


def _docs(args: argparse.Namespace) -> int:
    from .docs import generate, write

    if args.output is None and not is_checkout(args.root):
        print(f"{PROG} docs: {args.root.resolve()} is not a flake8-dataloader checkout; "
              "run it there, or give --output DIR", file=sys.stderr)
        return 2
    if args.check:
        stale = [p for p, text in generate(args.root, args.output).items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"out of date: {path} (run python -m flake8_dataloader docs)")
        return 1 if stale else 0
    for path in write(args.root, args.output):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
