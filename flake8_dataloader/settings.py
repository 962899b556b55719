"""The plugin's options, parsed once per flake8 run into a frozen object, and the one option decided per
file: is it a Jupyter notebook's code cells as nbQA hands them to flake8?"""

from __future__ import annotations

import argparse
import os
import re
from functools import lru_cache
from typing import FrozenSet, Iterable, NamedTuple, Optional

from . import manifest
from .facts.constants import DEFAULT_LOADER_NAMES

# In a notebook the main module has no file: spawn/forkserver workers do not re-run it, but cannot
# import what its cells define.
# nbQA 1.x writes `# %%NBQA-CELL-SEP` and 6 hex digits (secrets.token_hex(3)) on a line of its own.
SEPARATOR = "# %%NBQA-CELL-SEP"
CELL_SEPARATOR = re.compile("^" + re.escape(SEPARATOR) + "[0-9a-f]+$", re.MULTILINE)
MARKER = "NBQA-CELL-SEP"  # a substring test first: most files never pay for the regex


def is_notebook_text(text: str) -> bool:
    """True when ``text`` is a notebook's code cells as nbQA hands them to flake8."""
    return MARKER in text and CELL_SEPARATOR.search(text) is not None


# nbQA's temporary file: tempfile.mkstemp(prefix=<notebook name>, suffix="_nbqa_ipynb.py"), next to the notebook.
# A notebook of one code cell has no separator: its file name still tells.
TEMPORARY_SUFFIX = "_nbqa_ipynb.py"


def is_notebook(text: str, filename: str, setting: str = "auto") -> bool:
    """`--dataloader-notebook`: on (every file), off (none), auto (nbQA's separator or its file name)."""
    if setting != "auto":
        return setting == "on"
    return filename.endswith(TEMPORARY_SUFFIX) or is_notebook_text(text)


START_METHODS = ("auto", "spawn", "forkserver", "fork")
SWITCH = ("on", "off")
NOTEBOOK = ("auto", "on", "off")
CACHE_ENV = "FLAKE8_DATALOADER_CACHE"  # `off` turns the findings cache off whatever the options say
GATE_ENV = "FLAKE8_DATALOADER_GATE"  # `off` turns the gate (gate.py) off whatever the options say


def cache_enabled_by_env() -> bool:
    return os.environ.get(CACHE_ENV, "").strip().lower() != "off"


def gate_enabled(settings: Settings) -> bool:
    """Here, not in gate.py: the cache keys on it without loading the gate."""
    return settings.gate and os.environ.get(GATE_ENV, "").lower() not in ("off", "0", "false", "no")


# What flake8 reports without --select/--ignore: every code but the opt-in ones.
DEFAULT_SELECTED = frozenset(manifest.CODES) - frozenset(manifest.DEFAULT_OFF)


def invalid_choice(option: str, value: str, choices) -> str:
    """argparse's own words for a value outside ``choices``, as the command line would print them."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(option, choices=choices)
    try:
        parser.parse_args([f"{option}={value}"])
    except argparse.ArgumentError as exc:
        return str(exc)
    return f"argument {option}: invalid choice: {value!r}"


class SettingsError(ValueError):
    """An option value that cannot be used."""


class Settings(NamedTuple):  # not a dataclass: flake8 does not import dataclasses, and start-up counts
    loader_names: FrozenSet[str] = DEFAULT_LOADER_NAMES
    start_method: str = "auto"
    extra_triggers: FrozenSet[str] = frozenset()
    follow_imports: bool = True  # read the project's own modules a file imports
    # The codes flake8 reports (its --select/--ignore decision): the gate (gate.py) asks only their conditions.
    selected: FrozenSet[str] = DEFAULT_SELECTED
    gate: bool = True  # decide on flake8's ast which files need the analysis (--dataloader-gate)
    cache: bool = False  # keep each file's findings on disk (--dataloader-cache, cache.py); flake8 turns it on
    # Is the file a notebook's cells (is_notebook)? `auto` until the engine decides it for one file.
    notebook: str = "auto"

    @classmethod
    def build(
        cls,
        names: Iterable[str] = (),
        start_method: str = "auto",
        follow_imports: str = "on",
        selected: Optional[Iterable[str]] = None,
        gate: str = "on",
        cache: str = "off",
        notebook: str = "auto",
    ) -> "Settings":
        extra = []
        for raw in names:
            name = raw.strip()
            if not name:
                continue
            parts = name.split(".")
            if not all(part.isidentifier() for part in parts):
                raise SettingsError(
                    f"argument --dataloader-names: {name!r} is not a dotted Python name (e.g. mypkg.data.Loader)"
                )
            extra.append(name)
        if start_method not in START_METHODS:
            raise SettingsError(invalid_choice("--dataloader-start-method", start_method, START_METHODS))
        if follow_imports not in SWITCH:
            raise SettingsError(invalid_choice("--dataloader-follow-imports", follow_imports, SWITCH))
        if gate not in SWITCH:
            raise SettingsError(invalid_choice("--dataloader-gate", gate, SWITCH))
        if cache not in SWITCH:
            raise SettingsError(invalid_choice("--dataloader-cache", cache, SWITCH))
        if notebook not in NOTEBOOK:
            raise SettingsError(invalid_choice("--dataloader-notebook", notebook, NOTEBOOK))
        return cls(
            loader_names=DEFAULT_LOADER_NAMES | frozenset(extra),
            start_method=start_method,
            extra_triggers=frozenset(name.rsplit(".", 1)[-1] for name in extra),
            follow_imports=follow_imports == "on",
            selected=DEFAULT_SELECTED if selected is None else frozenset(selected),
            gate=gate == "on",
            cache=cache == "on",
            notebook=notebook,
        )

    def for_file(self, text: str, filename: str) -> "Settings":
        """These settings with `notebook` decided for one file: `on` or `off`, never `auto`."""
        if self.notebook != "auto":
            return self
        return self._replace(notebook="on" if is_notebook(text, filename) else "off")


DEFAULT_SETTINGS = Settings()


@lru_cache(maxsize=16)
def loader_tails(settings: Settings) -> FrozenSet[str]:
    """The last names of the loader classes (`DataLoader`, `StatefulDataLoader`, configured ones)."""
    return frozenset(name.rsplit(".", 1)[-1] for name in settings.loader_names)
