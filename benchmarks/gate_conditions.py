"""Which gate conditions pass the files that end with no finding: where to narrow the gate next.

    python benchmarks/real_trees.py --files-only --all-codes --no-gate --findings found.txt TREES...
    python benchmarks/gate_conditions.py --findings found.txt TREES...            # default selection
    python benchmarks/gate_conditions.py --findings found.txt --all-codes TREES...

Per tree, in flake8's order with the module index shared as in one flake8 process: the files the
plugin analyses (past the tokens and the gate, or passed by the prefilter's index stage), those
with a finding of a selected code (read from --findings, a real_trees.py findings file), and for
the files without one, the predicates every passing alternative needs (turning that predicate off
alone would spare the file). Only the gate's own decisions are counted: no LibCST. Not run in CI.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import sys
from pathlib import Path
from typing import Counter, Dict, List, Set

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from real_trees import flake8_order  # noqa: E402

from flake8_dataloader import manifest  # noqa: E402
from flake8_dataloader.screen import gate, decide as prefilter  # noqa: E402
from flake8_dataloader.project import store  # noqa: E402
from flake8_dataloader.settings import Settings  # noqa: E402


def found_codes(path: Path) -> Dict[str, Set[str]]:
    """"tree/path" -> the codes reported there, from lines "tree/path:line:col: CODE message"."""
    out: Dict[str, Set[str]] = collections.defaultdict(set)
    for line in path.read_text(encoding="utf-8").splitlines():
        where, message = line.split(": ", 1)
        out[where.split(":", 1)[0]].add(message.split()[0])
    return out


def passing(record: gate.Record, codes: List[str]) -> List[List[str]]:
    """Every alternative of a selected code's condition that holds."""
    return [list(alternative) for code in codes for alternative in manifest.CONDITIONS[code]
            if all(gate.PREDICATES[name](record) for name in alternative)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--findings", type=Path, required=True)
    parser.add_argument("--all-codes", action="store_true", help="select the opt-in codes too")
    parser.add_argument("--files", action="store_true", help="list each such file with its passing alternatives")
    args = parser.parse_args()
    settings = Settings()
    if args.all_codes:
        settings = settings._replace(selected=frozenset(manifest.CODES))
    codes = [code for code in manifest.CODES if code in settings.selected]
    found = found_codes(args.findings)
    needed: Counter[str] = collections.Counter()
    print("| tree | analysed | with a finding | by the index stage | without a finding, by the gate |")
    print("|---|---|---|---|---|")
    for tree in args.trees:
        root = tree.resolve()
        store.clear()
        analysed = with_finding = by_index = clean = 0
        cwd = os.getcwd()
        os.chdir(root)
        try:
            for path in flake8_order(Path(".")):
                try:
                    source = Path(path).read_text(encoding="utf-8")
                    tree_ast = ast.parse(source)
                except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
                    continue
                has = bool(found.get(f"{root.name}/{path[2:]}", set()) & set(codes))
                if not prefilter.has_trigger(source, settings, tree_ast):
                    if not prefilter.may_find(source, settings, tree_ast, path):
                        continue
                    by_index += 1
                else:
                    alternatives = passing(gate.Record(tree_ast, settings.for_file(source, path), path), codes)
                    if not alternatives:
                        continue
                    if not has:
                        clean += 1
                        if args.files:
                            passing_now = sorted({"+".join(a) for a in alternatives})
                            print(f"    {root.name}/{path[2:]}: " + " | ".join(passing_now))
                        needed.update(name for name in set().union(*alternatives)
                                      if all(name in alternative for alternative in alternatives))
                analysed += 1
                with_finding += has
        finally:
            os.chdir(cwd)
        print(f"| {root.name} | {analysed} | {with_finding} | {by_index} | {clean} |", flush=True)
    print("\nPredicates every passing alternative of a file without a finding needs (files):")
    for name, count in needed.most_common():
        print(f"  {count:4d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
