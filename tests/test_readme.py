"""The README's commands work as written: they are read from the README itself, so they cannot drift."""

import re
import shlex
import subprocess
import sys

import pytest

from runtime_checks.__main__ import parse_args

from .conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
# The user pages the README links to: their commands must work as written too.
PAGES = [README] + [path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))]


def bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def commands(prefix):
    """Every README or docs page line that starts with ``prefix``, its trailing comment dropped."""
    found = []
    for block in (block for page in PAGES for block in bash_blocks(page)):
        for line in block.splitlines():
            if line.startswith(prefix):
                found.append(shlex.split(line, comments=True))
    return found


def newcomer_commands():
    section = README.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in bash_blocks(section)]


def test_the_two_newcomer_commands():
    lint, tests = newcomer_commands()
    assert lint == "python -m pip install -e . && python -m flake8 --isolated --select=DL fixtures/"
    assert tests.startswith("python -m pip install torch==2.13.0 ") and tests.endswith(" && python -m pytest -q")


def test_ci_runs_the_readmes_install_and_test_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    install, test = newcomer_commands()[1].split(" && ")
    assert f"{install} --quiet" in ci.splitlines()
    assert test in ci.splitlines()


def test_the_newcomer_lint_command_shows_findings():
    lint = newcomer_commands()[0].split(" && ")[1]
    result = subprocess.run(shlex.split(lint.replace("python", sys.executable, 1)), cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    codes = {line.split()[1] for line in result.stdout.splitlines()}
    assert {"DL101", "DL201", "DL301", "DL402", "DL502"} <= codes


@pytest.mark.parametrize("argv", commands("python -m runtime_checks"), ids=lambda argv: " ".join(argv[3:]) or "-")
def test_every_runtime_checks_command_in_the_readme_parses(argv):
    parse_args(argv[3:])


def test_the_version_command():
    result = subprocess.run([sys.executable, "-m", "flake8_dataloader", "--version"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "flake8-dataloader 0.1.0\n")
