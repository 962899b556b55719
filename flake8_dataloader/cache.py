"""The findings cache: each linted file's findings on disk, served again only for the same inputs.

A second flake8 run over an unchanged tree then skips the analysis, and LibCST is not even
imported. An entry is found by a key over everything the analysis is a function of: the plugin's
version, Python's version, the settings (every --dataloader-* option and the codes selected), the
file's path and text. It also lists what the analysis read of the project (module bytes, by
SHA-256, and whether paths it probed were files or directories); an entry is served only when each
still matches. Anything else, a corrupt entry included, is a miss: the file is analysed again.

The directory is `.flake8_dataloader_cache/` in the directory flake8 runs from, tagged with a
CACHEDIR.TAG and a `.gitignore` of `*`. Entries are written to a temporary file in that directory
and renamed into place (atomic: `flake8 -j N` processes may write at once). Nothing here ever
raises out of flake8: any error is a miss and one debug log line. Old entries are not pruned:
delete the directory to reclaim the space.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
from typing import Dict, List, Optional, Tuple

from . import STARTED_NS, __version__
from .project.reads import Reads, holds
from .settings import CACHE_ENV, Settings

LOG = logging.getLogger("flake8.dataloader")

DIRECTORY = ".flake8_dataloader_cache"
ENV = CACHE_ENV
FORMAT = 1
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# Created by flake8-dataloader: its findings cache.\n"

# Modules modified after this (the start of the flake8 run) may have been read as they were before: the
# findings of a file that read one are not kept, so an edit during the run never pairs old findings with new bytes.
_STARTED_NS = STARTED_NS

# (line, 0-based column, code, message), as engine.Result
Result = Tuple[int, int, str, str]


def key(source: str, filename: str, settings: Settings) -> str:
    """The entry's name: a hash over every input of the file's analysis but the project's other files."""
    options = {
        "loader_names": sorted(settings.loader_names),
        "start_method": settings.start_method,
        "follow_imports": settings.follow_imports,
        "selected": sorted(settings.selected),
        "gate": settings.gate,
    }
    text = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    parts = [FORMAT, __version__, sys.version, sys.prefix, os.path.abspath(filename), options, text]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None  # missing or unreadable: the entry holds that too


def _path(name: str, root: str) -> str:
    return os.path.join(root, DIRECTORY, name + ".json")


def lookup(source: str, filename: str, settings: Settings, root: str = ".") -> Optional[List[Result]]:
    """The findings kept for this very analysis, or None (a miss)."""
    try:
        with open(_path(key(source, filename, settings), root), encoding="utf-8") as handle:
            entry = json.load(handle)
        files: Dict[str, Optional[str]] = entry["files"]
        probes: Dict[str, str] = entry["probes"]
        if any(_digest(path) != digest for path, digest in files.items()):
            return None
        if not all(holds(path, seen) for path, seen in probes.items()):
            return None
        return [(int(line), int(column), str(code), str(message)) for line, column, code, message in entry["results"]]
    except FileNotFoundError:
        return None
    except Exception as exc:  # a corrupt or foreign entry: analysed again
        LOG.debug("flake8-dataloader: cache entry for %s unusable: %s: %s", filename, type(exc).__name__, exc)
        return None


def store(
    source: str, filename: str, settings: Settings, reads: Reads, results: List[Result], root: str = "."
) -> None:
    """Keep ``results`` with what the analysis read; never raises."""
    try:
        if any(os.stat(path).st_mtime_ns >= _STARTED_NS for path in reads.files if os.path.exists(path)):
            LOG.debug("flake8-dataloader: not caching %s: a module it read changed during the run", filename)
            return
        directory = os.path.join(root, DIRECTORY)
        os.makedirs(directory, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
            if not os.path.exists(os.path.join(directory, name)):
                _write(directory, name, text)
        entry = {
            "files": {path: _digest(path) for path in sorted(reads.files)},
            "probes": dict(sorted(reads.probes.items())),
            "results": [list(result) for result in results],
        }
        _write(directory, key(source, filename, settings) + ".json", json.dumps(entry))
    except Exception as exc:
        LOG.debug("flake8-dataloader: cache not written for %s: %s: %s", filename, type(exc).__name__, exc)


def _write(directory: str, name: str, text: str) -> None:
    import tempfile  # only a miss writes: a run served from the cache never loads it

    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
