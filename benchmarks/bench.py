"""How much the plugin adds to flake8, against bare LibCST parsing and against TorchFix.

    python benchmarks/bench.py                      # torch's sources + the standard library
    python benchmarks/bench.py --repeats 3 --torchfix-python /path/to/venv/bin/python
    python benchmarks/bench.py --sample 400 --repeats 2 --make-torchfix-venv /tmp/tfvenv  # fits 10 minutes
    python benchmarks/bench.py --startup-only       # the pre-commit case: flake8 on 1 and 3 ordinary files
    python benchmarks/project_tree.py --flake8      # only the project trees, follow imports on vs off

Configurations are alternated and repeated; medians and ratios are printed as a table.
Peak memory is the maximum resident set of each flake8 run (its worker processes included).
TorchFix pins an old LibCST, so it is measured from its own virtual environment
(`--torchfix-python`; `--make-torchfix-venv DIR` creates one with pip).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def corpus_roots() -> List[Path]:
    import importlib.util

    roots = [Path(sysconfig.get_paths()["stdlib"])]
    spec = importlib.util.find_spec("torch")
    if spec and spec.origin:
        roots.append(Path(spec.origin).parent)
    return roots


def corpus_files(roots: List[Path]) -> List[Path]:
    return sorted(
        p for root in roots for p in root.rglob("*.py")
        if not {"site-packages", "test", "tests"} & set(p.relative_to(root).parts)
    )


def timed_run(cmd: List[str], cwd: Path) -> Tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a command and the children it waited for."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss


def flake8_cmd(python: str, files: List[Path], without: List[str], select: str, jobs: int = 1) -> List[str]:
    cmd = [python, str(HERE / "run_flake8.py")]
    for name in without:
        cmd += ["--without", name]
    return cmd + ["--", "--isolated", f"-j{jobs}", f"--select={select}", "--exit-zero", *map(str, files)]


def alternated(configs: Dict[str, List[str]], repeats: int, cwd: Path, verbose: bool = True):
    """Each configuration run ``repeats`` times, one of each per round: (wall s, peak RSS KiB) lists."""
    runs: Dict[str, List[Tuple[float, int]]] = {name: [] for name in configs}
    for repeat in range(repeats):
        for name, cmd in configs.items():
            runs[name].append(timed_run(cmd, cwd))
            if verbose:
                print(f"  round {repeat + 1}: {name}: {runs[name][-1][0]:.2f} s", file=sys.stderr)
    return runs


def compare_flake8(files: List[Path], repeats: int, torchfix_python: Optional[str], jobs: int) -> Dict[str, Dict]:
    configs = {
        "flake8 alone": flake8_cmd(sys.executable, files, ["flake8-dataloader"], "E,F,W,C90", jobs),
        "flake8 + flake8-dataloader": flake8_cmd(sys.executable, files, [], "E,F,W,C90,DL", jobs),
    }
    if torchfix_python:
        configs["flake8 alone (TorchFix venv)"] = flake8_cmd(torchfix_python, files, ["TorchFix"], "E,F,W,C90", jobs)
        configs["flake8 + TorchFix"] = flake8_cmd(torchfix_python, files, [], "E,F,W,C90,TOR", jobs)
    runs = alternated(configs, repeats, ROOT)
    return {
        name: {"median_s": statistics.median(t for t, _ in values), "peak_rss_mib": max(m for _, m in values) / 1024}
        for name, values in runs.items()
    }


def plugin_vs_parse(files: List[Path], repeats: int) -> Dict[str, float]:
    """CPU seconds (the best of ``repeats`` alternated rounds) of a bare LibCST parse of each file, of the
    plugin's own parse plus its one traversal (the collector: the floor of any analysis on this design),
    and of the whole analysis."""
    import libcst

    from flake8_dataloader.engine import analyse, cycles_collected_after
    from flake8_dataloader.facts.collector import Collector
    from flake8_dataloader.syntax.parsing import parse

    sources = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    trees = []
    for source in sources:  # flake8 parses every file anyway and hands plugins this tree
        try:
            trees.append(ast.parse(source))
        except (SyntaxError, ValueError):
            trees.append(None)

    def bare() -> None:
        for source in sources:
            try:
                libcst.parse_module(source)
            except Exception:  # noqa: S112 - unparsable files cost what they cost
                pass

    def traversal() -> None:
        for source, tree in zip(sources, trees):
            with cycles_collected_after():  # as the engine runs it
                try:
                    Collector().walk(parse(source, tree))
                except Exception:  # noqa: S112
                    pass

    def plugin() -> None:
        for source, tree in zip(sources, trees):
            try:
                analyse(source, tree=tree)
            except Exception:  # noqa: S112
                pass

    loops = {"parse_s": bare, "traversal_s": traversal, "plugin_s": plugin}
    times: Dict[str, List[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            started = time.process_time()
            loop()
            times[name].append(time.process_time() - started)
    lines = sum(source.count("\n") for source in sources)
    best = {name: min(values) for name, values in times.items()}
    return {"files": len(sources), "lines": lines, **best,
            "plugin_ms_per_file": 1000 * best["plugin_s"] / len(sources),
            "plugin_ms_per_kloc": 1000 * best["plugin_s"] / (lines / 1000)}


def plugin_over_corpus(files: List[Path]) -> Dict[str, float]:
    """The plugin's own time over the whole corpus, prefilter on, as flake8 would call it (one core)."""
    from flake8_dataloader.engine import check_source

    sources = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    trees = []
    for source in sources:  # flake8 parses every file anyway and hands plugins this tree
        try:
            trees.append(ast.parse(source))
        except (SyntaxError, ValueError):
            trees.append(None)  # flake8 reports E999 and runs no plugin
    started = time.perf_counter()
    for path, source, tree in zip(files, sources, trees):
        if tree is not None:
            check_source(source, str(path), tree=tree)
    return {"seconds": time.perf_counter() - started}


ORDINARY = "\n".join([
    '"""A module of ordinary code: no loader, no trigger token."""',
    "import os",
    "import sys",
    "",
    "",
    "def main(argv):",
    "    for path in argv:",
    "        print(os.path.abspath(path), os.path.getsize(path))",
    "    return 0",
    "",
    "",
    'if __name__ == "__main__":',
    "    sys.exit(main(sys.argv[1:]))",
    "",
])


def startup(repeats: int) -> Dict[int, Dict[str, float]]:
    """flake8 on 1 and on 3 ordinary files, without and with the plugin installed: medians (s)."""
    import tempfile

    out: Dict[int, Dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        files = []
        for index in range(3):
            path = Path(directory) / f"module_{index}.py"
            path.write_text(ORDINARY)
            files.append(path)
        for count in (1, 3):
            base = [sys.executable, str(HERE / "run_flake8.py")]
            args = ["--", "--isolated", *map(str, files[:count])]
            configs = {"alone": [*base, "--without", "flake8-dataloader", *args], "with plugin": [*base, *args]}
            runs = alternated(configs, repeats, Path(directory), verbose=False)
            out[count] = {name: statistics.median(t for t, _ in values) for name, values in runs.items()}
    return out


def print_startup(repeats: int) -> None:
    rows = startup(repeats)
    print(f"\n## Start-up: flake8 on ordinary files (no loader), alternated, medians of {repeats}")
    print("| files | flake8 alone (s) | with flake8-dataloader (s) | ratio (target <= 1.05x) |\n|---|---|---|---|")
    for count, row in rows.items():
        print(f"| {count} | {row['alone']:.3f} | {row['with plugin']:.3f} | {row['with plugin'] / row['alone']:.2f}x |")


def make_torchfix_venv(target: Path) -> str:
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    python = str(target / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "torchfix", "flake8"], check=True)
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path, help="corpus roots (default: stdlib and torch)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the flake8 comparison (default 1)")
    parser.add_argument("--torchfix-python", help="python of a virtual environment with torchfix and flake8")
    parser.add_argument("--make-torchfix-venv", type=Path, metavar="DIR", help="create that environment first")
    parser.add_argument("--skip-flake8", action="store_true", help="only the plugin vs parse comparison")
    parser.add_argument("--sample", type=int, metavar="N", help="a fixed random sample of N corpus files")
    parser.add_argument("--jobs", type=int, default=1, help="flake8 -j for the corpus comparison (default 1)")
    parser.add_argument("--startup-repeats", type=int, default=9, help="rounds of the start-up comparison (default 9)")
    parser.add_argument("--startup-only", action="store_true", help="only the start-up comparison")
    parser.add_argument("--skip-projects", action="store_true", help="no project-tree table (follow imports on/off)")
    args = parser.parse_args()

    print_startup(args.startup_repeats)
    if args.startup_only:
        return 0
    if not args.skip_projects:
        from project_tree import print_table

        print("\n## Whole project trees, --dataloader-follow-imports on vs off")
        print_table(max(args.repeats, 5))

    files = corpus_files(args.roots or corpus_roots())
    if args.sample:
        import random

        random.Random(0).shuffle(files)
        files = sorted(files[: args.sample])
    loader_files = [p for p in files if "DataLoader" in p.read_text(encoding="utf-8", errors="replace")]
    loader_files += sorted((ROOT / "fixtures").rglob("*.py"))
    torchfix = args.torchfix_python
    if args.make_torchfix_venv:
        torchfix = make_torchfix_venv(args.make_torchfix_venv)
    print(f"corpus: {len(files)} files; loader-heavy: {len(loader_files)} files", file=sys.stderr)

    heavy = plugin_vs_parse(loader_files, max(args.repeats, 3))
    print("\n## Plugin alone on loader-heavy files vs bare libcst.parse_module")
    print(f"{heavy['files']} files, {heavy['lines']} lines, CPU s, best of rounds: parse {heavy['parse_s']:.2f} s; "
          f"the plugin's parse and one traversal {heavy['traversal_s']:.2f} s "
          f"({heavy['traversal_s'] / heavy['parse_s']:.2f}x: the floor of this design); "
          f"plugin {heavy['plugin_s']:.2f} s ({heavy['plugin_ms_per_file']:.1f} ms/file, "
          f"{heavy['plugin_ms_per_kloc']:.1f} ms/1000 lines), {heavy['plugin_s'] / heavy['parse_s']:.2f}x")
    if args.skip_flake8:
        return 0
    direct = plugin_over_corpus(files)
    results = compare_flake8(files, args.repeats, torchfix, args.jobs)
    print(f"\n## flake8 on {len(files)} files (-j{args.jobs}, medians of {args.repeats})")
    print("| configuration | wall (s) | peak RSS (MiB) |\n|---|---|---|")
    for name, row in results.items():
        print(f"| {name} | {row['median_s']:.1f} | {row['peak_rss_mib']:.0f} |")
    base, ours = results["flake8 alone"], results["flake8 + flake8-dataloader"]
    overhead = ours["median_s"] - base["median_s"]
    print(f"\nplugin overhead, difference of wall times: {overhead:+.2f} s = "
          f"{100 * overhead / base['median_s']:+.1f}% of flake8 (ratio {ours['median_s'] / base['median_s']:.3f}x, "
          f"target <= 1.03x); "
          f"memory {100 * (ours['peak_rss_mib'] / base['peak_rss_mib'] - 1):+.1f}% (target <= 10%)")
    print(f"plugin overhead, its own time over the corpus on one core: {direct['seconds']:.2f} s = "
          f"{100 * direct['seconds'] / (args.jobs * base['median_s']):.2f}% of flake8's CPU time (-j{args.jobs})")
    if torchfix:
        tf = results["flake8 + TorchFix"]["median_s"] - results["flake8 alone (TorchFix venv)"]["median_s"]
        # A wall-time difference within noise can be negative: compare with the larger of the two measures.
        ours_s = max(overhead, direct["seconds"])
        print(f"TorchFix overhead: {tf:+.2f} s; ours ({ours_s:.2f} s) is {tf / ours_s:.0f}x less (target >= 10x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
