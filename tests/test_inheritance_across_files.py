"""Classes of a linted file built on classes of other project modules (fixtures/projects/package_project).

`subclasses.py` subclasses dataset classes and a trainer of other modules; `lightning_task.py`
subclasses a Lightning base of `models/lit.py`. Each decision is mutated here: the fixture's
findings must change.
"""

import pytest

from flake8_dataloader.engine import check_source
from flake8_dataloader.facts import inherited
from flake8_dataloader.facts.iteration import IterationFacts
from flake8_dataloader.project import store
from flake8_dataloader.project import summarise as summarise_module

from .harness import PROJECTS

PROJECT = PROJECTS / "package_project"


def findings(name):
    store.clear()
    path = PROJECT / name
    return sorted((line, code) for line, _, code, _ in check_source(path.read_text(encoding="utf-8"), str(path)))


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
