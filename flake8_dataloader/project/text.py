"""What a module's text alone tells the project index (index.py), before any parse.

Most lookups ask a module for one name it only defines: no loader class named in its text means no
builder, and a name absent from the words of its import statements (and no `*` among them) means no
re-export. Such a module is never parsed. The import statements are found on the raw text, so strings
and comments that say `import` only add words: a superset of the names the imports bind.
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, NamedTuple, Optional

from ..screen.tokens import words


class ModuleText(NamedTuple):
    """What a module's text alone tells: enough to answer most name lookups without parsing it."""

    names_loader: bool  # a loader class's name occurs: the module may define a builder
    imported: FrozenSet[str]  # words of its import statements: a superset of the names they bind
    star: bool  # a `*` in an import statement


def module_text(source: str, loader_tails: FrozenSet[str]) -> Optional[ModuleText]:
    """None when an import list is never closed: the parse decides every question then."""
    spans = import_spans(source)
    if spans is None:
        return None
    return ModuleText(
        any(tail in source for tail in loader_tails), words(" ".join(spans)), any("*" in span for span in spans)
    )


_IMPORT = re.compile(r"\bimport\b")


def import_spans(source: str) -> Optional[List[str]]:
    """The text after each `import` keyword to the end of its statement: a parenthesised list to its `)`
    (comments inside skipped), else to `;` or the end of the logical line. Strings and comments that say
    `import` only add words. None when a list is never closed (the parse decides). Each character is
    scanned once: the search resumes after each span."""
    spans: List[str] = []
    position = 0
    while True:
        found = _IMPORT.search(source, position)
        if found is None:
            return spans
        start = found.end()
        while start < len(source) and source[start] in " \t\f\\\r\n" and _continues(source, start):
            start += 1
        end = _closing(source, start) if source.startswith("(", start) else _statement_end(source, start)
        if end < 0:
            return None
        spans.append(source[start:end])
        position = max(end, start + 1)


def _continues(source: str, index: int) -> bool:
    """Whitespace at ``index`` still belongs to the statement (a newline only after a backslash)."""
    char = source[index]
    if char == "\n":
        return _escaped(source, index)
    if char == "\r":
        return source[index - 1:index] == "\\"
    return True


def _closing(source: str, start: int) -> int:
    index = start
    while True:
        close, comment = source.find(")", index), source.find("#", index)
        if close < 0:
            return -1
        if 0 <= comment < close:
            index = source.find("\n", comment)
            if index < 0:
                return -1
            continue
        return close + 1


def _statement_end(source: str, start: int) -> int:
    index = start
    while True:
        newline = source.find("\n", index)
        stop = source.find(";", index)
        if 0 <= stop and (newline < 0 or stop < newline):
            return stop
        if newline < 0:
            return len(source)
        if not _escaped(source, newline):
            return newline
        index = newline + 1


def _escaped(source: str, newline: int) -> bool:
    """The newline at ``newline`` follows a backslash (directly, or with a carriage return between)."""
    return source[newline - 1:newline] == "\\" or source[newline - 2:newline] == "\\\r"
