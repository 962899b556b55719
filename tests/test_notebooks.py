"""Notebooks linted through nbQA: detection, --dataloader-notebook, and real nbqa runs on a .ipynb."""

import ast
import difflib
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from flake8_dataloader import cache
from flake8_dataloader.engine import analyse
from flake8_dataloader.settings import is_notebook, is_notebook_text
from flake8_dataloader.settings import Settings, SettingsError

from .conftest import FIXTURES

NOTEBOOKS = FIXTURES / "notebooks"
CELLS = NOTEBOOKS / "nb_dl302_defined_in_cells.py"
SCRIPT = NOTEBOOKS / "nb_dl302_cells_as_script.py"
COURSE = NOTEBOOKS / "shapes_course.ipynb"

needs_nbqa = pytest.mark.skipif(importlib.util.find_spec("nbqa") is None, reason="nbqa is not installed")


def codes(results):
    return sorted((line, code) for line, _, code, _ in results)


def test_nbqa_separator_marks_a_notebook():
    assert is_notebook_text(CELLS.read_text())
    assert not is_notebook_text(SCRIPT.read_text())
    # The separator only counts as a line of its own, as nbQA writes it.
    assert not is_notebook_text('MARK = "# %%NBQA-CELL-SEP4f2a9c"\n')
    assert not is_notebook_text("x = 1  # %%NBQA-CELL-SEP4f2a9c\n")
    assert not is_notebook_text("# %%\nimport torch\n")  # a jupytext/VS Code cell marker: a script
    assert is_notebook_text("import torch\n# %%NBQA-CELL-SEPa1b2c3\nx = 1\n")


def test_one_cell_notebook_is_known_by_nbqa_file_name():
    one_cell = "import torch\n"  # no separator: nbQA's temporary file name tells
    assert is_notebook(one_cell, "/work/course/intro8h2k_nbqa_ipynb.py")
    assert not is_notebook(one_cell, "/work/course/intro.py")
    assert is_notebook(one_cell, "intro.py", "on")
    assert not is_notebook(CELLS.read_text(), "x_nbqa_ipynb.py", "off")


def test_script_twin_is_the_same_code():
    """The script fixture is the notebook fixture without its separators: only the mode differs."""
    assert ast.dump(ast.parse(CELLS.read_text())) == ast.dump(ast.parse(SCRIPT.read_text()))


def test_option_on_treats_a_script_as_a_notebook_and_off_the_reverse():
    script, cells = SCRIPT.read_text(), CELLS.read_text()
    assert codes(analyse(script)) == [(8, "DL303"), (40, "DL301"), (54, "DL301")]
    assert codes(analyse(script, Settings.build(notebook="on"))) == [
        (31, "DL302"), (33, "DL302"), (37, "DL302"), (38, "DL302"), (48, "DL302"),
    ]
    assert codes(analyse(cells, Settings.build(notebook="off"))) == [(8, "DL303"), (39, "DL301"), (51, "DL301")]
    with pytest.raises(SettingsError, match="invalid choice: 'yes'"):
        Settings.build(notebook="yes")


def test_notebook_message_names_the_class_the_error_and_the_fix():
    messages = {line: message for line, _, code, message in analyse(CELLS.read_text()) if code == "DL302"}
    assert messages[29] == (
        "DL302 class Shapes is defined in the notebook and sent to workers as dataset: spawn/forkserver workers "
        "(macOS, Windows, Linux from Python 3.14) fail with \"Can't get attribute 'Shapes' on <module "
        "'__main__'>\"; move it to a .py module next to the notebook and import it"
    )
    assert messages[36].startswith("DL302 function seed_worker is defined in the notebook and sent to workers as "
                                   "worker_init_fn:")


def test_cache_keys_on_the_notebook_option():
    text = SCRIPT.read_text()
    assert cache.keys(text, "train.py", Settings()) != cache.keys(text, "train.py", Settings.build(notebook="on"))


def flake8(*args, cwd):
    return subprocess.run([sys.executable, "-m", "flake8", "--select=DL", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_option_is_read_from_setup_cfg(tmp_path):
    shutil.copy(SCRIPT, tmp_path / "train.py")
    before = flake8("train.py", cwd=tmp_path)
    assert [line.split(": ")[0].rsplit(":", 2)[-2:] + [line.split(" ")[1]] for line in before.stdout.splitlines()] \
        == [["8", "1", "DL303"], ["40", "1", "DL301"], ["54", "1", "DL301"]]
    (tmp_path / "setup.cfg").write_text("[flake8]\ndataloader-notebook = on\n")
    after = flake8("train.py", cwd=tmp_path)
    assert [line.split(" ")[1] for line in after.stdout.splitlines()] == ["DL302"] * 5, after.stdout
    (tmp_path / "setup.cfg").write_text("[flake8]\ndataloader-notebook = sometimes\n")
    bad = flake8("train.py", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "argument --dataloader-notebook: invalid choice: 'sometimes'" in bad.stderr


def nbqa(*args, cwd):
    return subprocess.run([sys.executable, "-m", "nbqa", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@needs_nbqa
def test_nbqa_flake8_reports_notebook_cells(tmp_path):
    """Positions map back through nbQA: the loader is on line 3 of the third code cell."""
    shutil.copy(COURSE, tmp_path / "course.ipynb")
    result = nbqa("flake8", "course.ipynb", "--select=DL", cwd=tmp_path)
    lines = [line.split(" ", 2)[:2] for line in result.stdout.splitlines()]
    assert lines == [
        ["course.ipynb:cell_3:3:16:", "DL302"],  # Shapes, defined in cell 2, reaches the workers
        ["course.ipynb:cell_3:3:16:", "DL402"],
        ["course.ipynb:cell_3:3:78:", "DL302"],  # pad_batch, the collate_fn
    ], result.stdout + result.stderr
    assert "DL301" not in result.stdout  # cell 4 iterates at the top level: fine in a kernel
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course.ipynb"]  # nbQA's temporary file is gone


@needs_nbqa
def test_fix_command_runs_through_nbqa_and_keeps_the_rest_of_the_notebook(tmp_path):
    notebook = tmp_path / "course.ipynb"
    shutil.copy(COURSE, notebook)
    result = nbqa("flake8_dataloader fix", "course.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # the DL302 findings remain: the fix command's status
    # nbQA maps lines by the cells as they were: what remains is counted, not placed in the wrong cell.
    assert result.stdout.splitlines() == [
        "course.ipynb: fixed DL402 x1",
        "course.ipynb: remaining DL302 x2: run `nbqa flake8` on the notebook for their cells",
    ]
    before, after = json.loads(COURSE.read_text()), json.loads(notebook.read_text())
    assert after["cells"][3]["source"] == [
        "train_set = Shapes(64)\n",
        "print(len(train_set))\n",
        "train_loader = DataLoader(\n",
        "    train_set,\n",
        "    batch_size=8,\n",
        "    num_workers=2,\n",
        "    collate_fn=pad_batch,\n",
        "    persistent_workers=True,\n",
        ")",
    ]
    # Outputs, execution counts, metadata and every other cell are kept, and so are the file's other bytes.
    after["cells"][3]["source"] = before["cells"][3]["source"]
    assert after == before
    diff = difflib.unified_diff(COURSE.read_text().splitlines(), notebook.read_text().splitlines(), n=0, lineterm="")
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed[0] == ('-    "train_loader = DataLoader(train_set, batch_size=8, num_workers=2, '
                          'collate_fn=pad_batch)"')
    assert changed[1:] == ["+" + json.dumps(line, ensure_ascii=False).join(["    ", ","])
                           for line in after_source(notebook)[2:-1]] + ['+    ")"']
    again = nbqa("flake8", "course.ipynb", "--select=DL", cwd=tmp_path)
    assert [line.split(" ", 2)[:2] for line in again.stdout.splitlines()] == [
        ["course.ipynb:cell_3:3:16:", "DL302"],
        ["course.ipynb:cell_3:7:16:", "DL302"],
    ], again.stdout + again.stderr


def after_source(notebook):
    return json.loads(notebook.read_text())["cells"][3]["source"]
