"""`python -m flake8_dataloader docs`: regenerate docs/rules from the rule docstrings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flake8_dataloader")
    commands = parser.add_subparsers(dest="command", required=True)
    docs = commands.add_parser("docs", help="regenerate docs/rules/*.md from the rule docstrings")
    docs.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: .)")
    args = parser.parse_args(argv)
    if args.command == "docs":
        from .docs import write

        for path in write(args.root):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
