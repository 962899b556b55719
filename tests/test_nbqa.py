"""`nbqa flake8` on notebooks: one cache entry per notebook, and findings on the line written in the cell.

nbQA writes a notebook's code cells to `<stem><8 random characters>_nbqa_ipynb.py` next to it (new cell
separators on every run), lets autopep8 add blank lines inside cells, and maps reported lines back as if
nothing had moved (project/nbqa.py).
"""

import ast
import json
import os
import subprocess
import sys

import pytest

from flake8_dataloader import cache
from flake8_dataloader.plugin import DataLoaderChecker
from flake8_dataloader.project import nbqa, store
from flake8_dataloader.settings import Settings

ON = Settings.build(cache="on")
IMPORTS = (
    "%matplotlib inline\n"  # nbQA writes a placeholder with a new random number on every run
    "import torch\n"
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "\n"
    "dataset = TensorDataset(torch.randn(64, 3), torch.randint(0, 2, (64,)))"
)
# Comments directly above each `def`: autopep8 adds two blank lines above each, so nbQA alone reports
# every later line of the cell 4 lines too low (the loader at cell_2:13). The module-level epoch loop
# is no DL301: a notebook needs no __main__ guard.
TRAIN = (
    "# metrics\n"
    "def accuracy(logits, labels):\n"
    "    return (logits.argmax(1) == labels).float().mean()\n"
    "# the model\n"
    "def build_model():\n"
    "    return torch.nn.Linear(3, 2)\n"
    "model = build_model()\n"
    "for epoch in range(3):\n"
    "    loader = DataLoader(dataset, batch_size=16, num_workers=2){noqa}\n"
    "    for inputs, labels in loader:\n"
    "        accuracy(model(inputs), labels)"
)
DL401 = ("DL401 DataLoader is rebuilt on every loop iteration; build it once before the loop with "
         "persistent_workers=True (workers restart each epoch)")


def write_notebook(path, *cells):
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": cell.splitlines(True)} for cell in cells],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path


def run_nbqa(root, *notebooks):
    pytest.importorskip("nbqa")
    pytest.importorskip("autopep8")
    done = subprocess.run(
        [sys.executable, "-m", "nbqa", "flake8", *notebooks, "--select=DL"],
        cwd=root, capture_output=True, text=True, timeout=120, env=dict(os.environ, FLAKE8_DATALOADER_CACHE="on"),
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def entries(root):
    return sorted((root / cache.DIRECTORY).glob("*.json"))


def test_each_finding_is_reported_on_the_line_written_in_the_cell(tmp_path):
    write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa=""))
    assert run_nbqa(tmp_path, "train.ipynb") == [
        f"train.ipynb:cell_2:9:14: {DL401}",  # no DL301: a notebook needs no __main__ guard
    ]


@pytest.mark.parametrize("noqa, reported", [
    ("  # noqa: DL401", []),
    ("  # noqa", []),
    ("  # noqa: E501", [f"train.ipynb:cell_2:9:14: {DL401}"]),
])
def test_noqa_on_the_findings_own_line_in_the_cell_decides(tmp_path, noqa, reported):
    write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa=noqa))
    assert run_nbqa(tmp_path, "train.ipynb") == reported


def test_a_second_run_is_served_from_the_one_entry_and_a_changed_cell_is_analysed_again(tmp_path):
    notebook = write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa=""))
    first = run_nbqa(tmp_path, "train.ipynb")
    [entry] = entries(tmp_path)
    # Mark the entry: a run served from it reports the marked message.
    kept = json.loads(entry.read_text())
    assert [result[2] for result in kept["results"]] == ["DL401"]
    kept["results"][0][3] = DL401.replace("rebuilt", "SERVED")
    entry.write_text(json.dumps(kept))
    assert run_nbqa(tmp_path, "train.ipynb") == [first[0].replace("rebuilt", "SERVED")]
    assert entries(tmp_path) == [entry]

    write_notebook(notebook, IMPORTS, TRAIN.format(noqa="").replace("batch_size=16", "batch_size=32"))
    assert run_nbqa(tmp_path, "train.ipynb") == first
    assert entries(tmp_path) == [entry]


# In-process: the copies nbQA would write on two runs (another name, another separator each time).
COPY = (
    "# %%NBQA-CELL-SEP{hex}\n" + IMPORTS.replace("%matplotlib inline", 'hash("{token}")') + "\n\n\n"
    "# %%NBQA-CELL-SEP{hex}\n\n\n" + TRAIN.format(noqa="").replace("\n# the model", "\n\n\n# the model")
    .replace("\nmodel = build_model()", "\n\n\nmodel = build_model()") + "\n"
)


@pytest.fixture
def analyses(analyses, tmp_path, monkeypatch):
    """conftest's counter, run from tmp_path, with the modules and entries read forgotten after."""
    monkeypatch.chdir(tmp_path)
    yield analyses
    store.clear()
    cache.forget()


def lint(path):
    store.clear()
    cache.forget()
    source = path.read_text()
    checker = DataLoaderChecker(ast.parse(source), source.splitlines(keepends=True), str(path))
    checker.settings = ON
    return [(line, column, message) for line, column, message, _ in checker.run()]


def test_copies_of_an_unchanged_notebook_share_one_entry_and_are_served(tmp_path, analyses):
    write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa=""))
    first = tmp_path / "trainab_cd1x2_nbqa_ipynb.py"
    first.write_text(COPY.format(hex="8010af", token="1f2e3d4c"))
    # Lines 17 and 18 of the copy are the cell's lines 8 and 9: the cell's separator is line 9.
    assert lint(first) == [(18, 13, DL401)]
    first.unlink()
    second = tmp_path / "trainq9zz_0k4_nbqa_ipynb.py"
    second.write_text(COPY.format(hex="3c77e1", token="a0b9c8e7"))
    assert lint(second) == [(18, 13, DL401)]
    assert analyses[0] == 1
    assert len(entries(tmp_path)) == 1

    write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa="").replace("batch_size=16", "batch_size=8"))
    second.write_text(COPY.format(hex="3c77e1", token="a0b9c8e7").replace("batch_size=16", "batch_size=8"))
    assert lint(second) == [(18, 13, DL401)]
    assert analyses[0] == 2
    assert len(entries(tmp_path)) == 1


def test_a_file_named_like_a_copy_without_its_notebook_is_an_ordinary_file(tmp_path, analyses):
    copy = tmp_path / "trainab_cd1x2_nbqa_ipynb.py"
    copy.write_text(COPY.format(hex="8010af", token="1f2e3d4c"))
    assert nbqa.identity(str(copy), copy.read_text()) is None
    assert lint(copy) == [(24, 13, DL401)]  # nowhere to map them: the copy's own lines
    assert cache.keys(copy.read_text(), str(copy), ON).path == str(copy)


def layout(tmp_path, cells, copy):
    notebook = write_notebook(tmp_path / "nb.ipynb", *cells)
    return nbqa.layout_lines(copy, str(notebook))


def test_layout_skips_cells_nbqa_leaves_out_and_reads_placeholders_and_dropped_semicolons(tmp_path):
    cells = [
        "%matplotlib inline",  # only magics: not written
        "x = 1\n%time y = 2\n# note\ndef f():\n    pass",
        "plt.plot(x);",
        "def broken(:\n    pass",  # does not parse: one placeholder
        "  # indented\n  z = 3\n  # twice\n  def g():\n      pass\n  g()",
    ]
    copy = (
        "# %%NBQA-CELL-SEPabcdef\nx = 1\nhash(0x1A2B3C4D)\n\n\n# note\ndef f():\n    pass\n\n\n"
        "# %%NBQA-CELL-SEPabcdef\nplt.plot(x)\n\n\n"
        "# %%NBQA-CELL-SEPabcdef\nhash(0xDEADBEEF)\n\n\n"
        "# %%NBQA-CELL-SEPabcdef\n# indented\nz = 3\n\n\n# twice\ndef g():\n    pass\n\n\ng()\n"
    )
    mapped = layout(tmp_path, cells, copy)
    assert [mapped[line] for line in (1, 2, 3, 6, 7, 8)] == [1, 2, 3, 4, 5, 6]
    assert mapped[12] == 12
    assert mapped[16] == 16
    assert [mapped[line] for line in (19, 20, 21, 24, 25, 26, 29)] == [19, 20, 21, 22, 23, 24, 25]


def test_lines_move_down_where_autopep8_removed_blank_lines_and_stay_where_nbqa_has_no_line(tmp_path):
    # autopep8 removed two of four blank lines: the cell's lines 6 and 7 are the copy's lines 5 and 6.
    cells = ["a = 1\n\n\n\n\nb = 2\nc = 3", "d = 4"]
    copy = "# %%NBQA-CELL-SEPabcdef\na = 1\n\n\nb = 2\nc = 3\n\n\n# %%NBQA-CELL-SEPabcdef\nd = 4\n"
    mapped = layout(tmp_path, cells, copy)
    assert [mapped[line] for line in (2, 5, 6, 10)] == [2, 7, 8, 10]
    # The last cell has no blank lines after it: lines 7 and 8 of the copy do not exist.
    mapped = layout(tmp_path, cells[:1], "# %%NBQA-CELL-SEPabcdef\na = 1\n\n\nb = 2\nc = 3\n")
    assert [mapped[line] for line in (2, 5, 6)] == [2, 5, 6]


def test_a_notebook_that_no_longer_matches_its_copy_gives_no_layout(tmp_path):
    copy = "# %%NBQA-CELL-SEPabcdef\na = 1\n"
    assert layout(tmp_path, ["a = 2"], copy) is None
    assert nbqa.layout_lines(copy, str(tmp_path / "missing.ipynb")) is None


@pytest.mark.parametrize("text", ["not json", '{"cells": [1]}', '{"cells": [{"cell_type": "code"}]}', "[" * 100000])
def test_a_file_that_is_no_notebook_gives_no_layout(tmp_path, text):
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(text)
    assert nbqa.layout_lines("# %%NBQA-CELL-SEPabcdef\na = 1\n", str(notebook)) is None


@pytest.mark.parametrize("disable_noqa, reported", [
    (False, []),
    (True, [(18, 13, DL401)]),
])
def test_flake8s_disable_noqa_holds_for_a_moved_finding(tmp_path, analyses, monkeypatch, disable_noqa, reported):
    noqa = "  # noqa: DL401"
    write_notebook(tmp_path / "train.ipynb", IMPORTS, TRAIN.format(noqa=noqa))
    copy = tmp_path / "trainab_cd1x2_nbqa_ipynb.py"
    copy.write_text(COPY.format(hex="8010af", token="1f2e3d4c").replace("num_workers=2)", "num_workers=2)" + noqa))
    monkeypatch.setattr(DataLoaderChecker, "disable_noqa", disable_noqa)
    assert lint(copy) == reported
