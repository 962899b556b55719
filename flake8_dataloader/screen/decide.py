"""The screen's one entry point: may this file hold a finding of the selected rules (``may_find``)?

Decided before LibCST (or any rule) is imported. First the rules' tokens in the text and its
identifiers (tokens.py); for a file with them and flake8's ast, whether some selected rule's
condition holds on that ast (gate.py). For a file without them, whether it may use a loader
built in another module of its own project (the project index, project/service.py, answers
from the file's ast and a cheap index of its modules).
"""

from __future__ import annotations

import ast
from typing import Optional

from ..settings import Settings
from .tokens import IMPORTED_LOADER_TOKEN, has_trigger, identifiers, uses_loader_word


def may_find(source: str, settings: Settings, tree: Optional[ast.AST] = None, filename: Optional[str] = None) -> bool:
    """False when no rule can report anything in this text (raw text first, then ``tree``'s identifiers).

    With ``filename`` and follow_imports, a file without the rules' tokens passes when it may use a
    loader built in another module of its project (``ProjectIndex.may_use_imported_loader``).
    """
    if has_trigger(source, settings, tree):
        if tree is None:
            return True
        from .gate import gate_enabled, may_report  # the ast only: no LibCST

        # Whether the file is a notebook decides what DL302 may read (any def of a notebook's cells).
        return not gate_enabled(settings) or may_report(tree, settings.for_file(source, filename or ""), filename)
    if filename is None or not _may_import_a_loader(source, settings, filename):
        return False  # decided on the text: the project index's imports cost 3 ms
    if tree is not None and not uses_loader_word(identifiers(tree)):
        return False  # the word only in strings or comments: the index would say no, after its imports
    from ..project.service import PROJECT  # paths and the ast only: no LibCST

    return PROJECT.may_use_imported_loader(source, tree, filename, settings)


def may_find_in_text(
    source: str, settings: Settings, filename: Optional[str] = None, tree: Optional[ast.AST] = None
) -> bool:
    """The raw-text stage of ``may_find`` alone (no gate, no project index): True whenever it is.
    The findings cache (plugin.py) is consulted after this, so a second run pays neither the
    identifiers' walk, the gate nor the project index for a file with the rules' tokens.

    A file with only the word `loader` (in a docstring, say) is the one case asked with ``tree``:
    the word must be in an identifier, as the project index requires too. Until the cache is
    loaded that walk costs less than loading it (2.7 ms per process); after, the plugin passes
    no tree, as a lookup costs less than the walk.
    """
    if has_trigger(source, settings):
        return True
    return _may_import_a_loader(source, settings, filename) and (tree is None or uses_loader_word(identifiers(tree)))


def _may_import_a_loader(source: str, settings: Settings, filename: Optional[str]) -> bool:
    """The text test ``ProjectIndex.may_use_imported_loader`` starts with, without importing it."""
    return filename is not None and settings.follow_imports and IMPORTED_LOADER_TOKEN in source
