"""The scenario registry: each rule's bad pattern next to its fix."""

from __future__ import annotations

from typing import List

from .base import Options, Scenario

__all__ = ["Options", "Scenario", "registry"]


def registry() -> List[Scenario]:
    from . import (
        claims, construction, correctness, frameworks, lifecycle, notebook, randomness, resources, start_method,
    )

    return [
        *construction.SCENARIOS,
        *randomness.SCENARIOS,
        *start_method.SCENARIOS,
        *notebook.SCENARIOS,
        *lifecycle.SCENARIOS,
        *correctness.SCENARIOS,
        *resources.SCENARIOS,
        *claims.SCENARIOS,
        *frameworks.SCENARIOS,
    ]
