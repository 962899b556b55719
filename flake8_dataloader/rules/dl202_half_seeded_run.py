"""DL202 half-seeded-run: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Set, Tuple

import libcst as cst

from ..facts import constants as C
from ..facts.calls import partial_target
from ..facts.model import FunctionInfo
from ..facts.nodes import walk
from ..facts.resolve import Scope, branch_values, call_qualnames, follow_single_binding, qualname_in
from .base import NEEDS_LOADER, PER_FILE, Finding, Rule
from .dl2_shared import worker_init_functions, worker_init_values

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


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
    for expr, scope in worker_init_values(facts):
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

    ## Details
    - A conditional expression is each of its values: `sampler=RandomSampler(ds)
      if flag else None` (written there or bound once to a name) may shuffle.

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
    - Only run-level seeding shows the wish for reproducible runs: a
      `random.seed(x)` / `np.random.seed(x)` with an argument, in the main
      process.
    - Do not count: seeding inside a `worker_init_fn` (as DL203 finds them,
      or a lambda passed as one, directly, bound once to a name or inside
      `functools.partial`), in a function called only from one (or from such
      a lambda), a bare `np.random.seed()` (entropy), and a seed built from
      `os.urandom`, `time` or `secrets`
      (`np.random.seed(int(time.time()))`).
    - A call of any imported helper whose name contains `seed` or
      `determinism` (`utils.set_seed`, MONAI's `set_determinism`) is assumed
      to seed torch.
    - Not reported through a `**kwargs` splat (it may carry `generator=`). A
      sampler given its own `generator=` counts as seeded.
    - Anchor: the loader call.

    ## References
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader): per-worker seeds, `worker_init_fn`, `generator=`.
    - [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): `generator=` drives `RandomSampler` and the workers' base seed.
    """

    CODE = "DL202"
    ACROSS_FILES = PER_FILE + " An imported function whose name contains `seed` or `determinism` counts as seeding torch."
    NAME = "half-seeded-run"
    MESSAGE = (
        "random/np.random are seeded but torch is not and this loader has no generator=: "
        "{what_differs} between runs; call torch.manual_seed(seed) or pass generator="
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
                yield cls.finding(call.node, what_differs=what + (" differs" if what == "shuffle order" else " differ"))

    @staticmethod
    def _random_sampler(facts, call) -> bool:
        sampler = call.args["sampler"]
        found, scope = follow_single_binding(sampler.expr, call.ctx.scope)
        for expr in branch_values(found):  # `RandomSampler(ds) if flag else None` may be random
            if isinstance(expr, cst.Call) and qualname_in(expr.func, scope, C.RANDOM_SAMPLERS):
                if not any(arg.keyword is not None and arg.keyword.value == "generator" for arg in expr.args):
                    return True
        return False
