"""The findings cache on whole trees: flake8 alone, with the plugin and the cache off, on an empty cache
(first run) and again (second run, served from .flake8_dataloader_cache/), each as a ratio to flake8 alone.

Each tree is copied to a temporary directory first (the cache is written where flake8 runs; the trees
stay untouched). Run: python benchmarks/cache_runs.py --cpu /work/trees/mae /work/trees/detr
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_trees import flake8_wall  # noqa: E402

CACHE_ENV = "FLAKE8_DATALOADER_CACHE"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the best of each column is shown")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds (user + system) instead of wall")
    args = parser.parse_args()
    os.environ.pop(CACHE_ENV, None)
    print(f"{'tree':<12} {'alone':>7} {'off':>7} {'first':>7} {'second':>7} {'off/alone':>10} {'first/alone':>12} "
          f"{'second/alone':>13}")
    for tree in args.trees:
        rounds = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as scratch:
                root = Path(scratch) / tree.name
                shutil.copytree(tree, root, ignore=shutil.ignore_patterns(".git", ".flake8_dataloader_cache"))
                alone = flake8_wall(root, False, cpu=args.cpu)
                os.environ[CACHE_ENV] = "off"
                off = flake8_wall(root, True, cpu=args.cpu)
                del os.environ[CACHE_ENV]
                first = flake8_wall(root, True, cpu=args.cpu)
                second = flake8_wall(root, True, cpu=args.cpu)
                rounds.append((alone, off, first, second))
        alone, off, first, second = (min(column) for column in zip(*rounds))
        print(f"{tree.name:<12} {alone:7.2f} {off:7.2f} {first:7.2f} {second:7.2f} {off / alone:10.2f} "
              f"{first / alone:12.2f} {second / alone:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
