"""The findings cache (cache.py): served only for the same file, options and project modules read."""

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from flake8_dataloader import cache
from flake8_dataloader.plugin import DataLoaderChecker
from flake8_dataloader.project import reads, store
from flake8_dataloader.project.reads import Reads
from flake8_dataloader.settings import Settings

from .conftest import FIXTURES, ROOT

PROJECT = FIXTURES / "projects" / "package_project"
ON = Settings.build(cache="on")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the package fixture project, as the directory flake8 runs from."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns(cache.DIRECTORY))  # a run there left its own
    monkeypatch.chdir(root)
    store.clear()
    cache.forget()
    yield root
    store.clear()
    cache.forget()


def lint(path, settings=ON, fresh=True):
    if fresh:  # a fresh flake8 process: nothing kept in memory from the run before
        store.clear()
        cache.forget()
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


@pytest.mark.parametrize("damage", [
    lambda entry: "",
    lambda entry: "{",
    lambda entry: "[]",
    lambda entry: json.dumps({**entry, "results": [[1]]}),
    lambda entry: json.dumps({**entry, "probes": {"x": "sideways"}}),
    lambda entry: json.dumps({key: value for key, value in entry.items() if key != "files"}),
    lambda entry: json.dumps({**entry, "key": entry["key"][::-1]}),  # another text, plugin or LibCST
])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(project, analyses, damage):
    first = lint(project / "train.py")
    (entry,) = entries(project)
    entry.write_text(damage(json.loads(entry.read_text())))
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


def _moved(text):
    """``text`` with every position in data/stream.py one line further down."""
    return re.sub(r"data/stream\.py:(\d+)", lambda m: f"data/stream.py:{int(m[1]) + 1}", text)


def _same_size_edit(path):
    """Move the module's classes down a line (a space of its docstring becomes a newline): the same
    size, and, restored below, the same modification time."""
    stat = path.stat()
    text = path.read_text()
    path.write_text(text.replace("Streaming datasets read", "Streaming datasets\nread", 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_module_changed_between_its_read_and_the_store_is_kept_with_the_bytes_read(project, analyses, monkeypatch):
    """The entry pairs the findings with the digest of the bytes parsed, not of the file at store time."""
    stream = project / "data" / "stream.py"
    real = cache.store

    def edited_meanwhile(*args, **kwargs):
        _same_size_edit(stream)
        real(*args, **kwargs)

    monkeypatch.setattr(cache, "store", edited_meanwhile)
    before = lint(project / "train.py")
    monkeypatch.setattr(cache, "store", real)
    after = lint(project / "train.py")
    assert analyses[0] == 2
    assert any("(data/stream.py:5)" in message for _, _, message in before)
    assert after == [(line, col, _moved(message)) for line, col, message in before] != before


def test_a_module_read_twice_with_different_bytes_is_not_kept(tmp_path):
    path = str(tmp_path / "m.py")
    with Reads() as one:
        reads.file_read(path)
        reads.observed(path, b"x = 1\n")
    assert reads.digests(one.files) == {path: hashlib.sha256(b"x = 1\n").hexdigest()}
    reads.observed(path, b"x = 2\n")  # read again in the same run: edited meanwhile
    assert reads.digests(one.files) is None
    assert reads.digests([str(tmp_path / "never_read.py")]) is None
    reads.forget()


def test_a_same_size_same_mtime_edit_between_runs_is_seen_by_the_next_process(project):
    """Across processes nothing is memoised: the next run hashes the module again."""
    first = _flake8(project, "-j1")
    assert "(data/stream.py:5)" in first.stdout
    _same_size_edit(project / "data" / "stream.py")
    second = _flake8(project, "-j1")
    assert second.stdout == _moved(first.stdout) != first.stdout
    assert second.stdout == _flake8(project, "-j1", env_cache="off").stdout


def test_each_module_is_hashed_once_per_process_for_lookups(project, monkeypatch):
    sources = [project / "train.py", project / "text_training.py", project / "subclasses.py"]
    for path in sources:
        lint(path, fresh=False)
    store.clear()
    cache.forget()
    hashed = []
    real = cache._file_digest
    monkeypatch.setattr(cache, "_file_digest", lambda path: hashed.append(path) or real(path))
    for path in sources:
        lint(path, fresh=False)
    assert len(hashed) == len(set(hashed)) > 0
    assert str(project / "data" / "__init__.py") in hashed


def test_a_new_libcst_is_a_miss_that_overwrites_the_entry(project, analyses, monkeypatch):
    first = lint(project / "train.py")
    monkeypatch.setattr(cache, "_libcst_version", lambda: "another LibCST")
    cache.installation.cache_clear()
    try:
        assert lint(project / "train.py") == first
        assert analyses[0] == 2
        assert len(entries(project)) == 1  # the file's one slot, overwritten
    finally:
        cache.installation.cache_clear()


LIBCST_VERSION = """
import sys
from flake8_dataloader import cache
print(cache._libcst_version(), "libcst" in sys.modules)
"""


def test_libcst_version_is_read_from_its_version_file_without_importing_it(tmp_path):
    fake = tmp_path / "libcst"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('never imported')\n")
    seen = []
    for version in ("1.9.0", "1.9.1"):
        (fake / "_version.py").write_text(f"__version__ = version = {version!r}\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
        result = subprocess.run([sys.executable, "-c", LIBCST_VERSION], env=env, capture_output=True, text=True)
        digest, imported = result.stdout.split()
        assert imported == "False", result.stderr
        seen.append(digest)
    assert seen[0] == hashlib.sha256(b"__version__ = version = '1.9.0'\n").hexdigest() != seen[1]


def test_an_edit_overwrites_the_files_entry(project, analyses):
    """One entry per (file, settings, interpreter): the directory grows with the files linted, not the edits."""
    train = project / "train.py"
    lint(train)
    for round_ in range(3):
        train.write_text(f"# edit {round_}\n" + train.read_text())
        edited = lint(train)
        assert lint(train) == edited
    assert analyses[0] == 4
    assert len(entries(project)) == 1
    assert edited[0][0] == lint(train, Settings.build())[0][0]


def test_a_file_the_gate_rules_out_is_kept_and_decided_again_when_a_module_it_read_changes(project, monkeypatch):
    from flake8_dataloader import plugin

    (project / "helpers.py").write_text("def make(items):\n    return list(items)\n")
    evaluate = project / "evaluate.py"
    evaluate.write_text("from helpers import make\n\nloader = make(range(3))\nfor batch in loader:\n    print(batch)\n")
    decided = []
    real = plugin.may_find
    monkeypatch.setattr(plugin, "may_find", lambda *args: decided.append(args[3]) or real(*args))
    assert lint(evaluate) == [] and len(decided) == 1
    assert lint(evaluate) == [] and len(decided) == 1  # served: neither the gate nor the project index ran
    (project / "helpers.py").write_text("from torch.utils.data import DataLoader\n\n\ndef make(items):\n"
                                        "    return DataLoader(items, num_workers=2)\n")
    lint(evaluate)
    assert len(decided) == 2


def test_two_processes_writing_one_entry_never_leave_a_torn_one(project):
    """As `flake8 -j 2` on one file twice at once: every read finds a whole entry (atomic renames)."""
    lint(project / "train.py")
    (entry,) = entries(project)
    writer = ("import json, os, sys\nfrom flake8_dataloader import cache\n"
              "entry = json.loads(open(sys.argv[1]).read())\n"
              "for n in range(300):\n    entry['results'] = [[n, 0, 'DL501', 'x' * 4000]] * (n % 7 + 1)\n"
              "    cache.write(os.path.dirname(sys.argv[1]), os.path.basename(sys.argv[1]), json.dumps(entry))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", writer, str(entry)], env=env) for _ in range(2)]
    keys = cache.keys((project / "train.py").read_text(), str(project / "train.py"), ON)
    served = 0
    while any(process.poll() is None for process in writers):
        found = cache.lookup(keys)
        assert found is not None
        served += 1
    assert [process.returncode for process in writers] == [0, 0]
    assert served > 0
    assert not list((project / cache.DIRECTORY).glob(".tmp-*"))


def test_the_text_stage_passes_every_file_the_prefilter_passes():
    """The cache is consulted after may_find_in_text alone: a file it rules out must hold no finding."""
    from flake8_dataloader.screen.decide import may_find, may_find_in_text

    store.clear()
    settings = [Settings.build(), Settings.build(names=["mypkg.data.FastLoader"]), Settings.build(gate="off")]
    passed = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for setting in settings:
            if may_find(source, setting, tree, str(path)):
                passed += 1
                assert may_find_in_text(source, setting, str(path)), path
                assert may_find_in_text(source, setting, str(path), tree), path
    assert passed > 100
    store.clear()


ORDINARY_RUN = """
import sys
from flake8.main.cli import main
try:
    main(["--isolated", "-j1", *sys.argv[1:]])
except SystemExit:
    pass
print(sorted(name for name in ("libcst", "flake8_dataloader.cache") if name in sys.modules))
"""


def flake8_lines(root, *names):
    """flake8's output on ``names`` in ``root`` (cache on), then the heavy modules the run loaded."""
    env = {key: value for key, value in os.environ.items() if key != cache.ENV}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, "-c", ORDINARY_RUN, *names], cwd=root, env=env,
                         capture_output=True, text=True)
    return run.stdout.splitlines()


def test_ordinary_files_never_load_the_cache_and_a_mention_in_prose_never_loads_libcst(tmp_path):
    (tmp_path / "a.py").write_text("import os\n\n\ndef main():\n    return os.getcwd()\n")
    (tmp_path / "doc.py").write_text('"""Mentions DataLoader and worker_init_fn in prose only."""\n')
    assert flake8_lines(tmp_path, "a.py") == ["[]"]
    assert not (tmp_path / cache.DIRECTORY).exists()
    for _ in range(2):  # written, then served
        assert flake8_lines(tmp_path, "a.py", "doc.py") == ["['flake8_dataloader.cache']"]
    assert len(entries(tmp_path)) == 1


def test_once_the_cache_is_loaded_a_loader_only_in_prose_is_looked_up_not_walked(tmp_path):
    """Before the cache loads, the identifiers' walk spares it a docstring-only `loader`; after, a lookup
    is the cheaper test (benchmarks/cache_runs.py on diffusers: 1.13 s vs 2.99 s of plugin time)."""
    (tmp_path / "a_train.py").write_text('"""Mentions DataLoader in prose."""\n')
    (tmp_path / "prose.py").write_text('"""Helpers for the data loader."""\nimport os\n\nROOT = os.getcwd()\n')
    assert flake8_lines(tmp_path, "prose.py") == ["[]"]  # alone: walked, ruled out, nothing loaded or kept
    assert not (tmp_path / cache.DIRECTORY).exists()
    for _ in range(2):  # written, then served: no findings either way
        assert flake8_lines(tmp_path, "a_train.py", "prose.py") == ["['flake8_dataloader.cache']"]
        assert len(entries(tmp_path)) == 2


def test_a_module_edited_within_one_process_is_hashed_again(project, analyses):
    """The lookups' memo holds a digest only while the module's stat (mtime, size, inode) does."""
    train = project / "train.py"
    before = lint(train)
    assert lint(train, fresh=False) == before and analyses[0] == 1
    stream = project / "data" / "stream.py"
    stream.write_text("# the dataset moves down a line\n" + stream.read_text())
    assert lint(train, fresh=False) == [(line, col, _moved(message)) for line, col, message in before]
    assert analyses[0] == 2


def test_turning_the_gate_off_by_the_environment_is_a_miss(project, analyses, monkeypatch):
    from flake8_dataloader.screen.gate import GATE_ENV

    first = lint(project / "train.py")
    monkeypatch.setenv(GATE_ENV, "off")
    assert lint(project / "train.py") == first
    assert analyses[0] == 2


def test_an_edited_module_of_the_plugin_is_a_miss(tmp_path, monkeypatch):
    (tmp_path / "rule.py").write_text("CODE = 'DL101'\n")
    monkeypatch.setattr(cache, "_PACKAGE", str(tmp_path))
    cache.installation.cache_clear()
    try:
        before = cache.installation()
        (tmp_path / "rule.py").write_text("CODE = 'DL102'\n")
        cache.installation.cache_clear()
        assert cache.installation() != before
    finally:
        cache.installation.cache_clear()


def test_a_module_too_large_to_follow_is_recorded_by_its_bytes(project, analyses, monkeypatch):
    """Not parsed past MAX_*_BYTES, its result rests on its size: the entry still checks its bytes."""
    from flake8_dataloader.project import index

    monkeypatch.setattr(index, "MAX_INDEXED_BYTES", 10)
    monkeypatch.setattr(store, "MAX_MODULE_BYTES", 10)
    train = project / "train.py"
    before = lint(train)
    assert not any("(data/stream.py" in message for _, _, message in before)
    (entry,) = entries(project)
    package = project / "data" / "__init__.py"
    assert json.loads(entry.read_text())["files"][str(package)] == hashlib.sha256(package.read_bytes()).hexdigest()
    package.write_text(package.read_text() + "# still too large\n")
    lint(train)
    assert analyses[0] == 2


def test_a_module_that_shrank_below_the_limit_since_its_size_was_taken_is_not_kept(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    with Reads() as one:
        reads.file_read(str(path))
        reads.observed_unread(str(path), 100)  # its stat said over 100 bytes; the file now holds 6
    assert reads.digests(one.files) is None
    path.write_text("x = 1\n" * 100)
    with Reads() as two:
        reads.file_read(str(path))
        reads.observed_unread(str(path), 100)
    assert reads.digests(two.files) is None  # still marked: the path changed during this run
    reads.forget()
    with Reads() as three:
        reads.file_read(str(path))
        reads.observed_unread(str(path), 100)
    assert reads.digests(three.files) == {str(path): hashlib.sha256(path.read_bytes()).hexdigest()}
    reads.forget()


def age(path, days):
    """Set the file's times ``days`` into the past."""
    when = time.time() - days * cache.DAY
    os.utime(path, (when, when))


def entry_of(root, path):
    """The entry file kept for ``path`` (its "path" field)."""
    return next(e for e in entries(root) if json.loads(e.read_text())["path"] == str(path))


def test_the_first_write_of_a_day_prunes_entries_of_missing_files_and_unserved_ones(project, analyses):
    kept, renamed, unserved = project / "train.py", project / "text_training.py", project / "subclasses.py"
    for path in (kept, renamed, unserved):
        lint(path)
    marker = project / cache.DIRECTORY / ".pruned"
    assert marker.exists()  # the first write of this process pruned (nothing to prune yet)
    renamed.rename(project / "text_train.py")
    age(entry_of(project, unserved), 31)
    age(entry_of(project, kept), 29)
    lint(project / "text_train.py")  # a miss, written: the directory was pruned less than a day ago
    assert len(entries(project)) == 4
    age(marker, 1.01)
    lint(project / "lightning_task.py")  # another miss, a day later: prunes
    assert sorted(json.loads(e.read_text())["path"] for e in entries(project)) == sorted(
        str(p) for p in (kept, project / "text_train.py", project / "lightning_task.py")
    )
    assert time.time() - marker.stat().st_mtime < 60
    count = analyses[0]
    lint(kept)  # 29 days unserved: still served
    assert analyses[0] == count


def test_a_served_entry_is_renewed_once_a_day_so_that_pruning_keeps_it(project, analyses):
    train = project / "train.py"
    lint(train)
    entry = entry_of(project, train)
    age(entry, 0.5)
    written = entry.stat().st_mtime
    lint(train)
    assert entry.stat().st_mtime == written  # served within a day of its last renewal: not touched
    age(entry, 40)
    lint(train)
    assert analyses[0] == 1  # served both times
    assert time.time() - entry.stat().st_mtime < 60
    cache.prune(str(project / cache.DIRECTORY), time.time())
    assert entries(project) == [entry]


def test_pruning_removes_old_temporary_files_and_keeps_entries_it_cannot_read(project):
    lint(project / "train.py")
    directory = project / cache.DIRECTORY
    stale, fresh, foreign = directory / ".tmp-abc.part", directory / ".tmp-def.part", directory / "foreign.json"
    for path in (stale, fresh, foreign):
        path.write_text("{not json")
    age(stale, 2)
    cache.prune(str(directory), time.time())
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith((".tmp-", "foreign"))) == [
        ".tmp-def.part", "foreign.json"
    ]
