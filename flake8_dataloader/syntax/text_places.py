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


class SourceText:
    """One file's text, searched for the generated texts of its nodes. The text without whitespace
    is built once, on the first search that needs it: every search after it costs a find."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._bare: Optional[str] = None
        self._run_starts: List[int] = []  # where each run of non-space characters starts
        self._inked: List[int] = []  # how many non-space characters come before each run
        self._line_starts: Optional[List[int]] = None

    def position(self, offset: int) -> Tuple[int, int]:
        """(1-based line, 0-based column in characters) of an offset."""
        return line_and_column(self._starts(), offset)

    def offset(self, line: int, byte_column: int) -> Optional[int]:
        """The offset of an ast position (1-based line, column in UTF-8 bytes, as flake8's ast counts
        it); None past the text's last line."""
        starts = self._starts()
        if not 1 <= line <= len(starts):
            return None
        begin = starts[line - 1]
        end = starts[line] if line < len(starts) else len(self.source)
        return begin + len(self.source[begin:end].encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))

    def _starts(self) -> List[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.source)
        return self._line_starts

    def found_once(self, text: str, low: int = 0, high: Optional[int] = None) -> Optional[Mapper]:
        """Map offsets of ``text`` to the source, if ``text`` occurs once in ``source[low:high]``
        (as written, or else with whitespace left out of both); None if it occurs more than once
        there, or not at all."""
        source = self.source
        high = len(source) if high is None else high
        if not text:
            return None
        at = source.find(text, low, high)
        if at >= 0:
            if source.find(text, at + 1, high) >= 0:
                return None
            return lambda offset: at + offset
        return self._found_once_without_space(text, low, high)

    def _found_once_without_space(self, text: str, low: int, high: int) -> Optional[Mapper]:
        bare_text = _SPACE.sub("", text)
        if not bare_text:
            return None
        bare = self._bare_source()
        start, end = self._inked_before(low), self._inked_before(high)
        at = bare.find(bare_text, start, end)
        if at < 0 or bare.find(bare_text, at + 1, end) >= 0:
            return None

        def mapped(offset: int) -> int:
            # Non-space characters of the text before ``offset``: a node starts on one, never on space.
            inked = at + len(_SPACE.sub("", text[:offset]))
            run = bisect.bisect_right(self._inked, inked) - 1
            return self._run_starts[run] + inked - self._inked[run]

        return mapped

    def _bare_source(self) -> str:
        if self._bare is None:
            pieces: List[str] = []
            count = 0
            for match in _INK.finditer(self.source):
                self._run_starts.append(match.start())
                self._inked.append(count)
                piece = match.group()
                pieces.append(piece)
                count += len(piece)
            self._bare = "".join(pieces)
        return self._bare

    def _inked_before(self, offset: int) -> int:
        """How many non-space characters of the source stand before ``offset``."""
        run = bisect.bisect_right(self._run_starts, offset) - 1
        if run < 0:
            return 0
        inked = self._inked
        run_end = inked[run + 1] if run + 1 < len(inked) else len(self._bare or "")
        return min(inked[run] + offset - self._run_starts[run], run_end)


def line_starts(source: str) -> List[int]:
    """The offset where each line starts (lines end at \\n, \\r\\n or a lone \\r, as for Python)."""
    starts = [0]
    starts.extend(match.end() for match in _NEWLINE.finditer(source))
    return starts


def line_and_column(starts: List[int], offset: int) -> Tuple[int, int]:
    """(1-based line, 0-based column in characters) of an offset, given ``line_starts``."""
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1]
