"""Small helpers shared by the scenario families."""

from __future__ import annotations

from typing import Callable, Dict, Optional


def outcome(action: Callable[[], object]) -> Dict:
    """{'raised': 'Type: text'} or {'ran': True}."""
    try:
        action()
    except BaseException as exc:  # noqa: B902 - AssertionError and friends are results here
        return {"raised": f"{type(exc).__name__}: {exc}"}
    return {"ran": True}


def verdict(ok: bool, summary: str, metrics: Optional[Dict] = None) -> Dict:
    """A behaviour scenario's result: 'ok' when the rule's claim was reproduced, else 'failed'."""
    return {"status": "ok" if ok else "failed", "summary": summary, "metrics": metrics or {}}


def first_text(raised: Optional[str]) -> str:
    return raised.splitlines()[0] if raised else "nothing raised"


def draws(loader, epochs: int):
    """Every value the loader yields, per epoch."""
    return [[float(v) for batch in loader for v in batch] for _ in range(epochs)]
