"""No-crash pass: run the whole analysis (prefilter off) over every Python file under some roots.

    python benchmarks/corpus_check.py                 # the standard library and the installed torch
    python benchmarks/corpus_check.py path/to/repo --sample 200
    python benchmarks/corpus_check.py --fix           # the fix command's engine instead

Internal errors are counted and listed (they are bugs); files LibCST cannot parse and files
nested beyond Python's stack are counted apart (the plugin skips them by design).
With --fix, each file goes through the fix command's engine; a fix whose result does not
compile (where the input did), or that a second run would change again, counts as "bad-fix".
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sysconfig
import time
import traceback
from pathlib import Path
from typing import Callable, List, Tuple


def default_roots() -> List[Path]:
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec and spec.origin:
            roots.append(Path(spec.origin).parent)
    except ImportError:
        pass
    return roots


def _outcome(path: str, work: Callable[[str], Tuple[str, str]]) -> Tuple[str, str, str, float]:
    """Run ``work`` on the file's text; parse failures and our own crashes are outcomes too."""
    from flake8_dataloader.engine import ParseFailure

    started = time.perf_counter()
    try:
        source = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return path, "unreadable", str(exc), 0.0
    try:
        outcome, detail = work(source)
    except ParseFailure as exc:
        outcome, detail = "parse-failure", str(exc)[:120]
    except RecursionError:
        outcome, detail = "too-deep", ""
    except Exception as exc:  # the point of this script: count our bugs
        outcome, detail = "crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    return path, outcome, detail, time.perf_counter() - started


def _lint(source: str) -> Tuple[str, str]:
    from flake8_dataloader.engine import analyse

    return "ok", str(len(analyse(source, use_prefilter=False)))


def _fix(source: str) -> Tuple[str, str]:
    from flake8_dataloader.autofix import fix_source
    from flake8_dataloader.autofix.fixer import compiles

    result = fix_source(source)
    if not result.changed:
        return "ok", "0"
    if compiles(source) and not compiles(result.source):
        return "bad-fix", "the fixed text does not compile"
    if fix_source(result.source).changed:
        return "bad-fix", "a second run changes it again"
    return "fixed", str(len(result.fixed))


def check(path: str) -> Tuple[str, str, str, float]:
    return _outcome(path, _lint)


def check_fix(path: str) -> Tuple[str, str, str, float]:
    return _outcome(path, _fix)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--sample", type=int, help="check a random sample of this many files")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--fix", action="store_true", help="check the fix command's engine instead of the linter")
    args = parser.parse_args()
    files = sorted(
        str(p) for root in (args.roots or default_roots()) for p in root.rglob("*.py")
        if "site-packages" not in p.relative_to(root).parts
    )
    if args.sample:
        random.Random(0).shuffle(files)
        files = files[: args.sample]
    started = time.perf_counter()
    counts = {}
    crashes = []
    findings = 0
    with multiprocessing.Pool(args.jobs) as pool:
        for path, outcome, detail, _ in pool.imap_unordered(check_fix if args.fix else check, files, chunksize=8):
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome in ("crash", "bad-fix"):
                crashes.append((path, detail))
            elif outcome in ("ok", "fixed"):
                findings += int(detail)
    elapsed = time.perf_counter() - started
    print(f"{len(files)} files in {elapsed:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"{'fixes applied' if args.fix else 'DL findings'} in the corpus: {findings}")
    for path, detail in crashes:
        print(f"{'BAD' if args.fix else 'CRASH'} {path}\n{detail}")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
