"""The project index: the one object the engine (and the prefilter) ask about a file's own project.

Its questions, answered without calling back into the engine or the importing file's facts:
- ``may_use_imported_loader``: may a file without the rules' tokens use a loader built in another
  module of its project (the prefilter's last stage: the file's ast, paths and the cheap per-module
  index, no LibCST);
- ``facts_of``: a file's facts with the names it imports from its project followed (through an
  ImportView, which reads module summaries); a tree already parsed for a summary of this very text
  is reused, and the file's own summary is kept for its importers.

What is kept per process (module summaries and import tables by path, mtime and size; located
imports; parsed trees awaiting their own lint) lives in store.py, index.py and locate.py behind it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Tuple

from ..settings import Settings, loader_tails
from ..screen.tokens import IMPORTED_LOADER_TOKEN, identifiers, uses_loader_word, words
from . import index, locate

if TYPE_CHECKING:
    import libcst as cst

    from ..facts.analysis import FileFacts


class ProjectIndex:
    """The project's modules as one service (one per process: ``PROJECT``)."""

    def may_use_imported_loader(self, source: str, tree: Optional[ast.AST], filename: str, settings: Settings) -> bool:
        """An identifier containing `loader`, and an import that may name a loader factory of the file's
        own project (the cheap index reads each module's ast once per process). Installed packages and
        the standard library never pass.

        The imports come first: most files that mention `loader` import no factory, and for them the
        file's words (a superset of its identifiers) stand in for a walk of its tree; a file they pass is
        asked again with its identifiers, so a name only in a string or comment passes nothing.
        """
        if IMPORTED_LOADER_TOKEN not in source or tree is None or locate.installed(filename):
            return False
        tails = loader_tails(settings)
        if not index.names_a_builder(tree, filename, tails, words(source)):
            return False  # the lookup only grows with the names it is given: no subset of them can pass
        used = identifiers(tree)
        return uses_loader_word(used) and (
            index.names_a_builder(tree, filename, tails, used)
        )

    def facts_of(
        self, filename: str, source: str, tree: Optional[ast.AST], settings: Settings
    ) -> Tuple[cst.Module, FileFacts]:
        """The file's tree and facts, what it imports from its project followed."""
        from ..facts.analysis import build_facts  # LibCST loads only for a file that may hold a finding
        from . import store
        from .view import ImportView

        imports = ImportView(filename, settings)
        parsed = store.take_parsed(filename, source)  # an importer's lookup may have parsed it already
        if parsed is not None and not imports.imports_own_modules(tree):
            module, facts = parsed  # nothing of the project is imported: the file's facts alone are its facts
        else:
            module, facts = build_facts(source, settings.loader_names, tree, imports, parsed)
        imports.remember(source, tree, module, facts)
        return module, facts


PROJECT = ProjectIndex()
