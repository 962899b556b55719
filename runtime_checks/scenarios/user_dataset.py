"""--dataset MODULE:FACTORY: worker start-up and epoch cost of the user's own dataset."""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Callable

from ..measure import Clock
from ..stats import ratio, summarize
from .base import Options, Scenario


class DatasetSpecError(ValueError):
    """A --dataset or --loader value that cannot give what it names: one line for the user."""


def load_callable(spec: str, option: str, example: str, kind: str = "FACTORY") -> Callable:
    """MODULE:NAME, imported as the user's code from the working directory: what it names, or one line why not."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise DatasetSpecError(f"{option} {spec!r}: expected MODULE:{kind}, e.g. {example}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error of the user's module, whatever it raises
        raise DatasetSpecError(f"{option}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    found = getattr(module, attr, None)
    if found is None:
        raise DatasetSpecError(f"{option}: {module_name!r} has no attribute {attr!r}")
    if not callable(found):
        raise DatasetSpecError(f"{option}: {spec} is not callable")
    return found


def load_factory(spec: str, option: str = "--dataset", example: str = "mypkg.data:make_dataset") -> Callable:
    factory = load_callable(spec, option, example)
    attr = spec.partition(":")[2]
    try:
        inspect.signature(factory).bind()
    except TypeError:
        raise DatasetSpecError(f"{option}: {spec} needs arguments; the factory is called with none "
                               f"(wrap it: def {attr}_for_checks(): return {attr}(...))") from None
    except ValueError:  # no signature to read (some builtins): calling it will tell
        pass
    return factory


def call_factory(spec: str, option: str, example: str):
    """The factory's return value; whatever it raises becomes one line."""
    try:
        return load_factory(spec, option, example)()
    except DatasetSpecError:
        raise
    except Exception as exc:
        raise DatasetSpecError(f"{option}: {spec}() raised {type(exc).__name__}: {exc}") from None


def build_dataset(spec: str):
    from torch.utils.data import Dataset, IterableDataset

    dataset = call_factory(spec, "--dataset", "mypkg.data:make_dataset")
    is_sequence = hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")
    if isinstance(dataset, (str, bytes)) or not (isinstance(dataset, (Dataset, IterableDataset)) or is_sequence):
        raise DatasetSpecError(f"--dataset: {spec}() returned {type(dataset).__name__}, not a torch Dataset")
    return dataset


def user_dataset(opts: Options) -> dict:
    dataset = build_dataset(opts.dataset)
    try:
        result = _timings(dataset, opts)
    except Exception as exc:  # the user's dataset raised, in the loader or in a worker
        last = f"{type(exc).__name__}: {exc}".strip().splitlines()[-1]
        return {"status": "failed", "summary": f"{opts.dataset}: loading failed: {last}"}
    slow = result["not persistent"]["first_batch_s"]["median"]
    fast = result["persistent"]["first_batch_s"]["median"]
    return {
        "status": "ok",
        "summary": f"{opts.dataset}: first batch per epoch {slow:.3f} s without persistent workers, "
                   f"{fast:.3f} s with ({ratio(slow, fast):.1f}x)",
        "metrics": result,
    }


def _timings(dataset, opts: Options) -> dict:
    from torch.utils.data import DataLoader

    epochs = opts.epochs_or(3, 5)
    clock = Clock(opts.device)
    result = {}
    for persistent in (False, True):
        loader = DataLoader(dataset, batch_size=32, num_workers=opts.workers, persistent_workers=persistent,
                            multiprocessing_context=opts.start_method)
        firsts, totals = [], []
        for _ in range(epochs):
            start = clock()
            iterator = iter(loader)
            next(iterator)
            firsts.append(clock() - start)
            for _batch in iterator:
                pass
            totals.append(clock() - start)
            del iterator
        result["persistent" if persistent else "not persistent"] = {
            "first_batch_s": summarize(firsts[1:] or firsts),
            "epoch_s": summarize(totals[1:] or totals),
            "epoch1_first_batch_s": firsts[0],
        }
    return result


SCENARIO = Scenario("user-dataset", ("DL402",), user_dataset, 600)
