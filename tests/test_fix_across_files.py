"""The fix command across files: a DL402 that flake8 reports in train.py through the factory of
data.py is fixed in data.py when data.py is given too, and named as left otherwise. Its summary
and exit status agree with flake8 on the same files (real flake8, in a subprocess)."""

import re
import subprocess
import sys

import pytest

DATA = (
    "import torch\n"
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "\n"
    "\n"
    "def make_train_loader():\n"
    "    dataset = TensorDataset(torch.arange(8.0))\n"
    "    return DataLoader(dataset, batch_size=4,\n"
    "                      num_workers=2)  # two is enough here\n"
)
TRAIN = (
    "from data import make_train_loader\n"
    "\n"
    "\n"
    "def main():\n"
    "    loader = make_train_loader()\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            print(batch)\n"
    "\n"
    "\n"
    'if __name__ == "__main__":\n'
    "    main()\n"
)
FIXED_DATA = DATA.replace(
    "num_workers=2)  # two is enough here\n",
    "num_workers=2,  # two is enough here\n                      persistent_workers=True)\n",
)
SELECT = "--select=DL1,DL2,DL3,DL40,DL5,DL60,E9"
FLAKE8_LINE = (
    "train.py:5:14: DL402 DataLoader workers are restarted every epoch; pass persistent_workers=True to the "
    "DataLoader at data.py:7 to keep them between epochs"
)
POSITION = re.compile(r"^(\S+?):(\d+):(\d+): (DL\d+|E\d+) ", re.M)


def run(module, *args, cwd):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_flake8_reports_the_finding_in_the_importer(project):
    linted = run("flake8", "--isolated", SELECT, "train.py", "data.py", cwd=project)
    assert (linted.returncode, linted.stdout) == (1, FLAKE8_LINE + "\n")


def test_given_both_modules_the_fix_goes_where_the_loader_is_built(project):
    fixed = run("flake8_dataloader", "fix", "--isolated", SELECT, "train.py", "data.py", cwd=project)
    assert fixed.stdout == "data.py: fixed DL402 x1\ntrain.py:5:14: DL402 fixed at data.py:7\n", fixed.stderr
    assert (project / "data.py").read_text() == FIXED_DATA  # the comment stays with num_workers
    assert (project / "train.py").read_text() == TRAIN
    linted = run("flake8", "--isolated", SELECT, "train.py", "data.py", cwd=project)
    assert (fixed.returncode, linted.returncode, linted.stdout) == (0, 0, "")
    again = run("flake8_dataloader", "fix", "--isolated", SELECT, ".", cwd=project)
    assert (again.returncode, again.stdout) == (0, "")


def test_diff_of_both_modules_shows_the_other_modules_change(project):
    diff = run("flake8_dataloader", "fix", "--isolated", "--diff", SELECT, ".", cwd=project)
    assert diff.returncode == 1
    assert "-                      num_workers=2)  # two is enough here\n" in diff.stdout
    assert "+                      persistent_workers=True)\n" in diff.stdout
    assert diff.stderr == "./data.py: fixed DL402 x1\n./train.py:5:14: DL402 fixed at data.py:7\n"
    assert (project / "data.py").read_text() == DATA


def test_given_only_the_importer_the_summary_names_what_was_left_and_why(project):
    fixed = run("flake8_dataloader", "fix", "--isolated", SELECT, "train.py", cwd=project)
    linted = run("flake8", "--isolated", SELECT, "train.py", cwd=project)
    assert fixed.stdout == (
        "train.py:5:14: DL402 left as is: the DataLoader is built at data.py:7, which was not given to the fix "
        "command; give it too\n"
    )
    assert (project / "data.py").read_text() == DATA
    # The same finding (file, line, column, code) and the same exit status as flake8.
    assert POSITION.findall(fixed.stdout) == POSITION.findall(linted.stdout) == [("train.py", "5", "14", "DL402")]
    assert fixed.returncode == linted.returncode == 1


def test_without_follow_imports_neither_reports_it(project):
    off = "--dataloader-follow-imports=off"
    fixed = run("flake8_dataloader", "fix", "--isolated", SELECT, off, "train.py", cwd=project)
    linted = run("flake8", "--isolated", SELECT, off, "train.py", cwd=project)
    assert (fixed.returncode, fixed.stdout, linted.returncode, linted.stdout) == (0, "", 0, "")


def test_a_fix_the_other_module_declines_is_left_with_its_reason(project):
    (project / "data.py").write_text(DATA.replace("num_workers=2)", "num_workers=2, persistent_workers=False)"))
    fixed = run("flake8_dataloader", "fix", "--isolated", SELECT, "train.py", "data.py", cwd=project)
    linted = run("flake8", "--isolated", SELECT, "train.py", "data.py", cwd=project)
    assert fixed.stdout == (
        "train.py:5:14: DL402 left as is: at data.py:7: persistent_workers=False is written as a false value; "
        "change it by hand if that was not deliberate\n"
    )
    assert POSITION.findall(fixed.stdout) == POSITION.findall(linted.stdout)
    assert fixed.returncode == linted.returncode == 1


def test_the_sample_of_docs_fix_md_is_what_the_commands_print(project):
    from .conftest import ROOT

    section = (ROOT / "docs" / "fix.md").read_text(encoding="utf-8").split("\n## Across files\n", 1)[1]
    block = re.findall(r"```\n(.*?)```", section.split("\n## ", 1)[0], re.S)[0]
    commands = re.findall(r"^\$ python -m (.*)\n((?:[^$].*\n)*)", block, re.M)
    assert len(commands) == 2
    for command, expected in commands:
        printed = run(*command.split(), cwd=project)
        assert printed.stdout == expected, command
