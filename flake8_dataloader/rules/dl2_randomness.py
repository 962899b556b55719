"""DL2xx: randomness in worker processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..facts import constants as C
from ..facts.calls import partial_target
from ..facts.classes import last_name, self_attribute
from ..facts.model import ClassInfo, FunctionInfo, Known
from ..facts.walk import Visited
from ..facts.nodes import walk
from ..facts.resolve import Scope, call_qualnames, evaluate, follow_single_binding, qualname_in, resolve
from .base import DEFINED_HERE, NEEDS_LOADER, PER_FILE, Finding, Rule

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings

DRAW_ROOTS = ("__getitem__", "__getitems__", "__iter__", "__next__")
RESEED_METHODS = frozenset({"seed", "manual_seed"})


def _is_rng_constructor(expr, scope) -> bool:
    """An RNG constructor call, also chained: `torch.Generator().manual_seed(0)`."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in RESEED_METHODS and isinstance(func.value, cst.Call):
        return _is_rng_constructor(func.value, scope)
    return qualname_in(func, scope, C.RNG_CONSTRUCTORS)


def _is_self_attr(expr, method: FunctionInfo, attr: Optional[str] = None) -> bool:
    name = self_attribute(expr, method)
    return name is not None and (attr is None or name == attr)


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
    Not reported when the methods that draw (or same-file helpers they call)
    use `get_worker_info()`, `torch.initial_seed()`, `.seed()`/`.manual_seed()`
    on the RNG or re-create it, nor when the file has loaders of the class
    and every one either passes a `worker_init_fn` (assumed to reseed it) or
    is proven single-process (`num_workers` 0 or omitted, as in
    `DataLoader(ds, batch_size=None)`): no worker copies the RNG. A module
    that only defines the class is reported, like DL601. Draws are
    seen through calls: `self.rng.method(...)` or `self.rng` passed to a call.
    Anchor: the RNG creation.

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
        reported: Set[cst.Call] = set()  # one finding per creation, however many subclasses inherit it
        module_rngs = cls._module_rngs(facts)
        for klass in facts.file.classes.values():
            if facts.file.dataset_kind(klass) is None and facts.loaders.inherited_dataset(klass) is None:
                continue  # neither a dataset class nor a subclass of one of another project module
            rngs = cls._held_rngs(facts, klass)
            if not rngs and not module_rngs:
                continue
            methods = facts.graph.reachable(klass, DRAW_ROOTS)
            drawn, reseeded = cls._draws(facts, klass, methods, rngs, module_rngs)
            if not drawn - reseeded:
                continue
            loaders = facts.loaders.loaders_using(klass)
            if loaders and all(facts.iteration.single_process_everywhere(c) or cls._passes_init_fn(c) for c in loaders):
                continue  # no worker copies the RNG, or a worker_init_fn is assumed to reseed it
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
            drawn, reseeded = cls._draws(facts, klass, methods, created, {})
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
                if _is_rng_constructor(bindings[0].value, facts.file.module_scope):
                    out[name] = bindings[0].value
        return out

    @staticmethod
    def _held_rngs(facts, klass: ClassInfo) -> Dict[str, Tuple[cst.Call, ClassInfo]]:
        """self.<attr> RNGs created in __init__ or the class body (own or inherited), with the class creating each."""
        out: Dict[str, Tuple[cst.Call, ClassInfo]] = {}
        for owner in [klass, *facts.file.base_classes(klass)]:
            for name, bindings in owner.scope.bindings.items():
                for binding in bindings:
                    if binding.kind == "assign" and _is_rng_constructor(binding.value, owner.scope):
                        out.setdefault(name, (binding.value, owner))
            for attr, values in owner.self_attrs.items():
                for value, method in values:
                    if method.name == "__init__" and _is_rng_constructor(value, method.scope):
                        out.setdefault(attr, (value, owner))
        return out

    @staticmethod
    def _draws(facts, klass, methods, rngs, module_rngs) -> Tuple[Set[str], Set[str]]:
        drawn: Set[str] = set()
        reseeded: Set[str] = set()
        per_worker = False
        for method in methods:
            for record in facts.graph.calls_in(method):
                call, scope = record.node, record.ctx.scope
                names = call_qualnames(call, scope)
                if any(n.endswith("get_worker_info") for n in names) or names & C.PER_ITERATOR_SEED_SOURCES:
                    per_worker = True
                func = call.func
                receiver = func.value if isinstance(func, cst.Attribute) else None
                key = None
                if isinstance(receiver, cst.Attribute) and _is_self_attr(receiver, method) and receiver.attr.value in rngs:
                    key = receiver.attr.value
                elif isinstance(receiver, cst.Name) and receiver.value in module_rngs:
                    if scope.lookup(receiver.value) is facts.file.module_scope:
                        key = receiver.value
                if key is not None:
                    (reseeded if func.attr.value in RESEED_METHODS else drawn).add(key)
                for arg in call.args:
                    value = arg.value
                    if _is_self_attr(value, method) and value.attr.value in rngs:
                        drawn.add(value.attr.value)
                    elif isinstance(value, cst.Name) and value.value in module_rngs:
                        if scope.lookup(value.value) is facts.file.module_scope:
                            drawn.add(value.value)
            for attr, values in klass.self_attrs.items():
                for value, where in values:
                    if where is method and attr in rngs and _is_rng_constructor(value, method.scope):
                        reseeded.add(attr)
        if per_worker:
            reseeded |= drawn
        return drawn, reseeded


def _worker_code(facts) -> Tuple[Set[FunctionInfo], Set[cst.Call]]:
    """Code that runs in the workers: worker_init_fns (as DL203 finds them), the functions a lambda
    passed as `worker_init_fn` calls, the functions reached only from those, and the calls written
    inside such a lambda."""
    roots = list(worker_init_functions(facts))
    in_lambdas: Set[cst.Call] = set()
    for function, scope in _worker_lambdas(facts):
        for node in walk(function.body):
            if isinstance(node, cst.Call):
                in_lambdas.add(node)
                roots.extend(f for f in facts.graph.functions_of(node.func, scope) if f not in roots)
    return facts.graph.called_only_from(roots), in_lambdas


def _worker_lambdas(facts) -> List[Tuple[cst.Lambda, Scope]]:
    """Lambdas passed as `worker_init_fn` (directly, bound once to a name, or wrapped in `partial`),
    with the scope they are written in."""
    found: List[Tuple[cst.Lambda, Scope]] = []
    for expr, scope in _worker_init_values(facts):
        expr, scope = follow_single_binding(expr, scope)
        expr, scope = follow_single_binding(partial_target(expr), scope)
        if isinstance(expr, cst.Lambda) and all(expr is not seen for seen, _ in found):
            found.append((expr, scope))
    return found


def _from_entropy(call: cst.Call, scope) -> bool:
    """A seed drawn from `os.urandom`, `time` or `secrets`: no wish for reproducible runs."""
    for arg in call.args:
        for node in walk(arg.value):
            if isinstance(node, cst.Call) and any(
                name == "os.urandom" or name.startswith(C.ENTROPY_MODULES) for name in call_qualnames(node, scope)
            ):
                return True
    return False


def _names_a_torch_seeder(name: str) -> bool:
    """An imported helper named for seeding or determinism (`set_seed`, MONAI's `set_determinism`).

    torch's own functions count only when they seed its generator (C.TORCH_SEEDERS), not
    `torch.initial_seed()` (a reader) or `torch.cuda.manual_seed` (CUDA generators only).
    """
    last = name.rsplit(".", 1)[-1].lower()
    return ("seed" in last or "determinism" in last) and not name.startswith(
        ("builtins.", "random.", "numpy.", "torch.")
    )


def _torch_seeded(facts) -> Tuple[bool, bool]:
    """(seeds random/np.random for the run, seeds torch or may through an imported helper).

    Run-level seeding is a seeding call with an argument in the main process: not in a
    worker_init_fn (a lambda one included) or a function reached only from one, not a bare
    `np.random.seed()` (which reseeds from entropy), and not a seed drawn from entropy or the clock.
    """
    worker_only, in_lambdas = _worker_code(facts)
    nontorch = torch = False
    for record in facts.file.calls:
        names = call_qualnames(record.node, record.ctx.scope)
        if names & C.GLOBAL_NONTORCH_SEEDERS:
            in_worker = record.ctx.function in worker_only or record.node in in_lambdas
            if record.node.args and not in_worker and not _from_entropy(record.node, record.ctx.scope):
                nontorch = True
        elif names & C.TORCH_SEEDERS or any(_names_a_torch_seeder(n) for n in names):
            torch = True
    return nontorch, torch


class HalfSeededRun(Rule):
    """
    ## What it does
    Flags a loader that shuffles (`shuffle=True`, or a random sampler built
    in this file) or uses workers, and passes no `generator=`, in a file that
    seeds `random` or `np.random` but never torch (`torch.manual_seed`,
    Lightning's `seed_everything`, `transformers.set_seed`, Accelerate's
    `set_seed`).

    ## Why is this bad?
    The file wants reproducible runs, but the shuffle order and every
    worker's seed are drawn from torch's global generator, which nobody
    seeded: two runs differ. Measured: `random.seed` + `np.random.seed`
    alone give different orders across runs; `torch.manual_seed(0)` or
    `generator=` alone give identical ones.

    ## Example
    ```python
    import random

    import numpy as np
    from torch.utils.data import DataLoader

    random.seed(0)
    np.random.seed(0)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Use instead
    ```python
    import random

    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Not reported
    ```python
    import os
    import random

    from torch.utils.data import DataLoader, get_worker_info


    def worker_init(worker_id):
        random.seed(get_worker_info().seed)  # inside a worker: not run-level seeding


    def make(dataset):
        return DataLoader(dataset, shuffle=True, num_workers=2, worker_init_fn=worker_init)


    def make_recipe(dataset):
        # A lambda worker_init_fn is worker code; a seed from os.urandom is entropy.
        return DataLoader(
            dataset, shuffle=True, num_workers=2, multiprocessing_context="fork",  # fork: a lambda is fine
            worker_init_fn=lambda worker_id: random.seed(int.from_bytes(os.urandom(4), "little") + worker_id),
        )
    ```

    ## Options
    None.

    ## Known limits
    Only run-level seeding shows the wish for reproducible runs: a
    `random.seed(x)` / `np.random.seed(x)` with an argument, in the main
    process. Seeding inside a `worker_init_fn` (as DL203 finds them, or a
    lambda passed as one, directly, bound once to a name or inside
    `functools.partial`), in a function called only from one (or from such
    a lambda), a bare `np.random.seed()` (entropy), and a seed built from
    `os.urandom`, `time` or `secrets` (`np.random.seed(int(time.time()))`),
    do not count. A call of any imported helper whose name contains `seed`
    or `determinism` (`utils.set_seed`, MONAI's `set_determinism`) is
    assumed to seed torch. Not reported through a `**kwargs` splat (it may
    carry `generator=`). A sampler given its own `generator=` counts as
    seeded. Anchor: the loader call.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): `generator=` drives `RandomSampler` and the workers' base seed.
    """

    CODE = "DL202"
    ACROSS_FILES = PER_FILE + " An imported function whose name contains `seed` or `determinism` counts as seeding torch."
    NAME = "half-seeded-run"
    MESSAGE = (
        "random/np.random are seeded but torch is not and this loader has no generator=: "
        "{what} differ between runs; call torch.manual_seed(seed) or pass generator="
    )
    CONDITION = (("seed", "workers"), ("seed", "shuffles"), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        nontorch, torch = _torch_seeded(facts)
        if not nontorch or torch:
            return
        for call in facts.flow.loader_calls.values():
            generator = call.args["generator"]
            if not (generator.omitted or (generator.known and generator.value is None)):
                continue
            shuffles = call.args["shuffle"].known_truthy() or cls._random_sampler(facts, call)
            workers = facts.iteration.may_use_workers(call)
            if shuffles or workers:
                what = " and ".join(w for w, on in (("shuffle order", shuffles), ("worker seeds", workers)) if on)
                yield cls.finding(call.node, what=what)

    @staticmethod
    def _random_sampler(facts, call) -> bool:
        sampler = call.args["sampler"]
        expr, scope = follow_single_binding(sampler.expr, call.ctx.scope)
        if not isinstance(expr, cst.Call) or not qualname_in(expr.func, scope, C.RANDOM_SAMPLERS):
            return False
        return not any(arg.keyword is not None and arg.keyword.value == "generator" for arg in expr.args)


def worker_init_functions(facts) -> List[FunctionInfo]:
    """Functions passed as `worker_init_fn` (directly, via `functools.partial` or a splatted
    dict) and functions whose first parameter is `worker_id`."""
    found: List[FunctionInfo] = [f for f in facts.file.functions.values() if f.params and f.params[0] == "worker_id"]
    for expr, scope in _worker_init_values(facts):
        found.extend(func for func in facts.graph.functions_of(expr, scope) if func not in found)
    return found


def _worker_init_values(facts) -> Iterator[Tuple[cst.BaseExpression, Scope]]:
    """What the file's loaders are given as `worker_init_fn`, directly or through a splatted dict."""
    for call in facts.flow.loader_calls.values():
        given = call.args["worker_init_fn"].expr
        if given is not None:
            yield given, call.ctx.scope
        for arg in call.node.args:
            if arg.star == "**":
                yield from _dict_sources(arg.value, call.ctx.scope)


def _dict_sources(expr, scope):
    """The `worker_init_fn` values of a dict literal or `dict(...)` a splat reads."""
    expr, scope = follow_single_binding(expr, scope)
    if isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                if element.key.evaluated_value == "worker_init_fn":
                    yield element.value, scope
    elif isinstance(expr, cst.Call) and last_name(expr.func) == "dict":
        for arg in expr.args:
            if arg.keyword is not None and arg.keyword.value == "worker_init_fn":
                yield arg.value, scope


SEEDING_CALLS = C.GLOBAL_NONTORCH_SEEDERS | {"torch.manual_seed", "torch.random.manual_seed"} | C.RNG_CONSTRUCTORS
_PURE_BUILTINS = frozenset({"builtins.int", "builtins.abs", "builtins.hash", "builtins.str"})


class WorkerSeedIgnoresEpoch(Rule):
    """
    ## What it does
    Flags a `worker_init_fn` (passed as `worker_init_fn=` directly, through
    `functools.partial` or a splatted dict, or any function whose first
    parameter is `worker_id`) that seeds an RNG from `worker_id` and
    constants alone.

    ## Why is this bad?
    PyTorch already gives every worker a unique seed, drawn afresh for each
    epoch's iterator. Reseeding from `worker_id` overrides that: without
    persistent workers every epoch replays the same random stream, and so
    does every run (measured below).

    ## Example
    ```python
    import numpy as np


    def seed_worker(worker_id):
        np.random.seed(42 + worker_id)
    ```

    ## Use instead
    ```python
    import numpy as np
    import torch


    def seed_worker(worker_id):
        np.random.seed(torch.initial_seed() % 2**32)
    ```

    ## Not reported
    ```python
    import numpy as np
    import torch


    def seed_worker(worker_id):
        np.random.seed((torch.initial_seed() + worker_id) % 2**32)
    ```

    ## Options
    None.

    ## Known limits
    Seeds derived from any call other than `int`/`abs`/`hash`/`str` (for
    example `torch.initial_seed()`, `np.random.get_state()`, `time.time()`)
    count as per-iterator sources. Attributes of a parameter (`cfg.seed`) are
    constants. Anchor: the `def`.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch/utils/data/_utils/worker.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/_utils/worker.py): each worker seeds `random`, `torch` and `np.random` from the iterator's base seed.
    """

    CODE = "DL203"
    ACROSS_FILES = DEFINED_HERE.format(what="function (its first parameter named `worker_id`)") + " An imported worker_init_fn with another parameter name is not followed."
    NAME = "worker-seed-ignores-epoch"
    MESSAGE = (
        "worker_init_fn {name} seeds from worker_id and constants only: every epoch and every run "
        "replays the same random stream; seed from torch.initial_seed() or get_worker_info().seed"
    )
    CONDITION = (("worker_fn",),)
    TRIGGERS = ("worker_init_fn", "worker_id")

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for func in worker_init_functions(facts):
            if cls._seeds_statically(facts, func):
                yield cls.finding(func.node, name=func.name)

    @classmethod
    def _seeds_statically(cls, facts, func: FunctionInfo) -> bool:
        for record in facts.graph.calls_in(func):
            call, scope = record.node, record.ctx.scope
            names = call_qualnames(call, scope)
            is_seeding = bool(names & SEEDING_CALLS) or (
                isinstance(call.func, cst.Attribute) and call.func.attr.value in RESEED_METHODS
            )
            if not is_seeding:
                continue
            seed = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "seed"), None)
            if seed is not None and cls._static(seed, scope, func, Visited()):
                return True
        return False

    @classmethod
    def _static(cls, expr, scope, func: FunctionInfo, seen: Visited[str]) -> bool:
        """True when the value depends only on parameters and constants."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in func.scope.params:
                return True
            if not seen.first(expr.value):
                return False
            owner = scope.lookup(expr.value)
            if owner is func.scope:
                bindings = owner.bindings[expr.value]
                return all(
                    b.kind == "assign" and b.value is not None and cls._static(b.value, b.scope, func, seen)
                    for b in bindings
                )
            return isinstance(evaluate(expr, scope), Known)
        if isinstance(expr, cst.BinaryOperation):
            return cls._static(expr.left, scope, func, seen) and cls._static(expr.right, scope, func, seen)
        if isinstance(expr, cst.UnaryOperation):
            return cls._static(expr.expression, scope, func, seen)
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            base = expr.value
            return isinstance(base, cst.Name) and base.value in func.scope.params
        if isinstance(expr, cst.Call):
            targets = resolve(expr.func, scope)
            return bool(targets) and targets <= _PURE_BUILTINS and all(
                cls._static(a.value, scope, func, seen) for a in expr.args
            )
        return False
