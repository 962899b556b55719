"""The CI recipes run as written: every flake8 command of the README and docs/ci.md, with its formatter plugin.

The formatter plugins are in the `test` extra, so these commands run in CI as users would
run them. Each format must carry exactly the findings flake8's text output has for the
same command: the default-on DL rules, E9 for the file that does not parse, no opt-in rule
unless the command turns it on.
"""

import importlib.metadata
import json
import re
import shlex

import pytest

from .recipes import (
    CI_PAGE, README, command_lines, dl_only_invocation, line_findings, make_project, run_shell, text_findings,
)

RECIPES = command_lines(README, "flake8") + command_lines(CI_PAGE, "flake8")
OPT_IN = {"DL410", "DL620"}


def github(output):
    annotation = r"::error file=(?P<path>[^,]+),line=(?P<line>\d+),col=\d+,title=(?P<code>[A-Z]+\d+)::.+"
    return line_findings(output, annotation)


def sarif(output):
    log = json.loads(output)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    found = set()
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
        (location,) = result["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        assert not uri.startswith(("/", "file:", "./")), uri  # relative to the run: what code scanning matches
        found.add((uri, location["physicalLocation"]["region"]["startLine"], result["ruleId"]))
    return found


def flake8_json(output):
    found = set()
    for path, items in json.loads(output).items():
        for item in items:
            assert item["filename"] == path and item["text"]
            found.add((path.removeprefix("./"), item["line_number"], item["code"]))
    return found


def gl_codeclimate(output):
    issues = json.loads(output)
    assert isinstance(issues, list), "GitLab reads a list of issues"
    found = set()
    for issue in issues:
        assert issue["type"] == "issue" and issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["check_name"] and issue["fingerprint"]
        code = re.fullmatch(r".+ \[([A-Z]+\d+)\]", issue["description"])[1]
        found.add((issue["location"]["path"], issue["location"]["lines"]["begin"], code))
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    return found


FORMATS = {None: text_findings, "github": github, "sarif": sarif, "json": flake8_json, "gl-codeclimate": gl_codeclimate}


def split(command):
    """The command's --format, its output file (a `>` redirect) and its text-format twin."""
    fmt = re.search(r"--format=(\S+)", command)
    target = re.search(r">\s*(\S+)", command)
    twin = re.sub(r"\s*>\s*\S+", "", re.sub(r"\s*--format=\S+", "", command))
    return fmt and fmt[1], target and target[1], twin


def test_every_format_the_docs_name_is_tried():
    assert {split(command)[0] for command in RECIPES} == set(FORMATS)


@pytest.mark.parametrize("command", RECIPES)
def test_the_recipe_runs_as_written(command, tmp_path):
    project = make_project(tmp_path)
    fmt, target, twin = split(command)
    result = run_shell(command, project)
    assert result.returncode == 1, result.stderr  # findings fail the job
    assert "Traceback" not in result.stderr, result.stderr
    output = (project / target).read_text() if target else result.stdout
    found = FORMATS[fmt](output)

    reference = run_shell(twin, project)
    assert reference.returncode == 1, reference.stderr
    assert found == text_findings(reference.stdout)
    codes = {code for _, _, code in found}
    assert {("src/train.py", 9, "DL402"), ("src/train.py", 27, "DL301")} <= found
    assert ("src/broken.py", 1, "E999") in found
    assert codes & OPT_IN == (OPT_IN if "--extend-select=DL410,DL620" in command else set())


def test_the_dl_only_invocation_is_one_in_the_readme_the_ci_page_the_hook_and_the_help():
    invocation = dl_only_invocation()
    assert invocation == "flake8 --select=DL1,DL2,DL3,DL40,DL5,DL60,E9"
    selecting = [command for command in RECIPES if "--select" in command]
    assert len(selecting) >= 10  # README: use (2), CI (2); CI page: five formats, the GitHub workflow (2), GitLab
    assert all(command.startswith(invocation + " ") for command in selecting), selecting
    assert f"# {invocation}\n" in README  # the pre-commit snippet's comment on the lint hook
    from flake8_dataloader.__main__ import parser

    assert invocation in " ".join(parser().format_help().split())


def test_the_install_lines_name_only_what_the_test_extra_installs():
    # What CI installs is what the recipes need: each formatter they name is in the test extra.
    extra = {re.match(r"[\w.-]+", text)[0] for text in importlib.metadata.requires("flake8-dataloader")
             if 'extra == "test"' in text}
    lines = command_lines(README, "pip") + command_lines(CI_PAGE, "pip")
    named = set()
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[:2] == ["pip", "install"], line
        named |= {word for word in words[2:] if not word.startswith(("flake8-dataloader", "-e", "."))}
    assert named == {"flake8-github-annotations", "flake8-sarif", "flake8-json", "flake8-gl-codeclimate"}
    assert named <= extra
    assert all('"flake8-dataloader @ git+<repository-url>' in line for line in lines if "-e ." not in line)
