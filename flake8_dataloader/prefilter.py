"""Skip files whose text cannot trigger any rule, before LibCST (or any rule) is imported."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import FrozenSet, Iterable, Optional, Set, Tuple

from . import manifest
from .settings import Settings

# One alternative: tokens that must all occur in the text.
Alternative = Tuple[str, ...]


def weakest(alternatives: Iterable[Alternative]) -> Tuple[Alternative, ...]:
    """The alternatives without those implied by a weaker one (a superset of its tokens adds nothing)."""
    unique = set(alternatives)
    kept = [a for a in unique if not any(set(b) < set(a) for b in unique)]
    return tuple(sorted(kept, key=lambda a: (len(a), a)))


def triggers(rules: Iterable) -> Tuple[Alternative, ...]:
    """Every rule's alternatives (a plain string is a one-token alternative): what manifest.TRIGGERS restates."""
    return weakest(
        (entry,) if isinstance(entry, str) else tuple(entry) for rule in rules for entry in rule.TRIGGERS
    )


@lru_cache(maxsize=16)
def tokens(settings: Settings) -> Tuple[Alternative, ...]:
    """The prefilter's alternatives for these settings: the rules' and the configured loader names."""
    return weakest([*manifest.TRIGGERS, *((token,) for token in settings.extra_triggers)])


def could_trigger(source: str, alternatives: Tuple[Alternative, ...]) -> bool:
    return any(all(token in source for token in alternative) for alternative in alternatives)


def identifiers(tree: ast.AST) -> Set[str]:
    """Every name the code itself uses (not strings or comments): names, attributes, imports, params."""
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.update(node.name.split("."))
            if node.asname:
                found.add(node.asname)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(node.module.split("."))
    return found


def could_trigger_in_code(tree: ast.AST, alternatives: Tuple[Alternative, ...]) -> bool:
    """Second stage on flake8's own ast: the tokens must be parts of identifiers, not of strings.

    A one-token alternative found in an import (where loader files name DataLoader first)
    answers at once, without collecting every identifier of the file.
    """
    singles = [alternative[0] for alternative in alternatives if len(alternative) == 1]
    for node in getattr(tree, "body", ()):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias.asname or alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            if any(token in name for name in names for token in singles):
                return True
    text = "\n".join(identifiers(tree))
    return could_trigger(text, alternatives)


def may_find(source: str, settings: Settings, tree: Optional[ast.AST] = None, filename: Optional[str] = None) -> bool:
    """False when no rule can report anything in this text (raw text first, then ``tree``'s identifiers).

    With ``filename`` and follow_imports, a file without the rules' tokens passes when it may use a
    loader built in another module of its project (see ``may_use_imported_loader``).
    """
    alternatives = tokens(settings)
    if could_trigger(source, alternatives) and (tree is None or could_trigger_in_code(tree, alternatives)):
        return True
    if filename is None or not settings.follow_imports:
        return False
    return may_use_imported_loader(source, tree, filename, settings)


# `loader = build_loader(cfg)` then an epoch loop: a training script need not name DataLoader at all.
IMPORTED_LOADER_TOKEN = "loader"


def may_use_imported_loader(source: str, tree: Optional[ast.AST], filename: str, settings: Settings) -> bool:
    """An identifier containing `loader`, and an import that may name a loader factory of the file's
    own project (its module's ast, read once per process: project/index.py). Installed packages and
    the standard library never pass."""
    if IMPORTED_LOADER_TOKEN not in source or tree is None:
        return False
    used = identifiers(tree)
    if not any(IMPORTED_LOADER_TOKEN in name.lower() for name in used):
        return False
    from .project.index import names_a_builder  # the ast and os.path work, no LibCST
    from .project.locate import installed

    return not installed(filename) and names_a_builder(tree, filename, loader_tails(settings), used)


@lru_cache(maxsize=16)
def loader_tails(settings: Settings) -> FrozenSet[str]:
    """The last names of the loader classes (`DataLoader`, `StatefulDataLoader`, configured ones)."""
    return frozenset(name.rsplit(".", 1)[-1] for name in settings.loader_names)
