"""Measure each setting of the grid within one time budget: whole epochs after the first, as training
sees them (the step after each batch included), with /dev/shm and the workers' memory sampled beside.

The budget is split across the settings still to run, so time one leaves goes to the next. A short
calibration of the loader as given first decides whether whole epochs fit; when they do not, every
setting's epochs stop at the same number of batches (said in the output).
"""

from __future__ import annotations

import gc
import inspect
import time
from typing import Any, Callable, Dict, List, Optional

from torch.utils.data import DataLoader

from ..machine_checks import checks, shm_size, shm_used, usable_cpus
from ..measure import Clock
from ..stats import summarize
from ..timeline import Sampler
from ..scenarios import Options
from ..scenarios.common import progress
from ..scenarios.user_dataset import DatasetSpecError, load_callable
from ..scenarios.user_loader import Step, build_loader, set_epoch, tensors
from . import advice, grid
from .probes import available_memory, children, workers_memory

NAME = "tune"
CALIBRATION_SHARE = 0.1  # of the budget, at most, to learn how long an epoch of the given loader takes
EPOCHS_PER_SETTING = 5  # what a slice aims to hold: a first epoch apart and four to compare


def load_step(spec: str) -> Callable:
    """--step MODULE:FN: the user's training step, called with one batch."""
    step = load_callable(spec, "--step", "mypkg.train:train_step", "FN")
    try:
        inspect.signature(step).bind(None)
    except TypeError:
        raise DatasetSpecError(f"--step: {spec} must take one argument, the batch") from None
    except ValueError:  # no signature to read: calling it will tell
        pass
    return step


class Run:
    """One setting's loader iterated epoch after epoch until its deadline."""

    def __init__(self, loader: DataLoader, step: Callable, clock: Clock, cap: Optional[int]):
        self.loader, self.step, self.clock, self.cap = loader, step, clock, cap
        self.batch_bytes, self.tensors = 0, 0
        self.known = frozenset(children())  # before any worker of this loader: see workers_memory

    def epoch(self, number: int, deadline: float) -> Dict:
        set_epoch(self.loader, number)
        start = self.clock()
        iterator = iter(self.loader)
        before, waiting, first, batches, cut = start, 0.0, 0.0, 0, False
        for batch in iterator:
            got = self.clock()
            waiting += got - before
            if batches == 0:
                first = got - start
                parts = tensors(batch)
                self.batch_bytes = max(self.batch_bytes, sum(t.numel() * t.element_size() for t in parts))
                self.tensors = max(self.tensors, len(parts))
            self.step(batch)
            batches += 1
            before = self.clock()
            if self.cap and batches >= self.cap:
                break
            if before > deadline:
                cut = True
                break
        end = self.clock()
        del iterator
        return {"epoch": number + 1, "epoch_s": end - start, "first_batch_s": first, "data_wait_s": waiting,
                "batches": batches, "whole": not cut}

    def close(self) -> None:
        """Persistent workers go now, not at the next setting's expense."""
        iterator = getattr(self.loader, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
        del self.loader  # the last reference: a loader's workers go with its iterator
        gc.collect()
        quiet = time.monotonic() + 5
        while set(children()) - self.known and time.monotonic() < quiet:
            time.sleep(0.02)


MIN_EPOCHS = 3  # epoch 1 apart, two to give an IQR


def _next_epoch(record: Dict) -> float:
    """How long the next epoch should take: epoch 1's worker start-up does not come again."""
    return record["epoch_s"] - (record["first_batch_s"] if record["epoch"] == 1 else 0.0)


def measure(loader: DataLoader, setting: grid.Setting, step: Callable, opts: Options, seconds: float,
            cap: Optional[int], shm_path: str, hard: Optional[float] = None) -> Dict:
    """Epochs of ``setting`` for ``seconds``: epoch 1 apart, then whole epochs while the next one fits.
    Up to MIN_EPOCHS, an epoch that overruns the slice may still run when it fits before ``hard`` (the
    budget's end, a perf_counter time): fewer could not be compared at all."""
    deadline = time.perf_counter() + seconds
    hard = deadline if hard is None else max(hard, deadline)
    run = Run(grid.build(loader, setting), step, Clock(opts.device), cap)
    baseline = shm_used(shm_path)
    records: List[Dict] = []
    try:
        with Sampler(lambda: shm_used(shm_path) - baseline, interval=0.02) as shm, \
                Sampler(lambda: workers_memory(run.known), interval=0.2) as memory:
            until = deadline
            while True:
                record = run.epoch(len(records), until)
                records.append(record)
                if record["epoch_s"] > 1:
                    progress(opts, NAME, f"{setting.label()}: epoch {record['epoch']} {record['epoch_s']:.2f} s")
                now, estimate = time.perf_counter(), _next_epoch(record)
                if not record["whole"]:
                    break
                if now + estimate > deadline:
                    if len(records) >= MIN_EPOCHS or now + estimate > hard:
                        break
                    until = min(hard, now + 2 * estimate)  # a slow epoch is cut, not waited for
    finally:
        run.close()
    later = [r for r in records[1:] if r["whole"] and r["epoch_s"] > 0]
    rates = [r["batches"] / r["epoch_s"] for r in later]
    waits = [r["data_wait_s"] / r["epoch_s"] for r in later]
    row: Dict[str, Any] = {
        "label": setting.label(), "setting": setting.as_dict(), "epochs": records,
        "first_batch_s": records[0]["first_batch_s"] if records and records[0]["batches"] else None,
        "rate": summarize(rates) if rates else None, "wait_share": summarize(waits) if waits else None,
        "shm_peak_bytes": int(max(shm.peak(), 0)), "workers_memory_bytes": int(memory.peak()),
        "batch_bytes": run.batch_bytes, "tensors_per_batch": run.tensors}
    shown = f"{row['rate']['median']:.1f} batches/s" if row["rate"] else "no whole epoch after the first"
    progress(opts, NAME, f"{setting.label()}: {len(records)} epochs, {shown}")
    return row


def calibrate(loader: DataLoader, setting: grid.Setting, step: Callable, opts: Options, budget: float,
              slice_s: float, smallest: int) -> Optional[int]:
    """Batches per epoch for every setting: None (whole epochs) when one of the given loader fits a
    fifth of a slice, else what does, and never below ``smallest``."""
    run = Run(grid.build(loader, setting), step, Clock(opts.device), None)
    try:
        record = run.epoch(0, time.perf_counter() + budget * CALIBRATION_SHARE)
    finally:
        run.close()
    per_epoch = slice_s / EPOCHS_PER_SETTING
    if record["whole"] and record["epoch_s"] <= per_epoch:
        return opts.loader_batches
    rate = record["batches"] / max(record["epoch_s"], 1e-9)
    cap = max(smallest, int(rate * per_epoch))
    return min(cap, opts.loader_batches) if opts.loader_batches else cap


def tune(opts: Options, budget: float, step_spec: Optional[str]) -> Dict:
    started = time.perf_counter()
    loader = build_loader(opts.loader or "")
    step = load_step(step_spec) if step_spec else Step(opts.device, opts.step_ms)
    start, usable = grid.given(loader), usable_cpus()
    planned = [s for s in grid.sweep(start, usable) if s != start]
    extra_guess = (1 if usable else 0) + (opts.device == "cuda")
    try:
        cap = calibrate(loader, start, step, opts, budget, budget / (2 + len(planned) + extra_guess),
                        smallest=8 * max(grid.worker_counts(usable)))
        progress(opts, NAME, f"calibrated: {'whole epochs' if cap is None else f'epochs of {cap} batches'}")
        rows = []

        def run(setting: grid.Setting, still: int, kind: str) -> None:
            left = budget - (time.perf_counter() - started)
            rows.append(measure(loader, setting, step, opts, max(left / still, 0.0), cap, opts.shm_path,
                                hard=started + budget))
            rows[-1]["kind"] = kind

        on_sweep = start in grid.sweep(start, usable)
        run(start, 1 + len(planned) + extra_guess, "sweep" if on_sweep else "given")
        for index, setting in enumerate(planned):
            run(setting, len(planned) - index + extra_guess, "sweep")
        swept = [r for r in rows if r["rate"]]
        best = max(swept, key=lambda r: r["rate"]["median"], default=rows[0])
        more = [s for s in grid.extras(grid.Setting(**best["setting"]), opts.device == "cuda")
                if s.as_dict() not in [r["setting"] for r in rows]]
        for index, setting in enumerate(more):
            run(setting, len(more) - index, "extra")
    except Exception as exc:  # the user's loader or step raised, in the main process or in a worker
        last = f"{type(exc).__name__}: {exc}".strip().splitlines()[-1]
        return {"status": "failed", "summary": f"{opts.loader}: loading failed: {last}"}
    given_row = rows[0]
    given_row["given"] = True
    headroom = {"shm_bytes": shm_size(opts.shm_path), "available_memory_bytes": available_memory()}
    verdict = advice.recommend(rows, headroom, stepped=bool(step_spec or opts.step_ms))
    # The machine checks for the setting the user would run: the recommended one, else theirs.
    chosen = next((r for r in rows if r["label"] == verdict["recommended"]), given_row)
    twin = loader if chosen is given_row else grid.build(loader, grid.Setting(**chosen["setting"]))
    machine = checks(twin, chosen["shm_peak_bytes"], chosen["batch_bytes"], chosen["tensors_per_batch"],
                     opts.shm_path)
    return {"status": "ok", "summary": f"{opts.loader}: {verdict['text']}", "metrics": {
        "rows": rows, "recommendation": verdict, "budget_s": budget, "batches_per_epoch_cap": cap,
        "usable_cpus": usable, "headroom": headroom, "machine_checks": machine,
        "machine_checks_for": "the loader as given" if chosen is given_row else chosen["label"],
        "step": step_spec or (f"{opts.step_ms:g} ms" if opts.step_ms else None),
        "start_method": machine[3]["method"], "spent_s": round(time.perf_counter() - started, 3)}}
