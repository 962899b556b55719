"""Datasets and helpers the scenarios run; module-level so spawn workers can unpickle them."""

from __future__ import annotations

import random
import time

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info


class Tensors(Dataset):
    """n samples of `features` floats, plus an optional payload of `payload_mb` MB (pickled per worker)."""

    def __init__(self, n: int = 64, features: int = 32, payload_mb: float = 0.0, load_ms: float = 0.0):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, features, generator=generator)
        self.y = torch.randn(n, 1, generator=generator)
        self.payload = np.zeros(int(payload_mb * 2**20), dtype=np.uint8)
        self.load_ms = load_ms

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index):
        if self.load_ms:
            time.sleep(self.load_ms / 1000)
        return self.x[index], self.y[index]


def heavy_worker_init(worker_id: int) -> None:
    """Stands for a worker that imports a heavy library at start-up."""
    import importlib

    importlib.import_module("torch.distributions")


class HeldRng(Dataset):
    """Draws from an RNG object created in __init__ (DL201's bad pattern)."""

    def __init__(self, kind: str, n: int = 8):
        self.kind, self.n = kind, n
        self.rng = self._make(kind, 0)

    @staticmethod
    def _make(kind: str, seed: int):
        if kind == "numpy":
            return np.random.default_rng(seed)
        if kind == "random":
            return random.Random(seed)
        generator = torch.Generator()
        generator.manual_seed(seed)
        return generator

    def draw(self) -> float:
        if self.kind == "numpy":
            return float(self.rng.random())
        if self.kind == "random":
            return self.rng.random()
        return float(torch.rand(1, generator=self.rng))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        return self.draw()


class ReseededRng(HeldRng):
    """DL201's fix: the RNG is re-created from the worker's per-iterator seed."""

    def __getitem__(self, index):
        info = get_worker_info()
        if info is not None and getattr(self, "_seeded_for", None) != info.seed:
            self.rng = self._make(self.kind, info.seed % 2**32)
            self._seeded_for = info.seed
        return self.draw()


class GlobalNumpy(Dataset):
    """Draws from the global numpy state, which PyTorch reseeds per worker."""

    def __init__(self, n: int = 8):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        return float(np.random.rand())


def seed_from_worker_id(worker_id: int) -> None:  # noqa: DL203 - DL203's bad pattern
    np.random.seed(42 + worker_id)


def seed_from_initial_seed(worker_id: int) -> None:
    np.random.seed(torch.initial_seed() % 2**32)


class EpochTagged(Dataset):
    """Returns the `epoch` attribute as the worker sees it (DL403)."""

    def __init__(self, n: int = 8):
        self.n = n
        self.epoch = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        return self.epoch


class Unsharded(IterableDataset):
    def __init__(self, n: int = 20):
        self.n = n

    def __iter__(self):
        yield from range(self.n)


class Sharded(Unsharded):
    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        yield from range(start, self.n, step)


class ReturnsSelf(IterableDataset):
    """DL502's bad pattern: __iter__ hands back a one-shot iterator."""

    def __init__(self, n: int = 10):
        self.n = n
        self._it = iter(range(n))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


class Blocks(Dataset):
    """Blocks forever in __getitem__: a hung loader, for the timeout path."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index):
        while True:
            time.sleep(1)


def keep(batch):
    return batch


def hang(opts) -> dict:
    """A scenario whose loader blocks forever: the tool must stop it at its timeout."""
    from torch.utils.data import DataLoader

    for _ in DataLoader(Blocks(), num_workers=1):
        pass
    return {"status": "ok", "summary": "unreachable"}
