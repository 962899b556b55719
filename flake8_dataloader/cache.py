"""The findings cache: each linted file's findings on disk, served again only for the same inputs.

A second flake8 run over an unchanged tree then skips the gate, the project index and the analysis,
and LibCST is not even imported. An entry holds a key over everything the file's findings are a
function of: the plugin (its version and its own modules), LibCST's version, the interpreter, the
settings (every --dataloader-* option, the gate's switch and the codes selected), the file's path
and text. It also lists what the gate and the analysis read of the project: module bytes (the
SHA-256 of the very bytes parsed, project/reads.py) and whether paths probed were files or
directories. An entry is served only when its key is equal and each of those still holds. Anything
else, a corrupt entry included, is a miss: the file is decided and analysed again.

The directory is `.flake8_dataloader_cache/` in the directory flake8 runs from, tagged with a
CACHEDIR.TAG and a `.gitignore` of `*`. There is one entry per (file path, settings, interpreter):
a new plugin, LibCST or text of the file overwrites it, so the directory grows only with the files
linted. nbQA's temporary copy of a notebook stands for its notebook (project/nbqa.py): one entry per
notebook, not one per run. Module summaries are kept in its `summaries/` (project/summary_cache.py).
An entry not served for PRUNE_AFTER (30 days), or whose file (or notebook) no longer exists, is
deleted: at most once a day, by the first run that writes an entry (a run served entirely from the
cache never prunes; a served entry's time is renewed at most once a day, one `fstat` per lookup).
Entries are written to a temporary file in that directory and renamed
into place (atomic: `flake8 -j N` processes may write at once). Nothing here ever raises out of flake8: any error is a
miss and one debug log line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from functools import lru_cache
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import __version__
from .project.reads import Reads, digests, holds, sha256_hex
from .settings import CACHE_ENV, TEMPORARY_SUFFIX, Settings, gate_enabled

LOG = logging.getLogger("flake8.dataloader")

DIRECTORY = ".flake8_dataloader_cache"
ENV = CACHE_ENV
FORMAT = 2
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# Created by flake8-dataloader: its findings cache.\n"
# LibCST's parser choice in the releases that had two (the native one is the default).
PARSER_ENV = "LIBCST_PARSER_TYPE"
_PACKAGE = os.path.dirname(os.path.abspath(__file__))

# (line, 0-based column, code, message), as engine.Result
Result = Tuple[int, int, str, str]
DAY = 24 * 3600
PRUNE_AFTER = 30 * DAY  # an entry not served for this long is deleted
SUMMARIES = "summaries"  # project/summary_cache.py's folder inside DIRECTORY
_PRUNED = ".pruned"  # its modification time: when the directory was last pruned


class Keys(NamedTuple):
    slot: str  # the entry's file name: the file's path, the settings and the interpreter
    key: str  # everything else the findings rest on; the entry is served only when equal
    path: str = ""  # the file the entry stands for (absolute), the linted file or its notebook: gone, the entry goes


def keys(source: str, filename: str, settings: Settings) -> Keys:
    """The entry of ``filename``. nbQA's temporary copy of a notebook (a new name and new cell separators
    on every run) is keyed on the notebook's path and the text with its separators made equal: one entry
    per notebook, served again while its code cells are unchanged."""
    options = {
        "loader_names": sorted(settings.loader_names),
        "start_method": settings.start_method,
        "notebook": settings.notebook,
        "follow_imports": settings.follow_imports,
        "selected": sorted(settings.selected),
        "gate": gate_enabled(settings),  # the environment switch too: turning the gate off is a check
    }
    path, stands_for = os.path.abspath(filename), None
    if filename.endswith(TEMPORARY_SUFFIX):
        from .project.nbqa import identity  # only for a file named as nbQA names its copies

        notebook = identity(filename, source)
        if notebook is not None:
            path, source, stands_for = notebook.notebook, notebook.text, "nbqa"
    slot = hash_parts([FORMAT, sys.version, sys.prefix, path, options] + ([stands_for] if stands_for else []))
    text = sha256_hex(source.encode("utf-8", "surrogatepass"))
    return Keys(slot, hash_parts([slot, installation(), text]), path)


def hash_parts(parts: list) -> str:
    return sha256_hex(json.dumps(parts, sort_keys=True).encode())


@lru_cache(maxsize=1)
def installation() -> str:
    """The plugin's version and modules, and LibCST's version: a new install of either is a miss.
    Without importing LibCST (a served run never does): its version file's bytes, via find_spec."""
    return hash_parts([__version__, _own_modules(), _libcst_version(), os.environ.get(PARSER_ENV, "")])


def _own_modules() -> List[Tuple[str, int, int]]:
    """Each module of the plugin with its size and modification time: an edited checkout of the
    plugin (a contributor's) never gets findings of its older code under the same version.
    os.scandir, not os.walk: a third of the cost (0.8 ms of a 0.15 s flake8 run, not 2.2)."""
    found = []
    directories = [_PACKAGE]
    while directories:
        for entry in os.scandir(directories.pop()):
            if entry.is_dir():
                if entry.name != "__pycache__":
                    directories.append(entry.path)
            elif entry.name.endswith(".py"):
                stat = entry.stat()
                found.append((entry.path[len(_PACKAGE) + 1:], stat.st_size, stat.st_mtime_ns))
    return sorted(found)


def _libcst_version() -> Optional[str]:
    from importlib.util import find_spec  # already loaded by flake8

    spec = find_spec("libcst")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:  # written by the build: the version and the commit
        with open(os.path.join(list(spec.submodule_search_locations)[0], "_version.py"), "rb") as handle:
            return sha256_hex(handle.read())
    except OSError:
        from importlib.metadata import version  # slower (a scan of the installed distributions)

        return version("libcst")


# Path -> ((st_mtime_ns, st_size, st_ino), digest): each module is hashed once per process for lookups.
_HASHED: Dict[str, Tuple[Tuple[int, int, int], Optional[str]]] = {}


def _digest(path: str) -> Optional[str]:
    """The SHA-256 of ``path``'s bytes now (None: missing or unreadable), from the memo while its stat holds."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    memo = _HASHED.get(path)
    if memo is not None and memo[0] == stamp:
        return memo[1]
    digest = _file_digest(path)
    _HASHED[path] = (stamp, digest)
    return digest


def _file_digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return sha256_hex(handle.read())
    except OSError:
        return None


# (path, answer seen) -> whether it still holds: asked once per process, as locate.py answers an import once.
_PROBED: Dict[Tuple[str, str], bool] = {}


def _holds(path: str, seen: str) -> bool:
    if (path, seen) not in _PROBED:
        _PROBED[path, seen] = holds(path, seen)
    return _PROBED[path, seen]


def forget() -> None:
    """Drop the memos of digests and probes (a long-lived process; tests)."""
    _HASHED.clear()
    _PROBED.clear()
    _pruning_checked[0] = False


def _path(name: str, root: str) -> str:
    return os.path.join(root, DIRECTORY, name + ".json")


def lookup(keys: Keys, root: str = ".") -> Optional[List[Result]]:
    """The findings kept for this very analysis, or None (a miss)."""
    try:
        with open(_path(keys.slot, root), encoding="utf-8") as handle:
            entry = json.load(handle)
            written = os.fstat(handle.fileno()).st_mtime
        if entry["key"] != keys.key:
            return None  # another text of the file, another plugin or LibCST: overwritten by this run
        files: Dict[str, Optional[str]] = entry["files"]
        probes: Dict[str, str] = entry["probes"]
        if any(_digest(path) != digest for path, digest in files.items()):
            return None
        if not all(_holds(path, seen) for path, seen in probes.items()):
            return None
        renew_served(_path(keys.slot, root), written)
        return [(int(line), int(column), str(code), str(message)) for line, column, code, message in entry["results"]]
    except FileNotFoundError:
        return None
    except Exception as exc:  # a corrupt or foreign entry: analysed again
        LOG.debug("flake8-dataloader: cache entry %s unusable: %s: %s", keys.slot, type(exc).__name__, exc)
        return None


def renew_served(entry: str, written: float) -> None:
    """A served entry's time, renewed at most once a day, so that pruning keeps it."""
    if time.time() - written > DAY:
        with contextlib.suppress(OSError):
            os.utime(entry)


def store(keys: Keys, reads: Reads, results: List[Result], root: str = ".") -> None:
    """Keep ``results`` with what the analysis read; never raises."""
    try:
        files = digests(sorted(reads.files))
        if files is None:
            LOG.debug("flake8-dataloader: not caching %s: a module it read changed during the run", keys.slot)
            return
        directory = prepare(root)
        entry = {
            "key": keys.key,
            "path": keys.path,
            "files": files,
            "probes": dict(sorted(reads.probes.items())),
            "results": [list(result) for result in results],
        }
        write(directory, keys.slot + ".json", json.dumps(entry))
        if not _pruning_checked[0]:
            _pruning_checked[0] = True
            prune_now_and_then(directory)
    except Exception as exc:
        LOG.debug("flake8-dataloader: cache not written for %s: %s: %s", keys.slot, type(exc).__name__, exc)


_pruning_checked = [False]  # once per process: the first entry written asks whether a day has passed


def prune_now_and_then(directory: str, now: Optional[float] = None) -> None:
    """Prune the directory when it was last pruned a day ago or more (or never)."""
    now = time.time() if now is None else now
    marker = os.path.join(directory, _PRUNED)
    try:
        if now - os.stat(marker).st_mtime < DAY:
            return
    except FileNotFoundError:
        pass
    with open(marker, "a", encoding="utf-8"):
        pass
    os.utime(marker, (now, now))  # first: the other processes of a `flake8 -j N` run leave it to this one
    prune(directory, now)


def prune(directory: str, now: float) -> None:
    """Delete the entries not served for PRUNE_AFTER, those of files that no longer exist, and
    temporary files a killed process left (a day old); module summaries (a key line, then the
    entry) alike."""
    summaries = os.path.join(directory, SUMMARIES)
    for folder in (directory, summaries) if os.path.isdir(summaries) else (directory,):
        for item in os.scandir(folder):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
                age = now - item.stat().st_mtime
                if item.name.endswith(".json"):
                    if age <= PRUNE_AFTER:
                        with open(item.path, encoding="utf-8") as handle:
                            text = handle.read()
                        entry = json.loads(text.partition("\n")[2] if folder == summaries else text)
                        path = entry.get("path")
                        if not isinstance(path, str) or not path or os.path.exists(path):
                            continue
                    os.unlink(item.path)
                elif item.name.startswith(".tmp-") and age > DAY:
                    os.unlink(item.path)


def prepare(root: str) -> str:
    """The cache's directory under ``root``, made and tagged (CACHEDIR.TAG, a `.gitignore` of `*`)."""
    directory = os.path.join(root, DIRECTORY)
    os.makedirs(directory, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
        if not os.path.exists(os.path.join(directory, name)):
            write(directory, name, text)
    return directory


def write(directory: str, name: str, text: str) -> None:
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
