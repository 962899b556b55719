"""Where a cold run's plugin time goes, per tree: the screen (tokens, gate, project index), module
summaries, and the analysis of files that end with a finding and of those that end with none.

    python benchmarks/cost_breakdown.py TREES...           # CPU seconds per stage
    python benchmarks/cost_breakdown.py --alone TREES...   # with flake8 alone's CPU seconds (-j1, cache off)

Each tree runs in a fresh process from its root, files in flake8's order, the findings cache off
(as a CI job without a cache runs): the plugin's checker on each file as flake8 calls it, with CPU
timers around the stages. Inclusive times: "gate" and "index" are parts of "screen", "summaries" a
part of the analysis of the files that asked for them, and "parse" (LibCST's parse of the file and of
the modules summarised for it) a part of the analysis, split the same way. "LibCST import" is the
one-time cost of a process that analyses anything, not in "plugin". Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict

HERE = Path(__file__).resolve().parent
STAGES = (
    "screen", "gate", "index", "summaries", "analysis, finding", "analysis, none",
    "parse, finding", "parse, none", "LibCST import",
)


def _timed(owner, name: str, label: str, totals: Dict[str, float]) -> None:
    original: Callable = getattr(owner, name, None)
    if original is None:
        return  # an older checkout without that stage (run from a copy of this script in it)

    def wrapper(*args, **kwargs):
        started = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            totals[label] = totals.get(label, 0.0) + time.process_time() - started

    setattr(owner, name, wrapper)


def measure(root: Path) -> Dict[str, float]:
    """One tree, in this process (call it in a fresh one): CPU seconds per stage, and counts."""
    os.environ["FLAKE8_DATALOADER_CACHE"] = "off"
    started = time.process_time()
    import libcst  # noqa: F401 - what the first analysed file pays once per process

    libcst_import = time.process_time() - started
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    from real_trees import flake8_inputs

    from flake8_dataloader import plugin
    from flake8_dataloader.facts import analysis
    from flake8_dataloader.plugin import DataLoaderChecker
    from flake8_dataloader.project import index, service, store
    from flake8_dataloader.screen import gate

    totals: Dict[str, float] = {"LibCST import": libcst_import}
    _timed(plugin, "may_find", "screen", totals)
    _timed(gate, "may_report", "gate", totals)
    _timed(index, "names_a_builder", "index", totals)
    _timed(index, "custom_loaders", "index", totals)
    _timed(service.ProjectIndex, "may_use_imported_loader", "index", totals)
    _timed(store, "_summarised", "summaries", totals)
    _timed(analysis, "parse", "parse", totals)
    analysed = DataLoaderChecker._analysed
    counts = {"files": 0, "analysed": 0, "with a finding": 0}

    def timed_analysis(self, source):
        started, parsed = time.process_time(), totals.get("parse", 0.0)
        result = analysed(self, source)
        outcome = "finding" if result[0] else "none"
        totals[f"analysis, {outcome}"] = totals.get(f"analysis, {outcome}", 0.0) + time.process_time() - started
        totals[f"parse, {outcome}"] = totals.get(f"parse, {outcome}", 0.0) + totals.get("parse", 0.0) - parsed
        counts["analysed"] += 1
        counts["with a finding"] += bool(result[0])
        return result

    DataLoaderChecker._analysed = timed_analysis  # type: ignore[method-assign]
    os.chdir(root)
    totals["plugin"] = 0.0
    for path, lines, tree in flake8_inputs(Path(".")):
        counts["files"] += 1
        started = time.process_time()
        list(DataLoaderChecker(tree, lines, path).run())
        totals["plugin"] += time.process_time() - started
    return {**totals, **counts}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--alone", action="store_true", help="also time flake8 alone (-j1, CPU seconds)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # the child process's tree
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one.resolve())))
        return 0
    header = ["tree", "files", "analysed", "with a finding", "plugin", *STAGES]
    if args.alone:
        header.append("flake8 alone")
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for tree in args.trees:
        out = subprocess.run([sys.executable, __file__, "--one", str(tree)], capture_output=True, text=True, check=True)
        numbers = json.loads(out.stdout.strip().splitlines()[-1])
        row = [tree.name, *(str(numbers[k]) for k in ("files", "analysed", "with a finding"))]
        row += [f"{numbers.get(k, 0.0):.2f}" for k in ("plugin", *STAGES)]
        if args.alone:
            from real_trees import flake8_wall

            row.append(f"{flake8_wall(tree.resolve(), False, cpu=True):.1f}")
        print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
