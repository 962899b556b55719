"""Wall time of the generated shapes of tests/test_linear.py at n and 2n (the tests count calls instead).

    python benchmarks/linear_shapes.py            # n = 150 (the fix command: 100), best of 3
    python benchmarks/linear_shapes.py --n 300

Also the ResNet-style forward at 10 -> 20 -> 40 -> 80 conditional re-bindings, and the model zoo
fixture (residual, plain and dense networks in one 290-line file), each linted alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flake8_dataloader.autofix import fix_source  # noqa: E402
from flake8_dataloader.engine import check_source  # noqa: E402
from tests.test_linear import SHAPES, many_findings, resnet_forward  # noqa: E402

ZOO = Path(__file__).resolve().parent.parent / "fixtures" / "flow_model_zoo.py"


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
    for k in (10, 20, 40):
        small, large = resnet_forward(k), resnet_forward(2 * k)
        at_n = best_of(args.repeats, lambda: check_source(small))
        at_2n = best_of(args.repeats, lambda: check_source(large))
        print(f"| resnet_forward (if blocks) | {k} | {at_n * 1000:.1f} ms | {at_2n * 1000:.1f} ms"
              f" | {at_2n / at_n:.2f} |")
    zoo = ZOO.read_text(encoding="utf-8")
    zoo_time = best_of(args.repeats, lambda: check_source(zoo))
    print(f"\nmodel zoo fixture ({zoo.count(chr(10))} lines): {zoo_time * 1000:.1f} ms")


if __name__ == "__main__":
    main()
