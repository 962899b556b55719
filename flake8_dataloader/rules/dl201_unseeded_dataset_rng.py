"""DL201 unseeded-dataset-rng: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Set, Tuple

import libcst as cst

from ..facts.class_traits import held_objects
from ..facts.dataset_rngs import DRAW_ROOTS, drawn_and_reseeded, held_rngs, is_rng_constructor, per_worker_seeded
from .base import DEFINED_HERE, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class UnseededDatasetRng(Rule):
    """
    ## What it does
    Flags an RNG object (`np.random.default_rng`, `np.random.RandomState`,
    `np.random.Generator`, `random.Random`, `torch.Generator`) that a
    `Dataset`/`IterableDataset` subclass of this file creates in `__init__` or
    its class body, or takes from module level, and draws from in
    `__getitem__`/`__iter__` (or the methods they call) without reseeding it
    per worker.

    ## Why is this bad?
    PyTorch reseeds `random`, `torch` and the global `np.random` in every
    worker, but an RNG object held by the dataset is copied into each worker
    with the same state, whatever seed it was given. All workers draw the
    same "random" augmentations. Measured (2 workers, 8 samples, 3 epochs):
    4 unique draws of 24 without persistent workers (each epoch replays the
    same stream), 12 of 24 with them; the global RNGs give 24 of 24. A
    `torch.Generator` on the dataset also crashes spawn/forkserver workers.

    ## Example
    ```python
    import numpy as np
    from torch.utils.data import Dataset


    class RandomCrops(Dataset):
        def __init__(self, images, seed=0):
            self.images = images
            self.rng = np.random.default_rng(seed)

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            top = self.rng.integers(0, 8)
            return self.images[index][top:top + 24]
    ```

    ## Use instead
    ```python
    import numpy as np
    from torch.utils.data import Dataset, get_worker_info


    class RandomCrops(Dataset):
        def __init__(self, images, seed=0):
            self.images = images
            self.seed = seed
            self.rng = None

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            if self.rng is None:
                info = get_worker_info()
                self.rng = np.random.default_rng(info.seed if info is not None else self.seed)
            top = self.rng.integers(0, 8)
            return self.images[index][top:top + 24]
    ```

    ## Not reported
    ```python
    import numpy as np
    from torch.utils.data import DataLoader, Dataset


    class GlobalNoise(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return np.random.random()  # the global state: PyTorch reseeds it in every worker


    class FixedOrder(Dataset):
        def __init__(self):
            self.order = np.random.default_rng(0).permutation(8)  # drawn once, in __init__

        def __len__(self):
            return 8

        def __getitem__(self, index):
            return self.order[index]


    class Jitter(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return 8

        def __getitem__(self, index):
            return self.rng.random()


    loader = DataLoader(Jitter(), batch_size=None)  # one process: no worker copies the RNG
    ```

    ## Options
    None.

    ## Known limits
    - Not reported when the methods that draw (or same-file helpers they
      call) use `get_worker_info()`, `torch.initial_seed()`,
      `.seed()`/`.manual_seed()` on the RNG or re-create it.
    - Not reported when the file has loaders of the class and every one
      either passes a `worker_init_fn` (assumed to reseed it) or is proven
      single-process (`num_workers` 0 or omitted, as in `DataLoader(ds,
      batch_size=None)`): no worker copies the RNG.
    - A module that only defines the class is reported, like DL601.
    - Draws are seen through calls: `self.rng.method(...)` or `self.rng`
      passed to a call.
    - An RNG one object removed: `self.scaler = RandomScaler(...)`, a class
      of this file whose `__init__` creates an RNG, drawn through
      `self.scaler.method(...)` or `self.scaler(...)`; anchor: the holding
      assignment, naming the RNG's line. Classes of other modules are not
      followed there yet.
    - Anchor: the RNG creation.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch/utils/data/_utils/worker.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/_utils/worker.py): each worker seeds `random`, `torch` and `np.random` from the iterator's base seed.
    """

    CODE = "DL201"
    ACROSS_FILES = DEFINED_HERE.format(what="dataset class") + (
        " An RNG an imported dataset base creates in `__init__` (or its class body) and does not draw from "
        "itself is reported at the `class` line of a subclass of this file that draws from it, naming the "
        "creation's file and line; a subclass whose `__init__` does not call `super().__init__()`, or that "
        "assigns the attribute again, does not inherit it."
    )
    NAME = "unseeded-dataset-rng"
    MESSAGE = (
        "{rng} of {klass} is copied into every worker with the same state (workers draw identical "
        "numbers); reseed it per worker from get_worker_info().seed"
    )
    # v7: an RNG of a base class in another module reaches a subclass of this file.
    CONDITION = (("rng",), ("class_with_base", "imported_rng_class"))
    # A dataset class (torch's or torchvision's) and an RNG constructor must both be named.
    TRIGGERS = tuple(
        (base, rng) for base in ("Dataset", "torchvision") for rng in ("default_rng", "RandomState", "Generator", "Random")
    )

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        reported: Set[cst.CSTNode] = set()  # one finding per creation, however many subclasses inherit it
        module_rngs = cls._module_rngs(facts)
        for klass in facts.file.classes.values():
            if facts.file.dataset_kind(klass) is None and facts.loaders.inherited_dataset(klass) is None:
                continue  # neither a dataset class nor a subclass of one of another project module
            methods = facts.graph.reachable(klass, DRAW_ROOTS)
            held_through = list(_held_through(facts, klass, methods))
            rngs = held_rngs(facts, klass)
            drawn, reseeded = drawn_and_reseeded(facts, klass, methods, rngs, module_rngs)
            if not drawn - reseeded and not held_through:
                continue
            loaders = facts.loaders.loaders_using(klass)
            if loaders and all(facts.iteration.single_process_everywhere(c) or cls._passes_init_fn(c) for c in loaders):
                continue  # no worker copies the RNG, or a worker_init_fn is assumed to reseed it
            for holding, label, creation in held_through:
                if holding not in reported:
                    reported.add(holding)
                    yield cls.finding(holding, rng=label, klass=klass.name, creation=creation)
            for key in sorted(drawn - reseeded):
                creation, owner = rngs[key] if key in rngs else (module_rngs[key], klass)
                if creation in reported:
                    continue
                reported.add(creation)
                label = f"self.{key}" if key in rngs else key
                yield cls.finding(creation, rng=label, klass=owner.name)
        yield from cls._inherited(facts)

    @classmethod
    def _inherited(cls, facts) -> Iterator[Finding]:
        """A subclass of this file drawing from an RNG its imported dataset base creates: reported at the
        subclass (the base's module reports only the RNGs its own methods draw from)."""
        for klass in facts.file.classes.values():
            inherited = facts.loaders.inherited_dataset(klass)
            if inherited is None or not inherited.rngs:
                continue
            created = dict(inherited.rngs)
            methods = facts.graph.reachable(klass, DRAW_ROOTS)
            drawn, reseeded = drawn_and_reseeded(facts, klass, methods, created, {})
            if not drawn - reseeded:
                continue
            loaders = facts.loaders.loaders_using(klass)
            if loaders and all(facts.iteration.single_process_everywhere(c) or cls._passes_init_fn(c) for c in loaders):
                continue
            key = min(drawn - reseeded)
            yield cls.finding(klass.node, rng=f"self.{key} (created at {created[key]})", klass=klass.name)

    @staticmethod
    def _passes_init_fn(call) -> bool:
        arg = call.args["worker_init_fn"]
        return arg.unknown or (arg.known and arg.state.value is not None)

    @staticmethod
    def _module_rngs(facts) -> Dict[str, cst.Call]:
        out = {}
        for name, bindings in facts.file.module_scope.bindings.items():
            if len(bindings) == 1 and bindings[0].kind == "assign":
                if is_rng_constructor(bindings[0].value, facts.file.module_scope):
                    out[name] = bindings[0].value
        return out


def _held_through(facts, klass, methods) -> Iterator[Tuple[cst.CSTNode, str, cst.Call]]:
    """An RNG one object removed: `self.x = Helper(...)` at construction, where the same-file class
    Helper creates an RNG in `__init__`, and a sample method draws from it through `self.x.method(...)`
    or `self.x(...)`. Yields (the holding assignment's target, the RNG's label, its creation)."""
    if per_worker_seeded(facts, methods):
        return
    for mutation, attr, helper, entries in held_objects(facts, klass, methods):
        rngs = held_rngs(facts, helper)
        if not rngs:
            continue
        drawn, reseeded = drawn_and_reseeded(facts, helper, facts.graph.reached_from(*entries), rngs, {})
        for key in sorted(drawn - reseeded)[:1]:
            yield mutation.node, f"self.{attr}.{key} (created at line {{line of creation}})", rngs[key][0]
