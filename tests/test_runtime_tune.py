"""runtime_checks --loader M:F --tune: the settings tried, the recommendation from recorded numbers, the
budget, the table and plot, and real runs on an IO-bound and a CPU-trivial loader (fork workers)."""

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from runtime_checks.scenarios import Options  # noqa: E402
from runtime_checks.scenarios.user_dataset import DatasetSpecError  # noqa: E402
from runtime_checks.tune import advice, grid, output, probes  # noqa: E402
from runtime_checks.tune import run as tune_run  # noqa: E402

from .conftest import ROOT  # noqa: E402

IO = "tests.runtime_loaders:io_bound_loader"


def tool(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "runtime_checks", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# -- the settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(("usable", "counts"), [
    (1, [0, 1]), (2, [0, 1, 2]), (6, [0, 1, 2, 4, 6]), (8, [0, 1, 2, 4, 8]), (0, [0]),
])
def test_worker_counts_double_up_to_the_usable_cpus(usable, counts):
    assert grid.worker_counts(usable) == counts


def test_the_sweep_is_persistent_with_workers_and_keeps_prefetch_and_pinning():
    start = grid.Setting(0, False, None, True)
    assert grid.sweep(start, 2) == [grid.Setting(0, False, None, True), grid.Setting(1, True, 2, True),
                                    grid.Setting(2, True, 2, True)]
    best = grid.Setting(2, True, 2, False)
    assert grid.extras(best, cuda=False) == [grid.Setting(2, True, 4, False)]
    assert grid.extras(best, cuda=True) == [grid.Setting(2, True, 4, False), grid.Setting(2, True, 2, True)]
    assert grid.extras(grid.Setting(0, False, None, False), cuda=False) == []
    assert best.label() == "num_workers=2, persistent_workers=True, prefetch_factor=2"
    assert grid.Setting(0, False, None, True).label() == "num_workers=0, pin_memory=True"


def test_twins_keep_the_loaders_own_parts_and_drop_what_torch_refuses_without_workers():
    from tests import runtime_loaders

    loader = runtime_loaders.fork_loader()
    assert grid.given(loader) == grid.Setting(2, False, 2, False)
    none = grid.build(loader, grid.Setting(0, False, None, False))
    assert none.num_workers == 0 and none.multiprocessing_context is None and none.prefetch_factor is None
    two = grid.build(loader, grid.Setting(2, True, 4, False))
    assert (two.num_workers, two.persistent_workers, two.prefetch_factor) == (2, True, 4)
    assert two.sampler is loader.sampler and two.collate_fn is runtime_loaders.stack_images
    assert two.multiprocessing_context.get_start_method() == "fork"


# -- the recommendation, from recorded numbers --------------------------------------------------


def _stat(q1, median, q3, n=5):
    return {"q1": q1, "median": median, "q3": q3, "iqr": q3 - q1, "n": n, "noisy": False}


def _row(workers, rate, prefetch=2, given=False, memory=None, shm=0, wait=None):
    setting = grid.Setting(workers, workers > 0, prefetch if workers else None, False)
    row = {"label": setting.label(), "setting": setting.as_dict(), "rate": _stat(*rate) if rate else None,
           "wait_share": _stat(*wait) if wait else None, "shm_peak_bytes": shm, "first_batch_s": 0.1,
           "workers_memory_bytes": 60_000_000 * workers if memory is None else memory, "kind": "sweep"}
    if given:
        row["given"] = True
    return row


ROOM = {"shm_bytes": 64 * 2**20, "available_memory_bytes": 8_000_000_000}


def test_the_smallest_setting_within_noise_of_the_best_is_recommended_with_its_gain_and_memory():
    rows = [_row(0, (40, 41, 42), given=True), _row(1, (60, 62, 64)), _row(2, (79, 81, 85)),
            _row(2, (80, 83, 86), prefetch=4)]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["verdict"] == "change" and verdict["best"] == "num_workers=2, persistent_workers=True, " \
                                                                 "prefetch_factor=4"
    assert verdict["text"] == (
        "use num_workers=2, persistent_workers=True, prefetch_factor=2: 2.0x the batches/s of the loader as given "
        "(81.0 batches/s [IQR 6.0] vs 41.0 batches/s [IQR 2.0]); workers' memory 120 MB (120 MB more than as "
        "given), /dev/shm peak 0 bytes")


def test_a_setting_within_noise_of_the_given_one_is_not_recommended():
    # num_workers=1 is within noise of the best, but also of the loader as given: no measurable gain.
    rows = [_row(0, (50, 55, 60), given=True), _row(1, (58, 64, 70)), _row(2, (66, 70, 75))]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["recommended"] == "num_workers=2, persistent_workers=True, prefetch_factor=2"
    assert verdict["gain"] == pytest.approx(70 / 55)


def test_nothing_beats_the_given_settings_when_the_iqrs_overlap():
    rows = [_row(0, (100, 110, 120), given=True), _row(1, (95, 112, 118)), _row(2, (30, 31, 32))]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["verdict"] == "given" and verdict["recommended"] is None and verdict["gain"] is None
    assert verdict["text"] == (
        "nothing measurably beats the loader as given (num_workers=0: 110.0 batches/s [IQR 20.0]); the fastest, "
        "num_workers=1, persistent_workers=True, prefetch_factor=2 at 112.0 batches/s [IQR 23.0], is within its "
        "noise")


def test_fewer_workers_as_fast_as_the_given_ones_are_named():
    rows = [_row(4, (80, 85, 90), given=True), _row(0, (10, 11, 12)), _row(2, (82, 86, 88))]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["verdict"] == "given"
    assert verdict["text"].endswith(
        "; num_workers=2, persistent_workers=True, prefetch_factor=2 is as fast within noise with fewer workers "
        "(workers' memory 120 MB (120 MB less than as given), /dev/shm peak 0 bytes)")


def test_settings_without_two_epochs_to_compare_are_named_not_ranked():
    rows = [_row(0, (40, 41, 42), given=True), _row(1, (60, 62, 64)), _row(2, (90, 95, 99, 1))]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["recommended"] == "num_workers=1, persistent_workers=True, prefetch_factor=2"
    assert verdict["text"].endswith("; not compared, too few whole epochs within the budget: num_workers=2, "
                                    "persistent_workers=True, prefetch_factor=2")


def test_too_few_epochs_give_no_recommendation():
    rows = [_row(0, (40, 41, 42, 1), given=True), _row(2, (79, 81, 85))]
    verdict = advice.recommend(rows, ROOM, stepped=False)
    assert verdict["verdict"] == "too-few" and verdict["recommended"] is None
    assert verdict["text"].startswith("too few whole epochs after the first to compare within the budget")


def test_the_data_wait_and_the_headroom_warnings_are_stated():
    rows = [_row(0, (40, 41, 42), given=True, wait=(0.6, 0.65, 0.7)),
            _row(2, (79, 81, 85), shm=40 * 2**20, memory=5_000_000_000, wait=(0.2, 0.25, 0.3))]
    verdict = advice.recommend(rows, ROOM, stepped=True)
    assert verdict["warnings"] == [
        "its /dev/shm peak 42 MB is over half of /dev/shm (67 MB): workers die of a Bus error when it fills; give "
        "it room or lower num_workers or prefetch_factor",
        "its workers' memory 5.0 GB is over half the memory available (8.0 GB): with a model beside it, the "
        "machine may swap or kill"]
    assert "; the step waits for data 25% of the time there: loading does not keep up; WARNING: its /dev/shm" in \
        verdict["text"]


# -- what one setting holds ---------------------------------------------------------------------


def test_workers_are_found_as_children_with_their_memory():
    known = set(probes.children())  # a forkserver or resource tracker an earlier test started
    pid = os.fork()
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    try:
        time.sleep(0.1)
        assert pid in probes.children()
        # PSS moves as the parent's pages change: the sum over the one child is its share, give or take.
        own = probes.process_memory(pid)
        assert own > 1_000_000 and probes.workers_memory(known) == pytest.approx(own, rel=0.1)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert probes.available_memory() > 0


def test_a_users_step_runs_after_each_batch_and_its_data_wait_is_measured():
    from tests import runtime_loaders

    known = set(probes.children())  # a forkserver or resource tracker an earlier test started
    loader = runtime_loaders.io_bound_loader()
    opts = Options(device="cpu", progress=False)
    step = tune_run.load_step("tests.runtime_loaders:train_step")
    alone = tune_run.measure(loader, grid.Setting(0, False, None, False), step, opts, 1.5, None, "/dev/shm")
    fed = tune_run.measure(loader, grid.Setting(2, True, 2, False), step, opts, 1.5, None, "/dev/shm")
    assert all(r["batches"] == 16 and r["whole"] for r in alone["epochs"])
    # 20 ms of reads a batch against a 2 ms step: in the training process the step waits most of the time.
    assert alone["wait_share"]["median"] > 0.7 and fed["wait_share"]["median"] < alone["wait_share"]["median"]
    assert alone["workers_memory_bytes"] == 0 and fed["workers_memory_bytes"] > 0
    assert set(probes.children()) <= known  # the persistent workers went with their setting


def test_a_child_started_before_the_setting_is_not_one_of_its_workers():
    from tests import runtime_loaders

    pid = os.fork()  # as a forkserver or multiprocessing's resource tracker, started by earlier work
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    try:
        step = tune_run.Step("cpu", 0)
        alone = tune_run.measure(runtime_loaders.io_bound_loader(), grid.Setting(0, False, None, False), step,
                                 Options(device="cpu", progress=False), 1.0, None, "/dev/shm")
        assert alone["workers_memory_bytes"] == 0
        assert pid in probes.children()
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_epochs_that_do_not_fit_are_cut_at_the_same_number_of_batches_for_every_setting():
    from tests import runtime_loaders

    opts = Options(device="cpu", progress=False)
    start = grid.Setting(0, False, None, False)
    step = tune_run.Step("cpu", 0)
    started = time.perf_counter()
    # An endless stream: the calibration stops at a tenth of the budget and sizes epochs for a fifth of a slice.
    cap = tune_run.calibrate(runtime_loaders.endless_loader(), start, step, opts, 5.0, 2.0, smallest=16)
    assert time.perf_counter() - started < 1.5 and 16 <= cap <= 0.4 / 0.008 * 1.2
    assert tune_run.calibrate(runtime_loaders.endless_loader(), start, step, opts, 5.0, 0.01, smallest=16) == 16
    # 16 batches of 20 ms reads fit a fifth of a 4 s slice: whole epochs.
    assert tune_run.calibrate(runtime_loaders.io_bound_loader(), start, step, opts, 5.0, 4.0, smallest=16) is None


def test_a_loader_that_raises_fails_the_tune_with_its_last_line():
    known = set(probes.children())
    result = tune_run.tune(Options(loader="tests.runtime_loaders:broken_loader", progress=False), 2.0, None)
    assert result == {"status": "failed", "summary": "tests.runtime_loaders:broken_loader: loading failed: "
                                                     "FileNotFoundError: data/0.png"}
    assert set(probes.children()) <= known


@pytest.mark.parametrize(("spec", "message"), [
    ("tests.runtime_loaders", "--step 'tests.runtime_loaders': expected MODULE:FN, e.g. mypkg.train:train_step"),
    ("tests.runtime_loaders:missing", "--step: 'tests.runtime_loaders' has no attribute 'missing'"),
    ("os:sep", "--step: os:sep is not callable"),
    ("tests.runtime_loaders:step_without_argument",
     "--step: tests.runtime_loaders:step_without_argument must take one argument, the batch"),
])
def test_bad_step_specs_are_one_line(spec, message):
    with pytest.raises(DatasetSpecError) as raised:
        tune_run.load_step(spec)
    assert str(raised.value) == message


@pytest.mark.parametrize(("args", "message"), [
    (["--tune"], "runtime_checks: error: --tune needs --loader MODULE:FACTORY (the loader to tune)"),
    (["--loader", IO, "--step", "tests.runtime_loaders:train_step"],
     "runtime_checks: error: --step needs --tune (with --loader alone, use --step-ms)"),
    (["--loader", IO, "--tune", "--step", "tests.runtime_loaders:train_step", "--step-ms", "5"],
     "runtime_checks: error: --step and --step-ms: give one (your step, or a stand-in of MS milliseconds)"),
    (["--loader", IO, "--tune", "--budget", "0"],
     "python -m runtime_checks: error: argument --budget: must be above 0"),
    (["--loader", IO, "--tune", "--step", "tests.runtime_loaders:step_without_argument"],
     "runtime_checks: error: --step: tests.runtime_loaders:step_without_argument must take one argument, the "
     "batch"),
])
def test_bad_tune_options_are_one_line_and_exit_2(args, message):
    result = tool(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].endswith(message) and "Traceback" not in result.stderr
    assert len([line for line in lines if "error:" in line]) == 1


# -- the table and the plot ---------------------------------------------------------------------


def _recorded():
    rows = [_row(0, (40, 41, 42), given=True), _row(1, (60, 62, 64)), _row(2, (79, 81, 85)),
            _row(2, (80, 83, 86), prefetch=4)]
    rows[-1]["kind"] = "extra"
    machine = [{"check": "CPUs", "level": "ok", "text": "num_workers=0, CPUs this process may use: 2"}]
    return {"metrics": {"rows": rows, "recommendation": advice.recommend(rows, ROOM, stepped=False),
                        "batches_per_epoch_cap": None, "usable_cpus": 2, "start_method": "fork", "budget_s": 60.0,
                        "step": None, "machine_checks": machine,
                        "machine_checks_for": "num_workers=2, persistent_workers=True, prefetch_factor=2"}}


def test_the_table_marks_the_given_and_the_recommended_rows():
    lines = output.table(_recorded(), IO).splitlines()
    assert lines[0] == (f"tuning your loader {IO} (2 usable CPUs, start method fork, budget 60 s; whole epochs, "
                        "no step: loading alone; medians [IQR] of epochs 2..N)")
    assert lines[2].startswith("num_workers=0 ") and lines[2].endswith("0 bytes           - <- given")
    assert lines[4].startswith("num_workers=2, persistent_workers=True, prefetch_factor=2 ")
    assert lines[4].endswith(" <- recommended") and "81.0 [6.0] n=5" in lines[4]
    assert lines[7].startswith("recommendation: use num_workers=2, persistent_workers=True, prefetch_factor=2: 2.0x")
    assert lines[-2:] == ["this machine for num_workers=2, persistent_workers=True, prefetch_factor=2:",
                          "  ok      CPUs: num_workers=0, CPUs this process may use: 2"]


def test_the_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "tune.png"
    output.plot(_recorded(), str(path), IO)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


# -- real runs ----------------------------------------------------------------------------------


def _tune(spec, budget):
    started = time.perf_counter()
    result = tool("--loader", spec, "--tune", "--budget", str(budget), "--device", "cpu", "--json", "-")
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    scenarios = json.loads(result.stdout)["scenarios"]
    assert [s["name"] for s in scenarios] == ["tune"]
    return scenarios[0]["metrics"], seconds


def test_an_io_bound_loader_gets_workers_within_a_10_s_budget():
    metrics, seconds = _tune(IO, 10)
    assert seconds < 20 and metrics["spent_s"] <= 10.5, (seconds, metrics["spent_s"])
    rows = {r["label"]: r for r in metrics["rows"]}
    zero, two = rows["num_workers=0"], rows["num_workers=2, persistent_workers=True, prefetch_factor=2"]
    assert zero.get("given") and two["rate"]["q1"] > zero["rate"]["q3"], (zero["rate"], two["rate"])  # rises
    verdict = metrics["recommendation"]
    assert verdict["verdict"] == "change" and verdict["gain"] > 1.3
    assert metrics["machine_checks_for"] == verdict["recommended"]
    workers = rows[verdict["recommended"]]["setting"]["workers"]
    assert metrics["machine_checks"][1]["text"].startswith(f"num_workers={workers}, CPUs this process may use")
    assert grid.Setting(**rows[verdict["recommended"]]["setting"]).workers > 0


def test_a_cpu_trivial_loader_gets_no_claimed_gain():
    metrics, _ = _tune("tests.runtime_loaders:trivial_loader", 6)
    verdict = metrics["recommendation"]
    assert verdict["verdict"] == "given" and verdict["gain"] is None and verdict["recommended"] is None
    assert verdict["text"].startswith("nothing measurably beats the loader as given (num_workers=0: ")


def test_the_docs_table_is_what_the_committed_run_prints():
    """docs/runtime_checks.md shows the table of docs/results/tune-cpu.json, regenerated by the same code."""
    run = json.loads((ROOT / "docs" / "results" / "tune-cpu.json").read_text())
    assert run["command"].startswith(f"python -m runtime_checks --loader {IO} --tune ")
    assert run["command"] in (ROOT / "docs" / "runtime_checks.md").read_text()
    table = output.table(run["scenarios"][0], IO)
    assert f"```text\n{table}\n```" in (ROOT / "docs" / "runtime_checks.md").read_text()
    assert run["scenarios"][0]["metrics"]["recommendation"]["verdict"] == "change"
