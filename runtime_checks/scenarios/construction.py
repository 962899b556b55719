"""DL101-DL105: arguments PyTorch rejects, with the exact exception, next to the fixed call."""

from __future__ import annotations

import gc
import sys

import torch.multiprocessing
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from ..workloads import Tensors, Unsharded
from .base import Options, Scenario
from .common import first_text, outcome, verdict


def _fixed_runs(opts: Options, **kwargs) -> dict:
    loader = DataLoader(Tensors(16), batch_size=4, multiprocessing_context=opts.start_method, **kwargs)
    return outcome(lambda: next(iter(loader)))


def persistent_without_workers(opts: Options) -> dict:
    bad = outcome(lambda: DataLoader(Tensors(16), persistent_workers=True))  # noqa: DL101 - the bad pattern
    fixed = _fixed_runs(opts, num_workers=opts.workers, persistent_workers=True)
    ok = bad.get("raised", "").startswith("ValueError: persistent_workers option needs num_workers > 0")
    return verdict(ok and fixed.get("ran", False), f"bad: {first_text(bad.get('raised'))}; fixed: ran",
                   {"bad": bad, "fixed": fixed})


def prefetch_without_workers(opts: Options) -> dict:
    bad = outcome(lambda: DataLoader(Tensors(16), num_workers=0, prefetch_factor=2))  # noqa: DL102 - the bad pattern
    fixed = outcome(lambda: next(iter(DataLoader(Tensors(16), num_workers=0, prefetch_factor=None))))
    ok = bad.get("raised", "").startswith("ValueError: prefetch_factor option could only be specified")
    return verdict(ok and fixed.get("ran", False), f"bad: {first_text(bad.get('raised'))}; fixed: ran",
                   {"bad": bad, "fixed": fixed})


def _iter_quietly(loader: DataLoader) -> None:
    """iter() whose iterator fails in its __init__: PyTorch's half-built iterator then raises in
    __del__ (no `_shutdown` yet); it is collected here with that noise silenced."""
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        try:
            iter(loader)
        except Exception as exc:
            error = exc.with_traceback(None)  # the traceback's frames hold the half-built iterator
        else:
            return
        gc.collect()
    finally:
        sys.unraisablehook = previous
    raise error


def rejected_combinations(opts: Options) -> dict:
    ds = Tensors(16)
    batches = BatchSampler(SequentialSampler(ds), batch_size=4, drop_last=False)
    # Each entry is a rejected combination on purpose.
    cases = {
        "num_workers=-1": lambda: DataLoader(ds, num_workers=-1),  # noqa: DL103
        "timeout=-1": lambda: DataLoader(ds, timeout=-1),  # noqa: DL103
        "sampler+shuffle": lambda: DataLoader(ds, sampler=RandomSampler(ds), shuffle=True),  # noqa: DL103
        "batch_sampler+batch_size": lambda: DataLoader(ds, batch_size=4, batch_sampler=batches),  # noqa: DL103
        "batch_size=None+drop_last": lambda: DataLoader(ds, batch_size=None, drop_last=True),  # noqa: DL103
        "context without workers": lambda: DataLoader(ds, multiprocessing_context="spawn"),  # noqa: DL103
        "IterableDataset+shuffle": lambda: DataLoader(Unsharded(), shuffle=True),  # noqa: DL103
        "timeout>0 without workers": lambda: next(iter(DataLoader(ds, timeout=5))),  # noqa: DL103
        # Rule book v5: values the constructor (or the first iter()) rejects.
        "batch_size=0": lambda: DataLoader(ds, batch_size=0),  # noqa: DL103
        "batch_size=8.0": lambda: DataLoader(ds, batch_size=16 / 2),  # noqa: DL103
        "batch_size=True": lambda: DataLoader(ds, batch_size=True),  # noqa: DL103
        "drop_last=1": lambda: DataLoader(ds, drop_last=1),  # noqa: DL103
        "drop_last=None": lambda: DataLoader(ds, drop_last=None),  # noqa: DL103
        "context 'Spawn'": lambda: DataLoader(ds, num_workers=2, multiprocessing_context="Spawn"),  # noqa: DL103
        "context module": lambda: DataLoader(ds, num_workers=2,
                                             multiprocessing_context=torch.multiprocessing),  # noqa: DL103
        "prefetch_factor=-1": lambda: DataLoader(ds, num_workers=2, prefetch_factor=-1),  # noqa: DL103
        "prefetch_factor=0": lambda: _iter_quietly(DataLoader(ds, num_workers=2, prefetch_factor=0)),  # noqa: DL103
    }
    results = {name: outcome(action) for name, action in cases.items()}
    expected_types = {name: "ValueError" for name in cases}
    expected_types.update({"timeout>0 without workers": "AssertionError", "prefetch_factor=0": "AssertionError",
                           "context module": "TypeError"})
    ok = all(results[n].get("raised", "").startswith(expected_types[n]) for n in cases)
    raised = sum("raised" in r for r in results.values())
    return verdict(ok, f"{raised}/{len(cases)} combinations raised as documented", results)


def attribute_after_construction(opts: Options) -> dict:
    """DL105: each locked attribute raises on a built loader; the settable ones do not."""
    locked = {"dataset": Tensors(8), "batch_size": 8, "sampler": None, "batch_sampler": None,
              "drop_last": True, "persistent_workers": True}
    results = {}
    for name, value in locked.items():
        loader = DataLoader(Tensors(16), batch_size=4)
        results[name] = outcome(lambda: setattr(loader, name, value))  # noqa: B023 - run at once
    settable = DataLoader(Tensors(16), batch_size=4)
    fixed = outcome(lambda: (setattr(settable, "num_workers", 0), setattr(settable, "pin_memory", False),
                             next(iter(settable))))
    raised = sum(r.get("raised", "").startswith(f"ValueError: {n} attribute should not be set")
                 for n, r in results.items())
    ok = raised == len(locked) and fixed.get("ran", False)
    return verdict(ok, f"{raised}/{len(locked)} attributes raised; num_workers and pin_memory set, loader ran",
                   {**results, "settable": fixed})


def crash_with_zero_workers(opts: Options) -> dict:
    workers = 0  # what `--workers 0` gives
    bad = outcome(lambda: DataLoader(Tensors(16), num_workers=workers, persistent_workers=True))  # noqa: DL101
    fixed = outcome(lambda: next(iter(DataLoader(Tensors(16), num_workers=workers, persistent_workers=workers > 0))))
    ok = bad.get("raised", "").startswith("ValueError") and fixed.get("ran", False)
    return verdict(ok, f"--workers 0: {first_text(bad.get('raised'))}; guarded: ran", {"bad": bad, "fixed": fixed})


SCENARIOS = [
    Scenario("persistent-without-workers", ("DL101",), persistent_without_workers, 60),
    Scenario("prefetch-without-workers", ("DL102",), prefetch_without_workers, 60),
    Scenario("rejected-combinations", ("DL103",), rejected_combinations, 60),
    Scenario("crash-with-zero-workers", ("DL104",), crash_with_zero_workers, 60),
    Scenario("attribute-after-construction", ("DL105",), attribute_after_construction, 60),
]
