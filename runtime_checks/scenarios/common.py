"""Small helpers shared by the scenario families."""

from __future__ import annotations

import mmap
import os
from typing import Callable, Dict, Optional

NOT_REPRODUCED = "not-reproduced"
# One byte shared with every forked scenario process: set once a scenario has printed progress,
# so the parent knows its "[i/n] ..." line was broken and prints the status on a line of its own.
_PRINTED = mmap.mmap(-1, 1)


def outcome(action: Callable[[], object]) -> Dict:
    """{'raised': 'Type: text'} or {'ran': True}."""
    try:
        action()
    except BaseException as exc:  # noqa: B902 - AssertionError and friends are results here
        return {"raised": f"{type(exc).__name__}: {exc}"}
    return {"ran": True}


def verdict(ok: bool, summary: str, metrics: Optional[Dict] = None, reproduced: bool = True) -> Dict:
    """A behaviour scenario's result: 'ok' when the rule's claim was reproduced, else 'failed'.

    ``reproduced=False``: the run was sound but the bad pattern did not show this time (a race that
    did not happen): 'not reproduced', never 'ok'.
    """
    status = ("ok" if reproduced else NOT_REPRODUCED) if ok else "failed"
    return {"status": status, "summary": summary, "metrics": metrics or {}}


def first_text(raised: Optional[str]) -> str:
    return raised.splitlines()[0] if raised else "nothing raised"


def draws(loader, epochs: int):
    """Every value the loader yields, per epoch."""
    return [[float(v) for batch in loader for v in batch] for _ in range(epochs)]


def progress(opts, scenario: str, text: str) -> None:
    """One progress line on stderr (`epoch-timing: built once: epoch 3/8 0.20 s`), unless quiet."""
    if not opts.progress:
        return
    lead = "" if _PRINTED[0] else "\n"
    _PRINTED[0] = 1
    os.write(2, f"{lead}  {scenario}: {text}\n".encode())


def progress_printed(reset: bool = False) -> bool:
    """Whether the last scenario printed progress; ``reset`` clears the flag for the next one."""
    printed = bool(_PRINTED[0])
    if reset:
        _PRINTED[0] = 0
    return printed
