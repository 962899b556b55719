"""The findings cache (cache.py): served only for the same file, options and project modules read."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from flake8_dataloader import cache, engine
from flake8_dataloader.plugin import DataLoaderChecker
from flake8_dataloader.project import store
from flake8_dataloader.project.reads import Reads
from flake8_dataloader.settings import Settings

from .conftest import FIXTURES, ROOT

PROJECT = FIXTURES / "projects" / "package_project"
ON = Settings.build(cache="on")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the package fixture project, as the directory flake8 runs from."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    monkeypatch.chdir(root)
    monkeypatch.setattr(cache, "_STARTED_NS", cache._STARTED_NS)  # restored after the test
    store.clear()
    yield root
    store.clear()


@pytest.fixture
def analyses(monkeypatch):
    """How many files were analysed (cache misses)."""
    count = [0]
    real = engine.checked

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "checked", counting)
    return count


def lint(path, settings=ON, fresh=True):
    if fresh:  # a fresh flake8 process: nothing kept in memory from the run before, started now
        store.clear()
        cache._STARTED_NS = time.time_ns()
    source = path.read_text()
    checker = DataLoaderChecker(ast.parse(source), source.splitlines(keepends=True), str(path))
    checker.settings = settings
    return [(line, col, message) for line, col, message, _ in checker.run()]


def entries(root):
    directory = root / cache.DIRECTORY
    return sorted(directory.glob("*.json")) if directory.exists() else []


def test_second_run_is_served_from_the_cache_with_identical_findings(project, analyses):
    first = lint(project / "train.py")
    second = lint(project / "train.py")
    assert analyses[0] == 1
    assert second == first
    assert first == lint(project / "train.py", Settings.build())  # what the analysis gives without the cache
    assert (43, 12, "DL501 IterableDataset StreamDataset (data/stream.py:5) is not split by get_worker_info(): "
            "each worker yields the whole stream (num_workers=4: every sample once per worker); shard it in "
            "__iter__ by worker id") in first
    directory = project / cache.DIRECTORY
    assert (directory / ".gitignore").read_text() == "*\n"
    assert (directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_a_changed_file_is_analysed_again(project, analyses):
    train = project / "train.py"
    first = lint(train)
    train.write_text("# a comment moves every finding down a line\n" + train.read_text())
    second = lint(train)
    assert analyses[0] == 2
    assert [(line, col) for line, col, _ in second] == [(line + 1, col) for line, col, _ in first]
    assert second == lint(train, Settings.build())


@pytest.mark.parametrize(
    "other",
    [
        Settings.build(start_method="fork", cache="on"),
        Settings.build(names=["mypkg.Loader"], cache="on"),
        Settings.build(selected=["DL402", "DL501"], cache="on"),
        Settings.build(follow_imports="off", cache="on"),
        Settings.build(gate="off", cache="on"),
    ],
)
def test_other_settings_are_a_miss(project, analyses, other):
    lint(project / "train.py")
    lint(project / "train.py", other)
    assert analyses[0] == 2
    assert len(entries(project)) == 2


def test_an_imported_module_that_changed_gives_the_new_findings(project, analyses):
    train = project / "train.py"
    before = lint(train)
    assert any("(data/stream.py:5)" in message for _, _, message in before)
    stream = project / "data" / "stream.py"
    stream.write_text("# the dataset moves down a line\n" + stream.read_text())
    after = lint(train)
    assert analyses[0] == 2
    moved = [(line, col, re.sub(r"data/stream\.py:(\d+)", lambda m: f"data/stream.py:{int(m[1]) + 1}", message))
             for line, col, message in before]
    assert after == moved != before
    assert lint(train) == after and analyses[0] == 2  # and that is cached in turn


def test_what_another_file_read_earlier_in_the_process_is_still_recorded(project, analyses):
    """Module entries and located imports are kept per process: a file linted after others still lists them."""
    store.clear()
    others = sorted(path for path in project.rglob("*.py") if path.name != "train.py")
    for path in others:
        try:
            ast.parse(path.read_text())
        except SyntaxError:
            continue  # data/legacy.py: a module that does not parse, deliberately
        lint(path, fresh=False)
    before = lint(project / "train.py", fresh=False)
    misses = analyses[0]
    stream = project / "data" / "stream.py"
    stream.write_text("# the dataset moves down a line\n" + stream.read_text())
    after = lint(project / "train.py")
    assert analyses[0] == misses + 1
    assert after != before


def test_a_module_appearing_where_an_import_was_looked_up_is_a_miss(project, analyses):
    lint(project / "train.py")
    (project / "torch.py").write_text("DataLoader = None\n")  # `torch` now names a module of the project
    lint(project / "train.py")
    assert analyses[0] == 2


@pytest.mark.parametrize("damage", ["", "{", "[]", '{"files": {}, "probes": {}, "results": [[1]]}',
                                    '{"files": {}, "probes": {"x": "sideways"}, "results": []}'])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(project, analyses, damage):
    first = lint(project / "train.py")
    (entry,) = entries(project)
    entry.write_text(damage)
    assert lint(project / "train.py") == first
    assert analyses[0] == 2
    assert len(json.loads(entry.read_text())["results"]) == len(first)
    assert lint(project / "train.py") == first and analyses[0] == 2


def test_off_writes_nothing(project, analyses):
    off = Settings.build()
    assert not off.cache
    lint(project / "train.py", off)
    lint(project / "train.py", off)
    assert analyses[0] == 2
    assert not (project / cache.DIRECTORY).exists()


def test_an_unwritable_directory_is_no_error(project, analyses):
    (project / cache.DIRECTORY).write_text("a file where the directory should be")
    first = lint(project / "train.py")
    assert lint(project / "train.py") == first
    assert analyses[0] == 2


def _flake8(root, *args, env_cache=None):
    env = {key: value for key, value in os.environ.items() if key != cache.ENV}
    env["PYTHONPATH"] = str(ROOT)
    if env_cache is not None:
        env[cache.ENV] = env_cache
    return subprocess.run([sys.executable, "-m", "flake8", "--select=DL", *args, "."], cwd=root, env=env,
                          capture_output=True, text=True)


PROBE = """
import sys
from flake8.main.cli import main
try:
    main(["--select=DL", "-j1", "."])
except SystemExit:
    pass
print("libcst loaded:", "libcst" in sys.modules)
"""


def test_real_flake8_in_parallel_twice_gives_the_same_output_and_the_second_run_imports_no_libcst(project):
    first = _flake8(project, "-j2")
    second = _flake8(project, "-j2")
    assert first.returncode == second.returncode == 1, first.stderr
    assert second.stdout == first.stdout
    assert first.stdout.count("DL") >= 10
    env = {key: value for key, value in os.environ.items() if key != cache.ENV}
    env["PYTHONPATH"] = str(ROOT)
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=project, env=env, capture_output=True, text=True)
    assert probe.stdout.splitlines()[-1] == "libcst loaded: False", probe.stderr
    assert probe.stdout.splitlines()[:-1] == first.stdout.splitlines()
    assert not list((project / cache.DIRECTORY).glob(".tmp-*"))


@pytest.mark.parametrize("args, env_cache", [(("--dataloader-cache=off",), None), ((), "off"), ((), "OFF")])
def test_the_switches_turn_it_off(project, args, env_cache):
    result = _flake8(project, *args, env_cache=env_cache)
    assert result.returncode == 1, result.stderr
    assert not (project / cache.DIRECTORY).exists()


def test_the_option_is_read_from_config(project):
    (project / "setup.cfg").write_text("[flake8]\ndataloader-cache = off\n")
    assert _flake8(project).returncode == 1
    assert not (project / cache.DIRECTORY).exists()


def test_a_module_entry_kept_in_memory_is_still_recorded(project):
    """store.entry answers from memory after its first read: each analysis still lists the module and
    the probes its shown path (`data/stream.py`) rests on."""
    path = str(project / "data" / "stream.py")
    store.entry(path, ON)
    with Reads() as reads:
        store.entry(path, ON)
    assert reads.files == {path}
    assert reads.probes == {str(project / "data" / "__init__.py"): "file", str(project / "__init__.py"): "not file"}


def test_a_module_modified_during_the_run_is_not_kept(project, analyses, monkeypatch):
    stream = project / "data" / "stream.py"
    os.utime(stream, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))  # edited after the run began
    first = lint(project / "train.py")
    assert lint(project / "train.py") == first
    assert analyses[0] == 2
    assert entries(project) == []
