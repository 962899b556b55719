"""nbQA's temporary file: which notebook it stands for, and the line of that notebook each line came from.

`nbqa flake8 nb.ipynb` writes the notebook's code cells to a new `nb<8 random characters>_nbqa_ipynb.py`
next to the notebook, each cell after a `# %%NBQA-CELL-SEP<6 hex>` line (a new hex on every run), runs
`autopep8 --select=E3` over it, which adds and removes blank lines inside cells (two before a `def` that
follows a comment, two after a function body), then flake8; it maps each reported line back to a cell's
line by its own layout of the file, as if nothing had moved. So:

- the findings cache keys such a file on its notebook's path and on its text with the separators and
  the placeholders of IPython magics (a new random number each run too) made equal (`identity`): the
  same notebook gives the same entry on every run;
- a finding's line is turned into the line nbQA maps to the cell's own line (`layout_lines`), read from
  the notebook's code cells: autopep8 moved only blank lines, so the n-th non-blank line of a cell in
  the file is the n-th non-blank line of the cell in the notebook.

Nothing here imports more than the standard library; the notebook is read only when a finding needs a line.
"""

from __future__ import annotations

import json
import os
import re
from typing import List, NamedTuple, Optional

from ..settings import SEPARATOR, TEMPORARY_SUFFIX as SUFFIX

# tempfile.mkstemp's 8 random characters between the notebook's stem and nbQA's suffix.
_NAME = re.compile(r"(?P<stem>.+)[a-z0-9_]{8}" + re.escape(SUFFIX))
_SEPARATOR_LINE = re.compile(re.escape(SEPARATOR) + r"[0-9a-f]{6}")
_SEPARATORS = re.compile(r"^" + re.escape(SEPARATOR) + r"[0-9a-f]{6}$", re.MULTILINE)
# What nbQA writes in place of an IPython magic, on the magic's own line: a random token, quoted for flake8.
_TOKEN = r'(?:0x[0-9A-F]+|"[0-9a-f]+")'
_PLACEHOLDER = re.compile(rf"hash\({_TOKEN}\)|# CELL MAGIC {_TOKEN}")
_PLACEHOLDER_TOKEN = re.compile(rf"(?<=hash\(){_TOKEN}(?=\))|(?<=# CELL MAGIC ){_TOKEN}")


class Identity(NamedTuple):
    notebook: str  # the notebook's absolute path
    text: str  # the file's text with every cell separator and every magic's placeholder the same


def notebook_of(filename: str, source: str) -> Optional[str]:
    """The notebook ``filename`` is nbQA's temporary copy of (absolute path), or None."""
    if not filename.endswith(SUFFIX) or not source.startswith(SEPARATOR):
        return None
    match = _NAME.fullmatch(os.path.basename(filename))
    if match is None or _SEPARATOR_LINE.match(source) is None:
        return None
    notebook = os.path.join(os.path.dirname(os.path.abspath(filename)), match["stem"] + ".ipynb")
    return notebook if os.path.isfile(notebook) else None


def identity(filename: str, source: str) -> Optional[Identity]:
    """What the findings of nbQA's temporary file rest on besides the settings, or None (another file)."""
    notebook = notebook_of(filename, source)
    if notebook is None:
        return None
    # A placeholder ends its line (it replaces the magic to the end of it): no finding's column depends on it.
    return Identity(notebook, _PLACEHOLDER_TOKEN.sub("0", _SEPARATORS.sub(SEPARATOR, source)))


def layout_lines(source: str, notebook: str) -> Optional[List[int]]:
    """For each line of ``source`` (index 1 on), the line nbQA maps to the line the user wrote in the cell.

    nbQA finds each cell's separator in the file as flake8 sees it and counts the cell's lines from there,
    as if autopep8 had moved nothing inside it. So a line is reported as far below its cell's separator as
    it is in the notebook's cell; it stays where it is when that would leave its cell (autopep8 removed
    blank lines above it, and nbQA has no line there). None: the notebook cannot be read, or its cells do
    not account for the file's (it changed meanwhile)."""
    cells = _code_cells(notebook)
    if cells is None:
        return None
    lines = source.splitlines()
    starts = [index for index, line in enumerate(lines) if _SEPARATOR_LINE.fullmatch(line)]
    if not starts or starts[0] != 0:
        return None
    mapped = list(range(len(lines) + 1))
    cell = 0
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        body = lines[start + 1:end]
        while cell < len(cells) and not _same_cell(cells[cell], body):
            cell += 1  # a cell nbQA left out (empty, only magics, a skipped tag)
        if cell == len(cells):
            return None
        kept = iter([index for index, line in enumerate(cells[cell].splitlines()) if line.strip()])
        cell += 1
        for index, line in enumerate(body):
            if line.strip():
                there = start + 2 + next(kept)  # the separator is line start + 1, the cell's first line start + 2
                if there <= end:
                    mapped[start + 2 + index] = there
    return mapped


def _code_cells(notebook: str) -> Optional[List[str]]:
    try:
        with open(notebook, encoding="utf-8") as handle:
            cells = json.load(handle)["cells"]
        return ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                for cell in cells if cell.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):  # not a notebook
        return None


def _same_cell(cell: str, body: List[str]) -> bool:
    """Whether ``body`` (a cell of the temporary file) was written from ``cell``: the same non-blank lines,
    but for nbQA's placeholders of magics, the cell's trailing semicolon, which nbQA drops, and the indent
    IPython strips from an indented cell. A cell that does not parse is written as one placeholder."""
    theirs = [line.strip() for line in cell.splitlines() if line.strip()]
    ours = [line.strip() for line in body if line.strip()]
    if len(ours) == 1 and _PLACEHOLDER.fullmatch(ours[0]) and len(theirs) != 1:
        return not _parses(cell)
    if len(theirs) != len(ours):
        return False
    semicolon = False
    for mine, its in zip(ours, theirs):
        if mine == its or _PLACEHOLDER.search(mine):
            continue
        if semicolon or not _less_one_semicolon(mine, its):
            return False
        semicolon = True
    return True


def _less_one_semicolon(mine: str, its: str) -> bool:
    return len(mine) + 1 == len(its) and any(
        its[:index] + its[index + 1:] == mine for index, char in enumerate(its) if char == ";")


def _parses(cell: str) -> bool:
    import ast  # already loaded by flake8

    try:
        ast.parse(cell)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
