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
import warnings
from typing import Dict, List, Optional

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# What the runtime extra brings; each missing one is a one-line hint, never a traceback.
REQUIRED_MODULES = ("numpy", "torch")  # numpy first: torch warns when it is missing


def install_hint(module: str) -> str:
    from .install import command

    return f"runtime_checks needs {module}: {command('runtime')} (or pip install {module})"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m runtime_checks",
        description="Measure what each flake8-dataloader finding costs on this machine.",
    )
    parser.add_argument("--rule", action="append", metavar="DLnnn", help="only scenarios of this rule (repeatable)")
    parser.add_argument("--all", action="store_true",
                        help="with --dataset or --loader: run every scenario too (without it they run alone)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: the whole CPU run in under a minute on 2 cores (noisier numbers)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where tensors live: auto (CUDA when present, the default), cpu or cuda")
    parser.add_argument("--workers", type=_positive, default=2, metavar="N", help="worker processes (default 2)")
    parser.add_argument("--epochs", type=_at_least_two, metavar="N",
                        help="epochs of the timing scenarios, at least 2 (medians are over epochs 2..N)")
    parser.add_argument("--start-method", choices=("fork", "spawn", "forkserver"),
                        help="multiprocessing context of the loaders (default: the platform's)")
    parser.add_argument("--dataset", metavar="MODULE:FACTORY",
                        help="also time your own dataset, persistent vs not, in a loader of the tool's (batch size "
                             "32, --workers); FACTORY is called with no arguments and returns the dataset")
    parser.add_argument("--loader", metavar="MODULE:FACTORY",
                        help="also time your own DataLoader as training builds it, and with persistent_workers "
                             "flipped, and check this machine for it (shared memory, CPUs, open files); FACTORY is "
                             "called with no arguments and returns the DataLoader; runs alone, with the machine "
                             "checks, unless --rule or --all asks for scenarios too")
    parser.add_argument("--tune", action="store_true",
                        help="with --loader: measure your loader at num_workers 0, 1, 2, 4, ... up to the usable "
                             "CPUs (persistent), then prefetch_factor 2 and 4 at the best count (and pin_memory on "
                             "CUDA), and recommend the smallest setting within noise of the best")
    parser.add_argument("--budget", type=_positive_float, default=60.0, metavar="SECONDS",
                        help="--tune's time for all settings together (default 60)")
    parser.add_argument("--step", metavar="MODULE:FN",
                        help="with --tune: your training step, called with each batch, for the share of time it "
                             "waits for data (instead of --step-ms)")
    parser.add_argument("--run-epochs", type=_positive, default=100, metavar="N",
                        help="epochs of your training run, for what --loader's saving adds up to (default 100)")
    parser.add_argument("--loader-batches", type=_positive, metavar="N",
                        help="at most N batches per epoch of --loader (default: whole epochs)")
    parser.add_argument("--step-ms", type=_non_negative_float, default=0.0, metavar="MS",
                        help="a stand-in training step after each batch of --loader (on CUDA the GPU is kept busy "
                             "that long; default 0: the copy to the device only)")
    parser.add_argument("--shm-path", default="/dev/shm", metavar="DIR",
                        help="where workers place shared tensors, for --loader's shared-memory check "
                             "(default /dev/shm)")
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


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return value


_at_least_two = _at_least(2)


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def option_problem(args: argparse.Namespace) -> Optional[str]:
    """Options that need one another, or exclude one another."""
    if args.tune and not args.loader:
        return "--tune needs --loader MODULE:FACTORY (the loader to tune)"
    if args.step and not args.tune:
        return "--step needs --tune (with --loader alone, use --step-ms)"
    if args.step and args.step_ms:
        return "--step and --step-ms: give one (your step, or a stand-in of MS milliseconds)"
    return None


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
    from .machine_checks import shm_problem

    problem = option_problem(args) or output_problem(args) or shm_problem(args.shm_path)
    if problem is not None:
        return _fail(problem)
    from .catalogue import listing

    # The catalogue is read from the scenarios' source: --list and --rule need no torch.
    listed = listing()
    known = sorted({code for rules, _ in listed for code in rules})
    wanted = {r.upper() for r in args.rule or ()}
    if args.rule:
        unknown = [r for r in args.rule if r.upper() not in known]
        if unknown:
            return _fail(f"unknown rule {', '.join(unknown)} (scenarios exist for {', '.join(known)})")
    if args.list:
        for rules, name in listed:
            if not wanted or wanted & set(rules):
                print(f"{','.join(rules):<12} {name}")
        return EXIT_OK
    for module in REQUIRED_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            print(install_hint(module), file=sys.stderr)
            return EXIT_USAGE
    from .measure import run_forked
    from .scenarios import Options, Scenario, registry
    from .report import STATUS_MARK
    from .scenarios.common import progress_printed

    scenarios = registry()
    if wanted:
        scenarios = [s for s in scenarios if wanted & set(s.rules)]
    elif (args.loader or args.dataset) and not args.all:
        scenarios = []  # the user's own loader or dataset alone: what they asked about, in seconds
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from .install import command

            return _fail(f"--plot needs matplotlib: {command('plot')}")
        if not args.loader and not any(s.name == "epoch-timing" for s in scenarios):
            print("runtime_checks: note: --plot draws the epoch timing (DL401/DL402), which the selected rules "
                  "do not run: no plot will be written", file=sys.stderr)

    probe = run_forked(lambda: _probe(args), 120)
    if probe.get("status") != "ok":
        return _fail(probe.get("summary", "could not inspect this machine"))
    if args.device == "cuda" and not probe["cuda"]:
        return _fail("--device cuda: CUDA is not available on this machine")
    device = "cuda" if args.device == "cuda" or (args.device == "auto" and probe["cuda"]) else "cpu"
    if probe.get("spec_error"):
        return _fail(probe["spec_error"])
    machine = run_forked(lambda: {"status": "ok", "info": _machine(device)}, 120).get("info", {})

    opts = Options(quick=args.quick, device=device, workers=args.workers, epochs=args.epochs,
                   start_method=args.start_method, dataset=args.dataset, loader=args.loader,
                   run_epochs=args.run_epochs, loader_batches=args.loader_batches, step_ms=args.step_ms,
                   shm_path=args.shm_path, progress=args.json != "-")
    if args.dataset:
        from .scenarios.user_dataset import SCENARIO

        scenarios.append(SCENARIO)
    if args.tune:
        from .tune.run import NAME, tune

        scenarios.append(Scenario(NAME, ("DL410", "DL402"), lambda o: tune(o, args.budget, args.step),
                                  args.budget * 1.5 + 60))
    elif args.loader:
        from .scenarios import user_loader

        scenarios.append(user_loader.SCENARIO)
    if args.selftest_hang:
        from .workloads import hang

        scenarios.insert(0, Scenario("selftest-hang", ("DL000",), hang, args.selftest_hang))

    print(f"runtime_checks on {device} ({machine.get('device_name', '?')}), torch {machine.get('torch', '?')}, "
          f"{len(scenarios)} scenarios", file=sys.stderr)
    results: List[Dict] = []
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        for index, scenario in enumerate(scenarios, start=1):
            head = f"[{index}/{len(scenarios)}] {','.join(scenario.rules)} {scenario.name}"
            print(f"{head} ...", file=sys.stderr, end="", flush=True)
            progress_printed(reset=True)
            started = time.perf_counter()
            result = run_forked(lambda s=scenario: run_capturing_warnings(s, opts), scenario.timeout)
            result.update(name=scenario.name, rules=list(scenario.rules),
                          seconds=round(time.perf_counter() - started, 3))
            results.append(result)
            # After progress lines the status gets a line of its own, naming the scenario again.
            lead = f"{head}:" if progress_printed() else ""
            print(f"{lead} {STATUS_MARK.get(result['status'], result['status'])} ({result['seconds']:.1f} s)",
                  file=sys.stderr)
            for warned in result.get("warnings", []):
                print(f"  {scenario.name}: {_warning_line(warned)}", file=sys.stderr)
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

    from .scenarios.user_dataset import DatasetSpecError, build_dataset
    from .scenarios.user_loader import build_loader

    out = {"status": "ok", "cuda": bool(torch.cuda.is_available())}
    try:
        warnings.simplefilter("ignore")  # the scenario that builds it again reports torch's advice
        if args.dataset:
            build_dataset(args.dataset)
        if args.loader:
            build_loader(args.loader)
        if args.step:
            from .tune.run import load_step

            load_step(args.step)
    except DatasetSpecError as exc:
        out["spec_error"] = str(exc)
    return out


def run_capturing_warnings(scenario, opts) -> Dict:
    """Run a scenario with its warnings (torch's worker-count advice...) counted, not printed mid-line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = scenario.run(opts)
    counts: Dict[str, int] = {}
    for warning in caught:
        lines = str(warning.message).strip().splitlines() or [""]
        text = f"{warning.category.__name__}: {lines[0]}"
        counts[text] = counts.get(text, 0) + 1
    result["warnings"] = [{"text": text, "count": count} for text, count in counts.items()]
    return result


def _warning_line(warned: Dict, width: int = 150) -> str:
    text = warned["text"] if len(warned["text"]) <= width else warned["text"][:width - 3] + "..."
    return f"warned {warned['count']}x: {text}"


def _machine(device: str) -> Dict:
    from .env import machine_info

    return machine_info(device)


def _report(results: List[Dict], machine: Dict, opts, args) -> int:
    from .report import loader_checks, plot, table, timing_table, write_json
    from .scenarios.common import NOT_REPRODUCED

    sys.stderr.flush()  # every progress line is out before the table starts
    # With --json -, stdout carries the JSON document alone: the tables go to stderr.
    tables = sys.stderr if args.json == "-" else sys.stdout
    # The terminal's width; piped into a file or another program, lines are not wrapped.
    print(table(results, shutil.get_terminal_size(fallback=(10_000, 24)).columns), file=tables)
    timing = next((r for r in results if r["name"] == "epoch-timing" and r.get("metrics", {}).get("summary")), None)
    loader = next((r for r in results if r["name"] == "user-loader" and r.get("metrics", {}).get("summary")), None)
    tuned = next((r for r in results if r["name"] == "tune" and r.get("metrics", {}).get("rows")), None)
    if timing is not None:
        print(file=tables)
        print(timing_table(timing), file=tables)
    if loader is not None:
        print(file=tables)
        print(loader_checks(loader, opts.loader), file=tables)
    if tuned is not None:
        from .tune import output

        print(file=tables)
        print(output.table(tuned, opts.loader), file=tables)
    plots = {}
    if args.plot:
        stem, ext = os.path.splitext(args.plot)
        if timing is not None:
            plots[args.plot] = timing
        if loader is not None:
            plots[f"{stem}-loader{ext}" if timing is not None else args.plot] = loader
    payload = {
        "schema": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "command": "python -m runtime_checks " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "machine": machine,
        "options": {k: v for k, v in vars(opts).items()},
        "scenarios": [{k: v for k, v in r.items() if k != "traceback"} for r in results],
    }
    if args.plot and tuned is not None:
        plots[f"{stem}-tune{ext}" if plots else args.plot] = tuned
    if plots:
        payload["plot"] = os.path.basename(args.plot)
        payload["plots"] = [os.path.basename(path) for path in plots]
    if args.json:
        write_json(payload, args.json)
    for path, result in plots.items():
        if result is tuned:
            from .tune import output

            output.plot(result, path, opts.loader)
        else:
            plot(result, path, quick=opts.quick)
        print(f"plot written to {path}", file=sys.stderr)
    for r in results:
        if r["status"] == "error" and r.get("traceback"):
            print(f"--- {r['name']} ---\n{r['traceback']}", file=sys.stderr)
    missed = [r["name"] for r in results if r["status"] == NOT_REPRODUCED]
    if missed:
        print(f"runtime_checks: {len(missed)} scenario(s) ran but their bad pattern did not show in this run "
              f"(not reproduced; exit status unchanged): {', '.join(missed)}", file=sys.stderr)
    bad = [r["name"] for r in results if r["status"] in ("error", "timeout", "failed")]
    if bad:
        print(f"runtime_checks: {len(bad)} scenario(s) did not pass: {', '.join(bad)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # probing CUDA must not break fork
    sys.exit(main())
