"""DL402 persistent-workers-disabled: the rule, the helpers only it uses and its fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from ..autofix.context import Elsewhere, FixContext, Outcome
from ..autofix.edits import Plan, keyword_arg
from ..autofix.shared import workers_expr
from .compose import positive
from ..facts.class_traits import iterable_classes, single_use_return
from ..facts.constants import DEFAULT_LOADER_NAMES
from ..facts.draws import draws_random
from ..facts.model import Argument, LoaderCall, LoaderSite
from ..facts.mutation import dataset_change_in_loop, reseeded_each_pass
from ..facts.resolve import resolve
from .base import FACTORY_SITES, FOLLOWS_CALLABLES, NEEDS_LOADER_OR_CONFIG, Finding, Rule, source_of
from .dl4_shared import rebuilt_by_calls, rebuilt_loop

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def _not_persistent(call: LoaderCall) -> bool:
    persistent = call.args["persistent_workers"]
    if written_false(persistent.expr):
        return False  # a decision (v7): the real ones refresh their dataset every epoch on purpose
    return persistent.omitted or (persistent.known and not persistent.value)


def written_false(expr: Optional[cst.BaseExpression]) -> bool:
    """The argument is the literal `False` as written (not a name bound to it)."""
    return isinstance(expr, cst.Name) and expr.value == "False"


class PersistentWorkersDisabled(Rule):
    """
    ## What it does
    Flags a loader with workers that is built outside a loop and iterated
    inside one (every epoch), with `persistent_workers` omitted or `False`.
    With `num_workers` unknown here (`args.workers`) the message suggests
    `persistent_workers=<that expression> > 0`. The loader is followed
    wherever the file carries it (functions, factories, containers, trainer
    objects, generators) and into the frameworks that iterate loaders for
    you: Lightning, the transformers Trainer, accelerate and Ignite
    (docs/analysis.md, "Frameworks"). Details below.

    ## Why is this bad?
    Each epoch's `iter(loader)` starts `num_workers` new processes and hands
    each a fresh copy of the dataset; the accelerator waits meanwhile. Under
    spawn and forkserver every worker imports torch again: seconds per epoch
    (see the measured cost below).

    What changes when workers persist:
    - the dataset copy in each worker is not refreshed between epochs:
      attributes changed in the main process (`ds.epoch = e`) are not seen
      (DL403); tensors in shared memory and `sampler.set_epoch` still work;
    - `worker_init_fn` runs once per worker, not once per epoch;
    - worker RNGs are not reseeded per epoch (they continue their streams);
    - an `IterableDataset` whose `__iter__` returns `self` is empty after
      the first epoch (DL502);
    - worker memory stays allocated between epochs (and with it any growth,
      pytorch#62066).

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
        for epoch in range(10):
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
    - Repeated means one construction iterated several times: a loader built
      once per pass of an outer loop (a stage of a schedule, a resolution of a
      progressive GAN) and iterated in an inner loop counts, directly or
      through a factory.
    - A factory is any function or method whose result carries the loader
      (alone, in a tuple, list or dict, a list inside a tuple, re-packed from
      another factory's result); a same-file method wrapping an imported
      factory is one, with the finding at the imported factory's call.
    - A factory splatting its own `**kwargs` into the DataLoader reads, at
      each call, the keywords that call passes.
    - A fetcher class that calls `iter(self.loader)` again on `StopIteration`
      iterates its loader repeatedly; so does an Ignite handler on any event
      fired every pass (`Events.ITERATION_COMPLETED(every=100)`), not `once=`.
    - Reads of the dataset (`int(dataset.meta[k][4])`, also inside an
      assignment target) and methods of an imported dataset class that assign
      nothing on `self` do not change it.
    Where the loader is followed:
    - a module-level loader read by a function the epoch loop calls;
    - a factory that returns it, alone, in a tuple or in a dict. A factory
      building one loader per branch of `if is_training:` counts, at each
      call, only the branch its Known argument takes: by keyword, by
      position, through `**dict(is_training=True)`, or through a dict bound
      once to a name that nothing changes in place (`**train_kwargs`); a
      guard clause `if is_training: return ...` is a branch too;
    - a worker count that is a factory parameter, read at each call as the
      call passes it: `make(ds, num_workers=0)` is single-process there, in
      this file and across files;
    - a list or dict of loaders, also one built by a comprehension
      (`{x: DataLoader(sets[x], ...) for x in splits}`), reached by any
      subscript such as `dataloaders[phase]`, or handed to a function of
      this file that unpacks or subscripts it (`train_loader, eval_loader =
      loaders`);
    - a trainer object that stores it, a wrapper iterable in the `for`
      header (`metric_logger.log_every(loader, 10)`), an endless generator
      (`while True: yield from loader`).

    Frameworks:
    - Lightning: a loader returned by the `train_dataloader` or
      `val_dataloader` hook of a `LightningModule`/`LightningDataModule`
      subclass (`lightning`, `lightning.pytorch`, `pytorch_lightning`; a
      same-file base counts), or passed to a `Trainer`'s `fit(...)`. Not when
      the `Trainer` the `fit` is called on is a short run (`max_epochs` Known
      0 or 1, `fast_dev_run` Known truthy, or `max_steps` Known 0 to 8 with
      `max_epochs` omitted); a hook no `fit` of the file runs, only when
      every `Trainer` of the file is.
    - Ignite: a loader passed to an engine's `run(loader, max_epochs=N)` (N
      not Known 1; omitted is one pass) or run by a handler of
      `Events.EPOCH_STARTED`/`EPOCH_COMPLETED` (also one the handler reads as
      a parameter of the function it is defined in).
    - accelerate: a loader `prepare()` wraps.
    - transformers: `TrainingArguments(...)` and `Seq2SeqTrainingArguments(...)`
      configure the loaders the Trainer builds. With `dataloader_num_workers`
      > 0 (or unknown) and no `dataloader_persistent_workers`, the finding is
      at that call and asks for `dataloader_persistent_workers=True`; not
      when `num_train_epochs` is Known <= 1 and no evaluation strategy other
      than `"no"` is given.
    - Measured by `python -m runtime_checks --rule DL402` (3 epochs, 2 fork
      workers, torch 2.13 CPU): worker starts of the train loader, persistent
      off / on, 6 / 2 under Lightning, the transformers Trainer, accelerate
      and Ignite; of the validation loader 8 / 2 under Lightning (the sanity
      check and each epoch), 6 / 2 under the Trainer and Ignite.

    ## Not reported
    ```python
    import torch
    from torch.utils.data import DataLoader


    def evaluate(dataset):
        for batch in DataLoader(dataset, num_workers=2):  # iterated once
            pass


    def curriculum(dataset):
        loader = DataLoader(dataset, num_workers=2)
        for epoch in range(10):
            dataset.level = epoch  # persistent workers would keep the first level
            for batch in loader:
                pass


    def fixed_validation(model, val_set):
        loader = DataLoader(val_set, shuffle=True, num_workers=2)
        for epoch in range(10):
            torch.manual_seed(42)  # the same random order every epoch, on purpose
            for batch in loader:
                model(batch)
    ```

    ## Options
    None.

    ## Known limits
    - Performance advice, deliberately including canonical code written
      before persistent workers existed.
    - A literal `persistent_workers=False` (or
      `dataloader_persistent_workers=False`) is a decision, not reported: the
      ones found in real projects were deliberate (a dataset refreshed every
      epoch by a callback). A name bound to `False` is still reported.
    - Not reported when the only loop is the one whose header iterates the
      loader, or one whose target picks the loader (`for phase in ["train",
      "val"]: for b in loaders[phase]:` visits each once), through a
      `**kwargs` splat, or together with DL401.
    - Not reported when the loop reseeds torch with a value it does not
      change before the iteration (`torch.manual_seed(42)`, a function of
      this file that calls it, or the function that iterates seeding
      itself): fresh workers then replay one random stream every epoch on
      purpose (a fixed random validation set), which persistent workers
      would change.
    - Reported all the same: a seed that depends on the loop
      (`torch.manual_seed(epoch)`), which is no such wish, and a loader that
      draws nothing random (no shuffle or an unknown one, no sampler other
      than `SequentialSampler`, no dataset class of this file whose
      `__getitem__`/`__iter__` draws from `random`, `np.random`, torch's
      random functions or an RNG it holds), which replays the same batches
      with persistent workers too. A dataset of a class this file cannot
      read (imported, or built by a call it cannot see into) counts as
      drawing nothing, even when its transforms are random.
    - Not reported when the loop that repeats the iteration may change the
      dataset (persistent workers would keep training on their start-up
      copy): an assignment into it (or `loader.dataset`), a method called on
      it or on what it holds (`dataset.update()`, `dataset.items.sort()`;
      a method of an imported dataset class only when its module shows it
      may change `self`), or the dataset handed to a call
      other than a read-only builtin (`bump(dataset, epoch)`,
      `setattr(dataset, ...)`, `random.shuffle(dataset.items)`).
    - Functions of this file called in the loop are read, at any depth: one
      that only reads what it is given (`describe(val_set)`), a
      `classmethod`, a `staticmethod` or a method that assigns nothing on
      `self` changes nothing; `validate(loader)` calling
      `loader.dataset.set_scale(s)` does; a factory's change to what it
      builds a new loader from does not count (that loader's new workers see
      it). A recursive cycle of calls adds nothing to what the cycle finds.
    - A Lightning per-epoch hook of this file (a `Callback`, a module or a
      data module's `on_train_epoch_start`/`_end`, the validation ones,
      `on_epoch_start`/`_end`) that changes an attribute chain naming a
      dataset or the datamodule (`trainer.datamodule.train_set.resample()`)
      counts as a change in the epoch loop Lightning runs, for every loader
      Lightning iterates in the file.
    - A loop over a container of loaders (`for loader in loaders:`) iterates
      each one once; a nested comprehension is not a loop.
    - A value carried through more than 100 nested steps (names, elements,
      returns) is not followed.
    - Anchor: the DataLoader call, inside the factory for loaders a factory
      builds (that is where `persistent_workers` goes), one finding per call
      however many calls of the factory reach it; the suggested keyword is
      read from the factory's own argument (`num_workers > 0` when it is a
      parameter, since other calls may pass 0).

    ## References
    - [`persistent_workers`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): with it, the workers outlive the end of an epoch and serve the next one.
    - [pytorch#62066](https://github.com/pytorch/pytorch/issues/62066): memory held across epochs by persistent workers.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL402"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the factory's call, naming the DataLoader's file and line") + FOLLOWS_CALLABLES + " Not when the defining module iterates that loader every epoch itself: it reports it there, at the DataLoader call. The fix command adds the keyword to that DataLoader call when its module is among the files it fixes, and otherwise says so. A Lightning module or data module of this file whose Lightning base class is in another module of the project has its hooks read. A function imported from the project and called in the epoch loop with the dataset is still taken to change it: its module summary does not say what it changes (same-file functions are read)."
    NAME = "persistent-workers-disabled"
    MESSAGE = "DataLoader workers are restarted every epoch; pass {fix} to keep them between epochs"
    FRAMEWORK_MESSAGE = (
        "the Trainer restarts its DataLoader workers every epoch and at each evaluation; pass {fix} to keep them"
    )
    CONDITION = (("restartable",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER_OR_CONFIG

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for config in facts.frameworks.config_calls:
            call = config.call
            if config.repeats and call.worker_using() and _not_persistent(call):
                yield cls.framework_finding(call.node, fix=cls._fix(call))
        for call in [*facts.flow.loader_calls.values(), *facts.loaders.foreign_calls]:
            if call.foreign is not None and call.foreign.repeated_here:
                continue  # the defining module iterates it every epoch itself and reports it there
            # One finding per DataLoader call, if any site builds it with workers it does not persist.
            if any(
                version.worker_using() and _not_persistent(version) and cls._restarted(facts, site)
                for site, version in facts.iteration.versions(call)
            ):
                yield cls.finding(call.node, fix=cls._fix(call))

    @staticmethod
    def _restarted(facts, site: LoaderSite) -> bool:
        if rebuilt_loop(facts, site) is not None or rebuilt_by_calls(facts, site):
            return False  # DL401's finding
        if not facts.iteration.iterated_repeatedly(site):
            return False
        # Persistent workers would train on a stale copy of a dataset the loop changes, or turn a
        # random stream the loop replays on purpose (a fixed seed every pass) into a drifting one.
        if dataset_change_in_loop(facts, site) is not None:
            return False
        # A reseed replays a random stream on purpose (v7: only for a loader that draws one).
        return reseeded_each_pass(facts, site) is None or not any(draws_random(facts, c) for c in site.calls)

    @staticmethod
    def _fix(call: LoaderCall) -> str:
        # The keyword goes into the DataLoader call as written (in a factory: for every call of it).
        call = call.source
        workers = call.num_workers
        if call.foreign is not None:
            text = call.foreign.workers_text
            keyword = f"persistent_workers={positive(text)}" if workers.unknown and text else "persistent_workers=True"
            return f"{keyword} to the DataLoader at {call.foreign.origin}"
        keyword = call.spelled("persistent_workers")
        if workers.unknown and workers.expr is not None:
            return f"{keyword}={positive(workers.expr)}"
        return f"{keyword}=True"


def enable_persistent_workers(finding: Finding, ctx: FixContext) -> Outcome:
    """DL402: add `persistent_workers=True`, or `persistent_workers=<workers> > 0` when the count is unknown here."""
    if isinstance(finding.node, cst.Call) and finding.node in ctx.configs:
        return _add_persistent_workers(ctx.configs[finding.node])  # TrainingArguments(...)
    call = ctx.facts.flow.loader_calls.get(finding.node) if isinstance(finding.node, cst.Call) else None
    if call is None:
        # A factory of another module: fixed there, when it is given. One factory call may stand for
        # several DataLoader calls there; the message names the one reported.
        for foreign in (c.source.foreign for c in ctx.facts.loaders.foreign_calls if c.node is finding.node):
            if foreign is not None and f" at {foreign.origin} " in finding.message:
                return Elsewhere(foreign.origin)
        return "the loader is built by a factory function of this file; set persistent_workers there"
    targets = resolve(call.node.func, call.ctx.scope)
    if not targets or not all(target in DEFAULT_LOADER_NAMES for target in targets):
        return "the loader class is not torch's DataLoader or StatefulDataLoader: its signature is not known"
    single_use = _single_use_dataset(call, ctx)
    if single_use is not None and call.args["persistent_workers"].omitted:
        return f"{single_use}.__iter__ returns an iterator it keeps: with persistent workers later epochs are empty"
    return _add_persistent_workers(call)


def _given_false(keyword: str, given: Argument) -> str:
    """Why a persistent_workers that the call is given, and that reads False, is left to the user."""
    if given.expr is None:  # a `**` splat, or a parameter of a factory that its caller fills
        return f"{keyword} comes in as False (through a ** splat or the factory's caller); change it where it is set"
    text = source_of(given.expr)
    if given.known and (text == repr(given.value) or text.isdigit()):
        return f"{keyword}={text} is written as a false value; change it by hand if that was not deliberate"
    return f"{keyword}={text} is False here; change it where it is set if that was not deliberate"


def _add_persistent_workers(call: LoaderCall) -> Outcome:
    """`persistent_workers=True` (`dataloader_persistent_workers` in TrainingArguments), or `=<workers> > 0`."""
    keyword = call.spelled("persistent_workers")
    given = call.args["persistent_workers"]
    if not given.omitted:
        return _given_false(keyword, given)
    if call.num_workers.known:
        value: cst.BaseExpression = cst.Name("True")
    else:
        workers = workers_expr(call)
        if workers is None:
            workers_keyword = call.spelled("num_workers")
            return f"{workers_keyword} is not a plain name or attribute: write {keyword}=<workers> > 0 by hand"
        value = cst.parse_expression(positive(workers))
    plan = Plan()
    plan.call(call.node).append.append(keyword_arg(call.node, keyword, value))
    return plan


def _single_use_dataset(call: LoaderCall, ctx: FixContext) -> Optional[str]:
    """The file's IterableDataset class that this loader reads and that only one epoch can use.

    DL502 reports such a class once, however many loaders use it: checked here, since a
    second lint would not show a new finding.
    """
    for klass in iterable_classes(ctx.facts):
        if single_use_return(ctx.facts, klass) is not None and call in ctx.facts.loaders.loaders_using(klass):
            return klass.name
    return None
