"""Train a small image classifier with a plain epoch loop."""
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RandomCrops(Dataset):
    """Images kept in memory, each read as a random 24x24 crop."""

    def __init__(self, images, labels):
        self.images = images
        self.labels = labels
        self.rng = np.random.default_rng()

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        top, left = self.rng.integers(0, 8, size=2)
        crop = self.images[index, :, top:top + 24, left:left + 24]
        return crop, self.labels[index]


def train(epochs=10):
    random.seed(0)
    np.random.seed(0)
    images = torch.randn(512, 3, 32, 32)
    labels = torch.randint(0, 10, (512,))
    loader = DataLoader(RandomCrops(images, labels), batch_size=64, shuffle=True, num_workers=4)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 24 * 24, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for crops, targets in loader:
            loss = nn.functional.cross_entropy(model(crops), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


train()
