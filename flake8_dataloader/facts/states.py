"""Three-state argument values: Known(v), Unknown(why) or omitted.

The one module every facts layer reads a value's state from; it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Known:
    value: Any


@dataclass(frozen=True)
class Unknown:
    why: str
    # True when the expression can never evaluate to None (a call, a literal container...).
    not_none: bool = False


class _Omitted:
    def __repr__(self) -> str:
        return "Omitted"


OMITTED = _Omitted()

# What a DataLoader argument is at one call: a value, something unknowable here, or not written.
ArgState = Union[Known, Unknown, _Omitted]
