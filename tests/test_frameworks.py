"""The framework table (facts/frameworks.py): every row is read, and a wrong row shows in a fixture.

Each mutation replaces one row of the table with a wrong value; the fixtures of that framework then
give other findings than their expectation comments state. A row the rules never read, or one no
fixture exercises, fails here.
"""

import pytest

from flake8_dataloader.engine import analyse
from flake8_dataloader.facts import frameworks as F
from flake8_dataloader.facts.constants import DEFAULT_LOADER_NAMES, IGNITE_LOADERS
from flake8_dataloader.settings import DEFAULT_SETTINGS, Settings

from .conftest import FIXTURES
from .harness import expectations

FIXTURES_OF = {
    "lightning": ["fw_lightning.py", "fw_lightning_one_epoch.py", "fw_lightning_which_trainer.py",
                  "fw_lightning_hook_called.py"],
    "transformers": ["fw_transformers.py"],
    "accelerate": ["fw_accelerate.py"],
    "ignite": ["fw_ignite.py", "fw_ignite_any_event.py"],
}


def _method(name, repeats):
    return tuple(m._replace(repeats=repeats) if m.name == name else m for m in F.LIGHTNING_METHODS)


MUTATIONS = {
    # row: (framework, wrong value)
    "FRAMEWORK_PACKAGES": ("ignite", frozenset({"lightning"})),
    "LIGHTNING_BASES": ("lightning", frozenset()),
    "LIGHTNING_TRAINERS": ("lightning", frozenset()),
    "LIGHTNING_TRAINER_FACTORIES": ("lightning", frozenset()),
    "LIGHTNING_FAST_DEV_RUN": ("lightning", "fast_run"),
    "LIGHTNING_STEPS_KEYWORD": ("lightning", "max_time"),
    "SMOKE_MAX_STEPS": ("lightning", 1),
    "LIGHTNING_HOOKS": ("lightning", {**F.LIGHTNING_HOOKS, "test_dataloader": True}),
    "LIGHTNING_METHODS": ("lightning", _method("validate", True)),
    "LIGHTNING_EPOCHS_KEYWORD": ("lightning", "max_steps"),
    "TRAINING_ARGUMENTS": ("transformers", F.TRAINING_ARGUMENTS._replace(names=frozenset())),
    "TRAINING_ARGUMENTS.keywords": ("transformers", F.TRAINING_ARGUMENTS._replace(keywords={})),
    "TRAINING_ARGUMENTS.epochs": ("transformers", F.TRAINING_ARGUMENTS._replace(epochs="max_steps")),
    "TRAINING_ARGUMENTS.default_epochs": ("transformers", F.TRAINING_ARGUMENTS._replace(default_epochs=1.0)),
    "TRAINING_ARGUMENTS.evaluation": ("transformers", F.TRAINING_ARGUMENTS._replace(evaluation=())),
    "TRAINING_ARGUMENTS.no_evaluation": ("transformers", F.TRAINING_ARGUMENTS._replace(no_evaluation="never")),
    "ACCELERATORS": ("accelerate", frozenset()),
    "ACCELERATE_PREPARE": ("accelerate", frozenset()),
    "ACCELERATOR_HINT": ("accelerate", "trainer"),
    "IGNITE_ENGINES": ("ignite", frozenset()),
    "IGNITE_RUN": ("ignite", F.IGNITE_RUN._replace(name="fit")),
    "IGNITE_EPOCHS": ("ignite", F.LoaderArgument(5, "epochs")),
    "IGNITE_EVENTS": ("ignite", frozenset()),
    "IGNITE_PASS_EVENTS": ("ignite", frozenset({"EPOCH_COMPLETED"})),
    "IGNITE_REGISTER_DECORATOR": ("ignite", "once"),
    "IGNITE_REGISTER_CALL": ("ignite", "attach"),
    "IGNITE_SAMPLER_EPOCH": ("ignite", frozenset()),
    "IGNITE_SAMPLER_KEYWORD": ("ignite", "sampler"),
    "SETS_EPOCH.lightning": ("lightning", F.SETS_EPOCH._replace(lightning=False)),
    "SETS_EPOCH.accelerate": ("accelerate", F.SETS_EPOCH._replace(accelerate=False)),
    "SETS_EPOCH.ignite": ("ignite", F.SETS_EPOCH._replace(ignite=True)),
}


def _differences(framework, settings=DEFAULT_SETTINGS):
    out = []
    for name in FIXTURES_OF[framework]:
        source = (FIXTURES / name).read_text(encoding="utf-8")
        found = {(line, col, code) for line, col, code, _ in analyse(source, settings) if code != "DL410"}
        out += [(name, *item) for item in sorted(found ^ expectations(source))]
    return out


@pytest.mark.parametrize("framework", sorted(FIXTURES_OF))
def test_the_framework_fixtures_hold_with_the_table_as_it_is(framework):
    assert _differences(framework) == []


@pytest.mark.parametrize("row", sorted(MUTATIONS))
def test_a_wrong_row_of_the_framework_table_changes_its_fixtures(row, monkeypatch):
    framework, wrong = MUTATIONS[row]
    monkeypatch.setattr(F, row.split(".")[0], wrong)
    assert _differences(framework) != []


def test_without_ignites_auto_dataloader_as_a_loader_its_loaders_are_not_followed():
    settings = Settings(loader_names=DEFAULT_LOADER_NAMES - IGNITE_LOADERS)
    assert ("fw_ignite.py", 13, 19, "DL402") in _differences("ignite", settings)


def test_every_row_of_the_table_is_mutated_here():
    rows = {name for name in vars(F) if name.isupper() and not name.startswith("_")}
    exempt = {
        "CONFIG_TRIGGER", "IGNITE_LOADER_TRIGGER", "LIGHTNING_TRIGGER",  # prefilter tokens: tests/test_startup.py
    }
    assert rows - exempt == {row.split(".")[0] for row in MUTATIONS}


def test_a_handler_reading_a_parameter_of_its_enclosing_function_makes_that_parameter_iterated(monkeypatch):
    from flake8_dataloader.facts.iteration import IterationFacts

    monkeypatch.setattr(IterationFacts, "_closure_param", lambda self, expr, func: None)
    assert ("fw_ignite.py", 83, 17, "DL402") in _differences("ignite")


def test_a_hook_return_iterated_by_fit_is_read_in_the_hook_not_where_fit_is_called(monkeypatch):
    from flake8_dataloader.facts import iteration

    real = iteration._Event.__init__

    def read_at_the_call(self, expr, ctx, node, header, use, repeats=False, scope=None, contents=False):
        real(self, expr, ctx, node, header, use, repeats, None, contents)

    monkeypatch.setattr(iteration._Event, "__init__", read_at_the_call)
    assert ("fw_lightning_one_epoch.py", 33, 0, "DL301") in _differences("lightning")
