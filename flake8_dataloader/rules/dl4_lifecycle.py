"""DL4xx: worker lifecycle and its cost across epochs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..compose import positive
from ..facts import constants as C
from ..facts.model import LoaderCall, LoaderSite, LoopInfo
from ..facts.mutation import (
    DatasetReferences,
    assignments_into,
    dataset_change_in_loop,
    reference_chain,
    references,
    reseeded_each_pass,
)
from ..facts.draws import draws_random
from ..facts.flow import Value
from ..facts.resolve import Scope, names_in, qualname_in, source_of
from ..facts.samplers import for_evaluation, helper_origin, loader_samplers, set_epoch_reaches
from .base import (
    FACTORY_SITES,
    FOLLOWS_CALLABLES,
    NEEDS_LOADER,
    NEEDS_LOADER_OR_CONFIG,
    WRITTEN_HERE,
    Finding,
    Rule,
    show_workers,
)

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts
    from ..settings import Settings


def rebuilt_loop(facts, site: LoaderSite) -> Optional[LoopInfo]:
    """The innermost loop that builds the loader, iterates it, and leaves its arguments unchanged."""
    iterations = facts.iteration.iterations_of(site)
    used: Set[str] = set()
    for arg in site.node.args:
        used |= names_in(arg.value)
    for loop in reversed(site.ctx.loops):
        if any(loop in it.loops for it in iterations):
            return loop if not (used & loop.bound_names) else None
    return None


def rebuilt_by_calls(facts, site: LoaderSite) -> bool:
    """Built and iterated by a same-file function that a loop calls with loop-invariant arguments.

    `for epoch ...: validate(model, val_set)` where validate() builds and iterates its
    own loader: the workers start again at every call. Not when the function returns
    the loader (a factory: its call is the site), builds it inside a loop of its own, or
    iterates it in a loop of its own (a whole training run per call, such as a
    hyper-parameter search calling `train(hyp)`). An argument changes in the loop when
    a name in it is bound there, or when what reaches the loader's arguments is changed
    in place there (`hyp[k] = ...; train(hyp.copy())`).
    """
    func = site.ctx.function
    if func is None or site.ctx.loops or func in facts.flow.factories:
        return False
    own = [it for it in facts.iteration.iterations_of(site) if it.ctx.function is func]
    if not own or any(it.loops or it.repeated_inside for it in own):
        return False
    reaching, free = _reaching(func, [arg.value for arg in site.node.args])
    for caller in facts.graph.callers.get(func, ()):
        loops = caller.record.ctx.loops
        if not loops:
            continue
        # Only what reaches the loader counts (v7): `validate(model, val_set, step)` with `step += 1`
        # in the loop still builds the same loader, and `self.tokens += n` leaves `self.data` as it is.
        passed = [arg for param, arg in facts.graph.map_arguments(caller.record.node, func, caller.offset) if param in reaching]
        if not any(_changed_in(facts, loop, expr) for loop in loops for expr in [*passed, *free]):
            return True
    return False


def _changed_in(facts, loop: LoopInfo, expr: cst.BaseExpression) -> bool:
    """The loop binds a name the expression reads, or changes in place what it reads."""
    return bool(names_in(expr) & loop.bound_names) or facts.loop_changes.changes(loop, expr)


def _reaching(func, exprs) -> Tuple[Set[str], List[cst.BaseExpression]]:
    """What the expressions read from outside ``func``, directly or through the function's own
    assignments (`data = Subset(dataset, idx); DataLoader(data)` reads `dataset` and `idx`): its
    parameters, and the references (`VAL`, `self.train_dataset`) read from an enclosing scope or
    through the method's own `self`."""
    todo: List[cst.BaseExpression] = [ref for expr in exprs for ref in references(expr)]
    seen: Set[str] = set()
    params: Set[str] = set()
    free: List[cst.BaseExpression] = []
    own_self = func.params[0] if func.cls is not None and func.params else None
    while todo:
        ref = todo.pop()
        base = reference_chain(ref)[-1]
        if not isinstance(base, cst.Name):
            continue
        text = source_of(ref)
        if text in seen:
            continue
        seen.add(text)
        name = base.value
        if name in func.scope.params and name != own_self:
            params.add(name)
        elif name not in func.scope.bindings or name == own_self:
            free.append(ref)
        for binding in func.scope.bindings.get(name, ()):  # a parameter bound again too (`model = load(weights)`)
            value = binding.value
            if isinstance(value, cst.For):
                value = value.iter
            if isinstance(value, cst.BaseExpression):
                todo.extend(references(value))
    return params, free


class LoaderRebuiltInLoop(Rule):
    """
    ## What it does
    Flags a loader with workers that is constructed inside a `for`/`while`
    body and iterated in the same loop, when none of its arguments depends on
    the loop (no reference to the loop target or to a name bound in the body).
    Also through calls: a function of this file that builds a loader with
    workers and iterates it, called inside a loop with arguments that do not
    change in that loop (`for epoch ...: validate(model, val_set)` where
    `validate` builds `DataLoader(val_set, num_workers=4)`).

    Only what reaches the loader counts: the arguments passed for the
    parameters its DataLoader call reads (through the function's own
    assignments), and what it reads from outside the function (`self.data`,
    a global). One of those changes in the loop when a name in it is bound
    there, or when it is changed in place there: an item or attribute
    assignment (`hyp[k] = ...`, `args.batch_size = ...`, augmented ones too)
    or a method called on it (`cfg.update(...)`). A step counter handed to
    `validate(model, val_set, step)` and only printed, or an unrelated
    `self.tokens += n`, leaves the loader as it was: reported. A
    function that iterates the loader it builds inside a loop of its own is a
    whole run per call, not an epoch (a hyper-parameter search calling
    `train(hyp)` 300 times): not reported here; DL402 looks at its own loop.

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
    A loader whose arguments depend on the loop (k-fold split, curriculum
    stage, active-learning pool) is not reported. Dependence is judged by
    names: `make_dataset()` with no loop variable counts as invariant.
    `accelerator.prepare(loader)` written inside a loop that repeats the
    loader and did not build it is reported at the `prepare` call: each call
    makes a new wrapper (and new workers at its first `iter()`), and the
    Accelerator keeps every one (`runtime_checks --rule DL401`: 3 wrappers
    kept after 3 epochs). Lightning's `reload_dataloaders_every_n_epochs`
    calls the hooks again on purpose and is never reported: hooks are read
    as called once per `fit()`.
    Through calls, one level is followed (the function called in the loop
    builds and iterates the loader itself), and the loop-invariance test
    looks at what reaches the function's loader: the arguments for the
    parameters its loader call reads, and the names or `self` attributes it
    reads from outside the function (a step counter in another argument, or
    `model.train()`, changes nothing the loader sees); a method called on the
    loop's own `self` is not followed. Anchor: the call (for a loader built by
    a function called in the loop: its DataLoader call).

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
    wherever the file carries it: a module-level loader read by a function
    the epoch loop calls, a factory that returns it (alone, in a tuple or in
    a dict; a factory building one loader per branch of `if is_training:`
    counts, at each call, only the branch its Known argument takes, by
    keyword, by position or through `**dict(is_training=True)` (or a dict
    bound once to a name that nothing changes in place, `**train_kwargs`;
    a guard clause `if is_training: return ...` is a branch too); a worker
    count that is a factory parameter is read, at each call, as the call
    passes it, so `make(ds, num_workers=0)` is single-process there, in
    this file and across files), a list or dict of loaders (also one built
    by a comprehension, `{x: DataLoader(sets[x], ...) for x in splits}`,
    reached by any subscript such as `dataloaders[phase]`, and one handed to
    a function of this file that unpacks or subscripts it: `train_loader,
    eval_loader = loaders`), a trainer object that stores it, a wrapper
    iterable in the `for` header (`metric_logger.log_every(loader, 10)`), an
    endless generator (`while True: yield from loader`).

    Frameworks iterate loaders too (docs/analysis.md, "Frameworks"): a loader returned
    by the `train_dataloader` or `val_dataloader` hook of a
    `LightningModule`/`LightningDataModule` subclass (`lightning`,
    `lightning.pytorch`, `pytorch_lightning`; a same-file base counts) or
    passed to a Lightning `Trainer`'s `fit(...)`, a loader passed to an Ignite
    engine's `run(loader, max_epochs=N)` (N not Known 1; omitted is one
    pass) or run by a handler of `Events.EPOCH_STARTED`/`EPOCH_COMPLETED`
    (also one the handler reads as a parameter of the function it is defined
    in), and a loader accelerate's `prepare()` wraps. Not when the Lightning
    `Trainer` the `fit` is called on is a short run (`max_epochs` Known 0 or
    1, `fast_dev_run` Known truthy, or `max_steps` Known 0 to 8 with
    `max_epochs` omitted); a hook no `fit` of the file runs, only when every
    `Trainer` of the file is. `TrainingArguments(...)` and
    `Seq2SeqTrainingArguments(...)` configure the loaders the transformers
    Trainer builds: with `dataloader_num_workers` > 0 (or unknown) and no
    `dataloader_persistent_workers`, the finding is at that call and asks for
    `dataloader_persistent_workers=True`; not when `num_train_epochs` is
    Known <= 1 and no evaluation strategy other than `"no"` is given.
    Measured by `python -m runtime_checks --rule DL402` (3 epochs, 2 fork
    workers, torch 2.13 CPU): worker starts of the train loader, persistent
    off / on, 6 / 2 under Lightning, the transformers Trainer, accelerate and
    Ignite; of the validation loader 8 / 2 under Lightning (the sanity check
    and each epoch), 6 / 2 under the Trainer and Ignite.

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
    Performance advice, deliberately including canonical code written before
    persistent workers existed. Not reported when `persistent_workers=False`
    (or `dataloader_persistent_workers=False`) is written as a literal: that
    is a decision, and the ones found in real projects were deliberate (a
    dataset refreshed every epoch by a callback); a name bound to `False` is
    still reported. Not reported when the only loop is the one
    whose header iterates the loader, or one whose target picks the loader
    (`for phase in ["train", "val"]: for b in loaders[phase]:` visits each
    once), through a `**kwargs` splat, or together with DL401. Not reported when the loop reseeds torch with a value it does
    not change before the iteration (`torch.manual_seed(42)`, a function of
    this file that calls it, or the function that iterates seeding itself):
    fresh workers then replay one random stream every epoch on purpose (a
    fixed random validation set), which persistent workers would change; a
    seed that depends on the loop (`torch.manual_seed(epoch)`) is no such
    wish, and a loader that draws nothing random (no shuffle or an unknown
    one, no sampler other than `SequentialSampler`, no dataset class of this
    file whose `__getitem__`/`__iter__` draws from `random`, `np.random`,
    torch's random functions or an RNG it holds) replays the same batches
    with persistent workers too: reported. A dataset of a class this file
    cannot read (imported, or built by a call it cannot see into) counts as
    drawing nothing, even when its transforms are random. Not reported
    either when the loop that repeats the iteration
    may change the dataset: an assignment into it (or `loader.dataset`), a
    method called on it or on what it holds (`dataset.update()`,
    `dataset.items.sort()`, imported dataset classes included), or the
    dataset handed to a call other than a read-only builtin (`bump(dataset,
    epoch)`, `setattr(dataset, ...)`, `random.shuffle(dataset.items)`):
    persistent workers would keep training on their start-up copy. Functions
    of this file called in the loop are read, at any depth: one that only
    reads what it is given (`describe(val_set)`), a `classmethod`, a
    `staticmethod` or a method that assigns nothing on `self` changes
    nothing; `validate(loader)` calling `loader.dataset.set_scale(s)` does;
    a factory's change to what it builds a new loader from does not count
    (that loader's new workers see it). A recursive cycle of calls adds
    nothing to what the cycle finds. A Lightning per-epoch hook of this file
    (a `Callback`, a module or a data module's `on_train_epoch_start`/`_end`,
    the validation ones, `on_epoch_start`/`_end`) that changes an attribute
    chain naming a dataset or the datamodule (`trainer.datamodule.train_set
    .resample()`) counts as a change in the epoch loop Lightning runs, for
    every loader Lightning iterates in the file. A loop over a
    container of loaders (`for loader in loaders:`) iterates each one once;
    a nested comprehension is not a loop. A value carried through more than
    100 nested steps (names, elements, returns) is not followed. Anchor: the
    DataLoader call, inside the factory for loaders a factory builds (that
    is where `persistent_workers` goes), one finding per call however many
    calls of the factory reach it; the suggested keyword is read from the
    factory's own argument (`num_workers > 0` when it is a parameter, since
    other calls may pass 0).

    ## References
    - [`persistent_workers`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): with it, the workers outlive the end of an epoch and serve the next one.
    - [pytorch#62066](https://github.com/pytorch/pytorch/issues/62066): memory held across epochs by persistent workers.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL402"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the factory's call, naming the DataLoader's file and line") + FOLLOWS_CALLABLES + " Not when the defining module iterates that loader every epoch itself: it reports it there, at the DataLoader call. The fix command works per file and does not edit the other module. A Lightning module or data module of this file whose Lightning base class is in another module of the project has its hooks read. A function imported from the project and called in the epoch loop with the dataset is still taken to change it: its module summary does not say what it changes (same-file functions are read, v7)."
    NAME = "persistent-workers-disabled"
    MESSAGE = "DataLoader workers are restarted every epoch; pass {fix} to keep them between epochs"
    FRAMEWORK_MESSAGE = (
        "the Trainer restarts its DataLoader workers every epoch and at each evaluation; pass {fix} to keep them"
    )
    CONDITION = (("workers",), ("imported_builder",))
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


class StaleDatasetInPersistentWorkers(Rule):
    """
    ## What it does
    Flags a change to the dataset of a loader with `persistent_workers=True`
    made inside the loop that iterates it: attribute or item assignment on
    the dataset object (or `loader.dataset`), or a call of a method of a
    dataset class of this file that assigns `self` attributes.

    ## Why is this bad?
    Persistent workers keep the dataset copy they received at start-up. The
    main process changes its own copy; the workers never see it. Measured:
    `ds.epoch = e` reached non-persistent workers every epoch, persistent
    ones kept seeing the first value.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            dataset.difficulty = epoch / 10
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader


    def train(dataset):
        # A shared-memory tensor is seen by persistent workers.
        dataset.difficulty = torch.zeros(1).share_memory_()
        loader = DataLoader(dataset, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            dataset.difficulty.fill_(epoch / 10)
            for batch in loader:
                pass
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2)  # not persistent: a fresh copy every epoch
        for epoch in range(10):
            dataset.level = epoch
            for batch in loader:
                pass
    ```

    ## Options
    None.

    ## Known limits
    Method calls on imported datasets are not reported: some (`set_epoch` in
    several libraries) share state with workers through shared memory.
    Anchor: the mutation.

    ## References
    - [`persistent_workers`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader): with it, the workers outlive the end of an epoch and serve the next one.
    - This project's measurements: `docs/results/` (rerun with the command in Measured cost).
    """

    CODE = "DL403"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the mutation")
    NAME = "stale-dataset-in-persistent-workers"
    MESSAGE = (
        "dataset changed inside the epoch loop is not seen by persistent workers (they keep their "
        "start-up copy); share the value through shared memory or drop persistent_workers"
    )
    CONDITION = (("persistent",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        reported: Set[cst.CSTNode] = set()
        for site in facts.flow.loader_sites():
            if not all(c.args["persistent_workers"].known_truthy() for c in site.calls):
                continue
            dataset = site.calls[0].args["dataset"] if len(site.calls) == 1 and site.node is site.calls[0].node else None
            for it in facts.iteration.iterations_of(site):
                loops = set(it.loops) | ({it.header} if it.header is not None else set())
                for node in cls._mutations(facts, site, dataset, it, loops):
                    if node not in reported:
                        reported.add(node)
                        yield cls.finding(node)

    @classmethod
    def _mutations(cls, facts, site, dataset, it, loops):
        references = DatasetReferences(facts, site)
        yield from assignments_into(facts, references, it, loops)
        klass = None
        if dataset is not None and dataset.expr is not None:
            klass = facts.file.instance_class(dataset.expr, site.ctx.scope)
        if klass is None:
            return
        for record in facts.graph.calls_in(it.ctx.function):
            func = record.node.func
            if not (isinstance(func, cst.Attribute) and loops & set(record.ctx.loops)):
                continue
            if not references.denotes(func.value, record.ctx.scope):
                continue
            method = facts.file.method(klass, func.attr.value)
            if method is not None and any(m is method for vals in klass.self_attrs.values() for _, m in vals):
                yield record.node


def _only_loaders(facts: FileFacts, expr: cst.BaseExpression, scope: Scope) -> bool:
    """Every value the expression may hold is a loader (a `None` placeholder aside), never an
    iterator: a loader call, or a name, attribute, element or factory result that carries one."""
    values = [v for v in facts.flow.values(expr, scope) if not _is_none(v)]
    return bool(values) and all(facts.flow.site_of_value(v) is not None for v in values)


def _is_none(value: Value) -> bool:
    return isinstance(value.node, cst.Name) and value.node.value == "None" and value.scope.lookup("None") is None


class MissingShutdownMethod(Rule):
    """
    ## What it does
    Flags `contextlib.closing(loader)` and `loader._shutdown_workers()` where
    `loader` is a DataLoader (a loader call, or a name or `self` attribute
    bound only from loader calls), never an iterator.

    ## Why is this bad?
    DataLoader has neither `close()` nor `_shutdown_workers()` (only its
    iterator has the latter). `closing()` raises `AttributeError:
    'DataLoader' object has no attribute 'close'` when the `with` block exits;
    a `hasattr` guard around `_shutdown_workers` silently does nothing.

    ## Example
    ```python
    from contextlib import closing

    from torch.utils.data import DataLoader


    def evaluate(dataset):
        with closing(DataLoader(dataset, num_workers=2)) as loader:
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, num_workers=2)
        for batch in loader:
            pass
        del loader  # workers stop when the loader and its iterator are gone
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def first_batch(dataset):
        iterator = iter(DataLoader(dataset, num_workers=2))
        batch = next(iterator)
        iterator._shutdown_workers()  # the iterator has one
        return batch
    ```

    ## Options
    None.

    ## Known limits
    Anchor: the call.

    ## References
    - [`torch/utils/data/dataloader.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataloader.py): `_shutdown_workers` belongs to `_MultiProcessingDataLoaderIter`; `DataLoader` has no `close()`.
    """

    CODE = "DL404"
    ACROSS_FILES = FACTORY_SITES.format(anchor="the call")
    NAME = "missing-shutdown-method"
    MESSAGE = "DataLoader has no {method}: {effect}; drop it, workers stop when the loader is deleted (del loader)"
    CONDITION = (("shutdown",),)
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for record in facts.file.calls:
            call, scope = record.node, record.ctx.scope
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "_shutdown_workers":
                if _only_loaders(facts, func.value, scope):
                    yield cls.finding(call, method="_shutdown_workers()", effect="only its iterator has one")
            elif call.args and qualname_in(func, scope, C.CONTEXTLIB_CLOSING):
                if _only_loaders(facts, call.args[0].value, scope):
                    yield cls.finding(call, method="close()", effect="closing() raises AttributeError on exit")


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags a `DistributedSampler` built in this file (shuffle not `False`)
    whose loader is iterated every epoch while no `set_epoch` call on that
    sampler (or on `loader.sampler`) exists. The sampler is followed through
    the value flow: any binding (`DistributedSampler(ds) if ddp else None`,
    if/else), a class chosen by name (`S = DistributedSampler if ddp else
    RandomSampler`), a same-file helper that returns one, a same-file
    subclass, a batch sampler built over it, a factory returning the loader
    in a tuple.

    ## Why is this bad?
    DistributedSampler shuffles with `seed + epoch`; without `set_epoch` the
    epoch stays 0 and every epoch visits the samples in the same order.

    ## Example
    ```python
    from torch.utils.data import DataLoader, DistributedSampler


    def train(dataset):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            for batch in loader:
                pass
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, DistributedSampler


    def train(dataset):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(10):
            sampler.set_epoch(epoch)
            for batch in loader:
                pass
    ```

    ## Not reported
    ```python
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    def evaluate(dataset, epochs):
        sampler = DistributedSampler(dataset, shuffle=False)  # the order is meant to repeat
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, persistent_workers=True)
        for epoch in range(epochs):
            for batch in loader:
                pass
    ```

    ## Options
    None.

    ## Known limits
    Frameworks: Lightning (hooks and loaders passed to `fit`) and
    accelerate's prepared loaders call `set_epoch` themselves, and so does the
    transformers Trainer on the loaders it builds: a loader handed to them is
    never reported. Ignite never calls it: a loader run by an engine for
    several epochs is reported unless a handler calls `set_epoch` on the
    sampler or `setup_common_training_handlers(..., train_sampler=sampler)`
    is called (`runtime_checks --rule DL402`: sampler epoch after 3 epochs
    2 under Lightning and accelerate, 0 under Ignite).

    A `set_epoch` call counts when its receiver may be that sampler: the
    sampler itself, `loader.sampler`, `batch_sampler.sampler`, or a
    parameter of a same-file function the file calls with it, also the
    `.sampler` of a loader parameter (`dataloader.sampler.set_epoch(epoch)`
    in a `_run_epoch(self, epoch, dataloader)` the file calls with the
    loader); a `set_epoch` on another loader's sampler does not count. When a
    receiver cannot be followed (a parameter no call of the file passes, an
    attribute of an object made elsewhere), nothing is reported in the file:
    that call may be the fix. Not reported for a loader or sampler named for
    evaluation (its name contains `val`, `test` or `eval`): its order does
    not matter. Anchor: the sampler's construction.

    ## References
    - [`DistributedSampler`](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler): call `set_epoch(epoch)` before each epoch's iterator is created, or every epoch uses the same order.
    - [`torch/utils/data/distributed.py`](https://github.com/pytorch/pytorch/blob/main/torch/utils/data/distributed.py): the permutation is seeded with `seed + epoch`.
    """

    CODE = "DL405"
    ACROSS_FILES = (
        "A DistributedSampler built inside a factory imported from the project (and not given its epoch there) "
        "is followed: the factory's call here is reported, naming the sampler's file and line, unless this file "
        "calls `set_epoch` on the loader's `.sampler`. So is one returned by an imported helper "
        "(`sampler = make_sampler(ds)`, alone or as an element of a returned tuple) and given to a loader here: "
        "the helper's call is reported, unless this file calls `set_epoch` on its result or on the loader's `.sampler`."
    )
    NAME = "distributed-sampler-without-set-epoch"
    MESSAGE = (
        "DistributedSampler{where} without set_epoch(epoch): every epoch uses the same order; "
        "call sampler.set_epoch(epoch) each epoch"
    )
    CONDITION = (("sampler_given",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        epoch_set = set_epoch_reaches(facts)
        if epoch_set is None:
            return  # a set_epoch on a receiver that cannot be followed may be the fix
        reported: Set[cst.CSTNode] = set()
        for call in facts.flow.loader_calls.values():
            if facts.iteration.epoch_set_by_framework(call):
                continue  # Lightning and accelerate's prepared loaders call set_epoch themselves
            for sampler in loader_samplers(facts, call):
                if sampler in reported or sampler in epoch_set or for_evaluation(facts, call, sampler):
                    continue
                if any(facts.iteration.iterated_repeatedly(site) for site in facts.iteration.sites_of_call(call)):
                    reported.add(sampler)
                    origin = helper_origin(facts, call, sampler)  # a helper of another module built it
                    yield cls.finding(sampler, where=f" (built at {origin})" if origin is not None else "")
        for call in facts.loaders.foreign_calls:  # built by an imported factory: reported at its call here
            origin = call.foreign.sampler if call.foreign is not None else None
            if origin is None or call.node in reported or call.node in epoch_set:
                continue
            if facts.iteration.epoch_set_by_framework(call):
                continue
            if for_evaluation(facts, call, call.node):
                continue
            if any(facts.iteration.iterated_repeatedly(site) for site in facts.iteration.sites_of_call(call)):
                reported.add(call.node)
                yield cls.finding(call.node, where=f" (built at {origin})")


class SynchronousLoading(Rule):
    """
    ## What it does
    Flags a loader proven to run in the main process (`num_workers` 0 or omitted) that is iterated every
    epoch.

    ## Why is this bad?
    Without workers, every batch is loaded and collated in the training
    process, between training steps: the accelerator waits for data.

    ## Example
    ```python
    from torch.utils.data import DataLoader


    def train(dataset):
        loader = DataLoader(dataset, batch_size=32, shuffle=True)
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

    ## Not reported
    ```python
    from torch.utils.data import DataLoader


    def evaluate(dataset):
        for batch in DataLoader(dataset, batch_size=64):  # once, not every epoch
            pass
    ```

    ## Options
    Enable with `--extend-select=DL410`.

    ## Known limits
    Small in-memory datasets can be faster without workers. Anchor: the call.

    ## References
    - [Single- and multi-process data loading](https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading).
    """

    CODE = "DL410"
    ACROSS_FILES = WRITTEN_HERE
    NAME = "synchronous-loading"
    MESSAGE = "single-process DataLoader ({workers}) in a training loop: loading blocks every step; set num_workers > 0"
    CONDITION = (("loader",), ("imported_builder",))
    TRIGGERS = NEEDS_LOADER
    DEFAULT_OFF = True

    @classmethod
    def check(cls, facts: FileFacts, settings: Settings) -> Iterator[Finding]:
        for call in facts.flow.loader_calls.values():
            found = next((v for s, v in facts.iteration.versions(call) if v.single_process() and facts.iteration.iterated_repeatedly(s)), None)
            if found is not None:
                yield cls.finding(call.node, workers=show_workers(found))
