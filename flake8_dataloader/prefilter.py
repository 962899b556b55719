"""Skip files whose text cannot trigger any rule, before LibCST sees them."""

from __future__ import annotations

from typing import Iterable, Tuple

from .settings import Settings


def triggers(rules: Iterable, settings: Settings) -> Tuple[str, ...]:
    tokens = set(settings.extra_triggers)
    for rule in rules:
        tokens.update(rule.TRIGGERS)
    # A shorter token that is a substring of a longer one makes the longer redundant.
    return tuple(sorted(t for t in tokens if not any(o != t and o in t for o in tokens)))


def could_trigger(source: str, tokens: Tuple[str, ...]) -> bool:
    return any(token in source for token in tokens)
