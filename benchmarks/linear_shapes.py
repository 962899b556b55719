"""Wall time of the generated shapes of tests/test_linear.py at n and 2n (the tests count calls instead).

    python benchmarks/linear_shapes.py            # n = 150 (the fix command: 100), best of 3
    python benchmarks/linear_shapes.py --n 300
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flake8_dataloader.autofix import fix_source  # noqa: E402
from flake8_dataloader.engine import check_source  # noqa: E402
from tests.test_linear import SHAPES, many_findings  # noqa: E402


def best_of(repeats: int, work) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = [(name, shape, check_source, args.n) for name, shape in SHAPES.items()]
    rows.append(("fix: many_findings", many_findings, fix_source, max(1, args.n * 2 // 3)))
    print("| shape | n | time at n | time at 2n | ratio |\n|---|---|---|---|---|")
    for name, shape, work, n in rows:
        small, large = shape(n), shape(2 * n)
        at_n = best_of(args.repeats, lambda: work(small))
        at_2n = best_of(args.repeats, lambda: work(large))
        print(f"| {name} | {n} | {at_n * 1000:.1f} ms | {at_2n * 1000:.1f} ms | {at_2n / at_n:.2f} |")


if __name__ == "__main__":
    main()
