"""The plugin's options, parsed once per flake8 run into a frozen object."""

from __future__ import annotations

import argparse
from functools import lru_cache
from typing import FrozenSet, Iterable, NamedTuple

from .facts.constants import DEFAULT_LOADER_NAMES

START_METHODS = ("auto", "spawn", "forkserver", "fork")
SWITCH = ("on", "off")


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

    @classmethod
    def build(cls, names: Iterable[str] = (), start_method: str = "auto", follow_imports: str = "on") -> "Settings":
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
        return cls(
            loader_names=DEFAULT_LOADER_NAMES | frozenset(extra),
            start_method=start_method,
            extra_triggers=frozenset(name.rsplit(".", 1)[-1] for name in extra),
            follow_imports=follow_imports == "on",
        )


DEFAULT_SETTINGS = Settings()


@lru_cache(maxsize=16)
def loader_tails(settings: Settings) -> FrozenSet[str]:
    """The last names of the loader classes (`DataLoader`, `StatefulDataLoader`, configured ones)."""
    return frozenset(name.rsplit(".", 1)[-1] for name in settings.loader_names)
