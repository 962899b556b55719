"""The cheap index of a project module, from its ast alone: which of its names may build a loader.

The prefilter's cross-module stage reads it. A file without a trigger token of its own holds a
finding only through a loader that another module builds: every rule needs a loader, and one
built elsewhere reaches the file only through a call of an imported factory. So such a file is
analysed only when one of its imports may name a factory: a module-level function or class of
that module whose body names a loader class (or an alias or subclass of one, or another such
function or class), followed through re-exports. A superset of the factories the module's summary
will hold; no LibCST. Read once per process per (path, mtime, size, loader names).
"""

from __future__ import annotations

import ast
import os
from importlib.util import decode_source
from typing import AbstractSet, Dict, FrozenSet, NamedTuple, Optional, Set, Tuple

from .definitions import (  # noqa: F401 - the index's judgements, read through it by the tests
    CLASS_KINDS, DATASET_PARTS, STRUCTURAL_KINDS, class_kinds, code_names, loader_classes, marked_defs,
    structural_kinds, top_defs,
)
from . import reads
from .locate import dotted_join, imported_pairs, locate
from .text import ModuleText, module_text

# The bounds of every module lookup for one linted file (project/view.py reads them from here).
MAX_REEXPORTS = 4
MAX_MODULES_PER_FILE = 64
# Generated modules are not read past this (as store.MAX_MODULE_BYTES).
MAX_INDEXED_BYTES = 256_000


class ModuleIndex(NamedTuple):
    builders: FrozenSet[str]  # module-level functions and classes that may build a loader
    exports: Dict[str, str]  # name bound by a module-level import -> its dotted name (`.stream.Stream`)
    stars: Tuple[str, ...]  # modules of `from ... import *`
    # The gate's questions (gate.py), by kind: module-level classes that may be that kind of class
    # themselves or through a base of the same module; and each class's imported bases, to follow.
    kinds: Dict[str, FrozenSet[str]] = {}
    bases: Dict[str, Tuple[str, ...]] = {}
    # Loader subclasses (a same-module base chain reaching a loader class) that build nothing else: called
    # under a loader class's name they are read as loader calls, not as factories. Among all loader
    # subclasses, those with an `__init__` in that chain: what a call omits may be set there; of these,
    # those that may give a call omitting `num_workers` workers (facts/subclass_init.py).
    loaders: FrozenSet[str] = frozenset()
    custom: FrozenSet[str] = frozenset()
    custom_workers: FrozenSet[str] = frozenset()


EMPTY_INDEX = ModuleIndex(frozenset(), {}, ())
CUSTOM_KINDS = ("custom", "custom_workers")  # ModuleIndex.custom, ModuleIndex.custom_workers
_CACHE: Dict[Tuple[str, int, int, FrozenSet[str]], "_Entry"] = {}


def import_table(tree: ast.AST) -> Tuple[Dict[str, str], Tuple[str, ...]]:
    """Names bound by module-level imports (also inside a top-level `if`/`try`), as the resolver spells them."""
    exports: Dict[str, str] = {}
    stars = []
    todo = list(getattr(tree, "body", ()))
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.ImportFrom):
            module = "." * (node.level or 0) + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    stars.append(module)
                else:
                    exports.setdefault(alias.asname or alias.name, dotted_join(module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    exports.setdefault(alias.asname, alias.name)
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body)
            todo.extend(getattr(node, "orelse", ()))
    return exports, tuple(stars)


def builders(tree: ast.AST, loader_tails: FrozenSet[str]) -> FrozenSet[str]:
    """Module-level functions and classes naming a loader class or, transitively, another of them."""
    marked = loader_marks(tree, loader_tails)
    return marked_defs(top_defs(tree), lambda definition: not definition.names.isdisjoint(marked))


def loader_marks(tree: ast.AST, loader_tails: FrozenSet[str]) -> Set[str]:
    """The loader classes' names as this module spells them: their tails and the imports binding one."""
    exports, _ = import_table(tree)
    return set(loader_tails) | {name for name, dotted in exports.items() if dotted.rsplit(".", 1)[-1] in loader_tails}


class _Entry:
    """One module read: its text facts at once, its parsed index only when a question needs it."""

    def __init__(self, path: str, size: int, loader_tails: FrozenSet[str]) -> None:
        self.path = path
        self.loader_tails = loader_tails
        self.readable = size <= MAX_INDEXED_BYTES  # a bigger module, or one unreadable: the index is empty
        self.text: Optional[ModuleText] = None  # None: the text tells nothing, the parse decides
        self._index: Optional[ModuleIndex] = None
        self._structural: Optional[Dict[str, FrozenSet[str]]] = None
        if not self.readable:
            reads.observed_unread(path, MAX_INDEXED_BYTES)
            return
        try:
            source = module_source(path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, MemoryError):
            self.readable = False  # the summary of such a module is empty too
            return
        self.text = module_text(source, loader_tails)

    def lacks(self, name: str) -> bool:
        """Certainly no builder named ``name`` here, nor an import binding it, nor a star import."""
        text = self.text
        return text is not None and not (text.names_loader or text.star or name in text.imported)

    def structural(self, kind: str) -> FrozenSet[str]:
        """The classes of a STRUCTURAL_KINDS kind, judged on the first question of one (parsed again)."""
        if self._structural is None:
            self._structural = {}
            if self.readable:
                try:
                    source = module_source(self.path)
                    self._structural = structural_kinds(top_defs(ast.parse(source)), source)
                except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
                    pass  # the summary of such a module is empty too
        return self._structural.get(kind, frozenset())

    def index(self) -> ModuleIndex:
        """Parsed on the first question the text cannot answer (read again: most modules never are)."""
        if self._index is None:
            self._index = EMPTY_INDEX
            if self.readable:
                try:
                    self._index = _parsed(module_source(self.path), self.loader_tails)
                except (OSError, SyntaxError, UnicodeDecodeError, ValueError, MemoryError):
                    pass  # the summary of such a module is empty too
        return self._index


def module_index(path: str, loader_tails: FrozenSet[str]) -> ModuleIndex:
    entry = _entry(path, loader_tails)
    return EMPTY_INDEX if entry is None else entry.index()


def _entry(path: str, loader_tails: FrozenSet[str]) -> Optional[_Entry]:
    reads.file_read(path)
    try:
        stat = os.stat(path)
    except OSError:
        reads.observed(path, None)
        return None
    key = (path, stat.st_mtime_ns, stat.st_size, loader_tails)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = _Entry(path, stat.st_size, loader_tails)
    return cached


def module_source(path: str) -> str:
    """A module's text as Python decodes it (coding cookie, byte-order mark dropped).

    Raises OSError, SyntaxError (a bad coding cookie), UnicodeDecodeError, ValueError or MemoryError.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        reads.observed(path, None)
        raise
    reads.observed(path, data)  # the findings cache pairs what is built from this text with these bytes
    source = decode_source(data)
    return source[1:] if source.startswith("\ufeff") else source


def _parsed(source: str, loader_tails: FrozenSet[str]) -> ModuleIndex:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return EMPTY_INDEX  # the summary of such a module is empty too
    # A module whose text names no loader class builds none itself (most modules): no walk for it.
    names_loader = any(tail in source for tail in loader_tails)
    found = builders(tree, loader_tails) if names_loader else frozenset()
    exports, stars = import_table(tree)
    kinds, bases = class_kinds(tree, exports, source)
    if not names_loader:
        return ModuleIndex(found, exports, stars, kinds, bases)
    classes = loader_classes(tree, loader_marks(tree, loader_tails), found)
    return ModuleIndex(found, exports, stars, kinds, bases, classes.plain, classes.custom, classes.workers)


def names_a_builder(
    tree: ast.AST,
    filename: str,
    loader_tails: FrozenSet[str],
    used: AbstractSet[str],
    kind: str = "",
    read_as_loaders: AbstractSet[str] = frozenset(),
) -> bool:
    """Some import of the file (at any level) may name a loader-building function or class of its project.

    ``kind``: instead of a builder, a class of that kind of CLASS_KINDS or STRUCTURAL_KINDS (or one
    subclassing such a class through the project's modules). ``used``: the file's identifiers. A module
    imported whole (`import data`, `from pkg import data`) is used through attributes, so only its names
    the file mentions count. ``read_as_loaders``: names the file binds by import whose calls the caller
    reads as loader calls; a loader subclass imported under one is no factory. Past MAX_MODULES_PER_FILE
    modules the answer is yes: the file is analysed, as without this stage.
    """
    lookup = _Lookup(os.path.abspath(filename), loader_tails, used, set(), MAX_MODULES_PER_FILE, kind)
    try:
        for dotted, local in imported_pairs(tree):
            lookup.as_loader = local in read_as_loaders
            if lookup.offers(dotted, lookup.importer, MAX_REEXPORTS):
                return True
        return False
    except _TooMany:
        return True


def custom_loaders(
    tree: ast.AST, filename: str, loader_tails: FrozenSet[str], names: AbstractSet[str], workers: bool = False
) -> Set[str]:
    """Which of ``names``, bound by the file's imports, name a loader subclass of its project with an
    `__init__` (what its calls omit may be set there); ``workers``: one of those that may give a call
    omitting `num_workers` workers. Past MAX_MODULES_PER_FILE modules: all of them."""
    kind = "custom_workers" if workers else "custom"
    lookup = _Lookup(os.path.abspath(filename), loader_tails, names, set(), MAX_MODULES_PER_FILE, kind)
    found: Set[str] = set()
    try:
        for dotted, local in imported_pairs(tree):
            if local in names and local not in found and lookup.offers(dotted, lookup.importer, MAX_REEXPORTS):
                found.add(local)
    except _TooMany:
        return set(names)
    return found


def may_build(
    qualname: str, importer: str, loader_tails: FrozenSet[str], consulted: Set[str], bound: int = MAX_MODULES_PER_FILE
) -> bool:
    """The imported name may be a loader factory (a builder, through re-exports): the summary's
    factories are a subset of these, so a name that is not one needs no summary for that question.

    ``consulted``: the modules the linted file has read so far, index and summaries together, kept
    by the caller; past ``bound`` of them the answer is yes (the summaries' own bound then decides).
    """
    try:
        return _Lookup(importer, loader_tails, set(), consulted, bound).offers(qualname, importer, MAX_REEXPORTS)
    except _TooMany:
        return True


class _TooMany(Exception):
    pass


class _Lookup:
    def __init__(
        self,
        importer: str,
        loader_tails: FrozenSet[str],
        used: AbstractSet[str],
        modules: Set[str],
        bound: int,
        kind: str = "",
    ) -> None:
        self.importer = importer
        self.loader_tails = loader_tails
        self.used = used  # the linted file's identifiers
        # (module, name, as_loader) -> the most re-export hops left when it was asked: asked again only with
        # more left, so the answer does not depend on the order of the file's imports, and grows with ``used``.
        self.seen: Dict[Tuple[str, str, bool], int] = {}
        self.modules = modules  # every module read for the linted file, at most ``bound``
        self.bound = bound
        # "" for builders, CUSTOM_KINDS for loader subclasses with an `__init__`, else a key of CLASS_KINDS or
        # STRUCTURAL_KINDS (classes, followed through their bases too).
        self.kind = kind
        self.as_loader = False  # builders: the name is read as a loader where it is imported

    def offered(self, entry: _Entry) -> FrozenSet[str]:
        index = entry.index()
        if self.kind in CUSTOM_KINDS:
            return index.custom_workers if self.kind == "custom_workers" else index.custom
        if self.kind in STRUCTURAL_KINDS:
            return entry.structural(self.kind)
        if self.kind:
            return index.kinds.get(self.kind, frozenset())
        return index.builders - index.loaders if self.as_loader else index.builders

    def entry(self, path: str) -> Optional[_Entry]:
        if path not in self.modules:
            if len(self.modules) >= self.bound:
                raise _TooMany()
            self.modules.add(path)
        return _entry(path, self.loader_tails)

    def index(self, path: str) -> ModuleIndex:
        entry = self.entry(path)
        return EMPTY_INDEX if entry is None else entry.index()

    def offers(self, dotted: str, importer: str, depth: int) -> bool:
        location = locate(dotted, importer)
        if location is None or location.path == self.importer:
            return False
        if not location.rest:
            return self.module_offers(location.path, depth)
        return self.name_offers(location.path, location.rest[0], depth)

    def name_offers(self, path: str, name: str, depth: int) -> bool:
        key = (path, name, self.as_loader)
        if self.seen.get(key, -1) >= depth:
            return False
        self.seen[key] = depth
        entry = self.entry(path)
        if entry is None or (self.kind in ("", *CUSTOM_KINDS) and entry.lacks(name)):
            return False  # what the parsed index would answer: no builder, no import of it, no star
        index = entry.index()
        if name in self.offered(entry):
            return True
        if depth <= 0:
            return False
        if self.follows_bases and any(self.offers(base, path, depth - 1) for base in index.bases.get(name, ())):
            return True
        if name in index.exports:
            return self.offers(index.exports[name], path, depth - 1)
        return any(self.offers(dotted_join(star, name), path, depth - 1) for star in index.stars)

    @property
    def follows_bases(self) -> bool:
        return self.kind not in ("", *CUSTOM_KINDS)

    def module_offers(self, path: str, depth: int) -> bool:
        """A module imported whole: a builder, or a re-export, among the names the file mentions."""
        key = (path, "", self.as_loader)
        if self.seen.get(key, -1) >= depth:
            return False
        self.seen[key] = depth
        entry = self.entry(path)
        if entry is None:
            return False
        index = entry.index()
        if self.offered(entry) & self.used:
            return True
        if depth <= 0:
            return False
        mentioned = sorted(index.bases.keys() & self.used) if self.follows_bases else []
        if any(self.offers(base, path, depth - 1) for name in mentioned for base in index.bases[name]):
            return True
        if any(self.offers(index.exports[name], path, depth - 1) for name in sorted(index.exports.keys() & self.used)):
            return True
        return any(self.offers(star, path, depth - 1) for star in index.stars)


def clear() -> None:
    _CACHE.clear()
