"""The garbage collector's share of a cold flake8 run, with the plugin's `gc.freeze` on and off.

    python benchmarks/gc_time.py --rounds 3 TREE

Each run is a fresh process from the tree's root: `flake8 -j1 --isolated`, the findings cache off,
CPU seconds of the whole run and of the collector's passes (gc.callbacks), the two settings of
FLAKE8_DATALOADER_GC_FREEZE alternated. Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import gc, os, sys, time
from flake8.main import cli
spent = [0.0, 0.0]
def timed(phase, info):
    if phase == "start":
        spent[1] = time.process_time()
    else:
        spent[0] += time.process_time() - spent[1]
gc.callbacks.append(timed)
started = time.process_time()
sys.stdout = open(os.devnull, "w")
try:
    cli.main(["-j1", "--isolated", "--exit-zero", "-q", "."])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(f"{time.process_time() - started:.2f} {spent[0]:.2f}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| round | freeze | CPU s | of which the collector s |")
    print("|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for switch in ("off", "on"):
            env = dict(os.environ, FLAKE8_DATALOADER_CACHE="off", FLAKE8_DATALOADER_GC_FREEZE=switch)
            out = subprocess.run([sys.executable, "-c", CHILD], cwd=args.tree, env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            print(f"| {round_} | {switch} | {out[-2]} | {out[-1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
