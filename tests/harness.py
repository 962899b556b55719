"""Fixture expectations: `# DL101:24 DL102:40` at the end of a line, `# OPTIONS: ...` lines."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import List, Set, Tuple

from flake8.options.manager import OptionManager

from flake8_dataloader.engine import analyse
from flake8_dataloader.plugin import DataLoaderChecker
from flake8_dataloader.rules import RULES
from flake8_dataloader.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROJECTS = FIXTURES / "projects"
EXPECT = re.compile(r"#\s*(DL\d{3}:\d+(?:\s+DL\d{3}:\d+)*)\s*$")
OPTIONS = re.compile(r"^#\s*OPTIONS:\s*(.*)$")

Expectation = Tuple[int, int, str]


def expectations(source: str) -> Set[Expectation]:
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for item in match.group(1).split():
                code, column = item.split(":")
                found.add((number, int(column), code))
    return found


def option_args(source: str) -> List[str]:
    args: List[str] = []
    for line in source.splitlines():
        match = OPTIONS.match(line.strip())
        if match:
            args.extend(shlex.split(match.group(1)))
    return args


def settings_from_argv(argv: List[str]) -> Settings:
    """Parse plugin options with flake8's real option manager (flake8's own options are ignored)."""
    manager = OptionManager(version="test", plugin_versions="", parents=[], formatter_names=["default"])
    DataLoaderChecker.add_options(manager)
    namespace, _ = manager.parser.parse_known_args(argv)
    return Settings.build(
        namespace.dataloader_names, namespace.dataloader_start_method, namespace.dataloader_follow_imports,
        notebook=namespace.dataloader_notebook,
    )


def enabled_default_off(argv: List[str]) -> Set[str]:
    """Codes that are off by default and switched on with --extend-select / --select."""
    enabled: Set[str] = set()
    for arg in argv:
        if arg.startswith(("--extend-select=", "--select=")):
            enabled.update(code.strip() for code in arg.split("=", 1)[1].split(","))
    return {rule.CODE for rule in RULES if rule.DEFAULT_OFF and rule.CODE in enabled}


def fixture_files(root: Path) -> List[Path]:
    """Single-file fixtures (the multi-file projects under fixtures/projects/ are checked as trees)."""
    return sorted(p for p in root.rglob("*.py") if PROJECTS not in p.parents)


def project_expectations(root: Path) -> Set[Tuple[str, int, int, str]]:
    """(path relative to the project, line, column, code) over every file of a fixture project."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        found |= {(relative, line, col, code) for line, col, code in expectations(path.read_text(encoding="utf-8"))}
    return found


DEFAULT_OFF = frozenset(rule.CODE for rule in RULES if rule.DEFAULT_OFF)


def fixture_findings(name: str) -> Set[Expectation]:
    """The default-on findings of one fixture file, analysed with its `# OPTIONS:`."""
    source = (FIXTURES / name).read_text(encoding="utf-8")
    found = analyse(source, settings_from_argv(option_args(source)))
    return {(line, col, code) for line, col, code, _ in found if code not in DEFAULT_OFF}


def fixture_expectations(name: str) -> Set[Expectation]:
    return expectations((FIXTURES / name).read_text(encoding="utf-8"))
