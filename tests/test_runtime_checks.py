"""runtime_checks with real torch on the CPU, tiny sizes: outcomes, report shape, exit codes, cleanup."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="runtime_checks measures with real torch: pip install torch")

from runtime_checks.scenarios import Options, claims, construction, correctness, lifecycle, randomness  # noqa: E402

from .conftest import ROOT  # noqa: E402

OPTS = Options(quick=True, device="cpu", workers=2)


def test_dl101_exact_error_and_fixed_twin():
    result = construction.persistent_without_workers(OPTS)
    assert result["status"] == "ok"
    assert result["metrics"]["bad"] == {"raised": "ValueError: persistent_workers option needs num_workers > 0"}
    assert result["metrics"]["fixed"] == {"ran": True}


def test_dl102_exact_error():
    result = construction.prefetch_without_workers(OPTS)
    assert result["metrics"]["bad"]["raised"] == (
        "ValueError: prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
        "to enable multiprocessing, otherwise set prefetch_factor to None."
    )


def test_dl103_exact_errors():
    metrics = construction.rejected_combinations(OPTS)["metrics"]
    assert metrics["num_workers=-1"]["raised"] == (
        "ValueError: num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
    )
    assert metrics["timeout=-1"]["raised"] == "ValueError: timeout option should be non-negative"
    assert metrics["sampler+shuffle"]["raised"] == "ValueError: sampler option is mutually exclusive with shuffle"
    assert metrics["batch_sampler+batch_size"]["raised"] == (
        "ValueError: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
    )
    assert metrics["timeout>0 without workers"]["raised"] == (
        "AssertionError: _SingleProcessDataLoaderIter requires timeout == 0"
    )
    assert metrics["IterableDataset+shuffle"]["raised"].startswith(
        "ValueError: DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True"
    )


def test_dl103_v5_values_raise_as_documented():
    result = construction.rejected_combinations(OPTS)
    metrics = result["metrics"]
    assert result["status"] == "ok"
    assert metrics["batch_size=8.0"]["raised"] == (
        "ValueError: batch_size should be a positive integer value, but got batch_size=8.0"
    )
    assert metrics["batch_size=True"]["raised"].endswith("but got batch_size=True")
    assert metrics["drop_last=1"]["raised"] == "ValueError: drop_last should be a boolean value, but got drop_last=1"
    assert metrics["drop_last=None"]["raised"].endswith("but got drop_last=None")
    assert metrics["context 'Spawn'"]["raised"] == (
        "ValueError: multiprocessing_context option should specify a valid start method in "
        "['fork', 'spawn', 'forkserver'], but got multiprocessing_context='Spawn'"
    )
    assert metrics["context module"]["raised"].startswith(
        "TypeError: multiprocessing_context option should be a valid context object or a string specifying "
        "the start method, but got multiprocessing_context=<module 'torch.multiprocessing'"
    )
    assert metrics["prefetch_factor=-1"]["raised"] == "ValueError: prefetch_factor option should be non-negative"
    assert metrics["prefetch_factor=0"]["raised"] == (
        "AssertionError: prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
    )


def test_dl105_each_locked_attribute_raises_and_the_settable_ones_run():
    result = construction.attribute_after_construction(OPTS)
    assert result["status"] == "ok"
    for name in ("dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "persistent_workers"):
        assert result["metrics"][name]["raised"] == (
            f"ValueError: {name} attribute should not be set after DataLoader is initialized"
        )
    assert result["metrics"]["settable"] == {"ran": True}


def test_dl104_crash_at_zero_workers_and_guarded_fix():
    result = construction.crash_with_zero_workers(OPTS)
    assert result["status"] == "ok"
    assert result["metrics"]["fixed"] == {"ran": True}


def test_dl201_duplicate_draws():
    metrics = randomness.dataset_rng(OPTS)["metrics"]["unique_draws"]
    # 2 workers, 8 samples, 3 epochs = 24 draws.
    assert metrics["numpy, persistent=False"] == 4
    assert metrics["numpy, persistent=True"] == 12
    assert metrics["random, persistent=False"] == 4
    assert metrics["torch, persistent=False"] == 4
    assert metrics["reseeded per worker"] == 24
    assert metrics["global np.random"] == 24


def test_dl202_runs_differ_without_torch_seed():
    result = randomness.half_seeded(OPTS)
    assert result["status"] == "ok"
    first, second = result["metrics"]["torch_seeded_runs"]
    assert first == second


def test_dl203_epochs_repeat():
    result = randomness.worker_seed(OPTS)
    assert result["status"] == "ok"
    assert result["metrics"]["unique_bad"] == 4
    assert result["metrics"]["unique_fixed"] == 12


def test_dl403_stale_and_fresh_values():
    metrics = lifecycle.stale_dataset(OPTS)["metrics"]
    assert metrics == {"not persistent": [[0], [1], [2]], "persistent": [[0], [0], [0]]}


def test_dl404_closing_raises_and_del_releases_workers():
    metrics = lifecycle.missing_shutdown(OPTS)["metrics"]
    assert metrics["closing"] == {"raised": "AttributeError: 'DataLoader' object has no attribute 'close'"}
    assert metrics["hasattr"] == {"close": False, "_shutdown_workers": False}
    assert (metrics["workers_before_del"], metrics["workers_after_del"]) == (2, 0)


def test_dl405_same_order_without_set_epoch():
    assert lifecycle.sampler_epoch(OPTS)["metrics"] == {"without set_epoch": 1, "with set_epoch": 3}


def test_dl501_each_sample_once_per_worker():
    assert correctness.unsharded(OPTS)["metrics"] == {"Unsharded": [2], "Sharded": [1]}


def test_dl502_silently_empty_epochs():
    metrics = correctness.single_use(OPTS)["metrics"]
    assert metrics["persistent workers"] == [20, 0, 0]
    assert metrics["num_workers=0"] == [10, 0, 0]
    assert metrics["fresh workers"] == [20, 20, 20]


def test_claims_are_refuted():
    assert claims.drop_last_deadlock(OPTS)["metrics"]["verdict"] == "refuted"
    reenter = claims.cannot_reenter(OPTS)["metrics"]
    assert reenter["verdict"] == "refuted" and reenter["samples_per_epoch"] == [20, 0, 0]


def test_timing_structure():
    result = lifecycle.timing(Options(quick=True, device="cpu", workers=2, epochs=2))
    per_epoch = result["metrics"]["per_epoch"]
    assert list(per_epoch) == list(lifecycle.CONFIGS)
    for records in per_epoch.values():
        assert [r["epoch"] for r in records] == [1, 2]
        assert all(r["batches"] == 8 for r in records)
        assert all(r["first_batch_s"] <= r["epoch_s"] for r in records)
    summary = result["metrics"]["summary"]["built once, persistent"]
    assert set(summary) == {"epoch1", "startup_s", "first_batch_s", "epoch_s", "data_wait_s"}
    assert set(summary["epoch_s"]) == {"median", "iqr", "q1", "q3", "n", "noisy"}
    assert set(result["metrics"]["ratios"]) == {
        "first batch, built once / persistent", "first batch, rebuilt / persistent",
        "epoch, built once / persistent", "epoch, rebuilt / persistent",
    }


# -- the command line, as a subprocess ------------------------------------------------------------


def tool(*args, env=None, timeout=240):
    return subprocess.run([sys.executable, "-m", "runtime_checks", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_json_schema_and_table(tmp_path):
    out = tmp_path / "r.json"
    result = tool("--quick", "--device", "cpu", "--rule", "DL405", "--rule", "DL403", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["rules", "scenario", "status", "time", "result"]
    payload = json.loads(out.read_text())
    assert payload["schema"] == 1
    assert {"python", "torch", "cpu_count", "default_start_method", "device", "device_name"} <= set(payload["machine"])
    assert [s["name"] for s in payload["scenarios"]] == ["stale-dataset", "sampler-set-epoch"]
    assert all({"rules", "status", "summary", "metrics", "seconds"} <= set(s) for s in payload["scenarios"])


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "timing.png"
    result = tool("--quick", "--epochs", "2", "--rule", "DL401", "--plot", str(png))
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rule", "DL999"], "runtime_checks: error: unknown rule DL999"),
        (["--device", "cuda"], "runtime_checks: error: --device cuda: CUDA is not available on this machine"),
        (["--dataset", "no_such_module_xyz:make"],
         "runtime_checks: error: --dataset: cannot import 'no_such_module_xyz'"),
        (["--dataset", "os:sep"], "runtime_checks: error: --dataset: os:sep is not callable"),
        (["--dataset", "os:getcwd"], "runtime_checks: error: --dataset: os:getcwd() returned str, not a torch Dataset"),
        (["--dataset", "nocolon"], "runtime_checks: error: --dataset 'nocolon': expected MODULE:FACTORY"),
        (["--loader", "tests.runtime_loaders:needs_arguments"],
         "runtime_checks: error: --loader: tests.runtime_loaders:needs_arguments needs arguments; the factory is "
         "called with none (wrap it: def needs_arguments_for_checks(): return needs_arguments(...))"),
        (["--loader", "tests.runtime_loaders:returns_dataset"],
         "runtime_checks: error: --loader: tests.runtime_loaders:returns_dataset() returned Images, not a torch "
         "DataLoader (for a dataset, use --dataset)"),
        (["--loader", "tests.runtime_loaders:raises"],
         "runtime_checks: error: --loader: tests.runtime_loaders:raises() raised FileNotFoundError: data/train.tar"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, message):
    if args[:2] == ["--device", "cuda"]:
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    result = tool(*args, "--quick")
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_torch_missing_gives_install_hint(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('hidden')\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    result = tool("--quick", env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert result.returncode == 2
    from runtime_checks.install import command

    assert result.stderr.strip() == f"runtime_checks needs torch: {command('runtime')} (or pip install torch)"


def _tagged_processes(tag):
    """Processes whose environment carries ``tag`` (everything the tool started inherits it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find leftover processes")
def test_hung_scenario_times_out_others_survive_and_nothing_is_left(tmp_path):
    tag = f"RUNTIME_CHECKS_TEST_TAG={uuid.uuid4()}"
    env = dict(os.environ, RUNTIME_CHECKS_TEST_TAG=tag.split("=", 1)[1])
    out = tmp_path / "r.json"
    result = tool("--selftest-hang", "--quick", "--rule", "DL405", "--json", str(out), env=env)
    assert result.returncode == 1
    statuses = {s["name"]: s["status"] for s in json.loads(out.read_text())["scenarios"]}
    assert statuses == {"selftest-hang": "timeout", "sampler-set-epoch": "ok"}
    time.sleep(0.5)
    assert _tagged_processes(tag.split("=", 1)[1]) == []


class _Started:
    """The tool in the background, its stderr read as it comes (shown when an assertion fails)."""

    def __init__(self, tag):
        env = dict(os.environ, RUNTIME_CHECKS_TEST_TAG=tag)
        self.tag = tag
        self.proc = subprocess.Popen(
            # The hang lasts 120 s here, so a slow start on a busy machine cannot end it first.
            [sys.executable, "-m", "runtime_checks", "--selftest-hang=120", "--quick", "--rule", "DL405"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # A shell that starts a job in the background (CI, `cmd &`) leaves SIGINT ignored, and an
            # ignored SIGINT is inherited: give the tool the disposition an interactive terminal would.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines = []
        # Character by character: the progress line has no newline until the scenario ends.
        self.reader = threading.Thread(
            target=lambda: self.lines.extend(iter(lambda: self.proc.stderr.read(1), "")), daemon=True
        )
        self.reader.start()

    @property
    def stderr(self):
        return "".join(self.lines)

    def wait_inside_the_hanging_scenario(self, limit=100):
        """Until the hang scenario runs and its loader worker exists (tool, scenario, worker).

        Polls what the tool says and which processes exist, not a fixed sleep: a busy machine
        only makes it take longer.
        """
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if "selftest-hang ..." in self.stderr and len(_tagged_processes(self.tag)) >= 3:
                return
            assert self.proc.poll() is None, f"the tool ended early:\n{self.stderr}"
            time.sleep(0.2)
        raise AssertionError(f"the hang scenario did not start within {limit} s:\n{self.stderr}")

    def stop_with(self, signum):
        self.proc.send_signal(signum)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            alive = _tagged_processes(self.tag)
            self.proc.kill()
            raise AssertionError(f"still running 60 s after signal {signum}; tagged processes {alive}:\n"
                                 f"{self.stderr}") from None
        self.reader.join(timeout=10)
        return self.proc.returncode


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find leftover processes")
@pytest.mark.parametrize(
    ("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_and_sigterm_leave_no_process_behind(signum, code, word):
    started = _Started(str(uuid.uuid4()))
    started.wait_inside_the_hanging_scenario()
    assert started.stop_with(signum) == code, started.stderr
    assert f"runtime_checks: {word}; scenario processes stopped" in started.stderr
    assert "Traceback" not in started.stderr
    deadline = time.monotonic() + 10
    while _tagged_processes(started.tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _tagged_processes(started.tag) == [], started.stderr


@pytest.mark.parametrize(
    ("getitem", "last_line"),
    [
        ("if i == 5:\n            raise ValueError(f'bad record {i}')\n        return torch.tensor([float(i)])",
         "ValueError: bad record 5"),
        ("return object()",
         "TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
         "found <class 'object'>"),
    ],
)
def test_a_user_dataset_that_breaks_fails_its_scenario_only(tmp_path, getitem, last_line):
    (tmp_path / "brokendata.py").write_text(
        "import torch\n"
        "from torch.utils.data import Dataset\n\n\n"
        "class Broken(Dataset):\n"
        "    def __len__(self):\n        return 64\n\n"
        f"    def __getitem__(self, i):\n        {getitem}\n\n\n"
        "def make():\n    return Broken()\n"
    )
    out = tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "runtime_checks", "--quick", "--device", "cpu", "--rule", "DL405",
         "--dataset", "brokendata:make", "--json", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    scenarios = {s["name"]: s for s in json.loads(out.read_text())["scenarios"]}
    assert {name: s["status"] for name, s in scenarios.items()} == {"sampler-set-epoch": "ok", "user-dataset": "failed"}
    assert scenarios["user-dataset"]["summary"] == f"brokendata:make: loading failed: {last_line}"


def test_json_to_stdout_is_one_json_document_and_the_table_goes_to_stderr():
    result = tool("--quick", "--device", "cpu", "--rule", "DL405", "--json", "-")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [s["name"] for s in payload["scenarios"]] == ["sampler-set-epoch"]
    assert "rules  scenario" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "/missing/dir/x.json"], "--json /missing/dir/x.json: no directory /missing/dir"),
        (["--plot", "timing.txt"], "--plot timing.txt: the file name must end in .png, .svg, .pdf"),
        (["--plot", "/missing/dir/t.png"], "--plot /missing/dir/t.png: no directory /missing/dir"),
    ],
)
def test_unwritable_outputs_are_refused_before_any_scenario_runs(args, message):
    result = tool("--quick", "--rule", "DL405", *args)
    assert result.returncode == 2
    assert result.stderr == f"runtime_checks: error: {message}\n"
    assert result.stdout == ""


def test_fewer_than_two_epochs_are_refused():
    result = tool("--epochs", "1", "--list")
    assert result.returncode == 2
    assert "argument --epochs: must be at least 2" in result.stderr


def test_plot_for_rules_without_timing_says_so(tmp_path):
    png = tmp_path / "t.png"
    result = tool("--quick", "--device", "cpu", "--rule", "DL405", "--plot", str(png))
    assert result.returncode == 0, result.stderr
    assert "--plot draws the epoch timing (DL401/DL402), which the selected rules do not run" in result.stderr
    assert not png.exists()


def test_table_wraps_the_result_column_to_the_terminal_width():
    from runtime_checks.report import table

    row = {"rules": ["DL402"], "name": "epoch-timing", "status": "ok", "seconds": 1.0, "summary": "word " * 40}
    lines = table([row], width=80).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) > 3 and lines[3].startswith(" " * 20)
    assert " ".join(" ".join(lines[2:]).split()).endswith("word word")


def test_plot_ticks_read_as_seconds():
    from runtime_checks.report import seconds_label

    assert [seconds_label(v) for v in (0, 0.005, 0.25, 1.5, 4)] == ["0", "5 ms", "250 ms", "1.5 s", "4 s"]


def test_dl601_handle_from_init_fails_under_spawn_and_lazy_open_reads_right():
    from runtime_checks.scenarios import resources

    result = resources.handle_in_init(OPTS)
    metrics = result["metrics"]
    assert metrics["spawn, opened in __init__"]["raised"] == "TypeError: cannot pickle '_io.BufferedReader' object"
    assert metrics["fork, opened lazily"] == {"right": 500, "wrong": 0, "raised": 0}
    forked = metrics["fork, opened in __init__"]
    assert forked["right"] + forked["wrong"] + forked["raised"] == 500 * forked["epochs"]
    # Epochs repeat until the race shows (at most 10); 'ok' only where it did, else 'not reproduced'.
    bad = forked["wrong"] + forked["raised"]
    assert result["status"] == ("ok" if bad else "not-reproduced"), result["summary"]
    assert bad and forked["epochs"] <= 10 or not bad and forked["epochs"] == 10


def test_dl620_python_objects_cost_workers_more_private_memory_than_numpy():
    from runtime_checks.scenarios import resources

    result = resources.copied_on_read(OPTS)
    assert result["status"] in ("ok", "skipped"), result["summary"]
    if result["status"] == "ok":
        objects = result["metrics"]["python objects"]["private_mib_per_worker"]
        arrays = result["metrics"]["numpy arrays"]["private_mib_per_worker"]
        assert len(objects) == len(arrays) == 2
        assert min(objects) > 2 * max(arrays)


def test_cuda_scenarios_say_they_need_cuda_on_the_cpu():
    from runtime_checks.scenarios import resources

    for scenario in (resources.cuda_in_worker, resources.cuda_default_device):
        result = scenario(OPTS)
        assert result["status"] == "needs-cuda"
        assert result["summary"].startswith("needs CUDA (")


# -- frameworks: worker starts over 3 epochs, 2 fork workers, persistent off / on ----------------------------
FRAMEWORK_STARTS = {
    # scenario: (package, train off / on, eval off / on); FACTS measured the same on lightning 2.6.6,
    # transformers 5.24, accelerate 1.15, pytorch-ignite 0.5.5.
    "lightning": ("lightning", (6, 2), (8, 2)),  # val: the sanity check and every epoch
    "transformers_trainer": ("transformers", (6, 2), (6, 2)),
    "accelerate_loop": ("accelerate", (6, 2), (0, 0)),
    "ignite_run": ("ignite", (6, 2), (6, 2)),
}


@pytest.mark.parametrize("scenario", sorted(FRAMEWORK_STARTS))
def test_framework_scenarios_count_the_worker_restarts_persistent_workers_save(scenario):
    from runtime_checks.scenarios import Options, frameworks

    package, train, evaluation = FRAMEWORK_STARTS[scenario]
    pytest.importorskip(package, reason="pip install 'flake8-dataloader[frameworks]'")
    result = getattr(frameworks, scenario)(Options(quick=True))
    metrics = result["metrics"]
    assert result["status"] == "ok", result["summary"]
    assert (metrics["default"]["train_starts"], metrics["persistent"]["train_starts"]) == train
    assert (metrics["default"]["eval_starts"], metrics["persistent"]["eval_starts"]) == evaluation
    if scenario == "transformers_trainer":
        assert metrics["dl101"]["raised"].startswith("ValueError: persistent_workers option needs num_workers > 0")
    if scenario == "accelerate_loop":
        assert metrics["prepared_in_loop_kept"] == 3
    epoch_after = {"lightning": 2, "accelerate_loop": 2, "ignite_run": 0}  # who calls set_epoch
    if scenario in epoch_after:
        assert metrics["default"]["sampler_epoch_after"] == epoch_after[scenario]


def test_a_framework_that_is_not_installed_is_reported_as_needed_not_failed(monkeypatch):
    import importlib.util

    from runtime_checks.install import command
    from runtime_checks.report import table
    from runtime_checks.scenarios import Options, frameworks

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ignite" else real(name, *a))
    result = frameworks.ignite_run(Options(quick=True))
    assert result == {"status": "needs-package", "metrics": {},
                      "summary": f"needs ignite: {command('frameworks')}"}
    row = table([{**result, "name": "framework-ignite", "rules": ["DL402"], "seconds": 0.0}])
    assert "needs package" in row


def test_notebook_payload_without_jupyter_packages_is_reported_as_needed(monkeypatch):
    import importlib.util

    from runtime_checks.scenarios import notebook

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbclient" else real(name, *a))
    assert notebook.notebook_payload(Options(quick=True, progress=False)) == {
        "status": "needs-package", "metrics": {},
        "summary": "needs nbclient: pip install 'flake8-dataloader[notebook]'",
    }


def test_notebook_payload_cells_are_what_the_linter_flags():
    """The scenario's notebook, as nbQA hands it to flake8: the class its cell defines is DL302; the imported
    class alone is clean, and so is the notebook's top-level iteration (no DL301)."""
    from flake8_dataloader.engine import analyse
    from runtime_checks.scenarios import notebook

    cells = notebook.cells(["spawn"])
    joined = "\n# %%NBQA-CELL-SEPc0ffee\n".join(cells) + "\n"
    assert [(code, message.split(" is ")[0]) for _, _, code, message in analyse(joined)] == [
        ("DL302", "DL302 class Shapes")
    ]
    imported_only = "\n# %%NBQA-CELL-SEPc0ffee\n".join([*cells[:3], cells[4]]) + "\n"
    assert analyse(imported_only) == []


def test_notebook_payload_class_from_a_cell_kills_spawn_and_forkserver_workers():
    """A real kernel (nbclient + ipykernel): the class a cell defines fails, the imported one runs."""
    for package in ("nbformat", "nbclient", "ipykernel"):
        pytest.importorskip(package, reason="pip install 'flake8-dataloader[notebook]'")
    from runtime_checks.scenarios import notebook

    result = notebook.notebook_payload(Options(quick=True, progress=False))
    assert result["status"] == "ok", result["summary"]
    for method in ("spawn", "forkserver"):
        run = result["metrics"]["runs"][method]
        assert run["worker_errors"] == [
            "AttributeError: Can't get attribute 'Shapes' on <module '__main__' (built-in)>"
        ]
        assert run["defined"]["outcome"].startswith("RuntimeError: DataLoader worker (pid(s) ")
        assert run["defined"]["outcome"].endswith(") exited unexpectedly")
        assert run["imported"]["outcome"] == "ran: 8 samples" and run["imported_worker_errors"] == []
