"""Module summaries kept on disk beside the findings: a module imported by many files is summarised
once per change of its text, not once per process (`flake8 -j N`) and not again on the next run.

An entry is served only for the same plugin and LibCST (the findings cache's installation stamp),
interpreter, loader names, module path, path shown in messages and text (its SHA-256). Entries live
in the findings cache's directory (its switches turn both off), one per (module path, interpreter,
loader names): a new text overwrites it. Used only within a cached analysis (store.py), where LibCST
is loaded already. Summaries are plain tuples and values, written as JSON with a tag per type (never
pickle: the directory is in the linted tree). A summary holding a value JSON cannot carry is not kept;
any error is a miss; nothing here raises.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Dict, FrozenSet, Optional, Tuple

from ..facts.binding import Signature
from ..facts.flow import ANY, _Any
from ..facts.foreign import (
    CallableSummary, DatasetSummary, FactorySummary, LoaderSummary, ModuleSummary, Origin, SubclassLink,
)
from ..facts.states import OMITTED, Known, Unknown, _Omitted

LOG = logging.getLogger("flake8.dataloader")

FORMAT = 3  # 2: ModuleSummary.loader_workers; 3: ModuleSummary.subclass_links
_TUPLES = {cls.__name__: cls for cls in (
    CallableSummary, DatasetSummary, FactorySummary, LoaderSummary, ModuleSummary, Origin, Signature, SubclassLink,
)}
Exports = Tuple[Dict[str, str], Tuple[str, ...]]


class _Unsupported(Exception):
    pass


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = type(value).__name__
    if name in _TUPLES and isinstance(value, _TUPLES[name]):
        return {"n": [name, [_encode(item) for item in value]]}
    if isinstance(value, tuple):
        return {"t": [_encode(item) for item in value]}
    if isinstance(value, list):
        return {"l": [_encode(item) for item in value]}
    if isinstance(value, frozenset):
        return {"s": [_encode(item) for item in value]}
    if isinstance(value, dict):
        return {"d": [[_encode(key), _encode(item)] for key, item in value.items()]}
    if isinstance(value, Known):
        return {"k": _encode(value.value)}
    if isinstance(value, Unknown):
        return {"u": [value.why, value.not_none]}
    if isinstance(value, _Omitted):
        return {"o": 1}
    if isinstance(value, _Any):
        return {"a": 1}
    raise _Unsupported(name)


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    (tag, body), = value.items()
    if tag == "n":
        return _TUPLES[body[0]](*(_decode(item) for item in body[1]))
    if tag == "t":
        return tuple(_decode(item) for item in body)
    if tag == "l":
        return [_decode(item) for item in body]
    if tag == "s":
        return frozenset(_decode(item) for item in body)
    if tag == "d":
        return {_decode(key): _decode(item) for key, item in body}
    if tag == "k":
        return Known(_decode(body))
    if tag == "u":
        return Unknown(body[0], body[1])
    if tag == "o":
        return OMITTED
    if tag == "a":
        return ANY
    raise ValueError(f"unknown tag {tag!r}")


def encode(summary: ModuleSummary, exports: Exports, path: str = "") -> Optional[str]:
    """The entry's text (None: a value JSON cannot carry); ``path``: the module's, for pruning."""
    try:
        entry = {"summary": _encode(summary), "exports": exports[0], "stars": list(exports[1])}
        return json.dumps({**entry, "path": path} if path else entry)
    except (_Unsupported, ValueError, TypeError, RecursionError):
        return None


def decode(text: str) -> Tuple[ModuleSummary, Exports]:
    entry = json.loads(text)
    summary = _decode(entry["summary"])
    if not isinstance(summary, ModuleSummary):
        raise ValueError("not a module summary")
    return summary, ({str(k): str(v) for k, v in entry["exports"].items()}, tuple(str(s) for s in entry["stars"]))


def _keys(path: str, shown: str, source: str, loader_names: FrozenSet[str]) -> Tuple[str, str]:
    from ..cache import hash_parts, installation
    from .reads import sha256_hex

    slot = hash_parts([FORMAT, sys.version, sys.prefix, os.path.abspath(path), sorted(loader_names)])
    text = sha256_hex(source.encode("utf-8", "surrogatepass"))
    return slot, hash_parts([slot, installation(), shown, text])


def _file(slot: str, root: str) -> str:
    from ..cache import DIRECTORY, SUMMARIES

    return os.path.join(root, DIRECTORY, SUMMARIES, slot + ".json")


def lookup(
    path: str, shown: str, source: str, loader_names: FrozenSet[str], root: str = "."
) -> Optional[Tuple[ModuleSummary, Exports]]:
    """The summary kept for this very text of the module, or None (a miss)."""
    try:
        slot, key = _keys(path, shown, source, loader_names)
        with open(_file(slot, root), encoding="utf-8") as handle:
            kept = handle.read()
            written = os.fstat(handle.fileno()).st_mtime
        stored_key, _, text = kept.partition("\n")
        if stored_key != key:
            return None
        from ..cache import renew_served

        found = decode(text)
        renew_served(_file(slot, root), written)  # served: pruning keeps it
        return found
    except FileNotFoundError:
        return None
    except Exception as exc:  # a corrupt or foreign entry: summarised again
        LOG.debug("flake8-dataloader: summary of %s not served: %s: %s", path, type(exc).__name__, exc)
        return None


def store(
    path: str, shown: str, source: str, loader_names: FrozenSet[str], summary: ModuleSummary, exports: Exports,
    root: str = ".",
) -> None:
    """Keep the summary of this text of the module; never raises."""
    try:
        from ..cache import prepare, write

        text = encode(summary, exports, os.path.abspath(path))
        if text is None:
            return
        slot, key = _keys(path, shown, source, loader_names)
        directory = os.path.dirname(_file(slot, root))
        prepare(root)
        os.makedirs(directory, exist_ok=True)
        write(directory, slot + ".json", key + "\n" + text)
    except Exception as exc:
        LOG.debug("flake8-dataloader: summary of %s not kept: %s: %s", path, type(exc).__name__, exc)
