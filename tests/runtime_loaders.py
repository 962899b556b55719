"""Loader factories for `python -m runtime_checks --loader` in the tests (and the GPU run's script).

Each is what a training script's `make_train_loader()` returns: its own collate function and a
sampler with `set_epoch`, module-level so spawn workers can unpickle them.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class Images(Dataset):
    """`count` samples of a (3, side, side) image and a label, as dicts."""

    def __init__(self, count: int = 64, side: int = 8):
        self.count, self.side = count, side

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        generator = torch.Generator().manual_seed(index)
        return {"image": torch.rand(3, self.side, self.side, generator=generator), "label": index % 10}


def stack_images(samples):
    """The training script's collate function: a tuple, not torch's default dict."""
    return torch.stack([s["image"] for s in samples]), torch.tensor([s["label"] for s in samples])


class EpochShuffle(Sampler):
    """Shuffles by epoch, as DistributedSampler does; notes every set_epoch it is given."""

    def __init__(self, count: int):
        self.count, self.epoch, self.epochs_set = count, 0, []

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.epochs_set.append(epoch)

    def __iter__(self):
        return iter(torch.randperm(self.count, generator=torch.Generator().manual_seed(self.epoch)).tolist())

    def __len__(self) -> int:
        return self.count


def _loader(context: str, workers: int = 2, count: int = 64, side: int = 8, batch_size: int = 8, **kwargs):
    dataset = Images(count, side)
    # noqa DL402: the tool's input; it times these as given and with persistent workers flipped
    return DataLoader(dataset, batch_size=batch_size, sampler=EpochShuffle(count),  # noqa: DL402
                      collate_fn=stack_images, num_workers=workers, multiprocessing_context=context, **kwargs)


def fork_loader():
    return _loader("fork")


def spawn_loader():
    return _loader("spawn")


def persistent_loader():
    return _loader("fork", persistent_workers=True)


def gpu_loader():
    """The GPU run: 8 spawn workers, pinned memory, 19 MB batches (32 x 3 x 224 x 224 floats), 64 batches an epoch."""
    return _loader("spawn", workers=8, count=2048, side=224, batch_size=32, pin_memory=True)


def no_workers_loader():
    return DataLoader(Images(16), batch_size=4)


def needs_arguments(batch_size):
    return _loader("fork", batch_size=batch_size)


def returns_dataset():
    return Images()


def raises():
    raise FileNotFoundError("data/train.tar")


# -- --tune ---------------------------------------------------------------------------------------


class SlowReads(Dataset):
    """Each sample waits on storage (a sleep): IO-bound, so more workers load more batches a second."""

    def __init__(self, count: int = 64, wait_s: float = 0.005):
        self.count, self.wait_s = count, wait_s

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        import time

        time.sleep(self.wait_s)
        return torch.full((4,), float(index))


def io_bound_loader():
    """16 batches an epoch of 4 samples that each wait 5 ms, loaded in the training process."""
    return DataLoader(SlowReads(), batch_size=4)


def trivial_loader():
    """Samples that cost nothing to make: workers can only add their hand-over."""
    return DataLoader(torch.utils.data.TensorDataset(torch.arange(256.0)), batch_size=16)


def train_step(batch):
    """A training step of about 2 ms."""
    import time

    time.sleep(0.002)


def step_without_argument():
    pass


class MissingFiles(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int):
        raise FileNotFoundError(f"data/{index}.png")


def broken_loader():
    return DataLoader(MissingFiles(), batch_size=4)


class Endless(torch.utils.data.IterableDataset):
    """A stream with no end (a webdataset-style shard reader that cycles): epochs must be cut."""

    def __iter__(self):
        import time

        count = 0
        while True:
            time.sleep(0.002)
            count += 1
            yield torch.tensor([float(count)])


def endless_loader():
    return DataLoader(Endless(), batch_size=4)
