"""Rule book v7 (issue 40, part A): each condition DL401, DL402 and DL501 gained is mutated here.

A mutation weakens one decision; the fixture that shows it must then gain or lose exactly the
finding the decision is about (the fixtures themselves are checked in test_fixtures.py).
"""

import pytest

from flake8_dataloader.facts import analysis as analysis_module
from flake8_dataloader.facts import changed_parameters, draws, epoch_callbacks, inspection, iteration
from flake8_dataloader.facts.iteration import IterationFacts
from flake8_dataloader.facts.loaders import LoaderFacts
from flake8_dataloader.rules import dl402_persistent_workers_disabled as dl402, dl4_shared

from .harness import fixture_expectations as stated, fixture_findings as findings


def everything_reaches(func, exprs):
    return set(func.scope.params), []


REACHING = dl4_shared._reaching


def parameters_only(func, exprs):
    return REACHING(func, exprs)[0], []


MUTATIONS = [
    # DL401: every argument of the call counts, as before v7: the step counter and the epoch number
    # hand validate() and run_epoch() a "new" loader.
    ("dl401_v7_what_reaches_the_loader.py", lambda mp: mp.setattr(dl4_shared, "_reaching", everything_reaches),
     {(9, 13, "DL401"), (45, 21, "DL401")}, set()),
    # DL401: what the loader reads from outside the function is not looked at: the shrinking dataset
    # the loop re-binds on self is taken for an unchanged one.
    ("dl401_v7_what_reaches_the_loader.py",
     lambda mp: mp.setattr(dl4_shared, "_reaching", parameters_only),
     set(), {(63, 21, "DL401")}),
    # DL402: a literal persistent_workers=False is reported again.
    ("dl402_v7_written_decisions.py", lambda mp: mp.setattr(dl402, "written_false", lambda expr: False),
     set(), {(12, 13, "DL402"), (26, 14, "DL402")}),
    # DL402: every reseeded loader is taken for one that draws random numbers (v6).
    ("dl402_reseeded_validation.py", lambda mp: mp.setattr(dl402, "draws_random", lambda facts, call: True),
     {(86, 17, "DL402"), (87, 14, "DL402")}, set()),
    # DL402: a SequentialSampler is taken for a random one.
    ("dl402_reseeded_validation.py", lambda mp: mp.setattr(draws, "_sequential", lambda expr, scope: False),
     {(87, 14, "DL402")}, set()),
    # DL402: the random crops of the dataset class are not seen: the fixed random validation sets lose their exemption.
    ("dl402_reseeded_validation.py", lambda mp: mp.setattr(draws, "_reads_draw", lambda facts, klass: False),
     set(), {(39, 17, "DL402"), (48, 17, "DL402"), (60, 17, "DL402")}),
]


@pytest.mark.parametrize(("name", "mutation", "lost", "gained"), MUTATIONS,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_each_v7_decision_shows_in_its_fixture(monkeypatch, name, mutation, lost, gained):
    before = findings(name)
    assert before == stated(name)
    mutation(monkeypatch)
    after = findings(name)
    assert before - after == lost
    assert after - before == gained


def test_dl501_is_reported_on_loaders_built_only_to_be_inspected_without_v7(monkeypatch):
    name = "dl501_v7_inspected_loaders.py"
    before = findings(name)
    assert before == stated(name)
    monkeypatch.setattr(inspection.Inspections, "only_inspected", lambda self, call: False)
    assert findings(name) - before == {(14, 8, "DL501"), (20, 13, "DL501")}


def test_a_read_other_than_an_attribute_or_a_read_only_builtin_lets_the_loader_escape(monkeypatch):
    # Every read taken as harmless: the loader a factory returns (and the one handed to
    # trainer.fit) would be taken for one only inspected.
    monkeypatch.setattr(inspection, "_harmless", lambda node, parent, grand, scope: True)
    assert {(31, 13, "DL501"), (37, 13, "DL501")} & findings("dl501_v7_inspected_loaders.py") == set()


def test_a_module_level_loader_its_module_never_reads_may_be_imported(monkeypatch):
    monkeypatch.setattr(inspection, "importable", lambda scope, name, inspected: False)
    assert stated("dl501_v7_inspected_loaders.py") - findings("dl501_v7_inspected_loaders.py") == {(16, 11, "DL501")}


def every_parameter_changed(self, func, depth=0):
    return frozenset((param, through) for param in func.params for through in (False, True))


CHANGES = "dl402_v7_dataset_changes.py"
ROOTED = changed_parameters._rooted


@pytest.mark.parametrize(
    ("mutation", "lost", "gained"),
    [
        # Same-file callees not read: a helper that only reads the dataset, a classmethod and a method
        # that assigns nothing are taken to change it (v6).
        (lambda mp: mp.setattr(changed_parameters.ChangedParameters, "of", every_parameter_changed),
         {(49, 17, "DL402"), (70, 17, "DL402"), (91, 17, "DL402")}, set()),
        # A factory's change before it builds a new loader counts.
        (lambda mp: mp.setattr(changed_parameters, "builds_new_loader", lambda facts, function: False),
         {(77, 12, "DL402")}, set()),
        # Subset(loader.dataset, ...) taken for a change of the dataset it only holds.
        (lambda mp: mp.setattr(changed_parameters, "ONLY_READ", changed_parameters.READ_ONLY_BUILTINS),
         {(91, 17, "DL402")}, set()),
        # A change of the `.dataset` of what a callee is given is not carried to its caller.
        (lambda mp: mp.setattr(changed_parameters, "_rooted", lambda expr, params, flags=None: ROOTED(expr, params)),
         set(), {(56, 17, "DL402")}),
    ],
    ids=["callees-read", "factory-change", "subset-reads", "through-dataset"],
)
def test_each_dataset_change_decision_shows_in_its_fixture(monkeypatch, mutation, lost, gained):
    before = findings(CHANGES)
    assert before == stated(CHANGES)
    mutation(monkeypatch)
    after = findings(CHANGES)
    assert before - after == lost
    assert after - before == gained


def test_a_name_bound_again_after_its_loop_is_not_charged_with_its_iterations(monkeypatch):
    name = "flow_rebound_after_loop.py"
    before = findings(name)
    assert before == stated(name)
    # Every binding reaches every use again: the test loader is charged with the training epochs.
    monkeypatch.setattr(IterationFacts, "_built_after_loop", lambda self, site, ctx: False)
    assert findings(name) ^ before == {(18, 13, "DL402"), (29, 13, "DL402")}


def test_a_loop_around_both_bindings_still_reaches_the_new_value(monkeypatch):
    name = "flow_rebound_after_loop.py"
    monkeypatch.setattr(iteration, "loop_around_both", lambda site, ctx: False)
    assert findings(name) ^ stated(name) == {(39, 17, "DL401")}


def test_a_constructor_parameter_is_read_as_every_construction_passes_it(monkeypatch):
    name = "flow_constructor_parameters.py"
    before = findings(name)
    assert before == stated(name)
    # Not read per construction: DataModule(num_workers=0)'s loader is taken for a worker-using one.
    monkeypatch.setattr(LoaderFacts, "constructed_state", lambda self, expr, func: None)
    assert findings(name) ^ before == {(13, 15, "DL402")}


def test_a_lightning_callback_that_changes_the_dataset_every_epoch_keeps_workers_fresh(monkeypatch):
    before = findings("fw_lightning_epoch_callbacks.py")
    assert before == stated("fw_lightning_epoch_callbacks.py") == set()
    monkeypatch.setattr(analysis_module, "dataset_change_by_callback", lambda facts: None)
    assert findings("fw_lightning_epoch_callbacks.py") == {(37, 15, "DL402")}


def test_a_callback_that_changes_no_dataset_is_no_reason(monkeypatch):
    assert findings("fw_lightning_epoch_logging.py") == stated("fw_lightning_epoch_logging.py") == {(18, 15, "DL402")}
    monkeypatch.setattr(epoch_callbacks, "_names_a_dataset", lambda expr: True)
    assert findings("fw_lightning_epoch_logging.py") == set()
