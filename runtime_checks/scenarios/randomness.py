"""DL201-DL203: what workers draw, across workers, epochs and runs."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch.utils.data import DataLoader

from ..workloads import GlobalNumpy, HeldRng, ReseededRng, seed_from_initial_seed, seed_from_worker_id
from .base import Options, Scenario
from .common import draws, verdict

SAMPLES, EPOCHS = 8, 3


def _unique(values_per_epoch) -> int:
    return len({round(v, 12) for epoch in values_per_epoch for v in epoch})


def _loader(dataset, opts: Options, **kwargs) -> DataLoader:
    return DataLoader(dataset, num_workers=opts.workers, multiprocessing_context=opts.start_method, **kwargs)


def dataset_rng(opts: Options) -> dict:
    total = SAMPLES * EPOCHS
    metrics = {}
    # A torch.Generator held by a dataset crashes spawn/forkserver workers: measured under fork only.
    kinds = ["numpy", "random"] + (["torch"] if opts.start_method in (None, "fork") else [])
    for kind in kinds:
        for persistent in (False, True):
            got = draws(_loader(HeldRng(kind, SAMPLES), opts, persistent_workers=persistent), EPOCHS)
            metrics[f"{kind}, persistent={persistent}"] = _unique(got)
    metrics["reseeded per worker"] = _unique(draws(_loader(ReseededRng("numpy", SAMPLES), opts), EPOCHS))
    metrics["global np.random"] = _unique(draws(_loader(GlobalNumpy(SAMPLES), opts), EPOCHS))
    held = [v for k, v in metrics.items() if k.split(",")[0] in kinds]
    ok = max(held) < total and metrics["reseeded per worker"] == total and metrics["global np.random"] == total
    bad = metrics["numpy, persistent=False"]
    return verdict(
        ok,
        f"{opts.workers} workers x {SAMPLES} samples x {EPOCHS} epochs: held RNG gave {bad}/{total} unique draws "
        f"({metrics['numpy, persistent=True']}/{total} persistent); reseeded {metrics['reseeded per worker']}/{total}",
        {"unique_draws": metrics, "total_draws": total},
    )


def _fresh_run(seed_torch: bool, opts: Options):
    """One 'run': torch's generator starts from OS entropy as at process start; python and numpy are seeded."""
    torch.seed()
    random.seed(0)
    np.random.seed(0)
    if seed_torch:
        torch.manual_seed(0)
    order = [int(i) for i in DataLoader(list(range(16)), batch_size=16, shuffle=True).__iter__().__next__()]
    worker_draws = draws(_loader(GlobalNumpy(4), opts), 1)[0]
    return order, worker_draws


def half_seeded(opts: Options) -> dict:
    unseeded = [_fresh_run(False, opts) for _ in range(2)]
    seeded = [_fresh_run(True, opts) for _ in range(2)]
    unseeded_same = unseeded[0] == unseeded[1]
    seeded_same = seeded[0] == seeded[1]
    return verdict(
        not unseeded_same and seeded_same,
        f"random+np seeded only: two runs identical={unseeded_same}; with torch.manual_seed: identical={seeded_same}",
        {"unseeded_runs": unseeded, "torch_seeded_runs": seeded,
         "method": "each run re-seeds torch's default generator from OS entropy (torch.seed()), as a new process does"},
    )


def worker_seed(opts: Options) -> dict:
    total = (SAMPLES // 2) * EPOCHS
    bad = draws(_loader(GlobalNumpy(SAMPLES // 2), opts, worker_init_fn=seed_from_worker_id), EPOCHS)
    fixed = draws(_loader(GlobalNumpy(SAMPLES // 2), opts, worker_init_fn=seed_from_initial_seed), EPOCHS)
    torch.seed()
    rerun = draws(_loader(GlobalNumpy(SAMPLES // 2), opts, worker_init_fn=seed_from_worker_id), EPOCHS)
    epochs_repeat = all(epoch == bad[0] for epoch in bad)
    ok = epochs_repeat and _unique(fixed) == total and rerun == bad
    return verdict(
        ok,
        f"seed from worker_id: {_unique(bad)}/{total} unique, every epoch identical={epochs_repeat}, "
        f"next run identical={rerun == bad}; seed from torch.initial_seed(): {_unique(fixed)}/{total}",
        {"unique_bad": _unique(bad), "unique_fixed": _unique(fixed), "total": total},
    )


SCENARIOS = [
    Scenario("dataset-rng-copied", ("DL201",), dataset_rng, 180),
    Scenario("half-seeded-run", ("DL202",), half_seeded, 120),
    Scenario("worker-seed-from-id", ("DL203",), worker_seed, 120),
]
