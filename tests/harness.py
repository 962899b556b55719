"""Fixture expectations: `# DL101:24 DL102:40` at the end of a line, `# OPTIONS: ...` lines."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import List, Set, Tuple

from flake8.options.manager import OptionManager

from flake8_dataloader.plugin import DataLoaderChecker
from flake8_dataloader.settings import Settings

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
    """Parse plugin options with flake8's real option manager."""
    manager = OptionManager(version="test", plugin_versions="", parents=[], formatter_names=["default"])
    DataLoaderChecker.add_options(manager)
    namespace = manager.parse_args(argv)
    return Settings.build(namespace.dataloader_names, namespace.dataloader_start_method)


def fixture_files(root: Path) -> List[Path]:
    return sorted(p for p in root.rglob("*.py"))
