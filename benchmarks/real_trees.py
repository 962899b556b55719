"""Whole repository trees: flake8 with and without this plugin, from each tree's root, and the slowest files.

    python benchmarks/real_trees.py TREE [TREE ...]            # each TREE a checkout's root, kept outside this repo
    python benchmarks/real_trees.py --repeats 3 --slowest 10 TREES...
    python benchmarks/real_trees.py --repeats 3 --baseline ../before TREES...  # before/after in the same rounds
    python benchmarks/real_trees.py --cpu --repeats 3 --baseline ../before TREES...  # CPU seconds, for a loaded machine
    python benchmarks/real_trees.py --files-only TREES...       # only the per-file pass (no whole flake8 runs)
    python benchmarks/real_trees.py --files-only --no-prefilter --findings off.txt TREES...  # what the prefilter loses
    python benchmarks/real_trees.py --files-only --no-gate --findings nogate.txt TREES...  # the gate must lose nothing

Whole trees: `flake8 -j1 --isolated` from the tree's root without the plugin (benchmarks/run_flake8.py
leaves it out) and with it (`--select=DL` is not used: the plugin runs beside pyflakes and pycodestyle,
as in a user's lint stage), alternated, best of --repeats; their ratio. Per file: the plugin alone,
in one process per tree with the tree's root as working directory and files in flake8's order (a
folder's files before its sub-folders), so imports are followed and module summaries are shared as in
one flake8 process; a file still running after --timeout seconds is stopped and reported as a hang.
Prints per tree: ratio, files, files analysed, files whose imports were followed (at least one module
of their project read, by the cheap index or for a summary), findings, slowest file;
then the slowest files of all trees. Not run in CI.
"""

from __future__ import annotations

import argparse
import ast
import logging
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from flake8_dataloader.errors import STRICT_ENV  # noqa: E402

os.environ.pop(STRICT_ENV, None)  # an internal error is counted and logged as users would see it, not raised


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the plugin's own containment does not swallow it."""


class FileTime(NamedTuple):
    seconds: float
    path: str
    outcome: str  # "" (linted), "hang", or an exception's name


class TreeRun(NamedTuple):
    tree: Path
    files: int
    analysed: int
    followed: int
    findings: int
    times: List[FileTime]
    found: List[str]  # "path:line:col: message", for comparing two versions of the plugin
    logged: List[str]  # the plugin's warnings (a file skipped, past its budget, an internal error)


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def flake8_order(root: Path) -> List[str]:
    """The .py files below ``root`` as flake8 walks them (os.walk, files before sub-folders, sorted)."""
    out: List[str] = []
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        out.extend(os.path.relpath(os.path.join(directory, f), root) for f in sorted(files) if f.endswith(".py"))
    return ["./" + path for path in out]


def flake8_inputs(root: Path) -> Iterator[Tuple[str, List[str], ast.AST]]:
    """(path, lines, tree) of each file flake8 hands to plugins, in its order; one it reports as E999
    (a syntax error, an undecodable text) runs no plugin and is left out."""
    for path in flake8_order(root):
        try:
            with open(path, "rb") as handle:
                lines = handle.read().decode("utf-8").splitlines(keepends=True)
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
            continue
        yield path, lines, tree


def lint_files(root: Path, timeout: float, prefilter: bool = True) -> TreeRun:
    """The plugin on every file of one tree, as one flake8 process runs it, timing each file
    (``prefilter=False``: every file is analysed, to count what the prefilter's skipping loses)."""
    from flake8_dataloader import plugin
    from flake8_dataloader.plugin import DataLoaderChecker
    from flake8_dataloader.project import store, view

    gate = plugin.may_find
    if not prefilter:
        plugin.may_find = lambda *_: True  # type: ignore[assignment]

    store.clear()
    views: List[view.ImportView] = []
    original_init = view.ImportView.__init__

    def recording_init(self, filename, settings):
        original_init(self, filename, settings)
        views.append(self)

    view.ImportView.__init__ = recording_init  # type: ignore[method-assign]
    logged = Collected()
    logger = logging.getLogger("flake8.dataloader")
    logger.addHandler(logged)
    analysed = findings = 0
    times: List[FileTime] = []
    found_lines: List[str] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Hang()))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for path, lines, tree in flake8_inputs(Path(".")):
            outcome = ""
            started = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                found = list(DataLoaderChecker(tree, lines, path).run())
                findings += len(found)
                found_lines.extend(f"{root.name}/{path[2:]}:{line}:{col + 1}: {text}" for line, col, text, _ in found)
            except Hang:
                outcome = "hang"
            except Exception as exc:  # reported, never hidden
                outcome = type(exc).__name__
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            times.append(FileTime(time.perf_counter() - started, path, outcome))
        analysed = len(views)
        followed = sum(1 for v in views if v._consulted)
    finally:
        os.chdir(cwd)
        signal.signal(signal.SIGALRM, previous)
        view.ImportView.__init__ = original_init  # type: ignore[method-assign]
        plugin.may_find = gate  # type: ignore[assignment]
        logger.removeHandler(logged)
    return TreeRun(root, len(times), analysed, followed, findings, times, found_lines, logged.messages)


def flake8_wall(
    root: Path, with_plugin: bool, plugin_from: Optional[Path] = None, cpu: bool = False, cache: bool = False
) -> float:
    """One flake8 run's wall seconds (``cpu``: its user + system CPU seconds, steadier on a loaded
    machine); ``plugin_from``: another checkout of this plugin, put first on the path; ``cache``:
    the findings cache as the environment has it (else off: a cold run)."""
    command = [sys.executable, str(HERE / "run_flake8.py")]
    if not with_plugin:
        command += ["--without", "flake8-dataloader"]
    command += ["--", "-j1", "--isolated", "--exit-zero", "-q", "."]
    env = dict(os.environ) if cache else dict(os.environ, FLAKE8_DATALOADER_CACHE="off")
    if plugin_from is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin_from), env.get("PYTHONPATH")]))
    started, used = time.perf_counter(), _children_cpu()
    subprocess.run(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return _children_cpu() - used if cpu else time.perf_counter() - started


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whole_tree_ratio(
    root: Path, repeats: int, baseline: Optional[Path] = None, cpu: bool = False
) -> Tuple[float, ...]:
    """(flake8 alone, with the plugin[, with the baseline's plugin]): best of ``repeats``, alternated."""
    rounds: List[Tuple[float, ...]] = []
    for _ in range(repeats):
        walls = [flake8_wall(root, False, cpu=cpu), flake8_wall(root, True, cpu=cpu)]
        if baseline is not None:
            walls.append(flake8_wall(root, True, plugin_from=baseline, cpu=cpu))
        rounds.append(tuple(walls))
    return tuple(min(column) for column in zip(*rounds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the whole-tree flake8 comparison")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a file counts as a hang")
    parser.add_argument("--limit", type=float, default=2.0, help="a file over this many seconds is listed")
    parser.add_argument("--slowest", type=int, default=10)
    parser.add_argument("--files-only", action="store_true", help="skip the whole-tree flake8 runs")
    parser.add_argument("--no-prefilter", action="store_true",
                        help="analyse every file (with --findings: what the prefilter's skipping loses)")
    parser.add_argument("--all-codes", action="store_true",
                        help="per file, the gate counts the opt-in codes too (as --extend-select=DL410,DL620); "
                             "the per-file pass always prints every code's findings, opt-in ones included")
    parser.add_argument("--no-gate", action="store_true",
                        help="turn the ast gate off (FLAKE8_DATALOADER_GATE=off), for the whole-tree runs too")
    parser.add_argument("--cpu", action="store_true",
                        help="time flake8 by its CPU seconds (user + system) instead of wall: steadier under load")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout of this plugin (its root), timed in the same rounds (before/after)")
    parser.add_argument("--findings", type=Path, help="write every finding to this file (sorted), to diff versions")
    args = parser.parse_args()
    if args.no_gate:
        from flake8_dataloader.screen.gate import GATE_ENV

        os.environ[GATE_ENV] = "off"  # read per file, and inherited by the whole-tree flake8 runs
    if args.all_codes:
        from flake8_dataloader import manifest
        from flake8_dataloader.plugin import DataLoaderChecker

        DataLoaderChecker.settings = DataLoaderChecker.settings._replace(selected=frozenset(manifest.CODES))

    runs: List[TreeRun] = []
    ratios: Dict[Path, Tuple[float, ...]] = {}
    before = " | baseline's plugin s | baseline ratio" if args.baseline else ""
    print("| tree | files | analysed | imports followed | findings | plugin s | slowest file s | flake8 alone s"
          f" | with plugin s | ratio{before} |")
    print("|---" * (12 if args.baseline else 10) + "|")
    for tree in args.trees:
        run = lint_files(tree.resolve(), args.timeout, prefilter=not args.no_prefilter)
        runs.append(run)
        if not args.files_only:
            ratios[tree] = whole_tree_ratio(tree.resolve(), args.repeats, args.baseline, args.cpu)
        total = sum(t.seconds for t in run.times)
        slowest = max((t.seconds for t in run.times), default=0.0)
        walls = ratios.get(tree)
        wall_cells = (f"{walls[0]:.1f} | {walls[1]:.1f} | {walls[1] / walls[0]:.2f}x" if walls else "- | - | -")
        if walls and len(walls) > 2:
            wall_cells += f" | {walls[2]:.1f} | {walls[2] / walls[0]:.2f}x"
        print(f"| {tree.name} | {run.files} | {run.analysed} | {run.followed} | {run.findings} | {total:.2f}"
              f" | {slowest:.2f} | {wall_cells} |", flush=True)

    if args.findings:
        args.findings.write_text("".join(f"{line}\n" for line in sorted(f for run in runs for f in run.found)))
    every = sorted((t for run in runs for t in run.times), reverse=True)
    names = {id(t): run.tree.name for run in runs for t in run.times}
    print(f"\nSlowest {args.slowest} files (plugin time, one process per tree):")
    print("| file | seconds | outcome |\n|---|---|---|")
    for t in every[: args.slowest]:
        print(f"| {names[id(t)]}/{t.path[2:]} | {t.seconds:.2f} | {t.outcome or 'linted'} |")
    over = [t for t in every if t.seconds > args.limit or t.outcome]
    files = sum(run.files for run in runs)
    print(f"\n{files} files in {len(runs)} trees; {len(over)} over {args.limit:g} s or not linted to the end")
    for t in over:
        print(f"  {names[id(t)]}/{t.path[2:]}: {t.seconds:.2f} s {t.outcome}")
    for run in runs:
        for message in run.logged:
            print(f"  logged in {run.tree.name}: {message}")
    if ratios and all(ratios.values()):
        values = sorted(w[1] / w[0] for w in ratios.values() if w)
        print(f"whole-tree ratio: median {values[len(values) // 2]:.2f}x, worst {values[-1]:.2f}x")
        if args.baseline:
            values = sorted(w[2] / w[0] for w in ratios.values() if w)
            print(f"baseline's ratio: median {values[len(values) // 2]:.2f}x, worst {values[-1]:.2f}x")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
