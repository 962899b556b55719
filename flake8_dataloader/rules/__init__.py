"""The rule registry: one explicit tuple, in code order."""

from .dl1_construction import (
    CrashWithZeroWorkers,
    PersistentWorkersWithoutWorkers,
    PrefetchWithoutWorkers,
    RejectedCombination,
)

RULES = (
    PersistentWorkersWithoutWorkers,
    PrefetchWithoutWorkers,
    RejectedCombination,
    CrashWithZeroWorkers,
)
