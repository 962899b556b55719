"""A fix keeps what the program does: each runnable fixture prints the same before and after it.

Real torch, 2 fork workers, tiny data: a few seconds per script. The scripts hold the shapes
where a careless fix changes behaviour (a dataset changed in the epoch loop, `del` of a global
or closure name, a redefined function moved by the DL301 guard) next to shapes the fix does apply.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flake8_dataloader.autofix import fix_source

from .conftest import FIXTURES

pytest.importorskip("torch", reason="the runnable fixtures run with real torch: pip install torch")

RUNNABLE = FIXTURES / "runnable"
SCRIPTS = sorted(RUNNABLE.glob("dl*.py"))
# What each script must print as it stands: proof that it exercises its shapes.
EXPECTED_OUTPUT = {
    "dl104_conditional_workers.py": (
        "[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]], [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]] True 2\n"
    ),
    "dl104_dl402_comments.py": (
        "[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]], [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]] True\n"
        + "[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]\n" * 4
    ),
    "dl101_dl402_closing_comments.py": "[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]] [4, 4]\n" * 2,
    "dl301_redefined.py": "v1\nv2\n",
    "dl402_comprehension.py": "[[6.0, 22.0], [38.0]]\n" * 3,
    "dl402_dataset_changes.py": (
        "through_a_helper [0, 1, 2]\nthrough_setattr [0, 1, 2]\n"
        "shuffled_in_place [[2, 0, 1, 3], [2, 0, 3, 1], [2, 3, 0, 1]]\nimported_dataset [0, 1, 2]\n"
        "unchanging [6, 6, 6]\n"
    ),
    "dl402_factories.py": (
        "tuple 8 [[6.0, 22.0], [6.0, 22.0], [6.0, 22.0]]\ndict [[1.0, 5.0, 9.0, 13.0], [1.0, 5.0, 9.0, 13.0]]\n"
        "endless [28.0, 28.0, 28.0]\n"
    ),
    "dl601_lazy_open.py": "[[0, 1, 4, 9], [16, 25, 36, 49], [64, 81, 100, 121]]\n506\n",
    "dl404_del_scopes.py": "finish finish_global [[0, 1], [2, 3]] 6\n[[0, 1], [2, 3]]\n",
}


def run(script: Path, *argv: str) -> str:
    result = subprocess.run([sys.executable, script.name, *argv], cwd=script.parent, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_runnable_fixture_has_its_expected_output():
    assert sorted(EXPECTED_OUTPUT) == [script.name for script in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_the_fixed_script_does_what_the_original_did(script, tmp_path):
    before = run(script)
    assert before == EXPECTED_OUTPUT[script.name]
    for helper in RUNNABLE.glob("*.py"):
        shutil.copy(helper, tmp_path / helper.name)
    fixed = tmp_path / script.name
    fixed.write_text(fix_source(script.read_text(), max_line_length=79).source)  # the command's default
    assert run(fixed) == before


def test_the_dl104_fix_of_a_conditional_worker_count_runs_without_workers(tmp_path):
    script = RUNNABLE / "dl104_conditional_workers.py"
    original = subprocess.run([sys.executable, script.name, "--ram"], cwd=script.parent, capture_output=True,
                              text=True, timeout=120)
    assert original.returncode == 1
    assert "ValueError: prefetch_factor option could only be specified in multiprocessing" in original.stderr
    fixed = tmp_path / script.name
    fixed.write_text(fix_source(script.read_text()).source)
    assert "persistent_workers=(0 if ram else nw) > 0," in fixed.read_text()
    assert run(fixed, "--ram").endswith("] False None\n")


# Framework fix pairs: the script runs the framework for real (the frameworks extra; CI installs it).
FRAMEWORK_SCRIPTS = {
    "fw_lightning_hooks.py": ("lightning", "[6.0, 22.0, 6.0, 22.0] [1.0, 5.0, 9.0, 13.0, 1.0, 5.0, 9.0, 13.0]\n"),
    "fw_training_arguments.py": ("transformers", "[6.0, 6.0, 11.0, 12.0, 16.0, 17.0, 22.0, 22.0]\n"),
}


def test_every_framework_script_has_its_expected_output():
    assert sorted(FRAMEWORK_SCRIPTS) == sorted(script.name for script in RUNNABLE.glob("fw_*.py"))


@pytest.mark.parametrize("name", sorted(FRAMEWORK_SCRIPTS))
def test_the_framework_fix_keeps_what_the_training_run_does(name, tmp_path):
    package, expected = FRAMEWORK_SCRIPTS[name]
    pytest.importorskip(package, reason="pip install 'flake8-dataloader[frameworks]'")
    script = RUNNABLE / name
    assert run(script) == expected
    fixed = tmp_path / name
    fixed.write_text(fix_source(script.read_text()).source)
    assert fixed.read_text() != script.read_text()  # the fix wrote the persistent-workers keyword
    assert run(fixed) == expected
