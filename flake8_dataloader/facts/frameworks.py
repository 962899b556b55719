"""What training frameworks do with the loaders they are handed, as data (RULES.md "Frameworks").

Each table row names a framework's entry point by its qualified names and says what it does:
which loaders it iterates every epoch or once, which keywords configure the loaders it builds,
and whether it calls `set_epoch` on their samplers. The flow and iteration layers
(facts/framework_uses.py) read these tables; the rules only ask "iterated repeatedly" and
"set_epoch handled". Measured behaviour behind each row: docs/rules pages and runtime_checks'
`frameworks` scenario.
"""

from __future__ import annotations

from typing import FrozenSet, Mapping, NamedTuple, Tuple

_LIGHTNING_PACKAGES = ("lightning.pytorch", "lightning", "pytorch_lightning")
# A file that imports none of these (absolute imports' first names) calls none of their entry points:
# only its Lightning classes through a project base, and `accelerator.prepare` on a receiver named so,
# are looked for.
FRAMEWORK_PACKAGES = frozenset({"lightning", "pytorch_lightning", "transformers", "accelerate", "ignite"})


def _spellings(packages: Tuple[str, ...], paths: Tuple[str, ...]) -> FrozenSet[str]:
    return frozenset(f"{package}.{path}" for package in packages for path in paths)


class LoaderArgument(NamedTuple):
    """Where a method takes a loader: its position after the receiver's own first argument, or keyword."""

    position: int
    keyword: str


class FrameworkMethod(NamedTuple):
    """A method of a framework object that iterates loaders given to it: every epoch or once per call."""

    name: str
    loaders: Tuple[LoaderArgument, ...]
    repeats: bool


# Lightning: classes whose `*_dataloader` hooks the Trainer calls, and the Trainer's entry points.
LIGHTNING_BASES = _spellings(
    _LIGHTNING_PACKAGES,
    ("LightningModule", "LightningDataModule", "core.LightningModule", "core.LightningDataModule",
     "core.module.LightningModule", "core.datamodule.LightningDataModule"),
)
LIGHTNING_TRAINERS = _spellings(_LIGHTNING_PACKAGES, ("Trainer", "trainer.Trainer", "trainer.trainer.Trainer"))
# Class-method constructors of the Trainer: a Trainer whose run length the call does not show.
LIGHTNING_TRAINER_FACTORIES = frozenset(
    f"{trainer}.{method}" for trainer in LIGHTNING_TRAINERS for method in ("from_argparse_args",)
)
# Hook name -> iterated every epoch (train, and validation after each epoch) or once per call.
LIGHTNING_HOOKS: Mapping[str, bool] = {
    "train_dataloader": True,
    "val_dataloader": True,
    "test_dataloader": False,
    "predict_dataloader": False,
}
LIGHTNING_METHODS = (
    # fit(model, train_dataloaders=None, val_dataloaders=None, datamodule=None, ...)
    FrameworkMethod("fit", (LoaderArgument(1, "train_dataloaders"), LoaderArgument(2, "val_dataloaders")), True),
    FrameworkMethod("validate", (LoaderArgument(1, "dataloaders"),), False),
    FrameworkMethod("test", (LoaderArgument(1, "dataloaders"),), False),
    FrameworkMethod("predict", (LoaderArgument(1, "dataloaders"),), False),
)
LIGHTNING_EPOCHS_KEYWORD = "max_epochs"
# A Trainer that runs no second epoch: `max_epochs` Known <= 1, `fast_dev_run` Known truthy (a few
# batches), or `max_steps` Known in 0..SMOKE_MAX_STEPS with `max_epochs` omitted (a smoke run; a real
# step budget is thousands, and -1, Lightning's default, means no limit).
LIGHTNING_FAST_DEV_RUN = "fast_dev_run"
LIGHTNING_STEPS_KEYWORD = "max_steps"
SMOKE_MAX_STEPS = 8
LIGHTNING_TRIGGER = "Lightning"  # a module without it defines no Lightning class


class ConfigKeywords(NamedTuple):
    """A call that configures the loaders a framework builds: DataLoader parameter -> its keyword."""

    names: FrozenSet[str]
    keywords: Mapping[str, str]
    raises_at: str  # where a persistent_workers without workers surfaces
    epochs: str  # the keyword counting passes over the train loader
    default_epochs: float
    evaluation: Tuple[str, ...]  # keywords that turn evaluation on (a new eval loader per evaluation)
    no_evaluation: str


TRAINING_ARGUMENTS = ConfigKeywords(
    names=frozenset({
        "transformers.TrainingArguments",
        "transformers.training_args.TrainingArguments",
        "transformers.Seq2SeqTrainingArguments",
        "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    }),
    keywords={
        "num_workers": "dataloader_num_workers",
        "persistent_workers": "dataloader_persistent_workers",
        "prefetch_factor": "dataloader_prefetch_factor",
    },
    raises_at="trainer.train()",
    epochs="num_train_epochs",
    default_epochs=3.0,
    evaluation=("eval_strategy", "evaluation_strategy"),
    no_evaluation="no",
)
CONFIG_TRIGGER = "TrainingArguments"

# accelerate: `accelerator.prepare(loader)` wraps a loader, and the wrapper sets its sampler's epoch.
ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
ACCELERATE_PREPARE = frozenset({"prepare", "prepare_data_loader"})
ACCELERATOR_HINT = "accelerator"  # a receiver named so (`self.accelerator`) when its value is not followed

# Ignite: engines, `run(data, max_epochs)`, epoch events, and the helper that sets the sampler's epoch.
IGNITE_ENGINES = frozenset({
    "ignite.engine.Engine",
    "ignite.engine.engine.Engine",
    "ignite.engine.DeterministicEngine",
    "ignite.engine.deterministic.DeterministicEngine",
    "ignite.engine.create_supervised_trainer",
    "ignite.engine.create_supervised_evaluator",
})
IGNITE_RUN = FrameworkMethod("run", (LoaderArgument(0, "data"),), True)
IGNITE_EPOCHS = LoaderArgument(1, "max_epochs")  # omitted: one pass
IGNITE_EVENTS = frozenset({"ignite.engine.Events", "ignite.engine.events.Events"})
# The events that fire in every pass of a run (STARTED, COMPLETED and the like fire once per run).
IGNITE_PASS_EVENTS = frozenset({
    "EPOCH_STARTED", "EPOCH_COMPLETED", "ITERATION_STARTED", "ITERATION_COMPLETED",
    "GET_BATCH_STARTED", "GET_BATCH_COMPLETED",
})
IGNITE_REGISTER_DECORATOR = "on"
IGNITE_REGISTER_CALL = "add_event_handler"  # (event, handler, ...)
IGNITE_SAMPLER_EPOCH = frozenset({
    "ignite.contrib.engines.common.setup_common_training_handlers",
    "ignite.contrib.engines.setup_common_training_handlers",
    "ignite.handlers.setup_common_training_handlers",
})
IGNITE_SAMPLER_KEYWORD = "train_sampler"
# `idist.auto_dataloader(...)` is a loader: constants.IGNITE_LOADERS, among the default loader names
# (kept there: flake8 loads those at start-up, this table only once a file passes the prefilter).
IGNITE_LOADER_TRIGGER = "auto_dataloader"


class SetsEpoch(NamedTuple):
    """Who calls `set_epoch` on the samplers of the loaders a framework iterates (the transformers
    Trainer does too, on the loaders it builds: none of them is written in the file)."""

    lightning: bool = True  # `_set_sampler_epoch` on every sampler with `set_epoch`
    accelerate: bool = True  # the prepared loader, at every `iter()`
    ignite: bool = False  # nobody: `setup_common_training_handlers(train_sampler=...)` or a handler must


SETS_EPOCH = SetsEpoch()
