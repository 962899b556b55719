"""Rule book v8 for DL105, DL203, DL201 and DL601: each new condition is mutated here.

A mutation weakens one decision; the fixture that shows it must then gain or lose exactly the
finding the decision is about (the fixtures themselves are checked in test_fixtures.py).
"""

from flake8_dataloader.facts import class_traits
from flake8_dataloader.autofix import fix_source
from flake8_dataloader.engine import analyse
from flake8_dataloader.rules import dl105_attribute_set_after_construction as dl105
from flake8_dataloader.rules import dl201_unseeded_dataset_rng as dl201
from flake8_dataloader.rules import dl203_worker_seed_ignores_epoch as dl203
from flake8_dataloader.rules import dl601_handle_shared_with_workers as dl601

from .conftest import FIXTURES
from .harness import fixture_expectations as stated, fixture_findings as findings, settings_from_argv


def test_dl105_mangled_guard_is_torchs_only_inside_a_class_named_dataloader(monkeypatch):
    name = "dl105_mangled_guard.py"
    assert findings(name) == stated(name) == {(29, 8, "DL105")}
    monkeypatch.setattr(dl105, "_mangled", lambda attr, cls_name: attr)
    assert findings(name) - stated(name) == {(18, 8, "DL105")}


def test_dl105_mangling_follows_python():
    assert dl105._mangled("__initialized", "DataLoader") == "_DataLoader__initialized"
    assert dl105._mangled("__initialized", "__DataLoader") == "_DataLoader__initialized"
    assert dl105._mangled("__initialized", "Mosaic") == "_Mosaic__initialized"
    assert dl105._mangled("_DataLoader__initialized", "Mosaic") == "_DataLoader__initialized"
    assert dl105._mangled("__init__", "DataLoader") == "__init__"


RUN_LEVEL = "dl203_run_level_seeds.py"


def dl203_of(name):
    return {f for f in findings(name) if f[2] == "DL203"}


def test_dl203_run_level_values_are_constants():
    # args.seed, cfg.SEED, a partial-bound argument, self.seed captured, an enclosing variable captured.
    assert dl203_of(RUN_LEVEL) == {
        (26, 0, "DL203"), (30, 0, "DL203"), (34, 0, "DL203"), (63, 8, "DL203"), (72, 4, "DL203"),
    }
    assert findings(RUN_LEVEL) == stated(RUN_LEVEL)


def test_dl203_a_value_rebound_in_the_loop_that_builds_the_loader_is_per_pass(monkeypatch):
    monkeypatch.setattr(dl203, "_rebound_per_loader", lambda facts: {})
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(53, 0, "DL203")}
    monkeypatch.setattr(dl203, "_loop_bound", lambda facts: set())
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(53, 0, "DL203"), (86, 8, "DL203"), (103, 4, "DL203")}


def test_dl203_a_captured_variable_its_epoch_loop_rebinds_is_per_pass(monkeypatch):
    monkeypatch.setattr(dl203, "_loop_bound", lambda facts: set())
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(103, 4, "DL203")}


def test_dl203_only_the_partial_bound_parameter_read_from_the_loop_is_per_pass(monkeypatch):
    real = dl203._bound_from
    monkeypatch.setattr(dl203, "_bound_from", lambda call, func, rebound: real(call, func, rebound) - {"pass_seed"})
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(53, 0, "DL203")}


def test_dl203_a_run_level_value_drawn_from_the_clock_is_not_a_constant(monkeypatch):
    monkeypatch.setattr(dl203, "_entropy", lambda value, scope: False)
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(48, 0, "DL203")}


def test_dl203_a_per_iterator_source_anywhere_in_the_seed_clears_it(monkeypatch):
    monkeypatch.setattr(dl203, "resolve", lambda expr, scope: {"builtins.int"})
    assert dl203_of(RUN_LEVEL) - stated(RUN_LEVEL) == {(38, 0, "DL203"), (43, 0, "DL203")}


HELD = "dl201_rng_one_object_removed.py"


def test_dl201_an_rng_one_object_removed_is_reported_at_the_holding_assignment():
    source = (FIXTURES / HELD).read_text(encoding="utf-8")
    found = [(line, col, message) for line, col, code, message in analyse(source, settings_from_argv([]))]
    assert found == [(34, 8, (
        "DL201 self.scaler.rs (created at line 12) of ScaledSeries is copied into every worker with the same "
        "state (workers draw identical numbers); reseed it per worker from get_worker_info().seed"
    ))]
    assert findings(HELD) == stated(HELD)


def test_dl201_the_draw_must_go_through_the_held_objects_methods(monkeypatch):
    monkeypatch.setattr(class_traits, "calls_on_attributes", lambda facts, methods: {})
    assert stated(HELD) - findings(HELD) == {(34, 8, "DL201")}


def test_dl201_a_per_worker_reseed_of_the_held_rng_clears_it(monkeypatch):
    real = dl201.drawn_and_reseeded
    monkeypatch.setattr(dl201, "per_worker_seeded", lambda facts, methods: False)
    monkeypatch.setattr(dl201, "drawn_and_reseeded", lambda *a: (real(*a)[0], set()))
    assert findings(HELD) - stated(HELD) == {(50, 8, "DL201")}


LOCAL = "dl601_local_handles.py"


def test_dl601_a_value_derived_from_a_local_handle_is_the_handle():
    source = (FIXTURES / LOCAL).read_text(encoding="utf-8")
    found = [(line, col, text.split(" is copied")[0]) for line, col, _, text in analyse(source, settings_from_argv([]))]
    assert found == [
        (11, 8, 'DL601 self.images = h5py.File(...)["images"]'),
        (24, 8, "DL601 self.cursor = sqlite3.connect(...).cursor()"),
        (37, 8, "DL601 self.file = open(...)"),
    ]
    assert findings(LOCAL) == stated(LOCAL)


def test_dl601_local_handles_are_followed_only_by_the_new_condition(monkeypatch):
    monkeypatch.setattr(dl601, "_derived_from_local", lambda value, method: None)
    assert stated(LOCAL) - findings(LOCAL) == {(11, 8, "DL601"), (24, 8, "DL601"), (37, 8, "DL601")}


def test_dl601_what_a_local_handle_reads_out_is_not_the_handle(monkeypatch):
    monkeypatch.setattr(dl601, "_keeps", lambda kind, step: True)
    assert findings(LOCAL) - stated(LOCAL) == {(58, 8, "DL601")}


def test_dl601_the_fix_leaves_a_value_derived_from_a_local_handle_alone():
    source = (FIXTURES / LOCAL).read_text(encoding="utf-8")
    assert not fix_source(source, settings_from_argv([])).changed


HOLDER = "dl601_handle_one_object_removed.py"


def test_dl601_a_handle_one_object_removed_is_reported_at_the_holding_assignment():
    source = (FIXTURES / HOLDER).read_text(encoding="utf-8")
    found = [(line, col, text) for line, col, _, text in analyse(source, settings_from_argv([]))]
    assert found == [(46, 8, (
        "DL601 self.reader = VolumeReader(...) holding h5py.File(...) (line 11) is copied into every worker of "
        "Volumes (wrong reads under fork, a pickling error under spawn); set self.reader = None here and open it "
        "on first use in __getitem__"
    ))]
    assert findings(HOLDER) == stated(HOLDER)
    assert not fix_source(source, settings_from_argv([])).changed


def test_dl601_the_handle_must_be_read_through_the_held_objects_methods(monkeypatch):
    monkeypatch.setattr(class_traits, "calls_on_attributes", lambda facts, methods: {})
    assert stated(HOLDER) - findings(HOLDER) == {(46, 8, "DL601")}


def test_dl601_a_held_object_that_decides_its_pickling_is_not_reported(monkeypatch):
    monkeypatch.setattr(dl601, "PICKLING_HOOKS", ())
    assert findings(HOLDER) - stated(HOLDER) == {(74, 8, "DL601")}
