"""The findings cache on whole trees: flake8 alone, with the plugin and the cache off, on an empty cache
(first run) and again (second run, served from .flake8_dataloader_cache/), each as a ratio to flake8 alone.

Each tree is copied to a temporary directory first (the cache is written where flake8 runs; the trees
stay untouched). The last columns are one more second run measured from inside: the CPU milliseconds
of the plugin's own import and of its run() calls (the lookups, the text scan and what they import),
steadier than the whole-run ratios on a shared machine; and the files served from the cache, the
lookups (files whose text names a token) and the files flake8 checked.
With --alternate N, only flake8 alone and the second run are measured, N times each, alternated on
one warm cache: a single round's second/alone ratio is within this machine's drift.
Run: python benchmarks/cache_runs.py --cpu /work/trees/mae /work/trees/detr
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_trees import flake8_wall  # noqa: E402

CACHE_ENV = "FLAKE8_DATALOADER_CACHE"
SHARE = """
import json, sys, time
from flake8.main.cli import main
started = time.process_time()
from flake8_dataloader import plugin  # before flake8 loads it: its import timed alone
imported = time.process_time() - started
spent, files, served, lookups = [0.0], [0], [0], [0]
real = plugin.DataLoaderChecker.run
def run(self):
    began = time.process_time()
    results = list(real(self))
    spent[0] += time.process_time() - began
    files[0] += 1
    return iter(results)
plugin.DataLoaderChecker.run = run
from flake8_dataloader import cache
lookup = cache.lookup
def counted(*args, **kwargs):
    found = lookup(*args, **kwargs)
    served[0] += found is not None
    lookups[0] += 1
    return found
cache.lookup = counted
try:
    main(["-j1", "--isolated", "--exit-zero", "-q", "."])
except SystemExit:
    pass
print(json.dumps({"import_ms": imported * 1e3, "run_ms": spent[0] * 1e3, "files": files[0], "served": served[0],
                  "lookups": lookups[0]}))
"""


def plugin_share(root: Path) -> dict:
    """The plugin's own CPU milliseconds in one flake8 run from ``root`` (its import, its run() calls)."""
    done = subprocess.run([sys.executable, "-c", SHARE], cwd=root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def copied(tree: Path, scratch: str) -> Path:
    """``tree`` copied under ``scratch``, without its history or a cache of its own."""
    root = Path(scratch) / tree.name
    shutil.copytree(tree, root, symlinks=True, ignore=shutil.ignore_patterns(".git", ".flake8_dataloader_cache"))
    return root


def alternated(tree: Path, rounds: int, cpu: bool) -> None:
    """flake8 alone and the second run, alternated ``rounds`` times on one warm cache; best of each."""
    with tempfile.TemporaryDirectory() as scratch:
        root = copied(tree, scratch)
        flake8_wall(root, True, cpu=cpu, cache=True)  # writes the cache
        alone, second = [], []
        for _ in range(rounds):
            alone.append(flake8_wall(root, False, cpu=cpu))
            second.append(flake8_wall(root, True, cpu=cpu, cache=True))
    print(f"{tree.name:<12} alone {min(alone):.2f} s, second run {min(second):.2f} s, "
          f"{min(second) / min(alone):.2f}x (alone {' '.join(f'{t:.1f}' for t in alone)}; "
          f"second {' '.join(f'{t:.1f}' for t in second)})", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the best of each column is shown")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds (user + system) instead of wall")
    parser.add_argument("--alternate", type=int, metavar="N", help="only alone vs the second run, N rounds")
    args = parser.parse_args()
    os.environ.pop(CACHE_ENV, None)
    if args.alternate:
        for tree in args.trees:
            alternated(tree, args.alternate, args.cpu)
        return 0
    print(f"{'tree':<12} {'alone':>7} {'off':>7} {'first':>7} {'second':>7} {'off/alone':>10} {'first/alone':>12} "
          f"{'second/alone':>13} {'plugin ms':>10} {'served':>7}")
    for tree in args.trees:
        rounds = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as scratch:
                root = copied(tree, scratch)
                alone = flake8_wall(root, False, cpu=args.cpu)
                off = flake8_wall(root, True, cpu=args.cpu)  # the cache off
                first = flake8_wall(root, True, cpu=args.cpu, cache=True)
                second = flake8_wall(root, True, cpu=args.cpu, cache=True)
                share = plugin_share(root)
                rounds.append((alone, off, first, second, share["import_ms"] + share["run_ms"]))
        alone, off, first, second, own = (min(column) for column in zip(*rounds))
        print(f"{tree.name:<12} {alone:7.2f} {off:7.2f} {first:7.2f} {second:7.2f} {off / alone:10.2f} "
              f"{first / alone:12.2f} {second / alone:13.2f} {own:10.1f} "
              f"{share['served']:>9}/{share['lookups']}/{share['files']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
