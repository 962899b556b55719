"""Module summaries kept on disk (project/summary_cache.py): the same summary back, for the same text only."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flake8_dataloader.facts.foreign import EMPTY_SUMMARY
from flake8_dataloader.project import store, summary_cache
from flake8_dataloader.project.reads import Reads
from flake8_dataloader.settings import DEFAULT_SETTINGS

from .harness import PROJECTS

MODULES = sorted(str(path) for path in PROJECTS.rglob("*.py"))
DATASET = """from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


def make_loader(n, workers=4):
    return DataLoader(Frames(n), batch_size=8, num_workers=workers, shuffle=True)
"""


@pytest.fixture(autouse=True)
def _fresh_store():
    store.clear()
    yield
    store.clear()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: os.path.relpath(p, PROJECTS))
def test_every_fixture_module_summary_survives_the_round_trip(path):
    entry = store.entry(path, DEFAULT_SETTINGS)
    text = summary_cache.encode(entry.summary, (entry.exports, entry.stars))
    assert text is not None
    assert summary_cache.decode(text) == (entry.summary, (entry.exports, entry.stars))


def test_the_fixture_projects_hold_summaries_worth_keeping():
    """The round trip above is not only over empty summaries."""
    summaries = [store.entry(path, DEFAULT_SETTINGS).summary for path in MODULES]
    assert sum(summary != EMPTY_SUMMARY for summary in summaries) >= 8
    assert any(summary.factories for summary in summaries) and any(summary.datasets for summary in summaries)


def _summarise_calls(monkeypatch):
    from flake8_dataloader.project import summarise

    calls = []
    real = summarise.summarise
    monkeypatch.setattr(summarise, "summarise", lambda *a: calls.append(a[2]) or real(*a))
    return calls


def test_a_summary_is_served_from_disk_within_a_cached_analysis_and_only_for_the_same_text(tmp_path, monkeypatch):
    module = tmp_path / "project" / "data.py"
    module.parent.mkdir()
    module.write_text(DATASET)
    monkeypatch.chdir(tmp_path)
    calls = _summarise_calls(monkeypatch)
    with Reads():
        first = store.entry(str(module), DEFAULT_SETTINGS)
    assert first.summary.factories["make_loader"].origin.line == 15 and calls == [DATASET]
    store.clear()  # another process: nothing kept in memory
    with Reads():
        assert store.entry(str(module), DEFAULT_SETTINGS) == first
    assert calls == [DATASET]  # served: not summarised again
    edited = DATASET.replace("workers=4", "workers=0")
    module.write_text(edited)
    store.clear()
    with Reads():
        second = store.entry(str(module), DEFAULT_SETTINGS)
    assert calls == [DATASET, edited] and second != first
    assert len(os.listdir(tmp_path / ".flake8_dataloader_cache" / "summaries")) == 1  # overwritten, not added


def test_outside_a_cached_analysis_nothing_is_kept(tmp_path, monkeypatch):
    (tmp_path / "data.py").write_text(DATASET)
    monkeypatch.chdir(tmp_path)
    store.entry(str(tmp_path / "data.py"), DEFAULT_SETTINGS)
    assert not (tmp_path / ".flake8_dataloader_cache").exists()


@pytest.mark.parametrize("damage", ["truncate", "foreign key", "unknown tag"])
def test_a_damaged_entry_is_summarised_again(tmp_path, monkeypatch, damage):
    module = tmp_path / "data.py"
    module.write_text(DATASET)
    monkeypatch.chdir(tmp_path)
    with Reads():
        first = store.entry(str(module), DEFAULT_SETTINGS)
    (entry,) = (tmp_path / ".flake8_dataloader_cache" / "summaries").iterdir()
    key, text = entry.read_text().split("\n", 1)
    entry.write_text({"truncate": key + "\n" + text[: len(text) // 2], "foreign key": "0" * len(key) + "\n" + text,
                      "unknown tag": key + "\n" + text.replace('{"n": ["Origin"', '{"x": ["Origin"')}[damage])
    store.clear()
    calls = _summarise_calls(monkeypatch)
    with Reads():
        assert store.entry(str(module), DEFAULT_SETTINGS) == first
    assert calls == [DATASET]


def test_a_value_json_cannot_carry_is_not_kept():
    summary = EMPTY_SUMMARY._replace(engines=frozenset({b"bytes"}))
    assert summary_cache.encode(summary, ({}, ())) is None


def test_flake8_j2_and_a_second_run_share_the_summaries(tmp_path):
    """Through flake8, -j2: summaries are kept, and a second run analysing every file again (its
    findings gone) gives the same findings with the same entries."""
    project = tmp_path / "helpers_project"
    shutil.copytree(PROJECTS / "helpers_project", project)
    command = [sys.executable, "-m", "flake8", "-j2", "--select=DL", "--dataloader-cache=on", "."]
    env = {name: value for name, value in os.environ.items() if name != "FLAKE8_DATALOADER_CACHE"}
    first = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300, env=env)
    kept = sorted(p.name for p in (project / ".flake8_dataloader_cache" / "summaries").iterdir())
    assert len(kept) >= 4
    for entry in (project / ".flake8_dataloader_cache").glob("*.json"):
        entry.unlink()  # the findings go: every file is analysed again, its imports' summaries served
    second = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300, env=env)
    assert second.stdout == first.stdout and first.stdout.count("DL") >= 5
    assert sorted(p.name for p in (project / ".flake8_dataloader_cache" / "summaries").iterdir()) == kept
    assert Path(project / ".flake8_dataloader_cache" / "CACHEDIR.TAG").is_file()


def test_pruning_drops_summaries_of_modules_gone_or_not_served_for_30_days(tmp_path, monkeypatch):
    """A served summary is renewed at most once a day; the day's first write prunes the summaries as it
    prunes findings: a module deleted, or a summary not served for 30 days, loses its entry."""
    import time

    from flake8_dataloader import cache

    monkeypatch.chdir(tmp_path)
    modules = {name: tmp_path / f"{name}.py" for name in ("kept", "deleted", "unserved")}
    for module in modules.values():
        module.write_text(DATASET)
        with Reads():
            store.entry(str(module), DEFAULT_SETTINGS)
    folder = tmp_path / cache.DIRECTORY / cache.SUMMARIES
    entries = {name: folder / (summary_cache._keys(str(m), str(m), DATASET, DEFAULT_SETTINGS.loader_names)[0] + ".json")
               for name, m in modules.items()}
    assert all(entry.exists() for entry in entries.values())

    def age(path, days):
        when = time.time() - days * cache.DAY
        os.utime(path, (when, when))

    age(entries["kept"], 40)
    store.clear()
    with Reads():
        store.entry(str(modules["kept"]), DEFAULT_SETTINGS)  # served 40 days after its last renewal: renewed
    assert time.time() - entries["kept"].stat().st_mtime < 60
    modules["deleted"].unlink()
    age(entries["unserved"], 31)
    cache.prune(str(tmp_path / cache.DIRECTORY), time.time())
    assert sorted(p.name for p in folder.iterdir()) == [entries["kept"].name]
