"""The rules' trigger tokens, and whether a text (or its identifiers) holds them: the prefilter's first stage.

Decided on the raw text and flake8's own ast, before LibCST (or any rule) is imported.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from .. import manifest
from .ast_walk import DEFINITIONS, breadth_first, nodes_of
from ..settings import Settings

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


# `loader = build_loader(cfg)` then an epoch loop: a training script need not name DataLoader at all.
# Here, not in project/, so the text stage of a file without it never imports the project index.
IMPORTED_LOADER_TOKEN = "loader"


def uses_loader_word(names: Iterable[str]) -> bool:
    """Some identifier holds the word, in any case (`train_loader`, `build_val_Loader`)."""
    return any(IMPORTED_LOADER_TOKEN in name.lower() for name in names)


_LAST: list = [None, frozenset()]  # the last tree asked and its answer: the prefilter and the gate share it
# Nodes that hold no name and no node that does: never queued.
_NAMED = (ast.Name, ast.Attribute, ast.alias, ast.arg, ast.keyword, *DEFINITIONS, ast.ImportFrom)
PAYLOADS = (ast.Lambda, ast.GeneratorExp, ast.Yield, ast.YieldFrom)  # what DL302 reads wherever it stands
# Outside strings and comments, a character past ASCII can only be part of an identifier: so a run of
# word characters and such characters is exactly an identifier where one occurs in the code. Written as
# the ASCII characters it excludes: a class spanning U+0080-U+10FFFF takes 10 ms to compile, at import.
_WORD = re.compile("[^\x00-@\\[-^`{-\x7f][^\x00-/:-@\\[-^`{-\x7f]*")


def identifiers(tree: ast.AST) -> FrozenSet[str]:
    """Every name the code itself uses (not strings or comments): names, attributes, imports, params.

    Kept for the last tree asked (flake8 hands each plugin the same tree object)."""
    if _LAST[0] is not tree:
        _LAST[:] = [tree, frozenset(names_of(nodes_of(tree)))]
    return _LAST[1]


def names_of(nodes: List[ast.AST]) -> Set[str]:
    """The names a walk's nodes use: names, attributes, imports, parameters, keywords, definitions
    (one loop over a list, so a walk already made, ast_walk.nodes_of, is read again for free)."""
    found: Set[str] = set()
    add = found.add
    for node in nodes:
        if isinstance(node, _NAMED):
            if isinstance(node, ast.Name):
                add(node.id)
            elif isinstance(node, ast.Attribute):
                add(node.attr)
            elif isinstance(node, ast.alias):
                found.update(node.name.split("."))
                if node.asname:
                    add(node.asname)
            elif isinstance(node, ast.arg):
                add(node.arg)
            elif isinstance(node, ast.keyword):
                if node.arg:
                    add(node.arg)
            elif isinstance(node, DEFINITIONS):
                add(node.name)
            elif node.module:  # an ImportFrom
                found.update(node.module.split("."))
    return found


def words(source: str) -> FrozenSet[str]:
    """A superset of the text's ``identifiers`` (its words, in strings and comments too), from one
    regular-expression pass: about a third of a walk of its tree. Python normalizes identifiers (NFKC)."""
    found = set(_WORD.findall(source))
    if source.isascii():
        return frozenset(found)
    from unicodedata import normalize

    return frozenset(word if word.isascii() else normalize("NFKC", word) for word in found)


def holds_payload(nodes: Sequence[ast.AST], own: Sequence[ast.AST]) -> bool:
    """Something DL302 may read as unpicklable among ``nodes`` (a walk of some code): a lambda, a
    generator, or a def or class nested somewhere. ``own``: the definitions walked that are not nested
    (a module's top-level ones, or the one def walked), whose classes' methods are not either."""
    if any(isinstance(node, PAYLOADS) for node in nodes):
        return True
    methods = sum(isinstance(item, DEFINITIONS) for node in own if isinstance(node, ast.ClassDef) for item in node.body)
    return sum(isinstance(node, DEFINITIONS) for node in nodes) > len(own) + methods


def names_in(tree: ast.AST) -> Set[str]:
    """``identifiers`` of any tree or part of one (a class, a function), not kept."""
    return names_of(breadth_first(tree))


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


def has_trigger(source: str, settings: Settings, tree: Optional[ast.AST] = None) -> bool:
    """Some rule's tokens are in the text (and, given ``tree``, in its identifiers, not only in strings)."""
    alternatives = tokens(settings)
    return could_trigger(source, alternatives) and (tree is None or could_trigger_in_code(tree, alternatives))
