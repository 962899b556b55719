"""runtime_checks --loader, its machine checks, progress lines, the timeline and 'not reproduced' verdicts."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("torch")

from runtime_checks import machine_checks, stats, timeline  # noqa: E402
from runtime_checks.scenarios import Options, Scenario  # noqa: E402
from runtime_checks.scenarios import user_loader as ul  # noqa: E402
from runtime_checks.scenarios.common import NOT_REPRODUCED, progress, verdict  # noqa: E402
from runtime_checks.scenarios.user_dataset import DatasetSpecError  # noqa: E402

from .conftest import ROOT  # noqa: E402

FORK = "tests.runtime_loaders:fork_loader"


def tool(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "runtime_checks", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# -- the twin -----------------------------------------------------------------------------------


def test_the_twin_keeps_every_setting_and_flips_persistent_workers():
    from tests import runtime_loaders

    loader = runtime_loaders.fork_loader()
    other = ul.twin(loader)
    assert other.persistent_workers is True and loader.persistent_workers is False
    assert other.sampler is loader.sampler and other.dataset is loader.dataset
    assert other.collate_fn is runtime_loaders.stack_images
    assert (other.batch_size, other.num_workers, other.prefetch_factor, other.drop_last) == (8, 2, 2, False)
    assert other.multiprocessing_context.get_start_method() == "fork"
    assert ul.twin(runtime_loaders.persistent_loader()).persistent_workers is False


def test_a_batch_sampler_is_passed_on_alone():
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    from tests.runtime_loaders import Images

    batches = BatchSampler(SequentialSampler(range(16)), 4, drop_last=True)
    loader = DataLoader(Images(16), batch_sampler=batches, num_workers=1)  # noqa: DL402 - the tool's input
    kwargs = ul.settings(loader)
    assert kwargs["batch_sampler"] is batches and "batch_size" not in kwargs and "sampler" not in kwargs
    assert len(list(ul.twin(loader))) == 4


def test_an_iterable_dataset_gets_no_sampler():
    from torch.utils.data import DataLoader

    from runtime_checks.workloads import Sharded

    loader = DataLoader(Sharded(8), batch_size=2, num_workers=1)  # noqa: DL402 - the tool's input
    kwargs = ul.settings(loader)
    assert "sampler" not in kwargs and "batch_sampler" not in kwargs and kwargs["batch_size"] == 2
    assert sorted(int(v) for batch in ul.twin(loader) for v in batch) == list(range(8))


@pytest.mark.parametrize(("spec", "message"), [
    ("tests.runtime_loaders", "--loader 'tests.runtime_loaders': expected MODULE:FACTORY, "
                              "e.g. mypkg.train:make_train_loader"),
    ("tests.no_such_module:make", "--loader: cannot import 'tests.no_such_module': ModuleNotFoundError"),
    ("tests.runtime_loaders:missing", "--loader: 'tests.runtime_loaders' has no attribute 'missing'"),
])
def test_bad_loader_specs_are_one_line(spec, message):
    with pytest.raises(DatasetSpecError) as raised:
        ul.build_loader(spec)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_the_users_loader_is_timed_with_its_collate_sampler_and_set_epoch_fork():
    result = ul.user_loader(Options(loader=FORK, epochs=3, progress=False, run_epochs=50))
    metrics = result["metrics"]
    assert list(metrics["per_epoch"]) == ["as given, not persistent", "twin, persistent"]
    for records in metrics["per_epoch"].values():
        assert [r["epoch"] for r in records] == [1, 2, 3]
        assert all(r["batches"] == 8 and r["set_epoch"] == ["sampler"] for r in records)
    assert "stack_images" in metrics["settings"]["collate_fn"] and "EpochShuffle" in metrics["settings"]["sampler"]
    # stack_images gives (images, labels): 8 x 3 x 8 x 8 float32 and 8 int64
    assert (metrics["tensors_per_batch"], metrics["batch_bytes"]) == (2, 8 * 3 * 8 * 8 * 4 + 8 * 8)
    assert [c["check"] for c in metrics["machine_checks"]] == ["shared memory", "CPUs", "open files", "start method"]
    timelines = metrics["timeline"]
    assert all(len(t["batches"]) == 24 and len(t["epoch_starts"]) == 3 and len(t["epoch_ends"]) == 3
               for t in timelines.values())
    if result["status"] == "ok":
        saving = metrics["saving_per_epoch_s"]
        assert saving > 0 and "persistent workers would save" in result["summary"] and "over 50 epochs" in \
            result["summary"]
    else:
        assert result["status"] == NOT_REPRODUCED and "no measurable difference" in result["summary"]


def test_a_loader_without_workers_has_nothing_to_keep():
    result = ul.user_loader(Options(loader="tests.runtime_loaders:no_workers_loader", progress=False))
    assert result["status"] == "ok" and "num_workers=0 loads in the training process" in result["summary"]


@pytest.mark.spawn
def test_a_spawn_loader_with_progress_lines(capfd):
    result = ul.user_loader(Options(loader="tests.runtime_loaders:spawn_loader", epochs=2))
    lines = capfd.readouterr().err.splitlines()
    expected = [f"  user-loader: {config}: epoch {epoch}/2" for config in ("as given, not persistent",
                                                                           "twin, persistent") for epoch in (1, 2)]
    assert [line.rsplit(" ", 2)[0] for line in lines if line.startswith("  user-loader: ")] == expected
    metrics = result["metrics"]
    assert metrics["start_method"] == "spawn" and result["status"] in ("ok", NOT_REPRODUCED)
    assert all(r["batches"] == 8 and r["set_epoch"] == ["sampler"] for rs in metrics["per_epoch"].values() for r in rs)
    assert metrics["machine_checks"][3]["text"].startswith("workers start with spawn (set on the loader)")


def test_the_command_line_prints_progress_then_the_status_and_the_checks_after_the_table(tmp_path):
    result = tool("--device", "cpu", "--rule", "DL405", "--epochs", "3", "--loader", FORK)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    at = lines.index("[2/2] DL402 user-loader ...")
    assert [line.split(": epoch")[0] for line in lines[at + 1:at + 7]] == [
        "  user-loader: as given, not persistent"] * 3 + ["  user-loader: twin, persistent"] * 3
    assert lines[at + 7].startswith("[2/2] DL402 user-loader: ")
    table, checks = result.stdout.split("\n\n")
    assert table.splitlines()[0].split() == ["rules", "scenario", "status", "time", "result"]
    assert checks.splitlines()[0].startswith(f"your loader {FORK} (2 workers, start method fork")
    names = [line.split(":")[0].split()[-1] for line in checks.splitlines()[-4:]]
    assert names == ["memory", "CPUs", "files", "method"]


def test_with_json_to_stdout_there_are_no_progress_lines():
    result = tool("--device", "cpu", "--rule", "DL405", "--epochs", "2", "--loader", FORK, "--json", "-")
    assert result.returncode == 0, result.stderr
    assert [s["name"] for s in json.loads(result.stdout)["scenarios"]] == ["sampler-set-epoch", "user-loader"]
    assert "user-loader: as given" not in result.stderr


# -- the machine checks, from recorded numbers ----------------------------------------------------


def test_shared_memory_warns_at_dockers_default_with_the_fix():
    check = machine_checks.shared_memory("/dev/shm", 64 * 2**20, peak=96e6, estimate=2 * 2 * 19e6)
    assert check["level"] == "warning"
    assert check["text"].startswith("/dev/shm: 67 MB; the loader's workers used up to 96 MB (in flight at once: "
                                    "workers x prefetch_factor x batch = 76 MB) (Docker's default): a worker that "
                                    "finds it full dies with 'killed by signal: Bus error'")
    assert "--shm-size" in check["text"] and "prefetch_factor" in check["text"]


@pytest.mark.parametrize(("size", "peak", "estimate", "level"), [
    (24e9, 96e6, 76e6, "ok"),
    (200e6, 96e6, 76e6, "ok"),  # under half
    (150e6, 96e6, 76e6, "warning"),  # the peak is above half
    (150e6, 10e6, 80e6, "warning"),  # the estimate is above half, whatever was sampled
    (0, 0, 0, "warning"),  # no such filesystem
])
def test_shared_memory_line_is_half_the_space(size, peak, estimate, level):
    assert machine_checks.shared_memory("/dev/shm", size, peak, estimate)["level"] == level


def test_cpus_open_files_and_start_method_checks():
    assert machine_checks.cpus(8, 16)["level"] == "ok"
    assert machine_checks.cpus(8, 2)["text"].endswith("8 workers take turns on 2 CPUs with the training process; "
                                                      "use at most 2")
    assert machine_checks.open_files("file_descriptor", 1024, 600)["level"] == "warning"
    assert machine_checks.open_files("file_descriptor", 1024, 512)["level"] == "ok"
    assert machine_checks.open_files("file_system", 1024, 600)["level"] == "ok"
    assert "from Python 3.14 the Linux default is forkserver" in \
        machine_checks.start_method("fork", False, (3, 12), "linux")["text"]
    assert "forkserver" not in machine_checks.start_method("fork", True, (3, 12), "linux")["text"]
    assert machine_checks.start_method("forkserver", False, (3, 14), "linux")["text"] == (
        "workers start with forkserver (the default here): every fresh worker imports torch and your modules again")


def _small_tmpfs(path: str) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", path], capture_output=True)
    return done.returncode == 0


def test_a_small_shm_path_is_warned_about_and_a_large_one_is_not():
    with tempfile.TemporaryDirectory() as small:
        if not _small_tmpfs(small):
            pytest.skip("cannot mount a small tmpfs here (needs root and mount rights)")
        try:
            # 2 workers x prefetch 2 x 6,208-byte batches = 24.8 kB in flight: over half of 32 kB
            result = ul.user_loader(Options(loader=FORK, epochs=2, progress=False, shm_path=small))
        finally:
            subprocess.run(["umount", small], check=True)
    shm = result["metrics"]["machine_checks"][0]
    assert shm["level"] == "warning" and shm["size_bytes"] == 32 * 1024 and "Bus error" in shm["text"]
    large = ul.user_loader(Options(loader=FORK, epochs=2, progress=False))["metrics"]["machine_checks"][0]
    assert large["level"] == "ok", large["text"]


def test_a_missing_shm_path_is_refused_before_anything_runs():
    result = tool("--shm-path", "/no/such/dir", "--list")
    assert result.returncode == 2
    assert result.stderr == "runtime_checks: error: --shm-path /no/such/dir: no such directory\n"


# -- the timeline: sampling and drawing, with recorded samples --------------------------------------


def test_the_sampler_reads_until_stopped_and_skips_failed_readings():
    values = iter([1.0, 2.0, RuntimeError("driver hiccup"), 4.0] + [5.0] * 1000)

    def read():
        value = next(values)
        if isinstance(value, Exception):
            raise value
        return value

    with timeline.Sampler(read, interval=0.001) as sampler:
        while len(sampler.samples) < 4:
            pass
    assert [v for _, v in sampler.samples[:4]] == [1.0, 2.0, 4.0, 5.0]
    assert all(a[0] <= b[0] for a, b in zip(sampler.samples, sampler.samples[1:]))
    assert sampler.peak() == 5.0


def test_the_gpu_reader_needs_nvml_and_a_driver(monkeypatch):
    import types

    broken = types.SimpleNamespace(nvmlInit=lambda: (_ for _ in ()).throw(OSError("NVML Shared Library Not Found")))
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert timeline.gpu_busy_reader() is None
    working = types.SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: f"gpu{i}",
                                    nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=87))
    monkeypatch.setitem(sys.modules, "pynvml", working)
    assert timeline.gpu_busy_reader()() == 87


def test_the_recorder_counts_from_the_first_epoch():
    recorder = timeline.Recorder(origin=10.0)
    recorder.epoch(15.0)
    recorder.batch(17.0, 2.0)
    recorder.epoch(18.0)
    recorder.batch(18.5, 0.5)
    recorder.end(19.0, 0.25)
    gpu = timeline.Sampler(lambda: 0.0, origin=10.0)
    gpu.samples = [[4.0, 0.0], [5.5, 0.0], [7.5, 100.0]]
    assert recorder.as_dict(gpu) == {"batches": [[2.0, 2.0], [3.5, 0.5]], "epoch_starts": [0.0, 3.0],
                                     "epoch_ends": [[4.0, 0.25]], "gpu_busy": [[0.5, 0.0], [2.5, 100.0]]}


RECORDED = {  # a rebuilt loader waits 2 s at each epoch start; the persistent one once; GPU busy from NVML
    "rebuilt every epoch": {"batches": [[2.0, 2.0], [2.2, 0.01], [4.4, 2.0], [4.6, 0.01]], "epoch_starts": [0, 2.4],
                            "epoch_ends": [[2.4, 0.1], [4.8, 0.1]],
                            "gpu_busy": [[0.0, 0], [2.0, 95], [2.4, 0], [4.4, 95], [4.8, 0]]},
    "built once, persistent": {"batches": [[2.0, 2.0], [2.2, 0.01], [2.4, 0.01], [2.6, 0.01]],
                               "epoch_starts": [0, 2.3], "gpu_busy": [[0.0, 0], [2.0, 95], [2.8, 0]]},
}


def test_the_timeline_is_drawn_from_recorded_samples(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, rows = plt.subplots(2, 1, sharex=True)
    timeline.draw_timelines(list(rows), RECORDED)
    labels = [axis.get_ylabel() for axis in rows]
    assert labels == ["rebuilt every epoch\nwait per batch", "built once, persistent\nwait per batch"]
    bars = [patch for patch in rows[0].patches]
    assert [(round(b.get_x(), 2), round(b.get_width(), 2), round(b.get_height(), 2)) for b in bars] == [
        (0.0, 2.0, 2.0), (2.19, 0.01, 0.01), (2.4, 2.0, 2.0), (4.59, 0.01, 0.01),  # waits for batches
        (2.3, 0.1, 0.1), (4.7, 0.1, 0.1)]  # epoch ends
    busy_axes = [axis for axis in figure.axes if axis.get_ylabel() == "GPU busy %"]
    assert len(busy_axes) == 2 and busy_axes[0].get_ylim() == (0, 105)
    figure.savefig(tmp_path / "t.png")
    plt.close(figure)


def test_the_plot_has_the_epoch_panels_and_a_timeline_row_per_compared_configuration(tmp_path):
    pytest.importorskip("matplotlib")
    from runtime_checks.report import plot

    per_epoch = {name: [{"epoch": e, "first_batch_s": 0.1 * e, "epoch_s": 1.0, "data_wait_s": 0.5} for e in (1, 2)]
                 for name in ("rebuilt every epoch", "built once", "built once, persistent")}
    result = {"metrics": {"per_epoch": per_epoch, "timeline": dict(RECORDED, **{"built once": RECORDED[
        "rebuilt every epoch"]}), "workers": 2, "start_method": "fork"}}
    plot(result, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# -- verdicts, ratios, warnings, progress, --list --------------------------------------------------


def test_a_bad_pattern_that_did_not_show_is_not_reproduced_never_ok(monkeypatch):
    assert verdict(True, "x", reproduced=False)["status"] == NOT_REPRODUCED
    assert verdict(False, "x", reproduced=False)["status"] == "failed"
    from runtime_checks.scenarios import resources

    monkeypatch.setattr(resources, "_bad_reads", lambda dataset, workers, context: {
        "right": dataset.count, "wrong": 0, "raised": 0})
    result = resources.handle_in_init(Options(quick=True, workers=3, progress=False))
    assert result["status"] == NOT_REPRODUCED
    assert result["summary"].startswith("fork, 3 workers: 0 of 5,000 reads wrong or raising with the handle from "
                                        "__init__ (the race did not happen in this run: not reproduced)")


def test_not_reproduced_is_said_and_leaves_the_exit_status_at_0(capsys):
    from runtime_checks.__main__ import _report

    results = [{"name": "handle-in-init", "rules": ["DL601"], "status": NOT_REPRODUCED, "summary": "s",
                "seconds": 1.0}]
    args = argparse.Namespace(json=None, plot=None)
    assert _report(results, {}, Options(), args) == 0
    captured = capsys.readouterr()
    assert "not reproduced" in captured.out
    assert "1 scenario(s) ran but their bad pattern did not show in this run (not reproduced; exit status " \
           "unchanged): handle-in-init" in captured.err


def test_overlapping_iqrs_are_no_measurable_difference_never_a_ratio():
    slow, fast = stats.summarize([1.0, 1.1, 1.2, 1.3]), stats.summarize([0.1, 0.11, 0.12])
    assert stats.compare(slow, fast) == "10.5x"  # medians 1.15 and 0.11
    overlapping = stats.summarize([0.9, 1.15, 1.4])
    assert stats.compare(overlapping, slow) == stats.compare(slow, overlapping) == "no measurable difference"
    assert stats.compare(stats.summarize([5.0]), stats.summarize([1.0])) == stats.TOO_FEW
    from runtime_checks.report import timing_table

    row = {"epoch1": {"first_batch_s": 0.1}, "first_batch_s": slow, "epoch_s": slow, "data_wait_s": slow}
    result = {"metrics": {"summary": {"built once": row}, "epochs": 4, "workers": 2, "start_method": "fork",
                          "ratios": {"epoch, built once / persistent": 0.6},
                          "measurable": {"epoch, built once / persistent": False}}}
    assert "  epoch, built once / persistent: no measurable difference (IQRs overlap)" in timing_table(result)
    assert "0.6x" not in timing_table(result)


def test_warnings_are_counted_not_printed_mid_line():
    import warnings

    from runtime_checks.__main__ import run_capturing_warnings

    def warns(opts):
        for _ in range(2):
            warnings.warn("This DataLoader will create 4 worker processes in total.\nmore", UserWarning)
        return {"status": "ok"}

    result = run_capturing_warnings(Scenario("w", ("DL000",), warns), Options())
    assert result["warnings"] == [{"text": "UserWarning: This DataLoader will create 4 worker processes in total.",
                                   "count": 2}]


def test_progress_goes_to_stderr_unless_quiet(capfd):
    from runtime_checks.scenarios.common import progress_printed

    progress_printed(reset=True)
    progress(Options(progress=False), "epoch-timing", "built once: epoch 1/8 0.20 s")
    assert capfd.readouterr().err == "" and not progress_printed()
    progress(Options(), "epoch-timing", "built once: epoch 1/8 0.20 s")
    progress(Options(), "epoch-timing", "built once: epoch 2/8 0.21 s")
    assert capfd.readouterr().err == ("\n  epoch-timing: built once: epoch 1/8 0.20 s\n"
                                      "  epoch-timing: built once: epoch 2/8 0.21 s\n")
    assert progress_printed(reset=True) and not progress_printed()


def test_list_honours_rule():
    result = tool("--list", "--rule", "DL402")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows and all("DL402" in row[0].split(",") for row in rows)
    assert [row[1] for row in rows][:2] == ["epoch-timing", "claim-drop-last-deadlock"]
