"""Imported modules read once per process: their import table and their summary.

Cached by (path, mtime, size) and the loader names configured, and within a cached analysis on
disk by its text (summary_cache.py). A module is read
and parsed, never run. One that cannot be read, decoded or parsed contributes
nothing, and never fails the file that imports it.
"""

from __future__ import annotations

import ast
import logging
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Dict, FrozenSet, NamedTuple, Optional, Tuple

from ..errors import STRICT_ENV, BudgetExceeded, ParseFailure
from ..facts.foreign import EMPTY_SUMMARY, ModuleSummary
from ..facts.frameworks import LIGHTNING_TRIGGER
from ..screen.tokens import has_trigger
from ..settings import Settings
from .given import uses_what_it_is_given
from . import index, reads
from .index import import_table
from .locate import forget, project_root, root_probes, shown

if TYPE_CHECKING:
    import libcst as cst

    from ..facts.analysis import FileFacts

LOG = logging.getLogger("flake8.dataloader")

# A module without a dataset, a loader or a Lightning class summarises to something only through these.
HELPER_TOKENS = ("DistributedSampler", "ignite", "lightning")
# Generated modules (protobuf, tables) can be huge and hold no datasets: not read past this.
MAX_MODULE_BYTES = 256_000


class ModuleEntry(NamedTuple):
    summary: ModuleSummary
    exports: Dict[str, str]  # name bound by an import at module level -> its dotted name (`.stream.Stream`)
    stars: Tuple[str, ...]  # modules of `from ... import *`


EMPTY_ENTRY = ModuleEntry(EMPTY_SUMMARY, {}, ())
_CACHE: Dict[Tuple[str, int, int, FrozenSet[str]], ModuleEntry] = {}


def entry(path: str, settings: Settings) -> ModuleEntry:
    if reads.current() is not None:  # a cached analysis: its result rests on these bytes and the shown path
        reads.file_read(path)
        reads.probed(root_probes(os.path.dirname(path)))
    try:
        stat = os.stat(path)
    except OSError:
        reads.observed(path, None)
        return EMPTY_ENTRY
    key = (path, stat.st_mtime_ns, stat.st_size, settings.loader_names)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = _read(path, stat.st_size, settings)
    return cached


def _text(path: str) -> Optional[str]:
    """The module's text as Python decodes it (coding cookie, byte-order mark); None when unreadable."""
    try:
        return index.module_source(path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, MemoryError) as exc:
        LOG.info("flake8-dataloader: not following %s: %s", path, exc)
        return None


def _read(path: str, size: int, settings: Settings) -> ModuleEntry:
    if size > MAX_MODULE_BYTES:
        LOG.info("flake8-dataloader: not following %s: %d bytes", path, size)
        reads.observed_unread(path, MAX_MODULE_BYTES)
        return EMPTY_ENTRY
    source = _text(path)
    if source is None:
        return EMPTY_ENTRY
    kept = _kept(path, source, settings)
    if kept is not None:
        return kept
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        LOG.info("flake8-dataloader: not following %s: %s", path, exc)
        return EMPTY_ENTRY
    # What a summary can hold: dataset classes, loader factories, functions and classes iterating what they
    # get, Lightning classes, functions returning DistributedSamplers or Ignite engines.
    if not ("Dataset" in source or LIGHTNING_TRIGGER in source or has_trigger(source, settings, tree)
            or any(token in source for token in HELPER_TOKENS) or uses_what_it_is_given(tree)):
        return ModuleEntry(EMPTY_SUMMARY, *import_table(tree))
    return ModuleEntry(_summarised(path, source, tree, settings), *import_table(tree))


def _kept(path: str, source: str, settings: Settings) -> Optional[ModuleEntry]:
    """The summary kept on disk for this text (only within a cached analysis: the findings cache's switches)."""
    if reads.current() is None:
        return None
    from . import summary_cache

    kept = summary_cache.lookup(path, _shown(path), source, settings.loader_names)
    return None if kept is None else ModuleEntry(kept[0], *kept[1])


def _shown(path: str) -> str:
    return shown(path, project_root(os.path.dirname(path)))


def _summarised(
    path: str, source: str, tree: ast.AST, settings: Settings, analysed: Optional[Tuple[cst.Module, FileFacts]] = None
) -> ModuleSummary:
    """The summary of a module's text, from ``analysed`` (its tree and facts alone) or a parse of its own;
    kept on disk within a cached analysis."""
    from ..facts.analysis import build_facts  # the facts load only for a module that may hold something
    from .summarise import summarise

    try:
        parsed_here = analysed is None
        module, facts = build_facts(source, settings.loader_names, tree) if analysed is None else analysed
        summary = summarise(facts, module, source, tree, _shown(path), settings)
        if parsed_here:
            _keep_parsed(path, source, module, facts)
        if reads.current() is not None:
            from . import summary_cache

            summary_cache.store(path, _shown(path), source, settings.loader_names, summary, import_table(tree))
        return summary
    except (ParseFailure, RecursionError) as exc:
        LOG.info("flake8-dataloader: not following %s: %s", path, exc)
    except BudgetExceeded as exc:  # remembered as no summary: never recomputed for another importer
        LOG.warning("flake8-dataloader: not following %s: its summary took %s", path, exc)
    except Exception as exc:  # a summary must never cost a file its own findings
        if os.environ.get(STRICT_ENV):
            raise
        LOG.warning("flake8-dataloader: internal error summarising %s: %s: %s", path, type(exc).__name__, exc)
    return EMPTY_SUMMARY


# Modules parsed for a summary before flake8 reaches them (train.py comes before data/): their tree and
# traversal, handed to the lint of that file when it is the same text. A LibCST tree and its facts take
# about 200 bytes per source character: up to this many characters are kept, oldest dropped first.
MAX_PARSED_CHARS = 300_000
_PARSED: "OrderedDict[str, Tuple[str, cst.Module, FileFacts]]" = OrderedDict()


_kept_chars = [0]


def _keep_parsed(path: str, source: str, module: cst.Module, facts: FileFacts) -> None:
    _drop_parsed(path)
    _PARSED[path] = (source, module, facts)
    _kept_chars[0] += len(source)
    while _kept_chars[0] > MAX_PARSED_CHARS and _PARSED:
        _drop_parsed(next(iter(_PARSED)))


def _drop_parsed(path: str) -> Optional[Tuple[str, cst.Module, FileFacts]]:
    kept = _PARSED.pop(path, None)
    if kept is not None:
        _kept_chars[0] -= len(kept[0])
    return kept


def take_parsed(path: str, source: str) -> Optional[Tuple[cst.Module, FileFacts]]:
    """The LibCST module and facts (of the file alone) of ``path`` if a summary parsed this very text; once."""
    kept = _drop_parsed(os.path.abspath(path))
    if kept is None or kept[0] != source:
        return None
    return kept[1], kept[2]


def remember(
    path: str, source: str, tree: Optional[ast.AST], module: cst.Module, facts: FileFacts, settings: Settings
) -> None:
    """Store the summary of a file just analysed alone, if ``source`` is what the file holds now."""
    try:
        stat = os.stat(path)
    except OSError:
        return
    key = (path, stat.st_mtime_ns, stat.st_size, settings.loader_names)
    if key in _CACHE or stat.st_size > MAX_MODULE_BYTES or _text(path) != source:
        return
    try:
        tree = tree if tree is not None else ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    _CACHE[key] = ModuleEntry(_summarised(path, source, tree, settings, (module, facts)), *import_table(tree))


def clear() -> None:
    """Forget every module read and every import located (a long-lived process; tests)."""
    _CACHE.clear()
    index.clear()
    _PARSED.clear()
    _kept_chars[0] = 0
    forget()
    reads.forget()
