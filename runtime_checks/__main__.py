"""python -m runtime_checks: run each rule's bad pattern next to its fix and report what it costs."""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import shlex
import shutil
import signal
import sys
import time
from typing import Dict, List, Optional

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# What the runtime extra brings; each missing one is a one-line hint, never a traceback.
REQUIRED_MODULES = ("numpy", "torch")  # numpy first: torch warns when it is missing


def install_hint(module: str) -> str:
    return f"runtime_checks needs {module}: pip install 'flake8-dataloader[runtime]' (or pip install {module})"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m runtime_checks",
        description="Measure what each flake8-dataloader finding costs on this machine.",
    )
    parser.add_argument("--rule", action="append", metavar="DLnnn", help="only scenarios of this rule (repeatable)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: the whole CPU run in under a minute on 2 cores (noisier numbers)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where tensors live: auto (CUDA when present, the default), cpu or cuda")
    parser.add_argument("--workers", type=_positive, default=2, metavar="N", help="worker processes (default 2)")
    parser.add_argument("--epochs", type=_at_least_two, metavar="N",
                        help="epochs of the timing scenarios, at least 2 (medians are over epochs 2..N)")
    parser.add_argument("--start-method", choices=("fork", "spawn", "forkserver"),
                        help="multiprocessing context of the loaders (default: the platform's)")
    parser.add_argument("--dataset", metavar="MODULE:FACTORY", help="also time your own dataset, persistent vs not")
    parser.add_argument("--json", metavar="PATH", help="write results as JSON to PATH ('-' for stdout)")
    parser.add_argument("--plot", metavar="PATH", help="write the epoch-timing plot (PNG; needs matplotlib)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    # A scenario that hangs for the tests (SECONDS until its timeout, default 3).
    parser.add_argument("--selftest-hang", nargs="?", type=float, const=3.0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        return value

    return parse


_positive = _at_least(1)
_at_least_two = _at_least(2)
PLOT_FORMATS = (".png", ".svg", ".pdf")


def output_problem(args: argparse.Namespace) -> Optional[str]:
    """Why --json or --plot cannot be written, checked before any scenario runs."""
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is None or path == "-" and option == "--json":
            continue
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            return f"{option} {path}: is a directory"
        if not os.path.isdir(directory):
            return f"{option} {path}: no directory {directory}"
        if not os.access(directory, os.W_OK):
            return f"{option} {path}: {directory} is not writable"
    if args.plot and os.path.splitext(args.plot)[1].lower() not in PLOT_FORMATS:
        return f"--plot {args.plot}: the file name must end in {', '.join(PLOT_FORMATS)}"
    return None


class Terminated(Exception):
    """SIGTERM (what CI runners and `timeout` send), handled like Ctrl-C."""


def _terminate(signum, frame) -> None:
    raise Terminated


def _fail(message: str) -> int:
    print(f"runtime_checks: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    problem = output_problem(args)
    if problem is not None:
        return _fail(problem)
    for module in REQUIRED_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            print(install_hint(module), file=sys.stderr)
            return EXIT_USAGE
    from .measure import run_forked
    from .scenarios import Options, Scenario, registry

    scenarios = registry()
    known = sorted({code for s in scenarios for code in s.rules})
    if args.list:
        for scenario in scenarios:
            print(f"{','.join(scenario.rules):<12} {scenario.name}")
        return EXIT_OK
    if args.rule:
        unknown = [r for r in args.rule if r.upper() not in known]
        if unknown:
            return _fail(f"unknown rule {', '.join(unknown)} (scenarios exist for {', '.join(known)})")
        wanted = {r.upper() for r in args.rule}
        scenarios = [s for s in scenarios if wanted & set(s.rules)]
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return _fail("--plot needs matplotlib: pip install 'flake8-dataloader[plot]'")
        if not any(s.name == "epoch-timing" for s in scenarios):
            print("runtime_checks: note: --plot draws the epoch timing (DL401/DL402), which the selected rules "
                  "do not run: no plot will be written", file=sys.stderr)

    probe = run_forked(lambda: _probe(args), 120)
    if probe.get("status") != "ok":
        return _fail(probe.get("summary", "could not inspect this machine"))
    if args.device == "cuda" and not probe["cuda"]:
        return _fail("--device cuda: CUDA is not available on this machine")
    device = "cuda" if args.device == "cuda" or (args.device == "auto" and probe["cuda"]) else "cpu"
    if args.dataset and probe.get("dataset_error"):
        return _fail(probe["dataset_error"])
    machine = run_forked(lambda: {"status": "ok", "info": _machine(device)}, 120).get("info", {})

    opts = Options(quick=args.quick, device=device, workers=args.workers, epochs=args.epochs,
                   start_method=args.start_method, dataset=args.dataset)
    if args.dataset:
        from .scenarios.user_dataset import SCENARIO

        scenarios.append(SCENARIO)
    if args.selftest_hang:
        from .workloads import hang

        scenarios.insert(0, Scenario("selftest-hang", ("DL000",), hang, args.selftest_hang))

    print(f"runtime_checks on {device} ({machine.get('device_name', '?')}), torch {machine.get('torch', '?')}, "
          f"{len(scenarios)} scenarios", file=sys.stderr)
    results: List[Dict] = []
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        for index, scenario in enumerate(scenarios, start=1):
            print(f"[{index}/{len(scenarios)}] {','.join(scenario.rules)} {scenario.name} ...", file=sys.stderr,
                  end="", flush=True)
            started = time.perf_counter()
            result = run_forked(lambda s=scenario: s.run(opts), scenario.timeout)
            result.update(name=scenario.name, rules=list(scenario.rules),
                          seconds=round(time.perf_counter() - started, 3))
            results.append(result)
            print(f" {result['status']} ({result['seconds']:.1f} s)", file=sys.stderr)
    except KeyboardInterrupt:
        print("\nruntime_checks: interrupted; scenario processes stopped", file=sys.stderr)
        return 130
    except Terminated:
        print("\nruntime_checks: terminated; scenario processes stopped", file=sys.stderr)
        return 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    return _report(results, machine, opts, args)


def _probe(args) -> Dict:
    import torch

    out = {"status": "ok", "cuda": bool(torch.cuda.is_available())}
    if args.dataset:
        from .scenarios.user_dataset import DatasetSpecError, build_dataset

        try:
            build_dataset(args.dataset)
        except DatasetSpecError as exc:
            out["dataset_error"] = str(exc)
    return out


def _machine(device: str) -> Dict:
    from .env import machine_info

    return machine_info(device)


def _report(results: List[Dict], machine: Dict, opts, args) -> int:
    from .report import plot, table, timing_table, write_json

    # With --json -, stdout carries the JSON document alone: the tables go to stderr.
    tables = sys.stderr if args.json == "-" else sys.stdout
    # The terminal's width; piped into a file or another program, lines are not wrapped.
    print(table(results, shutil.get_terminal_size(fallback=(10_000, 24)).columns), file=tables)
    timing = next((r for r in results if r["name"] == "epoch-timing" and r["status"] == "ok"), None)
    if timing is not None:
        print(file=tables)
        print(timing_table(timing), file=tables)
    payload = {
        "schema": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "command": "python -m runtime_checks " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "machine": machine,
        "options": {k: v for k, v in vars(opts).items()},
        "scenarios": [{k: v for k, v in r.items() if k != "traceback"} for r in results],
    }
    if args.plot and timing is not None:
        payload["plot"] = os.path.basename(args.plot)
    if args.json:
        write_json(payload, args.json)
    if args.plot and timing is not None:
        plot(timing, args.plot, quick=opts.quick)
        print(f"plot written to {args.plot}", file=sys.stderr)
    for r in results:
        if r["status"] == "error" and r.get("traceback"):
            print(f"--- {r['name']} ---\n{r['traceback']}", file=sys.stderr)
    bad = [r["name"] for r in results if r["status"] in ("error", "timeout", "failed")]
    if bad:
        print(f"runtime_checks: {len(bad)} scenario(s) did not pass: {', '.join(bad)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # probing CUDA must not break fork
    sys.exit(main())
