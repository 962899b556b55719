"""The line length a fix lays a call out for: flake8's, else the project's formatter's, else 79.

flake8's `max-line-length` counts when it is set (command line or flake8 config file);
otherwise the nearest `pyproject.toml` above the file that sets `[tool.ruff] line-length` or
`[tool.black] line-length` gives it (ruff's first), as those tools would read it.
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any, Dict, List, Optional

from flake8 import defaults
from flake8.options.config import load_config


def _toml_reader() -> Any:
    """tomllib (Python 3.11+), else tomli where installed (pip, black and ruff users have it), else None."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


OPTION = "--max-line-length"


def flake8_sets_it(argv: List[str], options: argparse.Namespace) -> bool:
    """`--max-line-length` is on the command line (argparse takes any unambiguous prefix) or in flake8's config."""
    if any(len(arg.split("=", 1)[0]) >= len("--max-l") and OPTION.startswith(arg.split("=", 1)[0]) for arg in argv):
        return True
    config, _ = load_config(options.config, list(options.append_config or ()), isolated=options.isolated)
    return any(config.has_option("flake8", key) for key in ("max-line-length", "max_line_length"))


class LineLengths:
    """The line length for each file, from flake8's options or the nearest pyproject.toml."""

    def __init__(self, argv: List[str], options: argparse.Namespace) -> None:
        self.flake8: Optional[int] = options.max_line_length if flake8_sets_it(argv, options) else None
        self._by_directory: Dict[str, int] = {}

    def for_file(self, path: str) -> int:
        if self.flake8 is not None:
            return self.flake8
        return self._for_directory(os.path.dirname(os.path.abspath(path)))

    def _for_directory(self, directory: str) -> int:
        if directory not in self._by_directory:
            found = pyproject_line_length(os.path.join(directory, "pyproject.toml"))
            parent = os.path.dirname(directory)
            if found is None:
                found = defaults.MAX_LINE_LENGTH if parent == directory else self._for_directory(parent)
            self._by_directory[directory] = found
        return self._by_directory[directory]


def pyproject_line_length(path: str) -> Optional[int]:
    """`[tool.ruff] line-length`, else `[tool.black] line-length`, of the file; None when neither is set."""
    reader = _toml_reader()
    if reader is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            tool: Any = reader.load(handle).get("tool", {})
    except (OSError, ValueError):  # unreadable or not TOML (tomllib's TOMLDecodeError is a ValueError)
        return None
    for name in ("ruff", "black"):
        table = tool.get(name) if isinstance(tool, dict) else None
        value = table.get("line-length") if isinstance(table, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
