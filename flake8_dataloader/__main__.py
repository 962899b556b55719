"""`python -m flake8_dataloader docs|fix`: regenerate the rule pages; apply the safe fixes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["fix"]:  # its options pass through to flake8's parser
        from .autofix.command import main as fix

        return fix(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m flake8_dataloader")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fix", help="apply the safe fixes (see: python -m flake8_dataloader fix --help)")
    docs = commands.add_parser("docs", help="regenerate docs/rules/*.md from the rule docstrings")
    docs.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: .)")
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    args = parser.parse_args(argv)
    if args.command == "docs":
        from .docs import generate, write

        if args.check:
            stale = [p for p, text in generate(args.root).items() if not p.exists() or p.read_text() != text]
            for path in stale:
                print(f"out of date: {path} (run python -m flake8_dataloader docs)")
            return 1 if stale else 0
        for path in write(args.root):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
