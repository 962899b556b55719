"""What one setting's workers hold while it runs: their memory (PSS, else RSS, summed) and the machine's
headroom, read from /proc (zero where there is none: the numbers are then missing, not guessed)."""

from __future__ import annotations

import glob
import os
from typing import Collection, List


def children(pid: int = 0) -> List[int]:
    """The processes this one started (the loader's workers), from /proc/<pid>/task/*/children."""
    pid = pid or os.getpid()
    found: List[int] = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as handle:
                found += [int(word) for word in handle.read().split()]
        except OSError:
            continue
    return found


def _field_kb(path: str, field: str) -> int:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def process_memory(pid: int) -> int:
    """Bytes of ``pid``: its proportional share (PSS: pages shared with the parent count once in all),
    else its resident size."""
    kb = _field_kb(f"/proc/{pid}/smaps_rollup", "Pss:") or _field_kb(f"/proc/{pid}/status", "VmRSS:")
    return kb * 1024


def workers_memory(known: Collection[int] = ()) -> float:
    """The memory of the children started since ``known`` was read: a forkserver or multiprocessing's
    resource tracker, children of this process before the setting began, are not its workers."""
    return float(sum(process_memory(pid) for pid in children() if pid not in known))


def available_memory() -> int:
    """MemAvailable: what the machine can still give before it swaps or kills (0 where unknown)."""
    return _field_kb("/proc/meminfo", "MemAvailable:") * 1024
