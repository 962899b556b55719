"""DL303 unguarded-start-method: the rule and the helpers only it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from ..facts.resolve import evaluate
from ..facts.states import Known
from .base import PER_FILE, Finding, Rule
from .dl3_shared import SET_START_METHOD, calls_of, first_arg, is_fork

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


class UnguardedStartMethod(Rule):
    """
    ## What it does
    Flags `multiprocessing.set_start_method(...)` or
    `torch.multiprocessing.set_start_method(...)` at module level, outside the
    `__main__` guard, without `force=True`.

    ## Why is this bad?
    Under spawn/forkserver every worker re-imports the main module and runs
    the call again; the start method is already set in the worker, so each
    one dies with `RuntimeError: context has already been set`, even when the
    loop itself is guarded.

    ## Example
    ```python
    import torch.multiprocessing as mp

    mp.set_start_method("spawn")
    ```

    ## Use instead
    ```python
    import torch.multiprocessing as mp

    if __name__ == "__main__":
        mp.set_start_method("spawn")
    ```

    ## Not reported
    ```python
    import multiprocessing


    def main():
        pass


    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn")
        main()
    ```

    - Jupyter notebooks (linted through nbQA, see Options): spawn and
      forkserver workers never re-run a kernel's cells, so a cell may set
      the start method once per kernel.

    ## Options
    `--dataloader-notebook`: `auto` (default) treats the files nbQA writes
    (`nbqa flake8 notebook.ipynb`) as notebooks, `on` every file, `off` none.

    ## Known limits
    - `set_start_method("fork")` is not reported: forked workers do not
      re-import the module.
    - Anchor: the call.

    ## References
    - [Multiprocessing best practices](https://pytorch.org/docs/stable/notes/multiprocessing.html) and Python's [safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
    - [`multiprocessing.set_start_method`](https://docs.python.org/3/library/multiprocessing.html#multiprocessing.set_start_method): raises `RuntimeError` when the context is already set, unless `force=True`.
    """

    CODE = "DL303"
    ACROSS_FILES = PER_FILE
    NAME = "unguarded-start-method"
    MESSAGE = (
        "set_start_method() at module level runs again in every spawned worker and raises "
        "'context has already been set'; call it under the `__main__` guard"
    )
    CONDITION = (("start_method",),)
    TRIGGERS = ("set_start_method",)

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        if settings.notebook == "on":
            return  # a notebook's kernel has no main file: spawn workers do not re-run its cells
        for record in calls_of(facts, SET_START_METHOD):
            if record.ctx.function is not None or record.ctx.guarded:
                continue
            if record.ctx.scope.kind != "module":
                continue
            force = _keyword(record.node, "force")
            if force is not None and not (isinstance(evaluate(force, record.ctx.scope), Known)
                                          and not evaluate(force, record.ctx.scope).value):
                continue
            method = first_arg(record.node, "method")
            if method is not None and is_fork(method, record.ctx.scope):
                continue
            yield cls.finding(record.node)
