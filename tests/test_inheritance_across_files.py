"""Classes of a linted file built on classes of other project modules (fixtures/projects/package_project).

`subclasses.py` subclasses dataset classes and a trainer of other modules; `lightning_task.py`
subclasses a Lightning base of `models/lit.py`; `text_training.py` calls factories whose loaders are
built from dataset classes of a third module. Each decision is mutated here: the fixture's
findings must change.
"""

import ast

import pytest

from flake8_dataloader.engine import check_source
from flake8_dataloader.facts import inherited
from flake8_dataloader.facts.iteration import IterationFacts
from flake8_dataloader.project import store
from flake8_dataloader.project import summarise as summarise_module
from flake8_dataloader.project.view import ImportView

from .harness import PROJECTS

PROJECT = PROJECTS / "package_project"


def findings(name):
    """As flake8 sees the file (its ast too: a file without a loader token passes the prefilter by it)."""
    store.clear()
    path = PROJECT / name
    source = path.read_text(encoding="utf-8")
    return sorted((line, code) for line, _, code, _ in check_source(source, str(path), tree=ast.parse(source)))


SUBCLASSES = [(68, "DL302"), (70, "DL302"), (72, "DL103"), (73, "DL602"), (78, "DL402")]


def test_subclasses_inherit_what_the_summary_of_their_imported_base_says():
    assert findings("subclasses.py") == SUBCLASSES


def test_a_lightning_subclass_of_an_imported_base_has_its_hooks_read():
    assert findings("lightning_task.py") == [(13, "DL402")]


def test_without_the_lightning_summary_field_the_imported_base_is_not_known(monkeypatch):
    real = summarise_module.summarise
    monkeypatch.setattr(summarise_module, "summarise", lambda *a, **k: real(*a, **k)._replace(lightning=frozenset()))
    assert findings("lightning_task.py") == []


@pytest.mark.parametrize(
    ("mutation", "changed"),  # the finding the mutation adds or removes
    [
        # An overridden __getitem__ (OnHost) would keep OnDevice's CUDA call.
        (lambda mp: mp.setattr(inherited, "READ_METHODS", ()), (74, "DL602")),
        # Rebuilt's own __init__ never calls Augmented's: its lambda is never set.
        (lambda mp: mp.setattr(inherited, "_calls_super_init", lambda graph, init: True), (71, "DL302")),
        # RetypedAugmented replaces the lambda on self after super().__init__().
        (lambda mp: mp.setattr(inherited, "_reassigns", lambda chain, attr: False), (69, "DL302")),
        # Without the imported base's __init__, LoggingTrainer(...) iterates nothing.
        (lambda mp: mp.setattr(IterationFacts, "_inherited_init", lambda self, record: None), (78, "DL402")),
    ],
    ids=["read-methods", "super-init", "reassigned", "inherited-init"],
)
def test_each_inheritance_decision_shows_in_the_fixture(monkeypatch, mutation, changed):
    mutation(monkeypatch)
    found = findings("subclasses.py")
    assert (changed in found) != (changed in SUBCLASSES)


# text_training.py calls factories of data/text.py that build loaders from data/stream.py's classes
# (imported there) and from a class of data/text.py itself.
TEXT = [(7, "DL103"), (11, "DL502"), (15, "DL502"), (22, "DL501"), (23, "DL501")]


def test_callers_of_a_factory_know_the_dataset_classes_it_builds_from():
    assert findings("text_training.py") == TEXT


@pytest.mark.parametrize(("field", "lost"), [(0, [(7, "DL103"), (11, "DL502"), (22, "DL501"), (23, "DL501")]),
                                             (1, [(15, "DL502")])],
                         ids=["datasets", "own_datasets"])
def test_each_dataset_field_of_a_loader_summary_shows_in_the_fixture(monkeypatch, field, lost):
    real = summarise_module._dataset_names

    def emptied(facts, call):
        names = list(real(facts, call))
        names[field] = ()
        return tuple(names)

    monkeypatch.setattr(summarise_module, "_dataset_names", emptied)
    assert findings("text_training.py") == sorted(set(TEXT) - set(lost))


def test_without_the_view_filling_in_the_dataset_summaries_nothing_is_known(monkeypatch):
    monkeypatch.setattr(ImportView, "_with_datasets", lambda self, factory, path: factory)
    assert findings("text_training.py") == []
