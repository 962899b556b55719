"""The README's commands work as written: they are read from the README itself, so they cannot drift."""

import re
import shlex
import subprocess
import sys

import pytest

from flake8_dataloader.manifest import CODES
from runtime_checks.__main__ import parse_args

from .conftest import ROOT
from .recipes import CONSOLE, README, command_lines, dl_only_invocation, make_project, run_shell
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
    # The DL-only invocation on examples/, as written: no --isolated, though .flake8 excludes examples.
    assert lint == "python -m pip install -e . && python -m flake8 --select=DL1,DL2,DL3,DL40,DL5,DL60,E9 examples/"
    assert lint.split(" && ")[1].replace("python -m flake8", "flake8").startswith(dl_only_invocation() + " ")
    assert tests.startswith("python -m pip install torch==2.13.0 ") and tests.endswith(" && python -m pytest -q")


def test_ci_runs_the_readmes_install_and_test_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    install, test = newcomer_commands()[1].split(" && ")
    assert f"{install} --quiet" in ci.splitlines()
    assert test in ci.splitlines()


def top_example():
    return re.findall(r"```\n(.*?)```", README, re.S)[0].splitlines()


def test_the_newcomer_lint_command_prints_the_findings_shown_at_the_top():
    lint = newcomer_commands()[0].split(" && ")[1]
    result = subprocess.run(shlex.split(lint.replace("python", sys.executable, 1)), cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == top_example()[1:]


def test_the_examples_show_about_ten_findings_of_default_on_rules_in_every_example():
    findings = [line.split(": ", 1)[0].split(":") + [line.split()[1]] for line in top_example()[1:]]
    assert 9 <= len(findings) <= 12
    assert {path for path, _, _, _ in findings} == {
        "examples/train_epochs.py", "examples/lightning_classifier.py", "examples/project/train.py",
        "examples/project/data.py"}
    assert not {code for *_, code in findings} & {"DL410", "DL620"}, "the opt-in rules stay off"
    assert len({code for *_, code in findings}) >= 9, "the demo shows many rules, not one rule many times"


def test_the_projects_own_lint_leaves_the_examples_out():
    # `python -m flake8` (CI) reads .flake8, which excludes examples; the README names the folder to lint it.
    result = subprocess.run([sys.executable, "-m", "flake8", "--select=DL", "examples"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (0, "")


def test_the_example_at_the_top_is_what_flake8_prints():
    example = top_example()
    assert example[0].startswith("$ flake8 ")
    result = run_shell(example[0][2:], ROOT)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == example[1:]


CONSOLE_COMMANDS = command_lines(README, "flake8-dataloader")


def test_the_readme_shows_every_command_of_the_console_script():
    shown = {shlex.split(line, comments=True)[1] for line in CONSOLE_COMMANDS}
    assert shown == {"--help", "rule", "fix"}  # `docs` is for maintainers: docs/development.md


@pytest.mark.parametrize("line", CONSOLE_COMMANDS)
def test_every_console_command_in_the_readme_runs(line, tmp_path):
    project = make_project(tmp_path)
    before = (project / "src" / "train.py").read_text()
    result = run_shell(line, project)
    assert "Traceback" not in result.stderr, result.stderr
    words = shlex.split(line, comments=True)
    if words[1] == "fix":
        # 0 or 1 as findings remain (docs/fix.md); 2 would be a usage error.
        assert result.returncode in (0, 1), result.stderr
        changed = (project / "src" / "train.py").read_text() != before
        assert changed == ("--diff" not in words), result.stdout
        if "--diff" in words:
            assert result.stdout.startswith("--- "), result.stdout
        return
    assert result.returncode == 0, result.stderr
    if words[1:] == ["rule", "DL402"]:
        assert result.stdout.startswith("# DL402: persistent-workers-disabled\n")
    if words[1:] == ["rule", "--all"]:
        assert len(result.stdout.splitlines()) == len(CODES)


def test_the_console_script_is_installed():
    assert CONSOLE.is_file(), "pip install -e . installs the flake8-dataloader command"


@pytest.mark.parametrize("argv", commands("python -m runtime_checks"), ids=lambda argv: " ".join(argv[3:]) or "-")
def test_every_runtime_checks_command_in_the_readme_parses(argv):
    parse_args(argv[3:])


def test_the_version_command():
    result = subprocess.run([sys.executable, "-m", "flake8_dataloader", "--version"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "flake8-dataloader 0.1.0\n")


def heading_anchors(text):
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to dashes."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readmes_links_resolve_and_it_stays_short():
    assert len(README.splitlines()) < 300
    links = re.findall(r"\]\(((?:docs|fixtures)/[^)#]*)(?:#([^)]*))?\)", README)
    assert len(links) > 30
    for target, anchor in links:
        assert (ROOT / target).exists(), target
        if anchor:
            assert anchor in heading_anchors((ROOT / target).read_text(encoding="utf-8")), (target, anchor)
