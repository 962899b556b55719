"""The settings --tune tries: the loader as given, num_workers 0, 1, 2, 4, ... up to the usable CPUs
(persistent when there are workers), then prefetch_factor 2 and 4 at the best count, and pin_memory
flipped there on CUDA. Each is a twin of the user's loader with only those arguments changed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from torch.utils.data import DataLoader

from ..scenarios.user_loader import settings as loader_settings


@dataclass(frozen=True)
class Setting:
    workers: int
    persistent: bool
    prefetch: Optional[int]  # None without workers: torch refuses a prefetch_factor there
    pin: bool

    def label(self) -> str:
        """The constructor arguments, as the user would write them."""
        text = f"num_workers={self.workers}"
        if self.workers:
            text += f", persistent_workers={self.persistent}, prefetch_factor={self.prefetch}"
        return text + (", pin_memory=True" if self.pin else "")

    def cost(self) -> tuple:
        """What a setting spends, smallest first: workers, then batches in flight, then pinned copies."""
        return self.workers, self.prefetch or 0, self.pin, self.persistent

    def as_dict(self) -> Dict:
        return asdict(self)


def given(loader: DataLoader) -> Setting:
    workers = loader.num_workers
    return Setting(workers, bool(loader.persistent_workers) and workers > 0,
                   (loader.prefetch_factor or 2) if workers else None, bool(loader.pin_memory))


def worker_counts(usable: int) -> List[int]:
    """0, 1, 2, 4, ... up to ``usable``, which ends the list when it is no power of two."""
    counts, count = [0], 1
    while count <= usable:
        counts.append(count)
        count *= 2
    if usable > 0 and counts[-1] != usable:
        counts.append(usable)
    return counts


def sweep(start: Setting, usable: int) -> List[Setting]:
    """The worker counts, each with the given prefetch_factor (2 when it had none) and pin_memory."""
    return [Setting(n, n > 0, (start.prefetch or 2) if n else None, start.pin) for n in worker_counts(usable)]


def extras(best: Setting, cuda: bool) -> List[Setting]:
    """prefetch_factor 2 and 4 at the best worker count; pin_memory flipped there on CUDA."""
    found = []
    if best.workers:
        found += [Setting(best.workers, True, prefetch, best.pin) for prefetch in (2, 4)]
    if cuda:
        found.append(Setting(best.workers, best.persistent, best.prefetch, not best.pin))
    return [s for s in found if s != best]


def build(loader: DataLoader, setting: Setting) -> DataLoader:
    """The user's loader (dataset, sampler, collate_fn, start method...) with ``setting``'s arguments."""
    kwargs = loader_settings(loader)
    kwargs.update(num_workers=setting.workers, pin_memory=setting.pin)
    if setting.workers:
        kwargs["prefetch_factor"] = setting.prefetch
    else:  # torch refuses these without workers
        for key in ("prefetch_factor", "multiprocessing_context", "timeout"):
            kwargs.pop(key, None)
    return DataLoader(loader.dataset, persistent_workers=setting.persistent, **kwargs)  # noqa: DL402 - a twin
