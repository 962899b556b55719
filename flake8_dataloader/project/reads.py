"""What one file's analysis read of its project: the findings cache (cache.py) keys on it.

Module bytes read (store.entry, index.module_index) and path probes (locate: whether a file or a
directory exists) are noted while a ``Reads`` is active. Probes are kept with each located answer
(locate keeps answers per process), so a file analysed after another one still notes every probe
its own answers rest on.
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Set

_active: list = []  # the Reads being filled (none outside a cached analysis)


class Reads:
    """Paths whose bytes were read, and paths probed with the answer seen."""

    def __init__(self) -> None:
        self.files: Set[str] = set()
        self.probes: Dict[str, str] = {}  # path -> "file", "dir", "not file" or "not dir" as seen

    def __enter__(self) -> "Reads":
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)


def current() -> Optional[Reads]:
    return _active[-1] if _active else None


def file_read(path: str) -> None:
    reads = current()
    if reads is not None:
        reads.files.add(os.path.abspath(path))


def holds(path: str, seen: str) -> bool:
    """The probe of ``path`` would answer as it did (``seen``: "file", "not file", "dir" or "not dir")."""
    negated = seen.startswith("not ")
    kind = seen[4:] if negated else seen
    if kind not in ("file", "dir"):
        raise ValueError(f"unknown probe {seen!r}")
    found = os.path.isfile(path) if kind == "file" else os.path.isdir(path)
    return found != negated


def probed(probes: Dict[str, str]) -> None:
    reads = current()
    if reads is not None:
        reads.probes.update(probes)
