"""Distributed training: one process per GPU, launched with torchrun."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from torchvision.models import resnet50

from data import CaptionLines, HDF5Images


def main():
    dist.init_process_group("nccl")
    device = torch.device("cuda", dist.get_rank() % torch.cuda.device_count())
    model = torch.nn.parallel.DistributedDataParallel(resnet50(num_classes=10).to(device), device_ids=[device])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    images = HDF5Images("data/train.h5")
    sampler = DistributedSampler(images)
    loader = DataLoader(images, batch_size=64, sampler=sampler, num_workers=6, persistent_workers=True)
    captions = DataLoader(CaptionLines("data/captions.txt"), batch_size=128, num_workers=4)
    holdout = DataLoader(HDF5Images("data/val.h5"), batch_size=256, persistent_workers=True)

    for epoch in range(90):
        model.train()
        for batch, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(batch.to(device)), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for batch, labels in holdout:
                model(batch.to(device))
    for caption in captions:
        print(caption)


if __name__ == "__main__":
    main()
