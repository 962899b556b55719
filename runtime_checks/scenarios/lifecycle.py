"""DL401-DL410: the cost of restarting workers, and what persistent workers change."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import time
from typing import Dict, List, Optional

import torch
from torch.utils.data import DataLoader, DistributedSampler

from ..measure import Clock
from ..stats import TOO_FEW, compare, measurable, ratio, summarize
from ..timeline import Recorder, Sampler, gpu_busy_reader
from ..workloads import EpochTagged, Tensors, heavy_worker_init
from .base import Options, Scenario
from .common import NOT_REPRODUCED, first_text, outcome, progress, verdict

CONFIGS = ("rebuilt every epoch", "built once", "built once, persistent")


def _model(device: str, features: int):
    model = torch.nn.Sequential(torch.nn.Linear(features, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def run_epochs(make_loader, config: str, epochs: int, device: str, features: int,
               opts: Optional[Options] = None, timeline: Optional[Recorder] = None) -> List[Dict]:
    """Per-epoch timings of one configuration: iter() start-up, first batch, epoch, data wait.

    With ``timeline``, each batch's wait is recorded too; with ``opts``, one progress line per epoch.
    """
    clock = Clock(device)
    model, optimizer = _model(device, features)
    loader = None if config == CONFIGS[0] else make_loader(config == CONFIGS[2])
    records = []
    for epoch in range(epochs):
        start = clock()
        if timeline is not None:
            timeline.epoch(start)
        current = make_loader(False) if config == CONFIGS[0] else loader
        iterator = iter(current)
        started = clock()
        waiting, first_batch = started - start, 0.0  # starting workers in iter() keeps the device idle too
        batches = 0
        while True:
            before = clock()
            try:
                inputs, targets = next(iterator)
            except StopIteration:
                if timeline is not None:  # rebuilt or built once: the workers were shut down in this call
                    finished = clock()
                    timeline.end(finished, finished - before)
                break
            got = clock()
            waiting += got - before
            if batches == 0:
                first_batch = got - start
            if timeline is not None:  # the first batch also waited for iter() to start the workers
                timeline.batch(got, got - (start if batches == 0 else before))
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batches += 1
        end = clock()
        del iterator
        records.append({
            "epoch": epoch + 1,
            "startup_s": started - start,
            "first_batch_s": first_batch,
            "epoch_s": end - start,
            "data_wait_s": waiting,
            "batches": batches,
        })
        if opts is not None:
            progress(opts, "epoch-timing", f"{config}: epoch {epoch + 1}/{epochs} {end - start:.2f} s")
    return records


def timing(opts: Options) -> dict:
    """The headline: one job run rebuilt / once / persistent (DL401, DL402)."""
    epochs = opts.epochs_or(4, 8)
    samples, features = (256, 64) if opts.quick else (4096, 64)
    dataset = Tensors(samples, features, payload_mb=1 if opts.quick else 64)

    def make_loader(persistent: bool) -> DataLoader:
        return DataLoader(
            dataset,
            batch_size=32,
            shuffle=True,
            num_workers=opts.workers,
            persistent_workers=persistent,
            worker_init_fn=None if opts.quick else heavy_worker_init,
            pin_memory=opts.device == "cuda",
            multiprocessing_context=opts.start_method,
        )

    configs, timelines = {}, {}
    busy = gpu_busy_reader() if opts.device == "cuda" else None
    for config in CONFIGS:
        origin = time.perf_counter()
        recorder = Recorder(origin)
        with (Sampler(busy, origin=origin) if busy else contextlib.nullcontext()) as gpu:
            configs[config] = run_epochs(make_loader, config, epochs, opts.device, features, opts, recorder)
        timelines[config] = recorder.as_dict(gpu)
    summary = {}
    for config, records in configs.items():
        later = records[1:] or records
        summary[config] = {
            "epoch1": {k: v for k, v in records[0].items() if k.endswith("_s")},
            **{k: summarize([r[k] for r in later]) for k in ("startup_s", "first_batch_s", "epoch_s", "data_wait_s")},
        }
    first = {c: summary[c]["first_batch_s"]["median"] for c in CONFIGS}
    pairs = {
        "first batch, built once / persistent": ("first_batch_s", CONFIGS[1]),
        "first batch, rebuilt / persistent": ("first_batch_s", CONFIGS[0]),
        "epoch, built once / persistent": ("epoch_s", CONFIGS[1]),
        "epoch, rebuilt / persistent": ("epoch_s", CONFIGS[0]),
    }
    ratios = {name: ratio(summary[c][key]["median"], summary[CONFIGS[2]][key]["median"])
              for name, (key, c) in pairs.items()}
    # A ratio is only a result where the IQRs do not overlap; else it is printed as no difference.
    measured = {name: measurable(summary[c][key], summary[CONFIGS[2]][key]) for name, (key, c) in pairs.items()}
    headline = "first batch, built once / persistent"
    shown = compare(summary[CONFIGS[1]]["first_batch_s"], summary[CONFIGS[2]]["first_batch_s"])
    text = (
        f"first batch per epoch (median of epochs 2..{epochs}): rebuilt {first[CONFIGS[0]]:.3f} s, "
        f"once {first[CONFIGS[1]]:.3f} s, persistent {first[CONFIGS[2]]:.3f} s ({shown}); epoch "
        + ", ".join(f"{c} {summary[c]['epoch_s']['median']:.3f} s" for c in CONFIGS)
    )
    slower = measured[headline] and ratios[headline] > 1
    if not slower and shown != TOO_FEW:
        text = "persistent workers were not measurably faster in this run; " + text
    return {
        "status": "ok" if slower else NOT_REPRODUCED,
        "summary": text,
        "metrics": {"per_epoch": configs, "summary": summary, "ratios": ratios, "measurable": measured,
                    "epochs": epochs, "workers": opts.workers, "samples": samples, "timeline": timelines,
                    "gpu_busy_sampled": busy is not None,
                    "start_method": opts.start_method or multiprocessing.get_start_method()},
    }


def stale_dataset(opts: Options) -> dict:
    seen = {}
    for persistent in (False, True):
        dataset = EpochTagged(4)
        loader = DataLoader(dataset, num_workers=opts.workers, persistent_workers=persistent,
                            multiprocessing_context=opts.start_method)
        per_epoch = []
        for epoch in range(3):
            dataset.epoch = epoch
            per_epoch.append(sorted({int(v) for batch in loader for v in batch}))
        seen["persistent" if persistent else "not persistent"] = per_epoch
    ok = seen["persistent"] == [[0], [0], [0]] and seen["not persistent"] == [[0], [1], [2]]
    return verdict(ok, f"ds.epoch set to 0,1,2: persistent workers saw {seen['persistent']}, "
                       f"fresh workers saw {seen['not persistent']}", seen)


def missing_shutdown(opts: Options) -> dict:
    def use_closing():
        with contextlib.closing(DataLoader(Tensors(8), num_workers=0)) as loader:  # noqa: DL404 - the bad pattern
            next(iter(loader))

    closing = outcome(use_closing)
    loader = DataLoader(Tensors(8), num_workers=opts.workers, persistent_workers=opts.workers > 0,
                        multiprocessing_context=opts.start_method)
    next(iter(loader))
    alive = len(multiprocessing.active_children())
    has = {"close": hasattr(loader, "close"), "_shutdown_workers": hasattr(loader, "_shutdown_workers")}
    del loader
    gc.collect()
    after = len(multiprocessing.active_children())
    ok = closing.get("raised", "").startswith("AttributeError") and not any(has.values()) and after == 0
    return verdict(ok, f"closing(): {first_text(closing.get('raised'))}; workers alive {alive} -> {after} after del",
                   {"closing": closing, "hasattr": has, "workers_before_del": alive, "workers_after_del": after})


def sampler_epoch(opts: Options) -> dict:
    dataset = Tensors(16)
    orders = {}
    for set_epoch in (False, True):
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True)
        per_epoch = []
        for epoch in range(3):
            if set_epoch:
                sampler.set_epoch(epoch)
            per_epoch.append(list(sampler))
        orders["with set_epoch" if set_epoch else "without set_epoch"] = len({tuple(o) for o in per_epoch})
    ok = orders["without set_epoch"] == 1 and orders["with set_epoch"] == 3
    return verdict(ok, f"distinct orders over 3 epochs: {orders['without set_epoch']} without set_epoch, "
                       f"{orders['with set_epoch']} with it", orders)


def synchronous(opts: Options) -> dict:
    dataset = Tensors(64 if opts.quick else 256, 64, load_ms=2)
    times = {}
    for workers in (0, opts.workers):
        def make(persistent, workers=workers):
            return DataLoader(dataset, batch_size=8, num_workers=workers,
                              persistent_workers=persistent and workers > 0,
                              multiprocessing_context=opts.start_method if workers else None)

        records = run_epochs(make, CONFIGS[2], 3, opts.device, 64)
        times[workers] = summarize([r["data_wait_s"] for r in records[1:]])
        progress(opts, "synchronous-loading", f"{workers} workers: data wait {times[workers]['median']:.3f} s "
                                              "per epoch")
    reproduced = measurable(times[0], times[opts.workers]) and times[0]["median"] > times[opts.workers]["median"]
    lead = "" if reproduced else "workers were not measurably faster in this run: "
    return {
        "status": "ok" if reproduced else NOT_REPRODUCED,
        "summary": f"{lead}data wait per epoch: {times[0]['median']:.3f} s in-process vs "
                   f"{times[opts.workers]['median']:.3f} s with {opts.workers} workers (2 ms per sample)",
        "metrics": {"data_wait_s": {str(k): v for k, v in times.items()}},
    }


SCENARIOS = [
    Scenario("epoch-timing", ("DL401", "DL402"), timing, 600),
    Scenario("stale-dataset", ("DL403",), stale_dataset, 120),
    Scenario("missing-shutdown", ("DL404",), missing_shutdown, 60),
    Scenario("sampler-set-epoch", ("DL405",), sampler_epoch, 60),
    Scenario("synchronous-loading", ("DL410",), synchronous, 120),
]
