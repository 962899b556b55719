"""The project's datasets: images from an HDF5 file, and a stream of text lines."""
import h5py
import torch
from torch.utils.data import Dataset, IterableDataset


class HDF5Images(Dataset):
    def __init__(self, path):
        self.file = h5py.File(path, "r")

    def __len__(self):
        return len(self.file["labels"])

    def __getitem__(self, index):
        image = torch.from_numpy(self.file["images"][index]).float() / 255
        return image, int(self.file["labels"][index])


class CaptionLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as lines:
            for line in lines:
                yield line.rstrip("\n")
