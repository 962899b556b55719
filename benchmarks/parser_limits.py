"""Find, by bisection, the chain lengths at which a bare `libcst.parse_module` crashes or stalls.

Each probe parses one generated statement in a fresh interpreter on its main thread (the
default 8 MiB stack), as a plugin without flake8_dataloader.syntax.parsing's guards would. Prints, per
shape, the longest chain that parsed and the shortest that crashed (SIGSEGV), or the length at
which one parse took longer than --stall seconds. Documented results: flake8_dataloader/syntax/parsing.py.

    python benchmarks/parser_limits.py            # every shape (about 15 minutes on 2 cores)
    python benchmarks/parser_limits.py and elif   # some of them
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from typing import Callable, Dict

SHAPES: Dict[str, Callable[[int], str]] = {
    "and": lambda n: "x = " + " and ".join(f"a{i}" for i in range(n)),
    "plus": lambda n: "x = " + " + ".join("a" for _ in range(n)),
    "compare": lambda n: "x = " + " < ".join("a" for _ in range(n)),
    "attribute": lambda n: "x = a" + ".b" * n,
    "call": lambda n: "x = f" + "()" * n,
    "subscript": lambda n: "x = a" + "[0]" * n,
    "unary": lambda n: "x = " + "-" * n + "a",
    "not": lambda n: "x = " + "not " * n + "a",
    "ifexp": lambda n: "x = " + " if c else ".join("a" for _ in range(n)),
    "lambda": lambda n: "x = " + "lambda: " * n + "a",
    "strings": lambda n: "x = " + " ".join("'a'" for _ in range(n)),
    "elif": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
}
PROBE = "import libcst, sys\nlibcst.parse_module(open(sys.argv[1]).read())\n"


def outcome(shape: str, n: int, stall: float) -> str:
    """'ok', 'error' (an exception), 'crash' (killed by a signal) or 'stall'."""
    with tempfile.NamedTemporaryFile("w", suffix=".py") as handle:
        handle.write(SHAPES[shape](n) + "\n")
        handle.flush()
        try:
            result = subprocess.run([sys.executable, "-c", PROBE, handle.name], capture_output=True, timeout=stall)
        except subprocess.TimeoutExpired:
            return "stall"
    if result.returncode < 0:
        return "crash"
    return "ok" if result.returncode == 0 else "error"


def limit(shape: str, stall: float, ceiling: int) -> str:
    n, last_ok = 100, 0
    while n <= ceiling:
        result = outcome(shape, n, stall)
        if result in ("crash", "stall"):
            break
        last_ok, n = n, n * 2
    else:
        return f"{shape}: no crash or stall up to {last_ok}"
    if result == "stall":
        return f"{shape}: {n} took longer than {stall:g} s ({last_ok} did not)"
    low, high = last_ok, n
    while high - low > max(1, low // 50):
        middle = (low + high) // 2
        if outcome(shape, middle, stall) == "crash":
            high = middle
        else:
            low = middle
    return f"{shape}: {low} parsed, {high} crashed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", choices=[[], *SHAPES], default=[])
    parser.add_argument("--stall", type=float, default=20.0, help="seconds one parse may take (default 20)")
    parser.add_argument("--ceiling", type=int, default=500_000, help="longest chain tried (default 500000)")
    args = parser.parse_args()
    for shape in args.shapes or SHAPES:
        print(limit(shape, args.stall, args.ceiling), flush=True)


if __name__ == "__main__":
    main()
