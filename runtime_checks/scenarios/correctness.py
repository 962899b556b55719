"""DL501-DL502: IterableDataset copies in workers."""

from __future__ import annotations

from collections import Counter

from torch.utils.data import DataLoader

from ..workloads import ReturnsSelf, Sharded, Unsharded
from .base import Options, Scenario
from .common import verdict


def _counts(loader):
    return Counter(int(v) for batch in loader for v in batch)


def unsharded(opts: Options) -> dict:
    times = {}
    for cls in (Unsharded, Sharded):
        counts = _counts(DataLoader(cls(20), batch_size=5, num_workers=opts.workers,
                                    multiprocessing_context=opts.start_method))
        times[cls.__name__] = sorted(set(counts.values()))
    ok = times["Unsharded"] == [opts.workers] and times["Sharded"] == [1]
    return verdict(ok, f"{opts.workers} workers: each sample seen {times['Unsharded']} times unsharded, "
                       f"{times['Sharded']} sharded", times)


def single_use(opts: Options) -> dict:
    modes = {
        "persistent workers": dict(num_workers=opts.workers, persistent_workers=True),
        "num_workers=0": dict(num_workers=0),
        "fresh workers": dict(num_workers=opts.workers),
    }
    counts = {}
    for mode, kwargs in modes.items():
        if kwargs["num_workers"]:
            kwargs["multiprocessing_context"] = opts.start_method
        loader = DataLoader(ReturnsSelf(10), batch_size=5, **kwargs)
        counts[mode] = [sum(len(batch) for batch in loader) for _ in range(3)]
    ok = counts["persistent workers"][1:] == [0, 0] and counts["num_workers=0"] == [10, 0, 0] \
        and all(counts["fresh workers"])
    return verdict(ok, "samples per epoch: " + "; ".join(f"{m} {c}" for m, c in counts.items()), counts)


SCENARIOS = [
    Scenario("unsharded-iterable", ("DL501",), unsharded, 120),
    Scenario("single-use-iterable", ("DL502",), single_use, 120),
]
