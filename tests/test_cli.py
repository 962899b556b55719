"""The flake8-dataloader command: its help, `rule`, `docs`, and `python -m flake8_dataloader` as the same program."""

import subprocess
import sys

import pytest

from flake8_dataloader.rules.pages import describe
from flake8_dataloader.rules import RULES

from .conftest import ROOT
from .recipes import CONSOLE


def console(*args, cwd=ROOT):
    return subprocess.run([str(CONSOLE), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_help_lists_every_command_with_a_line():
    result = console("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: flake8-dataloader [-h] [--version] COMMAND ...\n")
    listed = {}
    for line in result.stdout.split("\ncommands:\n", 1)[1].splitlines():
        words = line.split()
        if len(words) > 1 and line.startswith("    ") and not line.startswith("     "):
            listed[words[0]] = " ".join(words[1:])
    assert set(listed) == {"fix", "rule", "docs"}
    assert listed["rule"].startswith("print a rule's page")


def test_python_m_is_the_same_program():
    for args in (["--help"], ["rule", "--all"], ["--version"]):
        module = subprocess.run([sys.executable, "-m", "flake8_dataloader", *args], capture_output=True, text=True)
        assert module.returncode == 0
        assert module.stdout == console(*args).stdout


def test_rule_prints_the_page_from_the_docstring(tmp_path):
    result = console("rule", "DL402", cwd=tmp_path)  # no docs/ here, as from an installed wheel
    assert result.returncode == 0, result.stderr
    rule = next(rule for rule in RULES if rule.CODE == "DL402")
    assert result.stdout.startswith("\n".join(describe(rule)))
    assert "## Why is this bad?\n" in result.stdout and "## Use instead\n" in result.stdout
    assert result.stdout.endswith("`python -m runtime_checks --rule DL402` measures it on your machine (needs torch: "
                                  "the `runtime` extra); the project's own measurements are on its page "
                                  "docs/rules/DL402.md.\n")
    assert console("rule", "dl402", cwd=tmp_path).stdout == result.stdout


def test_rule_all_lists_codes_names_and_defaults():
    result = console("rule", "--all")
    assert result.returncode == 0
    rows = [line.split(None, 2) for line in result.stdout.splitlines()]
    assert [(code, name) for code, name, _ in rows] == [(rule.CODE, rule.NAME) for rule in RULES]
    defaults = {code: state for code, _, state in rows}
    assert defaults["DL402"] == "on"
    assert defaults["DL410"] == "off  (--extend-select=DL410)"
    assert sorted(code for code, state in defaults.items() if state != "on") == ["DL410", "DL620"]


@pytest.mark.parametrize("args, error", [
    (["rule", "DL999"],
     "flake8-dataloader rule: unknown code 'DL999'; `flake8-dataloader rule --all` lists the codes\n"),
    (["docs"], None),
])
def test_errors_are_one_line_and_exit_2(args, error, tmp_path):
    result = console(*args, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (error or f"flake8-dataloader docs: {tmp_path.resolve()} is not a flake8-dataloader "
                                      "checkout; run it there, or give --output DIR\n")


def test_rule_needs_a_code_or_all():
    result = console("rule")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "flake8-dataloader rule: error: one of the arguments DLnnn --all is required")


def test_docs_check_passes_in_this_checkout_and_output_writes_elsewhere(tmp_path):
    assert console("docs", "--check").returncode == 0
    result = console("docs", "--root", str(ROOT), "--output", str(tmp_path / "pages"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "pages" / "DL402.md").read_text() == (ROOT / "docs" / "rules" / "DL402.md").read_text()
