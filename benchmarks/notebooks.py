"""`nbqa flake8` over a directory of notebooks: with this plugin (its findings cache warm) against flake8
without it, alternated, and its findings moved to the lines written in the cells.

The notebooks are copied to a temporary directory first (nbQA writes its copies next to each notebook, the
cache is written where flake8 runs). One warm-up run of each, then --rounds rounds, each running flake8
without the plugin, with it, and with --baseline's plugin (another checkout, first on the path, its own
cache) in turn. nbQA runs flake8 through benchmarks/run_flake8.py in every case, the plugin left out or not,
so that only the plugin differs. Printed: the median and best of each, their ratios to flake8 without the
plugin, and the cache entries after the runs (one per notebook that names a DataLoader token, whatever
the number of runs).
With --positions, no timing: each notebook goes through nbQA's own steps (its copy, autopep8, its map of
lines back to cells; in process, nbQA 1.9's functions), and every non-blank line of each copy is checked:
does nbQA alone, and nbQA with this plugin's move, name the cell line where that text was written?
Run: python benchmarks/notebooks.py DIRECTORY_OF_NOTEBOOKS --rounds 5 [--baseline OTHER_CHECKOUT]
     python benchmarks/notebooks.py DIRECTORY_OF_NOTEBOOKS --positions
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


def positions(directory: Path) -> Tuple[int, int, int]:
    """(non-blank lines of the copies, lines nbQA alone names wrongly, lines it names wrongly after the move)."""
    from nbqa import save_code_source
    from nbqa.path_utils import read_notebook

    from flake8_dataloader.project import nbqa

    total = alone = moved = 0
    for notebook in sorted(directory.rglob("*.ipynb")):
        with tempfile.TemporaryDirectory() as scratch:
            shutil.copy(notebook, Path(scratch) / notebook.name)
            copy = Path(scratch) / (notebook.stem + "abcdefgh" + nbqa.SUFFIX)
            data, _ = read_notebook(str(notebook))
            if data is None:
                continue
            handle = os.open(copy, os.O_WRONLY | os.O_CREAT)
            temporary, ignored = save_code_source.pre_main(data, handle, [], "flake8", [], dont_skip_bad_cells=False)
            subprocess.run([sys.executable, "-m", "autopep8", "--select=E3", "--in-place", str(copy)], check=True)
            separator = save_code_source.CODE_SEPARATOR
            cells = [separator + part for part in copy.read_text(encoding="utf-8").split(separator)]
            mapping = save_code_source.main(data, str(copy), [], [], parsed_cells=cells[1:], temporary_lines=temporary,
                                            code_cells_to_ignore=ignored).cell_mappings
            text = copy.read_text(encoding="utf-8")
            layout = nbqa.layout_lines(text, str(Path(scratch) / notebook.name))
        sources = ["".join(cell["source"]).splitlines() for cell in data["cells"] if cell["cell_type"] == "code"]
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith(nbqa.SEPARATOR) or "hash(" in line or "# CELL MAGIC" in line:
                continue
            total += 1
            alone += not _written_there(mapping.get(number), line, sources)
            moved += not _written_there(mapping.get(layout[number] if layout else number), line, sources)
    return total, alone, moved


def _written_there(place: Optional[str], line: str, sources: List[List[str]]) -> bool:
    """Whether nbQA's ``cell_N:LINE`` is where ``line`` was written (but for the indent IPython strips from an
    indented cell and a cell's trailing semicolon, which nbQA drops)."""
    if place is None:
        return False
    cell, number = (int(part) for part in place[len("cell_"):].split(":"))
    lines = sources[cell - 1]
    return 0 < number <= len(lines) and lines[number - 1].strip().replace(";", "") == line.strip().replace(";", "")


def entries(root: Path) -> int:
    return len(list((root / ".flake8_dataloader_cache").glob("*.json")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", type=Path, help="a directory of .ipynb files (copied, never written)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout of this plugin, timed in the same rounds")
    parser.add_argument("--positions", action="store_true", help="check positions instead of timing")
    args = parser.parse_args()
    if args.positions:
        total, alone, moved = positions(args.notebooks)
        print(f"{total} non-blank lines in nbQA's copies of {len(list(args.notebooks.rglob('*.ipynb')))} notebooks; "
              f"named on another line of their cell: {alone} by nbQA alone, {moved} with the plugin's move")
        return 0
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
