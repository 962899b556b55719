"""Writing a fixed file so that nothing is ever lost: atomically, and only over what was read.

The new text goes to a temporary file beside the target (same file system, so the final
rename is atomic), is flushed to disk with the target's permissions, and replaces the
target only if the target still holds the bytes the fix was computed from. A failure at
any point (a full disk, Ctrl-C, a read-only file) leaves the original untouched.
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional


class NotWritten(Exception):
    """The file was left as it is; the message says why."""


def inside(path: str, root: str) -> bool:
    """``path``, with every symbolic link resolved, lies within ``root`` (links resolved too)."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def replace_contents(path: str, expected: bytes, new: bytes) -> None:
    """Replace the file at ``path`` (a link: its target) with ``new``, if it still holds ``expected``.

    Raises NotWritten when the file changed meanwhile or cannot be written.
    """
    real = os.path.realpath(path)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except OSError as exc:
        raise NotWritten(f"not written: {exc.strerror or exc}") from None
    if not os.access(real, os.W_OK):
        raise NotWritten("not written: the file is not writable")
    directory = os.path.dirname(real) or "."
    temporary: Optional[str] = None
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(real)}.", suffix=".fix")
        with os.fdopen(handle, "wb") as out:
            out.write(new)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        with open(real, "rb") as current:
            if current.read() != expected:
                raise NotWritten("changed while fixing: left as it is now; run the fix again")
        os.replace(temporary, real)
        temporary = None
    except OSError as exc:
        raise NotWritten(f"not written: {exc.strerror or exc}") from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
