"""`python -m flake8_dataloader fix`: codemods for the rules whose fix is mechanical and safe.

Light to import (the fix command on files without triggers never loads LibCST): the fixer
loads on first use of ``fix_source`` or ``FixResult``.
"""

from ..manifest import FIXABLE

__all__ = ["FIXABLE", "FixResult", "fix_source"]


def __getattr__(name: str):
    if name in ("FixResult", "fix_source"):
        from . import fixer

        return getattr(fixer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
