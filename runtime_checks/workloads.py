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


# -- DL6xx: resources a worker's copy cannot share --------------------------------------------
RECORD_BYTES = 16384  # long enough reads for two workers' seeks to interleave on 2 cores


def record(index: int) -> bytes:
    """The expected content of record ``index``: its number, then filler that depends on it."""
    return index.to_bytes(4, "little") + bytes([index % 251]) * (RECORD_BYTES - 4)


def write_records(path: str, count: int) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for index in range(count):
            archive.writestr(f"{index}.bin", record(index))


class ZipOpenedInInit(Dataset):
    """DL601's bad pattern: the archive is opened in __init__ and read in every worker.

    Each item is 0 (read right), 1 (wrong bytes) or 2 (the read raised): a worker that
    raised would stop the whole epoch, which would hide how many reads go wrong.
    """

    def __init__(self, path: str, count: int):
        import zipfile

        self.count = count
        self.archive = zipfile.ZipFile(path)  # noqa: DL601 - the bad pattern

    def __len__(self) -> int:
        return self.count

    def _archive(self):
        return self.archive

    def __getitem__(self, index):
        try:
            return 0 if self._archive().read(f"{index}.bin") == record(index) else 1
        except Exception:  # noqa: B902 - BadZipFile, zlib errors, struct errors: all count
            return 2


class ZipOpenedLazily(ZipOpenedInInit):
    """The fix: None in __init__, opened in each worker on first use."""

    def __init__(self, path: str, count: int):
        self.count = count
        self.path = path
        self.archive = None

    def _archive(self):
        if self.archive is None:
            import zipfile

            self.archive = zipfile.ZipFile(self.path)
        return self.archive


class PythonObjects(Dataset):
    """DL620's bad pattern: one Python str and int per sample, indexed by every worker."""

    def __init__(self, count: int):
        self.names = [f"sample-{index:09d}" for index in range(count)]
        self.labels = [index % 1000 for index in range(count)]

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):
        return len(self.names[index]) + self.labels[index]


class NumpyArrays(PythonObjects):
    """The fix: the same data in two numpy arrays (no per-object reference counts)."""

    def __init__(self, count: int):
        self.names = np.array([f"sample-{index:09d}" for index in range(count)])
        self.labels = np.arange(count) % 1000


class CudaInGetitem(Dataset):
    """DL602's bad pattern: the sample moves to the GPU inside the worker."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index):
        return torch.full((4,), float(index)).cuda()


class CpuInGetitem(CudaInGetitem):
    def __getitem__(self, index):
        return torch.full((4,), float(index))
