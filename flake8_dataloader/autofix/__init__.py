"""`python -m flake8_dataloader fix`: codemods for the rules whose fix is mechanical and safe."""

from .codemods import FIXABLE
from .fixer import FixResult, fix_source

__all__ = ["FIXABLE", "FixResult", "fix_source"]
