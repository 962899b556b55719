"""--loader MODULE:FACTORY: the user's own DataLoader, timed as given and with persistent_workers flipped.

The twin is built from the loader's own settings (dataset, sampler or batch sampler, collate_fn,
pin_memory, worker_init_fn, start method, generator, prefetch_factor...), so what is timed is what
training gets. Each epoch calls `set_epoch(epoch)` on the sampler, batch sampler and dataset that
have it, as the frameworks do. While it runs, /dev/shm is sampled for the machine checks.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Dict, List, Tuple

import torch
from torch.utils.data import DataLoader, IterableDataset

from ..machine_checks import checks, shm_used
from ..measure import Clock
from ..stats import TOO_FEW, compare, measurable, summarize
from ..timeline import Recorder, Sampler, gpu_busy_reader
from .base import Options, Scenario
from .common import NOT_REPRODUCED, progress
from .user_dataset import DatasetSpecError, call_factory

NAME = "user-loader"


def build_loader(spec: str) -> DataLoader:
    loader = call_factory(spec, "--loader", "mypkg.train:make_train_loader")
    if not isinstance(loader, DataLoader):
        raise DatasetSpecError(f"--loader: {spec}() returned {type(loader).__name__}, not a torch DataLoader "
                               "(for a dataset, use --dataset)")
    return loader


def settings(loader: DataLoader) -> Dict[str, Any]:
    """The constructor arguments that rebuild ``loader`` (persistent_workers aside)."""
    kwargs: Dict[str, Any] = {
        "num_workers": loader.num_workers, "collate_fn": loader.collate_fn, "pin_memory": loader.pin_memory,
        "timeout": loader.timeout, "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context, "generator": loader.generator,
    }
    if loader.num_workers:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    for optional in ("pin_memory_device", "in_order"):  # newer torch only; passed on when set
        value = getattr(loader, optional, None)
        if value not in (None, "", True):
            kwargs[optional] = value
    if isinstance(loader.dataset, IterableDataset):  # no sampler: torch rejects one for these
        kwargs.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_size is None and loader.batch_sampler is not None:  # the user's batch sampler
        kwargs["batch_sampler"] = loader.batch_sampler
    else:  # the sampler the loader made (shuffle=True: a RandomSampler on its generator) or was given
        kwargs.update(batch_size=loader.batch_size, sampler=loader.sampler, drop_last=loader.drop_last)
    return kwargs


def twin(loader: DataLoader) -> DataLoader:
    return DataLoader(loader.dataset, persistent_workers=not loader.persistent_workers,  # noqa: DL402 - flipped
                      **settings(loader))


def set_epoch(loader: DataLoader, epoch: int) -> List[str]:
    """Call set_epoch on whatever of the loader has it, as Lightning, accelerate and the Trainer do."""
    called = []
    for name in ("sampler", "batch_sampler", "dataset"):
        part = getattr(loader, name, None)
        if callable(getattr(part, "set_epoch", None)):
            part.set_epoch(epoch)
            called.append(name)
    return called


def tensors(batch) -> List[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for value in batch.values() for t in tensors(value)]
    if isinstance(batch, (list, tuple)):
        return [t for value in batch for t in tensors(value)]
    return []


class Step:
    """What follows each batch: the copy to the device, and a stand-in training step of ``ms``."""

    def __init__(self, device: str, ms: float):
        self.device, self.ms = device, ms
        self.cycles = _cycles_per_ms() * ms if device == "cuda" and ms else 0

    def __call__(self, batch) -> None:
        if self.device == "cuda":
            for tensor in tensors(batch):
                tensor.to(self.device, non_blocking=True)
            if self.cycles:
                torch.cuda._sleep(int(self.cycles))  # the GPU busy for `ms`, as a model's step would keep it
        elif self.ms:
            time.sleep(self.ms / 1000)


def _cycles_per_ms() -> float:
    torch.cuda._sleep(1_000_000)  # warm-up
    torch.cuda.synchronize()
    started = time.perf_counter()
    torch.cuda._sleep(10_000_000)
    torch.cuda.synchronize()
    return 10_000_000 / ((time.perf_counter() - started) * 1000)


def run_config(loader: DataLoader, label: str, opts: Options, epochs: int, step: Step,
               recorder: Recorder) -> Tuple[List[Dict], Dict]:
    """Per-epoch records of one loader, and what its first batch was made of."""
    clock = Clock(opts.device)
    records, shape = [], {"bytes": 0, "tensors": 0}
    for epoch in range(epochs):
        called = set_epoch(loader, epoch)
        start = clock()
        recorder.epoch(start)
        iterator = iter(loader)
        started = clock()
        waiting, first_batch, batches, before = started - start, 0.0, 0, started
        while True:
            try:
                batch = next(iterator)
            except StopIteration:  # not persistent: the workers were shut down in this last call
                finished = clock()
                recorder.end(finished, finished - before)
                break
            got = clock()
            waiting += got - before
            recorder.batch(got, got - (start if batches == 0 else before))
            if batches == 0:
                first_batch = got - start
                parts = tensors(batch)
                shape = {"bytes": max(shape["bytes"], sum(t.numel() * t.element_size() for t in parts)),
                         "tensors": max(shape["tensors"], len(parts))}
            step(batch)
            batches += 1
            before = clock()
            if opts.loader_batches and batches >= opts.loader_batches:
                break
        end = clock()
        del iterator
        records.append({"epoch": epoch + 1, "startup_s": started - start, "first_batch_s": first_batch,
                        "epoch_s": end - start, "data_wait_s": waiting, "batches": batches, "set_epoch": called})
        progress(opts, NAME, f"{label}: epoch {epoch + 1}/{epochs} {end - start:.2f} s")
    return records, shape


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.1f} s"


def user_loader(opts: Options) -> dict:
    loader = build_loader(opts.loader)
    if loader.num_workers == 0:
        return {"status": "ok", "metrics": {"num_workers": 0},
                "summary": f"{opts.loader}: num_workers=0 loads in the training process; there are no workers "
                           "to keep (DL410: workers load the next batches while the model trains)"}
    given = "as given, persistent" if loader.persistent_workers else "as given, not persistent"
    flipped = "twin, not persistent" if loader.persistent_workers else "twin, persistent"
    other = twin(loader)
    # The persistent one runs last: its workers stay alive until the scenario ends.
    order = [(flipped, other), (given, loader)] if loader.persistent_workers else [(given, loader), (flipped, other)]
    epochs = opts.epochs_or(3, 5)
    step = Step(opts.device, opts.step_ms)
    busy = gpu_busy_reader() if opts.device == "cuda" else None
    baseline = shm_used(opts.shm_path)
    per_epoch, timelines, shape = {}, {}, {"bytes": 0, "tensors": 0}
    try:
        with Sampler(lambda: shm_used(opts.shm_path) - baseline, interval=0.02) as shm:
            for label, current in order:
                origin = time.perf_counter()
                recorder = Recorder(origin)
                with (Sampler(busy, origin=origin) if busy else contextlib.nullcontext()) as gpu:
                    per_epoch[label], seen = run_config(current, label, opts, epochs, step, recorder)
                timelines[label] = recorder.as_dict(gpu)
                shape = {key: max(shape[key], seen[key]) for key in shape}
    except Exception as exc:  # the user's loader raised, in the main process or in a worker
        last = f"{type(exc).__name__}: {exc}".strip().splitlines()[-1]
        return {"status": "failed", "summary": f"{opts.loader}: loading failed: {last}"}
    return _result(opts, loader, per_epoch, timelines, shape, shm.peak(), busy is not None)


def _result(opts: Options, loader: DataLoader, per_epoch: Dict, timelines: Dict, shape: Dict, peak: float,
            sampled_gpu: bool) -> dict:
    summary = {label: {key: summarize([r[key] for r in records[1:] or records])
                       for key in ("startup_s", "first_batch_s", "epoch_s", "data_wait_s")}
               for label, records in per_epoch.items()}
    fresh, kept = (label for label in per_epoch if "not persistent" in label), \
        (label for label in per_epoch if "not persistent" not in label)
    fresh, kept = next(fresh), next(kept)
    differs = measurable(summary[fresh]["epoch_s"], summary[kept]["epoch_s"])
    saving = summary[fresh]["epoch_s"]["median"] - summary[kept]["epoch_s"]["median"]
    first = f"first batch {summary[fresh]['first_batch_s']['median']:.2f} s fresh vs " \
            f"{summary[kept]['first_batch_s']['median']:.2f} s persistent"
    if differs and saving > 0:
        total = saving * (opts.run_epochs - 1)  # epoch 1 starts workers either way
        verb = "would save" if not loader.persistent_workers else "save"
        text = (f"{loader.num_workers} workers: fresh workers cost {saving:.2f} s per epoch ({first}); "
                f"persistent workers {verb} {_duration(total)} over {opts.run_epochs} epochs")
        status = "ok"
    else:
        verdict = compare(summary[fresh]["epoch_s"], summary[kept]["epoch_s"])
        text = f"{loader.num_workers} workers: {verdict}" + (" per epoch" if verdict != TOO_FEW else "") + \
            f" ({first})"
        status = NOT_REPRODUCED
    machine = checks(loader, peak, shape["bytes"], shape["tensors"], opts.shm_path)
    warnings = [c for c in machine if c["level"] != "ok"]
    if warnings:
        text += "; " + "; ".join(f"{c['check']}: warning" for c in warnings)
    return {"status": status, "summary": f"{opts.loader}: {text}", "metrics": {
        "per_epoch": per_epoch, "summary": summary, "timeline": timelines, "machine_checks": machine,
        "saving_per_epoch_s": saving if differs else 0.0, "run_epochs": opts.run_epochs,
        "workers": loader.num_workers, "batch_bytes": shape["bytes"], "tensors_per_batch": shape["tensors"],
        "shm_peak_bytes": int(peak), "gpu_busy_sampled": sampled_gpu, "loader_batches": opts.loader_batches,
        "settings": {k: repr(v) for k, v in settings(loader).items()},
        "start_method": machine[3]["method"],
    }}


SCENARIO = Scenario(NAME, ("DL402",), user_loader, 600)
