"""What one file's analysis read of its project: the findings cache (cache.py) keys on it.

Module reads (store.entry, index.module_index) and path probes (locate: whether a file or a
directory exists) are noted while a ``Reads`` is active. Probes are kept with each located answer
(locate keeps answers per process), so a file analysed after another one still notes every probe
its own answers rest on.

The bytes themselves are digested where they are read (``observed``, from index.module_source),
once per read: module indexes and summaries are kept per process, so an analysis may rest on bytes
read for another file. Every read of a path in the process must give the same bytes; if two differ
(the module was edited during the run) the path is marked changed, and no analysis that used it is
cached, since the process may hold results of both versions.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from functools import lru_cache
from typing import Any, Callable, Dict, Iterable, Optional, Set

_active: list = []  # the Reads being filled (none outside a cached analysis)
# Path -> SHA-256 of the bytes read there (None: unreadable), or CHANGED; filled once a Reads was used.
_observed: Dict[str, Optional[str]] = {}
_observing = [False]
CHANGED = "changed"


class Reads:
    """Paths whose bytes were read, and paths probed with the answer seen."""

    def __init__(self) -> None:
        self.files: Set[str] = set()
        self.probes: Dict[str, str] = {}  # path -> "file", "dir", "not file" or "not dir" as seen

    def __enter__(self) -> "Reads":
        _observing[0] = True
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


def sha256_hex(data: bytes) -> str:
    return _sha256()(data).hexdigest()


@lru_cache(maxsize=1)
def _sha256() -> Callable[[bytes], Any]:
    """CPython's own SHA-256 (0.4 ms to load): hashlib loads OpenSSL first, 3-4 ms of start-up."""
    for name in ("_sha2", "_sha256"):  # Python 3.12+, 3.9-3.11
        with contextlib.suppress(ImportError, AttributeError):
            return importlib.import_module(name).sha256
    from hashlib import sha256

    return sha256


def observed(path: str, data: Optional[bytes]) -> None:
    """``data`` was read from ``path`` (None: it could not be read)."""
    if not _observing[0]:
        return  # no cached analysis in this process: nothing will ask
    digest = None if data is None else sha256_hex(data)
    path = os.path.abspath(path)
    if _observed.setdefault(path, digest) != digest:
        _observed[path] = CHANGED


def observed_unread(path: str, limit: int) -> None:
    """``path`` was not read past its size (over ``limit`` bytes): its bytes are what the result rests on."""
    if not _observing[0]:
        return
    try:
        with open(path, "rb") as handle:
            data: Optional[bytes] = handle.read()
    except OSError:
        data = None
    if data is not None and len(data) <= limit:  # it shrank since its size was taken
        _observed[os.path.abspath(path)] = CHANGED
    else:
        observed(path, data)


def digests(paths: Iterable[str]) -> Optional[Dict[str, Optional[str]]]:
    """The digest of the bytes read at each path; None when one was never read here or read twice differently."""
    found = {}
    for path in paths:
        if path not in _observed or _observed[path] == CHANGED:
            return None
        found[path] = _observed[path]
    return found


def forget() -> None:
    """Drop what was read (a long-lived process; tests)."""
    _observed.clear()
    _observing[0] = False


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
