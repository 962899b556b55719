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
from collections import defaultdict
from importlib.util import decode_source
from typing import AbstractSet, DefaultDict, Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

from ..screen.tokens import names_in, names_of
from . import reads
from .locate import dotted_join, imported_names, locate
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


EMPTY_INDEX = ModuleIndex(frozenset(), {}, ())
# A class may be of a kind when its identifiers contain a part of each group (substrings, as the
# prefilter's tokens): an IterableDataset (`__iter__`, DL103's and DL502's imported streams), or a
# dataset class holding an RNG (DL201's dataset base class in another module, rule book v7).
DATASET_PARTS = ("Dataset", "torchvision", "__getitem__", "__getitems__", "__iter__")
CLASS_KINDS = {
    "stream": (("IterableDataset", "__iter__"),),
    "rng": (("default_rng", "RandomState", "Generator", "Random"), DATASET_PARTS),
}
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
    exports, _ = import_table(tree)
    marked = set(loader_tails) | {name for name, dotted in exports.items() if dotted.rsplit(".", 1)[-1] in loader_tails}
    mentioned_in: DefaultDict[str, List[str]] = defaultdict(list)  # identifier -> top-level defs naming it
    found: Set[str] = set()
    todo: List[str] = []
    for node in getattr(tree, "body", ()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = code_names(node) - {node.name}
            if names & marked:
                found.add(node.name)
                todo.append(node.name)
            else:
                for name in names:
                    mentioned_in[name].append(node.name)
    while todo:  # each def is marked once; each mention is read once
        for definition in mentioned_in.pop(todo.pop(), ()):
            if definition not in found:
                found.add(definition)
                todo.append(definition)
    return frozenset(found)


def code_names(definition: ast.AST) -> Set[str]:
    """``names_in`` of a def or class outside its annotations: a name read only as a type (a parameter's,
    a return's, an annotated assignment's) builds nothing, so it does not make the def a builder."""
    nodes: List[ast.AST] = []
    todo: List[ast.AST] = [definition]
    while todo:
        node = todo.pop()
        nodes.append(node)
        for field, value in ast.iter_fields(node):
            if field in _ANNOTATION_FIELDS and isinstance(node, _ANNOTATED):
                continue
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, ast.AST))
    return names_of(nodes)


_ANNOTATION_FIELDS = ("annotation", "returns")
_ANNOTATED = (ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)


class _Entry:
    """One module read: its text facts at once, its parsed index only when a question needs it."""

    def __init__(self, path: str, size: int, loader_tails: FrozenSet[str]) -> None:
        self.path = path
        self.loader_tails = loader_tails
        self.readable = size <= MAX_INDEXED_BYTES  # a bigger module, or one unreadable: the index is empty
        self.text: Optional[ModuleText] = None  # None: the text tells nothing, the parse decides
        self._index: Optional[ModuleIndex] = None
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
    found = builders(tree, loader_tails) if any(tail in source for tail in loader_tails) else frozenset()
    exports, stars = import_table(tree)
    kinds, bases = class_kinds(tree, exports, source)
    return ModuleIndex(found, exports, stars, kinds, bases)


def class_kinds(
    tree: ast.AST, exports: Dict[str, str], source: str
) -> Tuple[Dict[str, FrozenSet[str]], Dict[str, Tuple[str, ...]]]:
    """Per kind, the module-level classes that may be of it (own identifiers, or a base of this module
    that may be); and the bases each class imports (their dotted names), followed by the lookup.

    An identifier is a substring of an ASCII ``source``, so a kind whose groups the text does not
    all meet marks no class there, and no class's identifiers are collected for it."""
    possible = [
        kind
        for kind, groups in CLASS_KINDS.items()
        if not source.isascii() or all(any(part in source for part in group) for group in groups)
    ]
    classes = [node for node in getattr(tree, "body", ()) if isinstance(node, ast.ClassDef)]
    local_bases: Dict[str, List[str]] = {}
    imported: Dict[str, Tuple[str, ...]] = {}
    named: Dict[str, Set[str]] = {}
    for node in classes:
        names = {base.id for base in node.bases if isinstance(base, ast.Name)}
        roots = [_root(base) for base in node.bases]
        local_bases[node.name] = sorted(names & {c.name for c in classes})
        imported[node.name] = tuple(_dotted(base, exports) for base, root in zip(node.bases, roots) if root in exports)
        if possible:
            named[node.name] = names_in(node)
    kinds: Dict[str, FrozenSet[str]] = {kind: frozenset() for kind in CLASS_KINDS}
    for kind in possible:
        groups = CLASS_KINDS[kind]
        marked = {name for name, ids in named.items() if all(any(p in i for i in ids for p in g) for g in groups)}
        changed = True
        while changed:  # a chain of classes within one module: each pass marks at least one more, or stops
            changed = False
            for name, local in local_bases.items():
                if name not in marked and any(base in marked for base in local):
                    marked.add(name)
                    changed = True
        kinds[kind] = frozenset(marked)
    followed: Dict[str, Tuple[str, ...]] = {}
    for name in local_bases:  # a class's imported bases, with those of its bases in this module
        seen, todo = {name}, [name]
        found: List[str] = []
        while todo:
            current = todo.pop()
            found.extend(imported.get(current, ()))
            for base in local_bases.get(current, ()):
                if base not in seen:
                    seen.add(base)
                    todo.append(base)
        if found:
            followed[name] = tuple(dict.fromkeys(found))
    return kinds, followed


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.AST, exports: Dict[str, str]) -> str:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    base = exports[node.id] if isinstance(node, ast.Name) else ""
    return ".".join([base, *reversed(parts)]) if parts else base


def names_a_builder(
    tree: ast.AST, filename: str, loader_tails: FrozenSet[str], used: AbstractSet[str], kind: str = ""
) -> bool:
    """Some import of the file (at any level) may name a loader-building function or class of its project.

    ``kind``: instead of a builder, a class of that kind of CLASS_KINDS (or one subclassing such a
    class through the project's modules). ``used``: the file's identifiers. A module imported whole
    (`import data`, `from pkg import data`) is used through attributes, so only its names the file mentions count. Past
    MAX_MODULES_PER_FILE modules the answer is yes: the file is analysed, as without this stage.
    """
    lookup = _Lookup(os.path.abspath(filename), loader_tails, used, set(), MAX_MODULES_PER_FILE, kind)
    try:
        return any(lookup.offers(name, lookup.importer, MAX_REEXPORTS) for name in imported_names(tree))
    except _TooMany:
        return True


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
        # (module, name) -> the most re-export hops left when it was asked: asked again only with more
        # left, so the answer does not depend on the order of the file's imports, and grows with ``used``.
        self.seen: Dict[Tuple[str, str], int] = {}
        self.modules = modules  # every module read for the linted file, at most ``bound``
        self.bound = bound
        self.kind = kind  # "" for builders, else a key of CLASS_KINDS

    def offered(self, index: ModuleIndex) -> FrozenSet[str]:
        return index.kinds.get(self.kind, frozenset()) if self.kind else index.builders

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
        if self.seen.get((path, name), -1) >= depth:
            return False
        self.seen[(path, name)] = depth
        entry = self.entry(path)
        if entry is None or (not self.kind and entry.lacks(name)):
            return False  # what the parsed index would answer: no builder, no import of it, no star
        index = entry.index()
        if name in self.offered(index):
            return True
        if depth <= 0:
            return False
        if self.kind and any(self.offers(base, path, depth - 1) for base in index.bases.get(name, ())):
            return True
        if name in index.exports:
            return self.offers(index.exports[name], path, depth - 1)
        return any(self.offers(dotted_join(star, name), path, depth - 1) for star in index.stars)

    def module_offers(self, path: str, depth: int) -> bool:
        """A module imported whole: a builder, or a re-export, among the names the file mentions."""
        if self.seen.get((path, ""), -1) >= depth:
            return False
        self.seen[(path, "")] = depth
        index = self.index(path)
        if self.offered(index) & self.used:
            return True
        if depth <= 0:
            return False
        mentioned = sorted(index.bases.keys() & self.used) if self.kind else []
        if any(self.offers(base, path, depth - 1) for name in mentioned for base in index.bases[name]):
            return True
        if any(self.offers(index.exports[name], path, depth - 1) for name in sorted(index.exports.keys() & self.used)):
            return True
        return any(self.offers(star, path, depth - 1) for star in index.stars)


def clear() -> None:
    _CACHE.clear()
