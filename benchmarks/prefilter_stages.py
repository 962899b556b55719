"""The prefilter's stages timed alone, per tree: the identifier scan, the project index, the gate.

    python benchmarks/prefilter_stages.py TREE [TREE ...]

Per tree, from its root, files in flake8's order, one process (the index's cache warm as in one
flake8 run): the CPU seconds of (1) the token test on the text and flake8's ast identifiers
(every file), (2) the project-index stage for the files without tokens (`may_use_imported_loader`),
(3) the gate for the files with tokens (`gate.may_report`, its project questions included), and
how many files each stage passes. No LibCST is imported. Not run in CI.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.real_trees import flake8_order  # noqa: E402
from flake8_dataloader.screen import gate, tokens  # noqa: E402
from flake8_dataloader.project import index, locate  # noqa: E402
from flake8_dataloader.project.service import PROJECT  # noqa: E402
from flake8_dataloader.settings import DEFAULT_SETTINGS  # noqa: E402


def stages(root: Path) -> str:
    index.clear()
    locate.forget()
    scan = project = gated = 0.0
    files = with_tokens = by_index = by_gate = 0
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for path in flake8_order(Path(".")):
            try:
                with open(path, "rb") as handle:
                    source = handle.read().decode("utf-8")
                tree = ast.parse(source)
            except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
                continue
            files += 1
            started = time.process_time()
            found = tokens.has_trigger(source, DEFAULT_SETTINGS, tree)
            scan += time.process_time() - started
            started = time.process_time()
            if found:
                with_tokens += 1
                by_gate += gate.may_report(tree, DEFAULT_SETTINGS, path)
                gated += time.process_time() - started
            else:
                by_index += PROJECT.may_use_imported_loader(source, tree, path, DEFAULT_SETTINGS)
                project += time.process_time() - started
    finally:
        os.chdir(cwd)
    return (f"| {root.name} | {files} | {scan:.2f} | {with_tokens} | {project:.2f} | {by_index} | {gated:.2f}"
            f" | {by_gate} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    args = parser.parse_args()
    print("| tree | files | token scan s | files with tokens | index stage s | passed by index | gate s"
          " | passed by gate |")
    print("|---" * 8 + "|")
    for tree in args.trees:
        print(stages(tree.resolve()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
