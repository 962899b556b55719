"""The pages users read speak to users: no internal issue numbers, rule-book versions or paths of one machine.

Citations stay allowed: PyTorch's issues (`pytorch#62066`, `pytorch/pytorch#51344`), GitHub Actions'
versions (`actions/checkout@v4`), PyTorch's own source paths (`torch/utils/data/dataloader.py`).
"""

import re

import pytest

from flake8_dataloader.rules import RULES

from .conftest import ROOT

INTERNAL = re.compile(
    r"\b[Ii]ssues? #?\d+"                           # "issue 42", "issues 39"
    r"|(?<![\w/.-])#\d+\b"                           # "#39" alone, not "pytorch#62066"
    r"|\b[Rr]ule[- ]book v?\d+"                      # "rule book v8"
    r"|(?<![\w@./-])v\d+\b(?![.\d])"                 # "(v7)", "flow v6", not "@v4" or "v2.0.1"
    r"|(?<![\w.~-])/(?:root|work|tmp|home|Users|mnt)/"  # a path of the machine something was measured on
)
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def internal_references(text):
    return [(text.count("\n", 0, match.start()) + 1, match.group()) for match in INTERNAL.finditer(text)]


@pytest.mark.parametrize("path", PAGES, ids=lambda path: str(path.relative_to(ROOT)))
def test_pages_name_no_issue_rule_book_version_or_machine_path(path):
    assert internal_references(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("rule", RULES, ids=[rule.CODE for rule in RULES])
def test_messages_name_none_either(rule):
    assert internal_references(f"{rule.MESSAGE}\n{rule.FRAMEWORK_MESSAGE or ''}") == []


@pytest.mark.parametrize("text, found", [
    ("at the merge of issue 42:", [(1, "issue 42")]),
    ("asked in #39 and\nIssue 39 asked", [(1, "#39"), (2, "Issue 39")]),
    ("the rule book v8 and (v7) and flow v6", [(1, "rule book v8"), (1, "v7"), (1, "v6")]),
    ("under `/work/trees` or /root/x, /tmp/venv", [(1, "/work/"), (1, "/root/"), (1, "/tmp/")]),
    ("pytorch#62066, pytorch/pytorch#51344, actions/checkout@v4, torch v2.0.1, `torch/utils/data/dataloader.py`, "
     "docs/ci.md#pre-commit, https://github.com/pytorch/pytorch/issues/13246", []),
])
def test_the_pattern_rejects_our_references_and_keeps_citations(text, found):
    assert internal_references(text) == found


def test_contributing_points_only_to_files_in_the_repository():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "../" not in text and "RULES.md" not in text and "FACTS.md" not in text
    links = re.findall(r"\]\(([^)#]+)", text)
    assert links and all((ROOT / link).exists() for link in links), links
