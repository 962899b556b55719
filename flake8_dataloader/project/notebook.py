"""Is this file a Jupyter notebook's code? nbQA's cell separator says so.

nbQA runs flake8 on one temporary `.py` holding every code cell of a notebook, with a
`# %%NBQA-CELL-SEP<hex>` line between cells. In a notebook the main module has no file:
spawn/forkserver workers do not re-run it, but cannot import what its cells define.
Plain text only: the plugin's start-up and the findings cache import this.
"""

from __future__ import annotations

import re

# nbQA 1.x writes `# %%NBQA-CELL-SEP` and 6 hex digits (secrets.token_hex(3)) on a line of its own.
SEPARATOR = "# %%NBQA-CELL-SEP"
CELL_SEPARATOR = re.compile("^" + re.escape(SEPARATOR) + "[0-9a-f]+$", re.MULTILINE)
MARKER = "NBQA-CELL-SEP"  # a substring test first: most files never pay for the regex


def is_notebook_text(text: str) -> bool:
    """True when ``text`` is a notebook's code cells as nbQA hands them to flake8."""
    return MARKER in text and CELL_SEPARATOR.search(text) is not None


# nbQA's temporary file: tempfile.mkstemp(prefix=<notebook name>, suffix="_nbqa_ipynb.py"), next to the notebook.
# A notebook of one code cell has no separator: its file name still tells.
TEMPORARY_SUFFIX = "_nbqa_ipynb.py"


def is_notebook(text: str, filename: str, setting: str = "auto") -> bool:
    """`--dataloader-notebook`: on (every file), off (none), auto (nbQA's separator or its file name)."""
    if setting != "auto":
        return setting == "on"
    return filename.endswith(TEMPORARY_SUFFIX) or is_notebook_text(text)
