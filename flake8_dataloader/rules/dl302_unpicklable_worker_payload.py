"""DL302 unpicklable-worker-payload: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

import libcst as cst

from ..facts.payload import NOTEBOOK, unpicklable
from ..facts.walk import Visited
from .base import INHERITS, NEEDS_LOADER, Finding, Rule
from .dl3_shared import file_forces_fork, uses_fork_context

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


PICKLED_PARAMETERS = ("dataset", "collate_fn", "worker_init_fn")


class UnpicklableWorkerPayload(Rule):
    """
    ## What it does
    Flags a lambda, a nested function, a class defined inside a function or
    a generator object passed as `dataset`, `collate_fn` or `worker_init_fn`
    of a loader with workers, or nested inside such an argument (a
    `transforms.Lambda(lambda x: ...)` in the dataset's transform), following
    names bound once; and an instance of a class of this file (a dataset, a
    transform) whose `self` holds one, when a loader with workers gets it.

    Also what spawn workers cannot import, although it pickles: a function
    or class a Jupyter notebook defines, or one defined under the script's
    `if __name__ == "__main__":` block, sent as one of these arguments, held
    on `self`, or given to a same-file function that builds the loader.

    ## Why is this bad?
    Under spawn and forkserver these three arguments are pickled for every
    worker. `iter(loader)` fails in the main process: `AttributeError: Can't
    pickle local object '...<locals>...'` (Python 3.10–3.12), `Can't get local
    object` (3.13), `PicklingError` (3.14); a module-level lambda fails too,
    a generator with `TypeError: cannot pickle 'generator' object`. Samplers
    stay in the main process and are never pickled: not reported.

    A function or class pickles as a reference to its module. A notebook's
    kernel has no file to import, and a worker imports a script without
    running its `__main__` block: each worker dies with `AttributeError:
    Can't get attribute 'Shapes' on <module '__main__' (built-in)>` (in a
    notebook, printed to the terminal Jupyter runs in), and the loop raises
    `RuntimeError: DataLoader worker (pid(s) ...) exited unexpectedly`
    after seconds. Spawn is the default on macOS and Windows, forkserver on
    Linux from Python 3.14. Fix: move the class or function to a `.py`
    module next to the notebook and import it (in a script: to module
    level, or a module of its own).

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, num_workers=2, collate_fn=lambda batch: batch)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def keep_as_list(batch):
        return batch


    def main():
        loader = DataLoader(dataset, num_workers=2, collate_fn=keep_as_list)
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def collate(batch):
        return batch


    def make(dataset):
        in_process = DataLoader(dataset, collate_fn=lambda batch: batch)  # no workers: nothing is pickled
        module_level = DataLoader(dataset, num_workers=2, collate_fn=collate)
        return in_process, module_level
    ```

    ## Options
    Off under `--dataloader-start-method=fork`, a module-level
    `set_start_method("fork")`, or `multiprocessing_context="fork"`.
    `--dataloader-notebook`: `auto` (default) treats the files nbQA writes
    (`nbqa flake8 notebook.ipynb`) as notebooks, `on` every file, `off` none.

    ## Known limits
    - "Held on `self`" means the value assigned to a `self` attribute holds
      it: directly, in a container, or through an object of a same-file
      class that itself stores one on `self`.
    - Not held: a lambda only passed to a call whose result is not kept
      (`pool.imap(lambda i: ..., idx)` iterated in `__init__`), what a loop
      over a value yields (`for i, x in results: self.ims[i] = x`), and a
      generator expression consumed by the call it is passed to
      (`sorted(...)`, `list(...)`, `"".join(...)`, `np.array(...)`) or the
      iterable of a list/set/dict comprehension.
    - Values built by calling functions (`build_transform()`) are not
      followed.
    - A notebook's class or function given to a same-file function is
      reported at that function's loader call (once, whichever call passes
      it).
    - Anchor: the lambda, def or class reference inside the call, else the
      call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [Multi-process data loading: platform-specific behaviors](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors).
    """

    CODE = "DL302"
    ACROSS_FILES = (
        "A dataset class imported from the project that holds a lambda, a nested function or a generator on "
        "`self` is followed: the loader call of this file is reported (or the call of an imported factory "
        "whose dataset parameter it is given), naming the class's file and line."
    ) + INHERITS
    NAME = "unpicklable-worker-payload"
    MESSAGE = "{what} passed as {param} cannot be pickled for spawn/forkserver workers; {fix}"
    # Defined where spawn/forkserver workers cannot import it (facts/payload.py): pickled by name, not found.
    NOTEBOOK_MESSAGE = (
        "{what} is defined in the notebook and sent to workers as {param}: spawn/forkserver workers (macOS, "
        "Windows, Linux from Python 3.14) fail with \"Can't get attribute '{name}' on <module "
        "'__main__'>\"; move it to a .py module next to the notebook and import it"
    )
    GUARDED_MESSAGE = (
        "{what} is defined under `if __name__ == \"__main__\":` and sent to workers as {param}: spawn/forkserver "
        "workers import the script without running that block and fail with \"Can't get attribute '{name}'\"; "
        "move it to module level or a module of its own"
    )
    CONDITION = (("workers", "payload"), ("workers", "imported_payload"), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        if file_forces_fork(facts, settings):
            return
        notebook = settings.notebook == "on"
        for call in facts.flow.loader_calls.values():
            if not facts.iteration.may_use_workers(call) or uses_fork_context(call):
                continue
            seen_anchors: Set[cst.CSTNode] = set()
            for param in PICKLED_PARAMETERS:
                arg = call.args[param]
                if arg.expr is None:
                    continue
                for payload in unpicklable(facts, arg.expr, call.ctx.scope, Visited(), notebook=notebook):
                    anchor = payload.node if payload.inside else call.node
                    if anchor in seen_anchors:
                        continue
                    seen_anchors.add(anchor)
                    if payload.where:
                        template = cls.NOTEBOOK_MESSAGE if payload.where == NOTEBOOK else cls.GUARDED_MESSAGE
                        yield cls._finding(template, anchor, {"what": payload.what, "param": param, "name": payload.name})
                    else:
                        yield cls.finding(anchor, what=payload.what, param=param, fix=payload.fix)
        # Dataset classes of other project modules that hold one on self (at a loader call here, or at
        # the call of an imported factory whose dataset parameter is given an instance of one).
        for call, dataset in facts.iteration.imported_datasets_in_workers():
            if dataset.held is not None and not uses_fork_context(call):
                attr, what = dataset.held
                yield cls.finding(
                    call.node, what=f"an instance of {dataset.name} ({dataset.origin}) holding {what} on self.{attr}",
                    param="dataset", fix="store a module-level function (or the data itself) instead",
                )
