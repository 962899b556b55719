"""DL401 loader-rebuilt-in-loop: the rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

import libcst as cst

from .base import FACTORY_SITES, NEEDS_LOADER, Finding, Rule
from .dl4_shared import rebuilt_by_calls, rebuilt_loop

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


class LoaderRebuiltInLoop(Rule):
    """
    ## What it does
    Flags a loader with workers that is constructed inside a `for`/`while`
    body and iterated in the same loop, when none of its arguments depends on
    the loop (no reference to the loop target or to a name bound in the body).
    Also through calls: a function of this file that builds a loader with
    workers and iterates it, called inside a loop with arguments that do not
    change in that loop (`for epoch ...: validate(model, val_set)` where
    `validate` builds `DataLoader(val_set, num_workers=4)`). Details below.

    ## Why is this bad?
    Every pass tears the workers down and starts new ones, and
    `persistent_workers=True` cannot help a loader that is thrown away. The
    cost is paid at the first batch of every epoch and grows with the number
    of workers, the dataset object's size (pickled per worker under spawn and
    forkserver) and the start method: under spawn every worker imports torch
    again. See the measured cost below.

    Building the loader once is only half the fix: without
    `persistent_workers=True` its workers still restart at every epoch's
    `iter()`. Measured by `runtime_checks` (median first batch of epochs
    after the first, 2 workers, torch 2.13 CPU): under fork 0.036 s rebuilt,
    0.033 s built once, 0.005 s built once with persistent workers; under
    spawn 3.93 s, 4.07 s and 0.007 s. Built once without persistence saves
    nothing measurable; the message therefore asks for both.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        for epoch in range(10):
            loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                pass
    ```

    ## Details
    - A loader built in an outer loop and iterated in an inner one is DL401
      only when none of its arguments changes with the outer loop; otherwise
      DL402 (its inner loop restarts the workers).
    - Not when the construction sits under a condition reading a name the loop
      binds (`if feats is None:` with `feats` bound again in the loop): a
      cache, built in some passes only.
    - Only what reaches the loader counts: the arguments passed for the
      parameters its DataLoader call reads (through the function's own
      assignments), and what it reads from outside the function
      (`self.data`, a global).
    - One of those changes in the loop when a name in it is bound there, or
      when it is changed in place there: an item or attribute assignment
      (`hyp[k] = ...`, `args.batch_size = ...`, augmented ones too) or a
      method called on it (`cfg.update(...)`).
    - A step counter handed to `validate(model, val_set, step)` and only
      printed, or an unrelated `self.tokens += n`, leaves the loader as it
      was: reported.
    - A function that iterates the loader it builds inside a loop of its own
      is a whole run per call, not an epoch (a hyper-parameter search calling
      `train(hyp)` 300 times): not reported here; DL402 looks at its own loop.

    ## Not reported
    ```python
    from torch.utils.data import DataLoader, Subset


    def k_fold(dataset, folds):
        for fold in folds:
            loader = DataLoader(Subset(dataset, fold), num_workers=2)  # depends on the loop
            for batch in loader:
                pass


    def run_fold(dataset, fold):
        for batch in DataLoader(Subset(dataset, fold), num_workers=2):
            pass


    def k_fold_through_a_call(dataset, folds):
        for fold in folds:
            run_fold(dataset, fold)  # a new fold every call


    def train(hyp, epochs):
        loader = DataLoader(hyp["dataset"], batch_size=hyp["batch_size"], num_workers=2, persistent_workers=True)
        for epoch in range(epochs):  # a whole run per call
            for batch in loader:
                pass


    def evolve(hyp, generations):
        for _ in range(generations):
            hyp["batch_size"] *= 2  # changed in place: a new loader is meant
            train(hyp.copy(), epochs=10)
    ```

    ## Options
    None.

    ## Known limits
    - A loader whose arguments depend on the loop (k-fold split, curriculum
      stage, active-learning pool) is not reported. Dependence is judged by
      names: `make_dataset()` with no loop variable counts as invariant.
    - `accelerator.prepare(loader)` written inside a loop that repeats the
      loader and did not build it is reported at the `prepare` call: each
      call makes a new wrapper (and new workers at its first `iter()`), and
      the Accelerator keeps every one (`runtime_checks --rule DL401`: 3
      wrappers kept after 3 epochs).
    - Lightning's `reload_dataloaders_every_n_epochs` calls the hooks again
      on purpose and is never reported: hooks are read as called once per
      `fit()`.
    - Through calls, one level is followed (the function called in the loop
      builds and iterates the loader itself). The loop-invariance test looks
      at what reaches the function's loader: the arguments for the
      parameters its loader call reads, and the names or `self` attributes it
      reads from outside the function (a step counter in another argument, or
      `model.train()`, changes nothing the loader sees); a method called on
      the loop's own `self` is not followed.
    - Anchor: the call (for a loader built by a function called in the loop:
      its DataLoader call).

    ## References
    - [`persistent_workers`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): with it, the workers outlive the end of an epoch and serve the next one.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL401"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the factory's call inside the loop")
    NAME = "loader-rebuilt-in-loop"
    MESSAGE = (
        "DataLoader is rebuilt on every loop iteration; build it once before the loop with "
        "persistent_workers=True (workers restart each epoch)"
    )
    FRAMEWORK_MESSAGE = (
        "{method}() wraps the DataLoader again on every loop iteration and the Accelerator keeps every "
        "wrapper; prepare it once before the loop"
    )
    CONDITION = (("workers", "loop"), ("imported_builder", "loop"))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        reported: Set[cst.CSTNode] = set()
        for site in facts.flow.loader_sites():
            if site.worker_using() and rebuilt_loop(facts, site) is not None and site.node not in reported:
                reported.add(site.node)
                yield cls.finding(site.node)
        for site in facts.flow.loader_sites():
            if site.worker_using() and site.node not in reported and rebuilt_by_calls(facts, site):
                reported.add(site.node)
                yield cls.finding(site.node)
        for record in facts.frameworks.prepared_in_loops:
            func = record.node.func
            yield cls.framework_finding(record.node, method=func.attr.value if isinstance(func, cst.Attribute) else "prepare")
