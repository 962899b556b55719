"""Which fix the fix command applies for each code: the codemods live beside their rules."""

from __future__ import annotations

from typing import Callable, Dict, List

from ..rules.base import Finding
from ..rules.dl103_rejected_argument_combination import bool_drop_last
from ..rules.dl104_crash_with_zero_workers import guard_by_workers
from ..rules.dl301_unguarded_entry_point import guard_entry_point
from ..rules.dl402_persistent_workers_disabled import enable_persistent_workers
from ..rules.dl404_missing_shutdown_method import delete_loader
from ..rules.dl601_handle_shared_with_workers import open_lazily
from .context import FixContext, Outcome, code
from .shared import drop_argument


__all__ = ["CODEMODS", "FIXABLE", "MODULE_CODEMODS", "FixContext", "Outcome", "code"]


# code -> codemod; DL301's takes all of a file's DL301 findings at once.
CODEMODS: Dict[str, Callable[[Finding, FixContext], Outcome]] = {
    "DL101": drop_argument,
    "DL102": drop_argument,
    "DL103": bool_drop_last,
    "DL104": guard_by_workers,
    "DL402": enable_persistent_workers,
    "DL404": delete_loader,
    "DL601": open_lazily,
}
MODULE_CODEMODS: Dict[str, Callable[[List[Finding], FixContext], Outcome]] = {"DL301": guard_entry_point}
FIXABLE = tuple(sorted([*CODEMODS, *MODULE_CODEMODS]))
