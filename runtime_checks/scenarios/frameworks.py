"""Frameworks (DL402, DL405, DL101, DL401): worker starts over 3 epochs when a framework iterates the loaders.

Each scenario trains a tiny model for 3 epochs on the CPU with 2 fork workers per loader, once with
persistent workers off and once on, and counts the distinct worker processes that loaded an item
(a worker_init_fn would not do: the transformers Trainer replaces it). A framework that is not
installed is reported as "needs <package>", not as a failure: `pip install 'flake8-dataloader[frameworks]'`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import tempfile
import warnings
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from .base import Options, Scenario
from .common import first_text, outcome, progress, verdict

NEEDS_PACKAGE = "needs-package"
EPOCHS = 3
SAMPLES = 32
BATCH = 8


class CountedStarts(Dataset):
    """A dataset whose items note which process loaded them (one file per process, in ``folder``)."""

    def __init__(self, folder: str, as_dict: bool = False) -> None:
        self.folder, self.as_dict = folder, as_dict

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        open(os.path.join(self.folder, str(os.getpid())), "a").close()
        x, y = torch.full((4,), float(index)), torch.tensor([float(index % 2)])
        return {"x": x, "labels": y} if self.as_dict else (x, y)


class _Counter:
    """Fresh folders for the train and eval datasets; `starts()` counts the worker processes seen."""

    def __init__(self) -> None:
        self._root = tempfile.TemporaryDirectory()
        self.train = os.path.join(self._root.name, "train")
        self.eval = os.path.join(self._root.name, "eval")
        os.mkdir(self.train)
        os.mkdir(self.eval)

    def starts(self) -> Tuple[int, int]:
        me = str(os.getpid())
        return tuple(len([p for p in os.listdir(d) if p != me]) for d in (self.train, self.eval))  # type: ignore

    def close(self) -> None:
        self._root.cleanup()


def _loader(dataset: Dataset, persistent: bool, **kwargs) -> DataLoader:
    return DataLoader(dataset, batch_size=BATCH, num_workers=2, persistent_workers=persistent,
                      multiprocessing_context="fork", **kwargs)


def _missing(*modules: str) -> Optional[Dict]:
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    from ..install import command

    return {"status": NEEDS_PACKAGE, "metrics": {}, "summary": f"needs {', '.join(absent)}: {command('frameworks')}"}


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The frameworks' banners, progress and log lines stay out of the report."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def _counted(train: Callable[[_Counter, bool], Dict], opts: Options, name: str) -> Dict[str, Dict]:
    """Worker starts of one training run with persistent workers off, then on."""
    out: Dict[str, Dict] = {}
    for persistent in (False, True):
        counter = _Counter()
        try:
            with _quiet():
                extra = train(counter, persistent)
            train_starts, eval_starts = counter.starts()
        finally:
            counter.close()
        key = "persistent" if persistent else "default"
        out[key] = {"train_starts": train_starts, "eval_starts": eval_starts, **extra}
        progress(opts, name, f"persistent_workers={persistent}: {EPOCHS} epochs trained, {train_starts} train "
                             f"worker starts")
    return out


def _summary(runs: Dict[str, Dict], with_eval: bool) -> str:
    off, on = runs["default"], runs["persistent"]
    text = (f"{EPOCHS} epochs, 2 workers: train loader {off['train_starts']} worker starts, "
            f"{on['train_starts']} persistent")
    if with_eval:
        text += f"; eval loader {off['eval_starts']}, {on['eval_starts']} persistent"
    return text


def _tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)


def lightning(opts: Options) -> Dict:
    """Lightning hooks: train and val loaders restart every epoch (val also for the sanity check)."""
    missing = _missing("lightning")
    if missing is not None:
        return missing
    import lightning as L

    class Model(L.LightningModule):
        def __init__(self, counter: _Counter, persistent: bool) -> None:
            super().__init__()
            self.layer, self.counter, self.persistent = _tiny_model(), counter, persistent

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val", torch.nn.functional.mse_loss(self.layer(x), y))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

        def train_dataloader(self):
            sampler = DistributedSampler(CountedStarts(self.counter.train), num_replicas=1, rank=0)
            self.sampler = sampler
            return _loader(CountedStarts(self.counter.train), self.persistent, sampler=sampler)

        def val_dataloader(self):
            return _loader(CountedStarts(self.counter.eval), self.persistent)

    def train(counter: _Counter, persistent: bool) -> Dict:
        model = Model(counter, persistent)
        L.Trainer(max_epochs=EPOCHS, accelerator="cpu", logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False).fit(model)
        return {"sampler_epoch_after": model.sampler.epoch}

    runs = _counted(train, opts, "framework-lightning")
    off, on = runs["default"], runs["persistent"]
    ok = off["train_starts"] > on["train_starts"] and off["eval_starts"] > on["eval_starts"]
    ok = ok and off["sampler_epoch_after"] == EPOCHS - 1  # Lightning calls set_epoch (DL405 never applies)
    epoch = off["sampler_epoch_after"]
    summary = _summary(runs, True) + f"; sampler epoch after fit: {epoch} (Lightning calls set_epoch)"
    return verdict(ok, summary, {**runs, "lightning": L.__version__})


def transformers_trainer(opts: Options) -> Dict:
    """TrainingArguments' dataloader_* keywords: restarts every epoch and evaluation; DL101 at train()."""
    missing = _missing("transformers", "accelerate")
    if missing is not None:
        return missing
    import transformers

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = _tiny_model()

        def forward(self, x, labels=None):
            return {"loss": torch.nn.functional.mse_loss(self.layer(x), labels)}

    def arguments(folder: str, **kwargs) -> "transformers.TrainingArguments":
        return transformers.TrainingArguments(
            output_dir=folder, num_train_epochs=EPOCHS, per_device_train_batch_size=BATCH,
            per_device_eval_batch_size=BATCH, report_to=[], save_strategy="no", logging_strategy="no",
            disable_tqdm=True, use_cpu=True, **kwargs)

    def trainer(counter: _Counter, args) -> "transformers.Trainer":
        return transformers.Trainer(model=Model(), args=args, train_dataset=CountedStarts(counter.train, True),
                                    eval_dataset=CountedStarts(counter.eval, True))

    def train(counter: _Counter, persistent: bool) -> Dict:
        args = arguments(counter.train + "-out", eval_strategy="epoch", dataloader_num_workers=2,
                         dataloader_persistent_workers=persistent)
        trainer(counter, args).train()
        return {}

    old = torch.multiprocessing.get_start_method(allow_none=True)
    torch.multiprocessing.set_start_method("fork", force=True)  # the Trainer builds its loaders itself
    try:
        runs = _counted(train, opts, "framework-transformers")
        counter = _Counter()
        try:
            with _quiet():
                crash = outcome(lambda: trainer(counter, arguments(counter.train + "-out",
                                                                   dataloader_persistent_workers=True)).train())
        finally:
            counter.close()
    finally:
        torch.multiprocessing.set_start_method(old, force=True)
    off, on = runs["default"], runs["persistent"]
    raised = crash.get("raised", "")
    ok = off["train_starts"] > on["train_starts"] and off["eval_starts"] > on["eval_starts"]
    ok = ok and raised.startswith("ValueError: persistent_workers option needs num_workers > 0")
    summary = (_summary(runs, True) + "; dataloader_persistent_workers=True with 0 workers: "
               f"{first_text(raised or None)} at trainer.train()")
    return verdict(ok, summary, {**runs, "dl101": crash, "transformers": transformers.__version__})


def accelerate_loop(opts: Options) -> Dict:
    """accelerate: a prepared loader restarts every epoch; prepare() in the loop keeps every wrapper."""
    missing = _missing("accelerate")
    if missing is not None:
        return missing
    import accelerate

    samplers: List[DistributedSampler] = []

    def train(counter: _Counter, persistent: bool) -> Dict:
        accelerator = accelerate.Accelerator(cpu=True)
        dataset = CountedStarts(counter.train)
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0)
        samplers.append(sampler)
        loader = accelerator.prepare(_loader(dataset, persistent, sampler=sampler))
        for _ in range(EPOCHS):
            for _batch in loader:
                pass
        return {"sampler_epoch_after": sampler.epoch}

    runs = _counted(train, opts, "framework-accelerate")
    accelerator = accelerate.Accelerator(cpu=True)
    counter = _Counter()
    try:
        loader = _loader(CountedStarts(counter.train), True)
        for _ in range(EPOCHS):
            for _batch in accelerator.prepare(loader):  # noqa: DL401 - the pattern measured
                pass
        kept = len(accelerator._dataloaders)  # every prepared wrapper stays referenced
    finally:
        counter.close()
    off, on = runs["default"], runs["persistent"]
    ok = off["train_starts"] > on["train_starts"] and kept == EPOCHS and off["sampler_epoch_after"] == EPOCHS - 1
    summary = (_summary(runs, False) + f"; sampler epoch after 3 epochs: {off['sampler_epoch_after']} (the prepared "
               f"loader calls set_epoch); prepare() in the loop kept {kept} wrappers")
    return verdict(ok, summary, {**runs, "prepared_in_loop_kept": kept, "accelerate": accelerate.__version__})


def ignite_run(opts: Options) -> Dict:
    """Ignite: run(max_epochs=3) and an EPOCH_COMPLETED evaluator restart workers; nobody sets the epoch."""
    missing = _missing("ignite")
    if missing is not None:
        return missing
    import ignite
    from ignite.engine import Engine, Events

    def train(counter: _Counter, persistent: bool) -> Dict:
        train_set = CountedStarts(counter.train)
        sampler = DistributedSampler(train_set, num_replicas=1, rank=0)
        train_loader = _loader(train_set, persistent, sampler=sampler)
        val_loader = _loader(CountedStarts(counter.eval), persistent)
        trainer, evaluator = Engine(lambda engine, batch: None), Engine(lambda engine, batch: None)
        trainer.add_event_handler(Events.EPOCH_COMPLETED, lambda engine: evaluator.run(val_loader))
        trainer.run(train_loader, max_epochs=EPOCHS)
        return {"sampler_epoch_after": sampler.epoch}

    runs = _counted(train, opts, "framework-ignite")
    off, on = runs["default"], runs["persistent"]
    ok = off["train_starts"] > on["train_starts"] and off["eval_starts"] > on["eval_starts"]
    ok = ok and off["sampler_epoch_after"] == 0  # Ignite never calls set_epoch: DL405 applies
    epoch = off["sampler_epoch_after"]
    summary = _summary(runs, True) + f"; sampler epoch after 3 epochs: {epoch} (Ignite never calls set_epoch)"
    return verdict(ok, summary, {**runs, "ignite": ignite.__version__})


SCENARIOS: List[Scenario] = [
    Scenario("framework-lightning", ("DL402",), lightning, 240),
    Scenario("framework-transformers", ("DL402", "DL101"), transformers_trainer, 240),
    Scenario("framework-accelerate", ("DL402", "DL401"), accelerate_loop, 180),
    Scenario("framework-ignite", ("DL402",), ignite_run, 180),
]
