"""What following a project's own imports costs: whole trees linted with the option on and off.

    python benchmarks/project_tree.py                 # the fixture projects and a generated 200-module project
    python benchmarks/project_tree.py --repeats 9 --flake8

The DL part is the plugin's own time over every file of a tree, as flake8 calls it, with a
fresh module cache each round (one flake8 process sees each imported module once).
--flake8 adds the wall time of `flake8 -j1 --select=DL` on the generated tree, on vs off.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

DATASET = '''
import random

import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info


class Images{i}(Dataset):
    def __init__(self, root, size):
        self.root = root
        self.items = [f"{{root}}/{{n}}.png" for n in range(size)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return torch.zeros(3, 8, 8), index % 10


class Stream{i}(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        {shard}
        with open(self.path) as handle:
            yield from handle
'''
FACTORY = '''
from torch.utils.data import DataLoader, DistributedSampler


def make_loader{i}(dataset, workers, batch_size=32):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True)


def make_pair{i}(cfg, train_set, val_set):
    sampler = DistributedSampler(train_set) if cfg.ddp else None
    train = DataLoader(train_set, batch_size=cfg.batch, sampler=sampler, num_workers=cfg.workers)
    val = DataLoader(val_set, batch_size=cfg.batch, num_workers=cfg.workers, persistent_workers=cfg.workers > 0)
    return train, val
'''
MODEL = '''
import torch


class Net{i}(torch.nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))

    def forward(self, batch):
        for layer in self.layers:
            batch = torch.relu(layer(batch))
        return batch
'''
LOOP = '''
def fit{i}(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = (model(inputs) - targets).pow(2).mean()
            loss.backward()
            optimizer.step()


def evaluate{i}(model, loader):
    return sum(float(model(inputs).sum()) for inputs, _ in loader)
'''
TRAIN = '''
import argparse

import torch
from torch.utils.data import DataLoader

from gen.data import Images{a}, Stream{b}
from gen.data.factory_{f} import make_loader{f}, make_pair{f}
from gen.engine.loop_{e} import evaluate{e}, fit{e}
from gen.models.m_{m} import Net{m}


def main(args):
    model = Net{m}(args.width, args.depth)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = make_loader{f}(Images{a}(args.root, 1000), args.workers)
    fit{e}(model, loader, optimizer, args.epochs)
    train, val = make_pair{f}(args, Images{a}(args.root, 800), Images{a}(args.root, 200))
    for epoch in range(args.epochs):
        for inputs, targets in train:
            model(inputs)
        evaluate{e}(model, val)
    stream = DataLoader(Stream{b}(args.text), batch_size=16, num_workers=args.workers)
    evaluate{e}(model, stream)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    main(parser.parse_args())
'''


def generate(root: Path, datasets: int = 40, factories: int = 40, models: int = 60, loops: int = 10,
             trains: int = 46) -> List[Path]:
    """A package `gen/` of datasets, factories, models and loops, and the training scripts using them."""
    files: Dict[str, str] = {"gen/__init__.py": "", "gen/models/__init__.py": "", "gen/engine/__init__.py": ""}
    exports = []
    for i in range(datasets):
        shard = "info = get_worker_info()" if i % 2 else "pass"
        files[f"gen/data/ds_{i}.py"] = DATASET.format(i=i, shard=shard)
        exports.append(f"from .ds_{i} import Images{i}, Stream{i}")
    files["gen/data/__init__.py"] = "\n".join(exports) + "\n"
    for i in range(factories):
        files[f"gen/data/factory_{i}.py"] = FACTORY.format(i=i)
    for i in range(models):
        files[f"gen/models/m_{i}.py"] = MODEL.format(i=i)
    for i in range(loops):
        files[f"gen/engine/loop_{i}.py"] = LOOP.format(i=i)
    for i in range(trains):
        values = dict(a=i % datasets, b=(i * 7) % datasets, f=i % factories, e=i % loops, m=i % models)
        files[f"gen/train_{i}.py"] = TRAIN.format(**values)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return sorted(root.rglob("*.py"))


def walk_order(root: Path) -> List[Path]:
    """The files as flake8 meets them walking a directory: a folder's files before its sub-folders,
    so `train.py` (the importer) comes before `data/` (what it imports)."""
    out: List[Path] = []
    for directory, folders, names in os.walk(root):
        folders.sort()
        out += [Path(directory) / name for name in sorted(names) if name.endswith(".py")]
    return out


def dl_seconds(files: List[Path], repeats: int) -> Dict[str, Dict[str, float]]:
    """The plugin's own time over a tree, off and on, rounds alternated (this machine's speed drifts):
    medians, with the module cache cleared before each round, and the finding counts."""
    from flake8_dataloader.engine import check_source
    from flake8_dataloader.project import store
    from flake8_dataloader.settings import Settings

    inputs = []
    for path in files:
        source = path.read_text(encoding="utf-8")
        try:
            inputs.append((str(path), source, ast.parse(source)))
        except SyntaxError:
            continue  # flake8 reports E999 and runs no plugin
    out: Dict[str, Dict[str, float]] = {}
    times: Dict[str, List[float]] = {"off": [], "on": []}
    for round_ in range(repeats + 1):  # the first round warms up (imports of LibCST and the rules)
        for follow in ("off", "on"):
            settings = Settings.build(follow_imports=follow)
            store.clear()
            started = time.perf_counter()
            count = sum(len(check_source(source, name, settings, tree=tree)) for name, source, tree in inputs)
            if round_:
                times[follow].append(time.perf_counter() - started)
            out[follow] = {"findings": count}
    for follow in times:
        out[follow]["seconds"] = statistics.median(times[follow])
    return out


def flake8_seconds(root: Path, follow: str, repeats: int) -> float:
    cmd = [sys.executable, "-m", "flake8", "--isolated", "-j1", "--select=DL", "--exit-zero",
           f"--dataloader-follow-imports={follow}", "."]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(cmd, cwd=root, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds per configuration (default 5)")
    parser.add_argument("--flake8", action="store_true", help="also time flake8 itself on the generated tree")
    args = parser.parse_args()
    print_table(args.repeats, args.flake8)
    return 0


def print_table(repeats: int, with_flake8: bool = False) -> None:
    """The on/off table (bench.py prints it too)."""
    with tempfile.TemporaryDirectory() as tmp:
        generated = generate(Path(tmp))
        trees = {
            "fixture projects": walk_order(ROOT / "fixtures" / "projects"),
            f"generated project ({len(generated)} modules)": walk_order(Path(tmp)),
        }
        print("| tree | files | DL part, off (s) | on (s) | on / off | findings off -> on |")
        print("|---|---|---|---|---|---|")
        for name, files in trees.items():
            measured = dl_seconds(files, repeats)
            off, on = measured["off"], measured["on"]
            print(f"| {name} | {len(files)} | {off['seconds']:.3f} | {on['seconds']:.3f} | "
                  f"{on['seconds'] / off['seconds']:.2f}x (target <= 1.3x) | {off['findings']} -> {on['findings']} |")
        if with_flake8:
            off_s = flake8_seconds(Path(tmp), "off", repeats)
            on_s = flake8_seconds(Path(tmp), "on", repeats)
            print(f"\nflake8 -j1 --select=DL on the generated tree: off {off_s:.2f} s, on {on_s:.2f} s "
                  f"({on_s / off_s:.2f}x)")


if __name__ == "__main__":
    raise SystemExit(main())
