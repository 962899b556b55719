"""What a scenario is (`Scenario`) and what a run asks of it (`Options`): the family modules import
these from here, and the registry (the package's ``__init__``) imports the families."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple


@dataclass(frozen=True)
class Options:
    quick: bool = False
    device: str = "cpu"
    workers: int = 2
    epochs: Optional[int] = None
    start_method: Optional[str] = None  # None: the platform default
    dataset: Optional[str] = None  # MODULE:FACTORY
    loader: Optional[str] = None  # MODULE:FACTORY returning the user's DataLoader
    run_epochs: int = 100  # the training run --loader's saving is projected over
    loader_batches: Optional[int] = None  # at most this many batches per epoch of --loader
    step_ms: float = 0.0  # a stand-in training step per batch of --loader
    shm_path: str = "/dev/shm"
    progress: bool = True  # one line per configuration and epoch on stderr

    def epochs_or(self, quick: int, full: int) -> int:
        return self.epochs if self.epochs else (quick if self.quick else full)


@dataclass(frozen=True)
class Scenario:
    name: str
    rules: Tuple[str, ...]
    run: Callable[[Options], Dict]
    timeout: float = 120.0
