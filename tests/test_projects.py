"""Across files: the fixture projects through real flake8, the option, and the module lookup's bounds."""

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_dataloader.engine import analyse, check_source
from flake8_dataloader.facts.foreign import EMPTY_SUMMARY
from flake8_dataloader.project import store
from flake8_dataloader.project.given import uses_what_it_is_given
from flake8_dataloader.project.locate import locate, project_root
from flake8_dataloader.project.view import MAX_REEXPORTS, ImportView
from flake8_dataloader.settings import DEFAULT_SETTINGS, Settings

from .conftest import FIXTURES
from .harness import PROJECTS, project_expectations
from .test_flake8_integration import findings, flake8


@pytest.fixture(autouse=True)
def _fresh_store():
    store.clear()  # module answers are kept for the process; each test builds its own tree
    yield
    store.clear()


PROJECT_DIRS = sorted(p for p in PROJECTS.iterdir() if p.is_dir())
DEFAULT_OFF = ("DL410", "DL620")


def _relative(found, root):
    return {(Path(path).relative_to(root).as_posix(), line, col, code) for path, line, col, code in found}


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
@pytest.mark.parametrize("project", PROJECT_DIRS, ids=lambda p: p.name)
def test_fixture_projects_through_flake8_match_their_expectations(project, jobs):
    result = flake8("--select=DL", f"--extend-ignore={','.join(DEFAULT_OFF)}", jobs, ".", cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    assert _relative(findings(result.stdout), ".") == project_expectations(project)


def _copy(project, tmp_path):
    target = tmp_path / project.name
    shutil.copytree(project, target)
    return target


def test_follow_imports_off_from_a_config_file_restores_per_file_findings(tmp_path):
    project = _copy(PROJECTS / "package_project", tmp_path)
    config = "[flake8]\nselect = DL\nextend-ignore = DL410\ndataloader-follow-imports = off\n"
    (project / "setup.cfg").write_text(config)
    result = flake8_in(project)
    per_file = set()
    for path in sorted(project.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            results = analyse(source)  # no file name: this file alone
        except Exception:  # data/legacy.py does not parse
            continue
        relative = path.relative_to(project).as_posix()
        per_file |= {(relative, line, col, code) for line, col, code, _ in results if code not in DEFAULT_OFF}
    assert _relative(findings(result.stdout), project) == per_file
    across = project_expectations(PROJECTS / "package_project") - per_file
    followed = {"DL103", "DL302", "DL401", "DL402", "DL403", "DL404", "DL405", "DL501", "DL502", "DL602"}
    assert {code for _, _, _, code in across} == followed


def flake8_in(cwd, *args):
    """flake8 reading the config files of ``cwd`` (not --isolated)."""
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args, "."], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_follow_imports_rejects_a_value_it_does_not_know(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\ndataloader-follow-imports = maybe\n")
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\n")
    result = flake8_in(tmp_path)
    assert result.returncode == 2
    assert "--dataloader-follow-imports: invalid choice: 'maybe'" in result.stderr


# -- where an imported name is looked for ----------------------------------------------


def _tree(root: Path, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_locate_walks_up_to_the_first_directory_that_is_not_a_package(tmp_path):
    files = ["pkg/__init__.py", "pkg/data/__init__.py", "pkg/data/stream.py", "pkg/train.py"]
    root = _tree(tmp_path, dict.fromkeys(files, ""))
    train = str(root / "pkg" / "train.py")
    assert project_root(str(root / "pkg" / "data")) == str(root)
    found = locate("pkg.data.stream.Stream", train)
    assert found is not None and found.path == str(root / "pkg" / "data" / "stream.py") and found.rest == ("Stream",)
    relative = locate("..data.stream.Stream", str(root / "pkg" / "data" / "inner.py"))
    assert relative is not None and relative.path.endswith(os.path.join("data", "stream.py"))
    assert locate(".Stream", str(root / "pkg" / "data" / "inner.py")).path == str(root / "pkg" / "data" / "__init__.py")
    assert locate("torch.utils.data.DataLoader", train) is None
    assert locate("os.path.join", train) is None


def test_locate_finds_a_sibling_of_a_script(tmp_path):
    root = _tree(tmp_path, {"scripts/datasets.py": "", "scripts/train.py": ""})
    found = locate("datasets.Lines", str(root / "scripts" / "train.py"))
    assert found is not None and found.path == str(root / "scripts" / "datasets.py") and found.rest == ("Lines",)


STREAM = """
from torch.utils.data import IterableDataset


class Lines(IterableDataset):
    def __iter__(self):
        yield from range(3)
"""
TRAIN = """
from torch.utils.data import DataLoader
from {module} import Lines

loader = DataLoader(Lines(), num_workers=2)
"""


def _dl501(root, module, train="train.py"):
    path = root / train
    path.write_text(TRAIN.format(module=module), encoding="utf-8")
    return [code for _, _, code, _ in check_source(path.read_text(), str(path)) if code == "DL501"]


def test_re_exports_are_followed_up_to_the_bound_and_cycles_end(tmp_path):
    files = {"data/__init__.py": "from .a import Lines\n", "data/stream.py": STREAM}
    chain = ["a", "b", "c", "d", "e"]
    for here, there in zip(chain, chain[1:]):
        files[f"data/{here}.py"] = f"from .{there} import Lines\n"
    files["data/e.py"] = "from .stream import Lines\n"
    root = _tree(tmp_path, files)
    assert _dl501(root, "data.stream") == ["DL501"]
    assert _dl501(root, "data.d") == ["DL501"]  # d -> e -> stream
    assert MAX_REEXPORTS == 4
    assert _dl501(root, "data") == []  # __init__ -> a -> b -> c -> d -> e -> stream: past the bound
    _tree(root, {"loop/__init__.py": "from .x import Lines\n", "loop/x.py": "from . import Lines\n"})
    assert _dl501(root, "loop") == []


def test_star_re_export(tmp_path):
    root = _tree(tmp_path, {"data/__init__.py": "from .stream import *\n", "data/stream.py": STREAM})
    assert _dl501(root, "data") == ["DL501"]


def test_a_module_rewritten_is_read_again(tmp_path):
    root = _tree(tmp_path, {"lines.py": STREAM})
    assert _dl501(root, "lines") == ["DL501"]
    sharded = STREAM.replace("yield from range(3)", "info = get_worker_info()\n        yield from range(3)")
    (root / "lines.py").write_text(sharded.replace("IterableDataset\n", "IterableDataset, get_worker_info\n", 1))
    assert _dl501(root, "lines") == []


@pytest.mark.parametrize(
    "content",
    [
        b"from torch.utils.data import IterableDataset\nclass Lines(IterableDataset:\n",
        b"\xff\xfe\x00 not text",
        b"\x00" * 10,
    ],
    ids=["syntax-error", "undecodable", "nul-bytes"],
)
def test_a_module_that_cannot_be_read_contributes_nothing(tmp_path, content):
    (tmp_path / "lines.py").write_bytes(content)
    assert _dl501(tmp_path, "lines") == []
    assert store.entry(str(tmp_path / "lines.py"), DEFAULT_SETTINGS).summary == EMPTY_SUMMARY


def test_a_huge_module_is_not_read(tmp_path, monkeypatch):
    root = _tree(tmp_path, {"lines.py": STREAM})
    monkeypatch.setattr(store, "MAX_MODULE_BYTES", 10)
    store.clear()
    assert _dl501(root, "lines") == []


def test_the_linted_file_is_not_its_own_import(tmp_path):
    root = _tree(tmp_path, {"train.py": "from torch.utils.data import DataLoader\n"})
    view = ImportView(str(root / "train.py"), DEFAULT_SETTINGS)
    assert view.dataset("train.Lines") is None


def test_a_file_without_triggers_reads_no_other_module(tmp_path, monkeypatch):
    root = _tree(tmp_path, {"lines.py": STREAM, "util.py": "from lines import Lines\n\nLines()\n"})
    read = []
    monkeypatch.setattr(store, "entry", lambda path, settings: read.append(path))
    path = root / "util.py"
    assert check_source(path.read_text(), str(path)) == []
    assert read == []


def test_follow_imports_off_reads_no_other_module(tmp_path, monkeypatch):
    root = _tree(tmp_path, {"lines.py": STREAM})
    read = []
    monkeypatch.setattr(store, "entry", lambda path, settings: read.append(path))
    path = root / "train.py"
    path.write_text(TRAIN.format(module="lines"))
    off = Settings.build(follow_imports="off")
    assert check_source(path.read_text(), str(path), off) == []
    assert read == []


def test_every_fixture_project_states_findings_in_more_than_one_file():
    for project in PROJECT_DIRS:
        assert len({path for path, *_ in project_expectations(project)}) > 1, project


# -- summaries ----------------------------------------------------------------------------


def _summaries(path, tree):
    from flake8_dataloader.facts.analysis import build_facts
    from flake8_dataloader.project.summarise import summarise

    source = path.read_text(encoding="utf-8")
    module, facts = build_facts(source, DEFAULT_SETTINGS.loader_names)
    return summarise(facts, module, source, tree if tree is not None else ast.parse(source), "x.py", DEFAULT_SETTINGS)


SUMMARISED = sorted(FIXTURES.rglob("*.py"))


def test_summary_lines_from_the_ast_are_those_of_libcst():
    """The lines a summary names come from the ast; an empty ast forces LibCST's positions for all."""
    compared = 0
    for path in SUMMARISED:
        if path.name == "legacy.py":
            continue
        fast, slow = _summaries(path, None), _summaries(path, ast.Module(body=[], type_ignores=[]))
        assert fast == slow, path
        compared += len(fast.datasets) + len(fast.factories) + len(fast.callables)
    assert compared > 100


def test_a_module_without_loaders_is_summarised_only_when_it_can_iterate_what_it_is_given():
    def given(text):
        return uses_what_it_is_given(ast.parse(textwrap.dedent(text)))

    assert given("def fit(model, loader):\n    for batch in loader:\n        model(batch)\n")
    assert given("def fit(model, loader, n):\n    for epoch in range(n):\n        step(model, loader)\n")
    assert given("def first(loader):\n    return next(iter(loader))\n")
    trainer = """
        class Trainer:
            def __init__(self, loader):
                self.loader = loader

            def fit(self):
                for batch in self.loader:
                    pass
    """
    assert given(trainer)
    model = """
        class Net:
            def __init__(self, width):
                self.layers = [width] * 3

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
    """
    assert not given(model)
    assert not given("def area(w, h):\n    return w * h\n")


def test_installed_packages_are_not_a_project(tmp_path):
    """From site-packages/torch/, every other installed package would look like part of the project."""
    root = _tree(tmp_path / "site-packages", {"lines.py": STREAM})
    assert _dl501(root, "lines") == []
    assert _dl501(_tree(tmp_path / "project", {"lines.py": STREAM}), "lines") == ["DL501"]


def test_a_file_consults_a_bounded_number_of_modules(tmp_path, monkeypatch):
    from flake8_dataloader.project import view

    root = _tree(tmp_path, {"a.py": STREAM, "b.py": STREAM})
    train = root / "train.py"
    train.write_text(
        "from torch.utils.data import DataLoader\nfrom a import Lines\nimport b\n\n"
        "first = DataLoader(Lines(), num_workers=2)\nsecond = DataLoader(b.Lines(), num_workers=2)\n"
    )
    assert [line for line, _, code, _ in check_source(train.read_text(), str(train)) if code == "DL501"] == [5, 6]
    store.clear()
    monkeypatch.setattr(view, "MAX_MODULES_PER_FILE", 1)
    assert [line for line, _, code, _ in check_source(train.read_text(), str(train)) if code == "DL501"] == [5]


def test_a_text_that_is_not_the_file_on_disk_is_not_remembered_as_its_summary(tmp_path):
    sharded = STREAM.replace("yield from range(3)", "info = get_worker_info()\n        yield from range(3)")
    sharded = sharded.replace("IterableDataset\n", "IterableDataset, get_worker_info\n", 1)
    root = _tree(tmp_path, {"lines.py": sharded})
    edited = STREAM + "\nloader = DataLoader(Lines(), num_workers=2)\n"  # an editor's unsaved text
    check_source(edited.replace("import IterableDataset", "import DataLoader, IterableDataset"), str(root / "lines.py"))
    assert _dl501(root, "lines") == []  # the importer sees the file as saved: sharded


@pytest.mark.parametrize("project", PROJECT_DIRS, ids=lambda p: p.name)
def test_findings_do_not_depend_on_the_order_files_are_linted_in(project):
    """Alone (nothing kept between files), importers first, importers last: the same findings."""
    files = sorted(project.rglob("*.py"))

    def lint(order, fresh):
        out = set()
        for path in order:
            if fresh:
                store.clear()
            out |= {(path.name, *result) for result in check_source(path.read_text(encoding="utf-8"), str(path))}
        return out

    alone = lint(files, fresh=True)
    store.clear()
    assert lint(files, fresh=False) == alone
    store.clear()
    assert lint(list(reversed(files)), fresh=False) == alone


@pytest.mark.parametrize("project", PROJECT_DIRS, ids=lambda p: p.name)
def test_a_summary_is_the_same_from_the_module_own_lint_as_from_a_parse_for_its_importer(project):
    """Every summary field (held lambdas, CUDA reads, indexed containers, samplers, shards, ...) is
    the same whichever way the summary was made: read for an importer, or kept from the module's lint."""
    compared = 0
    for path in sorted(project.rglob("*.py")):
        store.clear()
        for_importer = store.entry(str(path), DEFAULT_SETTINGS).summary
        store.clear()
        check_source(path.read_text(encoding="utf-8"), str(path))
        assert store.entry(str(path), DEFAULT_SETTINGS).summary == for_importer, path
        compared += for_importer != EMPTY_SUMMARY
    store.clear()
    assert compared >= 3


def test_a_module_parsed_for_its_importer_is_not_parsed_again_when_linted(tmp_path, monkeypatch):
    import flake8_dataloader.facts.analysis as analysis

    root = _tree(tmp_path, {"lines.py": STREAM})
    train = root / "train.py"
    train.write_text(TRAIN.format(module="lines"))
    parsed = []
    real_parse = analysis.parse
    monkeypatch.setattr(analysis, "parse", lambda source, tree=None: parsed.append(source) or real_parse(source, tree))
    check_source(train.read_text(), str(train))  # parses train.py, and lines.py for its summary
    check_source((root / "lines.py").read_text(), str(root / "lines.py"))
    assert len(parsed) == 2


def test_an_imported_dataset_class_indexing_a_python_list_gives_dl620_where_its_loader_is():
    # DL620 is off by default (the project expectations leave it out): selected here, through real flake8.
    result = flake8("--select=DL620", "-j1", ".", cwd=PROJECTS / "package_project")
    assert "Traceback" not in result.stderr, result.stderr
    lines = (PROJECTS / "package_project" / "train.py").read_text().splitlines()
    line = next(number for number, text in enumerate(lines, 1) if "captions = DataLoader(Captions(" in text)
    assert result.stdout.splitlines() == [
        f"./train.py:{line}:16: DL620 self.captions is a Python container indexed by every worker of Captions "
        "(data/augmented.py:42): each read copies its pages (memory grows toward workers + 1 copies); store it in "
        "numpy arrays or pyarrow instead"
    ]


def test_the_trainer_helper_question_goes_only_to_calls_used_as_a_trainer(tmp_path, monkeypatch):
    """Every call of an imported callee may be a helper returning a Trainer; only the one whose result
    runs a `fit` is asked (each question may summarise a module), and the findings stay."""
    root = _tree(tmp_path, {
        "helpers.py": "import lightning as L\n\n\ndef build_trainer(epochs):\n"
                      "    return L.Trainer(max_epochs=epochs)\n\n\ndef make_model():\n    return None\n\n\n"
                      "def make_data():\n    return None\n",
    })
    train = root / "train.py"
    train.write_text(
        "import lightning as L\nfrom torch.utils.data import DataLoader\n\nfrom helpers import build_trainer, "
        "make_data, make_model\n\n\ndef main():\n    model, data = make_model(), make_data()\n"
        "    loader = DataLoader(data, batch_size=8, num_workers=4)\n    build_trainer(5).fit(model, loader)\n"
    )
    asked = []
    real = ImportView.trainer_helper
    monkeypatch.setattr(ImportView, "trainer_helper", lambda self, name: asked.append(name) or real(self, name))
    found = [(line, code) for line, _, code, _ in check_source(train.read_text(), str(train))]
    assert found == [(9, "DL402")]
    assert asked == ["helpers.build_trainer"]


HANDED_ON = {
    "helpers.py": """\
        def run_epochs(loader, epochs):
            for epoch in range(epochs):
                for batch in loader:
                    pass
        """,
    "train.py": """\
        import numpy as np
        import torch
        from torch.utils.data import DataLoader

        from helpers import run_epochs


        def log(value):
            print(value)


        loader = DataLoader(range(8), batch_size=2, num_workers=2)
        torch.save(loader, "loader.pt")
        np.asarray(loader)
        log(loader)
        run_epochs(loader, 3)
        """,
}


def test_only_callees_a_project_module_may_define_are_followed_with_the_loader(tmp_path, monkeypatch):
    """The loader handed to the project's helper is iterated every epoch there; torch's, numpy's and
    this file's own functions are handed it too, but no module of the project can say what they do:
    the flow is not asked what their arguments hold."""
    from flake8_dataloader.facts.flow import ValueFlow

    root = _tree(tmp_path, HANDED_ON)
    asked = []
    real = ValueFlow.may_hold_loaders

    def may_hold_loaders(self, expr, scope):
        asked.append(expr)
        return real(self, expr, scope)

    monkeypatch.setattr(ValueFlow, "may_hold_loaders", may_hold_loaders)
    path = root / "train.py"
    found = check_source(path.read_text(), str(path))
    assert [(line, code) for line, _, code, _ in found] == [(12, "DL402"), (16, "DL301")]
    assert len(asked) == 1  # run_epochs's first argument (it may hold a loader: the second is not asked)
