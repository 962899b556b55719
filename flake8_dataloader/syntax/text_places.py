"""Where a node's own generated text stands in a stretch of the source, when it stands there once.

A node generated on its own reproduces its source text except for indentation: continuation
lines of a bracketed expression, and the lines of a nested block, get the indentation of the
block they stand in, which a generation that starts at the node does not know. So the text is
looked for as it is, and when it is not found, with every whitespace character left out of both
it and the source. Left out of both, the node's own place still matches (the two differ in
whitespace only), so a single match is that place; two or more are left undecided.
"""

from __future__ import annotations

import bisect
import re
from typing import Callable, List, Optional, Tuple

_SPACE = re.compile(r"\s+")
_INK = re.compile(r"\S+")
_NEWLINE = re.compile(r"\r\n|\r|\n")

# Offsets in the generated text -> offsets in the source.
Mapper = Callable[[int], int]


def found_once(text: str, source: str, low: int = 0, high: Optional[int] = None) -> Optional[Mapper]:
    """Map offsets of ``text`` to the source, if ``text`` occurs once in ``source[low:high]``
    (as written, or else with whitespace left out of both); None if it occurs more than once there,
    or not at all."""
    high = len(source) if high is None else high
    if not text:
        return None
    at = source.find(text, low, high)
    if at >= 0:
        if source.find(text, at + 1, high) >= 0:
            return None
        return lambda offset: at + offset
    return _found_once_without_space(text, source, low, high)


def _found_once_without_space(text: str, source: str, low: int, high: int) -> Optional[Mapper]:
    bare_text = _SPACE.sub("", text)
    if not bare_text:
        return None
    # The region's runs of non-space characters: where each starts in the source, and how many
    # non-space characters come before it (a bisect maps a bare offset back to the source).
    starts: List[int] = []
    before: List[int] = []
    pieces: List[str] = []
    count = 0
    for match in _INK.finditer(source, low, high):
        starts.append(match.start())
        before.append(count)
        piece = match.group()
        pieces.append(piece)
        count += len(piece)
    bare_source = "".join(pieces)
    at = bare_source.find(bare_text)
    if at < 0 or bare_source.find(bare_text, at + 1) >= 0:
        return None

    def mapped(offset: int) -> int:
        # Non-space characters of the text before ``offset``: a node starts on one, never on space.
        inked = at + len(_SPACE.sub("", text[:offset]))
        run = bisect.bisect_right(before, inked) - 1
        return starts[run] + inked - before[run]

    return mapped


def line_starts(source: str) -> List[int]:
    """The offset where each line starts (lines end at \\n, \\r\\n or a lone \\r, as for Python)."""
    starts = [0]
    starts.extend(match.end() for match in _NEWLINE.finditer(source))
    return starts


def line_and_column(starts: List[int], offset: int) -> Tuple[int, int]:
    """(1-based line, 0-based column in characters) of an offset, given ``line_starts``."""
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1]
