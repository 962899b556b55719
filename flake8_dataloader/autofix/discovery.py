"""Which files a command of ours walks: flake8's discovery, with default excludes as wide as ruff's.

flake8's default excludes name neither virtual environments nor build output, so a walk of a
project would reach the packages installed in its `.venv/`. Ours add ruff's defaults and any
directory holding a `pyvenv.cfg` (a virtual environment, whatever its name). `--exclude`
replaces the defaults and `--extend-exclude` adds to them, as in flake8 and ruff.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Callable, Dict, Iterator, List, Tuple

from flake8 import defaults, utils

STDIN = "-"
# ruff's default excludes (its `exclude` setting's documented default) beside flake8's own.
RUFF_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)
DEFAULT_EXCLUDE = tuple(dict.fromkeys([*defaults.EXCLUDE, *RUFF_EXCLUDE]))
LOG = logging.getLogger(__name__)


def exclude_patterns(options: argparse.Namespace) -> Tuple[List[str], bool]:
    """The patterns to exclude, and whether virtual environments are skipped too.

    flake8's ``options.exclude`` still holds flake8's defaults when no `--exclude` was given
    (command line or config file): then ours apply instead.
    """
    given = list(options.exclude) != list(defaults.EXCLUDE)
    base = list(options.exclude) if given else list(DEFAULT_EXCLUDE)
    return [*base, *options.extend_exclude], not given


def python_files(options: argparse.Namespace) -> List[Tuple[str, str]]:
    """Each file to work on, with the tree it was found in (the argument; a file's own directory).

    As flake8: a file named on the command line is taken whatever its name, unless excluded;
    one found in a directory must match `--filename` (default `*.py`).
    """
    patterns, skip_environments = exclude_patterns(options)

    def excluded(path: str) -> bool:
        if path == STDIN:
            if options.stdin_display_name == "stdin":
                return False
            path = options.stdin_display_name
        if utils.matches_filename(path, patterns=patterns, log_message='"%(path)s" is %(whether)sexcluded',
                                  logger=LOG):
            return True
        return skip_environments and os.path.isfile(os.path.join(path, "pyvenv.cfg"))

    found: Dict[str, str] = {}
    for argument in options.filenames or ["."]:
        root = argument if argument == STDIN or os.path.isdir(argument) else os.path.dirname(argument) or "."
        for path in _walk(argument, excluded):
            if path == STDIN or path == argument or utils.fnmatch(path, options.filename):
                found.setdefault(path, root)
    return sorted(found.items())


def _walk(argument: str, excluded: Callable[[str], bool]) -> Iterator[str]:
    """The files under ``argument`` (itself, when it is not a directory), excluded directories not entered."""
    if excluded(argument):
        return
    if not os.path.isdir(argument):
        yield argument
        return
    for directory, subdirectories, files in os.walk(argument):
        subdirectories[:] = sorted(d for d in subdirectories if not excluded(os.path.join(directory, d)))
        yield from (os.path.join(directory, name) for name in files if not excluded(os.path.join(directory, name)))
