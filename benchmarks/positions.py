"""What placing the findings costs: the lines and columns of every file of a tree that has findings.

    python benchmarks/positions.py TREES...                    # CPU seconds per tree, best of --repeats
    python benchmarks/positions.py --checkout ../before TREES...  # another checkout's plugin

Each file is analysed once (not timed); then its findings are placed again and again, as the
plugin places them after the analysis (engine.Analysis.results), with the walk of flake8's tree
the screen has already made. Not run in CI.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path


def analyses(root: Path) -> list:
    from flake8_dataloader.engine import inspect_source

    found = []
    for path in sorted(root.rglob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        analysis = inspect_source(source, tree=tree)
        if analysis is not None and analysis.findings:
            found.append(analysis)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout whose plugin places them (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.checkout.resolve()))
    from flake8_dataloader.screen.ast_walk import nodes_of

    os.environ["FLAKE8_DATALOADER_CACHE"] = "off"
    print("| tree | files with findings | findings | placing them, CPU seconds (best of %d) |" % args.repeats)
    print("|---|---|---|---|")
    for root in args.trees:
        files = analyses(root.resolve())
        best = float("inf")
        for _ in range(args.repeats):
            spent = 0.0
            for analysis in files:
                nodes_of(analysis.tree)  # the screen's walk, which the plugin has made by then
                started = time.process_time()
                analysis.results()
                spent += time.process_time() - started
            best = min(best, spent)
        findings = sum(len(analysis.findings) for analysis in files)
        print(f"| {root.name} | {len(files)} | {findings} | {best:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
