"""Which file of the linted file's own project an imported dotted name lives in.

Deterministic and bounded: a relative import is resolved from the importing
file's package; an absolute one from the project root (the first directory
above the file that is not a package) or from the file's own directory (a
script importing a sibling). Never `sys.path`, never an import: only
`os.stat` of the candidate files.
"""

from __future__ import annotations

import ast
import os
from collections import deque
from functools import lru_cache
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from . import reads


class Location(NamedTuple):
    """A module file and the attribute names still to look up in it (`("StreamDataset",)`)."""

    path: str
    rest: Tuple[str, ...]
    root: str  # the directory the module's path is shown relative to


# The probes of the answer being computed (reads.py): a located answer keeps the probes it rests on.
_probes: List[Dict[str, str]] = []


def _note(path: str, found: bool, kind: str) -> bool:
    if _probes:
        _probes[-1][path] = kind if found else "not " + kind
    return found


def _is_file(path: str) -> bool:
    return _note(path, os.path.isfile(path), "file")


def _is_dir(path: str) -> bool:
    return _note(path, os.path.isdir(path), "dir")


def root_probes(directory: str) -> Dict[str, str]:
    """The probes ``project_root(directory)`` rests on."""
    _probes.append({})
    try:
        project_root(directory)
    finally:
        probes = _probes.pop()
    return probes


def dotted_join(module: str, name: str) -> str:
    """resolve.join_dotted's spelling, for the prefilter, which must not import LibCST: `module.name`;
    after a bare relative module (`.`, `..`) the dots alone (`from . import x` is `.x`)."""
    return module + name if module.endswith(".") else f"{module}.{name}"


def project_root(directory: str) -> str:
    """The first directory, from ``directory`` upwards, that is not a package."""
    while _is_file(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


_INSTALLED_MARKERS = ("site-packages", "dist-packages")


@lru_cache(maxsize=1)
def _installed_roots() -> Tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)


def installed(path: str) -> bool:
    """A file of the standard library or of an installed package: not a project whose imports we follow
    (from `site-packages/torch/`, every other installed package would look like part of the project)."""
    directory = os.path.dirname(os.path.abspath(path))
    if any(marker in directory.split(os.sep) for marker in _INSTALLED_MARKERS):
        return True
    return any(directory == root or directory.startswith(root + os.sep) for root in _installed_roots())


def _module_file(base: str, parts: List[str]) -> Optional[str]:
    stem = os.path.join(base, *parts)
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if _is_file(candidate):
            return candidate
    return None


def _longest_module(base: str, parts: List[str], allow_package_itself: bool) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """The longest prefix of ``parts`` that is a module under ``base``, and the names after it; with
    ``allow_package_itself``, the package's own `__init__.py` when no prefix is (`from . import x`)."""
    head = os.path.join(base, parts[0]) if parts else None
    if head is not None and (_is_file(head + ".py") or _is_dir(head)):  # `torch`: two stats, not a dozen
        for end in range(len(parts), 0, -1):
            found = _module_file(base, parts[:end])
            if found is not None:
                return found, tuple(parts[end:])
    init = os.path.join(base, "__init__.py")
    if allow_package_itself and _is_file(init):
        return init, tuple(parts)
    return None


# Answers per (importing directory, name), for the process: one flake8 run sees one tree.
_LOCATED: Dict[Tuple[str, str], Tuple[Optional[Location], Dict[str, str]]] = {}


def forget() -> None:
    """Drop the answers (a long-lived process, or a test that creates modules as it goes)."""
    _LOCATED.clear()


def locate(qualname: str, importer: str) -> Optional[Location]:
    """Where ``qualname`` (as the resolver spells it: `.data.Stream` for a relative import) is
    defined, seen from the file ``importer``; None when it is not a module of this project."""
    if qualname.startswith("builtins."):
        return None
    directory = os.path.dirname(os.path.abspath(importer))
    key = (directory, qualname)
    if key not in _LOCATED:
        _probes.append({})
        try:
            _LOCATED[key] = (_locate(qualname, directory), _probes[-1])
        finally:
            _probes.pop()
    located, probes = _LOCATED[key]
    reads.probed(probes)
    return located


def _locate(qualname: str, directory: str) -> Optional[Location]:
    level = len(qualname) - len(qualname.lstrip("."))
    parts = [part for part in qualname[level:].split(".") if part]
    if not parts and not level:
        return None
    if level:
        base = directory
        for _ in range(level - 1):
            base = os.path.dirname(base)
        found = _longest_module(base, parts, allow_package_itself=True)
        return Location(found[0], found[1], project_root(base)) if found else None
    root = project_root(directory)
    for base in dict.fromkeys((root, directory)):
        found = _longest_module(base, parts, allow_package_itself=False)
        if found is not None:
            return Location(found[0], found[1], base)
    return None


def shown(path: str, root: str) -> str:
    """A module's path as messages show it: relative to its project root, with forward slashes."""
    try:
        relative = os.path.relpath(path, root)
    except ValueError:  # another drive on Windows
        relative = path
    return relative.replace(os.sep, "/")


def imported_names(tree: ast.AST) -> Iterator[str]:
    """The dotted name each import of the file (at any level) names; `from m import *` names m."""
    return (dotted for dotted, _ in imported_pairs(tree))


def imported_pairs(tree: ast.AST) -> Iterator[Tuple[str, str]]:
    """``imported_names`` with the name each binds in the file ("*" for a star import)."""
    for node in import_statements(tree):
        if isinstance(node, ast.ImportFrom):
            module = "." * (node.level or 0) + (node.module or "")
            for alias in node.names:
                local = alias.asname or alias.name
                yield (module, "*") if alias.name == "*" else (dotted_join(module, alias.name), local)
        else:
            for alias in node.names:
                yield alias.name, alias.asname or alias.name.split(".", 1)[0]


# Where statements hold statements. No expression holds one, so walking these alone meets every import.
_BLOCKS = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))


def import_statements(tree: ast.AST) -> Iterator[Union[ast.Import, ast.ImportFrom]]:
    """Every import statement, in ast.walk's order (breadth first), visiting statements only."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for field in node._fields:
            value = getattr(node, field)
            if field in _BLOCKS and isinstance(value, list):
                todo.extend(value)


def imports_own_project(tree: ast.AST, filename: str) -> bool:
    """Some import of the file, at any level, names another module of its own project."""
    importer = os.path.abspath(filename)
    for name in imported_names(tree):
        found = locate(name, importer)
        if found is not None and found.path != importer:
            return True
    return False
