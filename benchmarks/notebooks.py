"""`nbqa flake8` over a directory of notebooks: with this plugin (its findings cache warm) against flake8
without it, alternated, and its findings moved to the lines written in the cells.

The notebooks are copied to a temporary directory first (nbQA writes its copies next to each notebook, the
cache is written where flake8 runs). One warm-up run of each, then --rounds rounds, each running flake8
without the plugin, with it, and with --baseline's plugin (another checkout, first on the path, its own
cache) in turn. nbQA runs flake8 through benchmarks/run_flake8.py in every case, the plugin left out or not,
so that only the plugin differs. Printed: the median and best of each, their ratios to flake8 without the
plugin, and the cache entries after the runs (one per notebook that names a DataLoader token, whatever
the number of runs).
Run: python benchmarks/notebooks.py DIRECTORY_OF_NOTEBOOKS --rounds 5 [--baseline OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
FLAKE8 = ["-j1", "--exit-zero"]


def nbqa_flake8(root: Path, with_plugin: bool, plugin_from: Optional[Path] = None) -> Tuple[float, float]:
    """One `nbqa flake8` run over every notebook under ``root``: its wall seconds, and the CPU seconds (user +
    system) of nbQA and what it ran (autopep8, flake8), steadier on a shared machine."""
    command = "run_flake8 --without flake8-dataloader --" if not with_plugin else "run_flake8 --"
    path = [str(HERE)] + ([str(plugin_from)] if plugin_from is not None else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    started, used = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-m", "nbqa", command, ".", *FLAKE8], cwd=root, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started, _children_cpu() - used


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def entries(root: Path) -> int:
    return len(list((root / ".flake8_dataloader_cache").glob("*.json")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", type=Path, help="a directory of .ipynb files (copied, never written)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout of this plugin, timed in the same rounds")
    args = parser.parse_args()
    count = len(list(args.notebooks.rglob("*.ipynb")))
    kinds: Dict[str, Optional[Path]] = {"plugin": None}
    if args.baseline is not None:
        kinds["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory() as scratch:
        roots = {kind: Path(scratch) / kind for kind in ["alone", *kinds]}
        for root in roots.values():
            shutil.copytree(args.notebooks, root)
        times: Dict[str, List[Tuple[float, float]]] = {kind: [] for kind in roots}
        for round_ in range(args.rounds + 1):  # round 0 warms the disk and fills the caches
            for kind, root in roots.items():
                measured = nbqa_flake8(root, kind != "alone", kinds.get(kind))
                if round_:
                    times[kind].append(measured)
            if round_ == 0:
                after_first = {kind: entries(roots[kind]) for kind in kinds}
        print(f"{count} notebooks, nbqa flake8 {' '.join(FLAKE8)}, {args.rounds} alternated rounds after a warm-up")
        for which, column in (("wall", 0), ("cpu", 1)):
            alone = [measured[column] for measured in times["alone"]]
            for kind, runs in times.items():
                seconds = [measured[column] for measured in runs]
                ratio = "" if kind == "alone" else (
                    f"  ratio median {statistics.median(seconds) / statistics.median(alone):.2f}x"
                    f"  best {min(seconds) / min(alone):.2f}x")
                median = statistics.median(seconds)
                print(f"{which:4} {kind:9} median {median:6.2f} s  best {min(seconds):6.2f} s{ratio}")
        for kind in kinds:
            print(f"{kind:9} cache entries: {after_first[kind]} after one run, {entries(roots[kind])} after "
                  f"{args.rounds + 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
