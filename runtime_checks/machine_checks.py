"""Whether this machine can hold the user's loader: shared memory, CPUs, open files, start method.

Each check is a pure function of numbers read from the machine and the loader, so it is tested
with recorded numbers; `checks()` reads them.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import sys
from typing import Dict, List, Optional

OK, WARNING = "ok", "warning"
MB = 1e6
# Docker's default --shm-size: a worker that cannot place a batch there dies of a Bus error.
DOCKER_DEFAULT_SHM = 64 * 2**20


def size_text(size: float) -> str:
    """Bytes as a person reads them: 6 kB, 96 MB, 24.0 GB."""
    for unit, scale in (("GB", 1e9), ("MB", MB), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}" if unit == "GB" else f"{size / scale:.0f} {unit}"
    return f"{size:.0f} bytes"


def _check(name: str, level: str, text: str, **numbers) -> Dict:
    return {"check": name, "level": level, "text": text, **numbers}


def shared_memory(path: str, size: int, peak: float, estimate: float) -> Dict:
    """Workers hand batches to the main process through ``path`` (tmpfs): does the peak fit?

    ``peak``: bytes used above the level before the run, sampled while the loader ran;
    ``estimate``: workers x prefetch_factor x bytes of one batch (what can be in flight at once).
    Half the space is the line: a validation loader, a second run or pinned copies share it.
    """
    need = max(peak, estimate)
    numbers = {"path": path, "size_bytes": size, "peak_bytes": int(peak), "estimate_bytes": int(estimate)}
    text = (f"{path}: {size_text(size)}; the loader's workers used up to {size_text(peak)} "
            f"(in flight at once: workers x prefetch_factor x batch = {size_text(estimate)})")
    if size and need <= size / 2:
        return _check("shared memory", OK, text, **numbers)
    default = " (Docker's default)" if size == DOCKER_DEFAULT_SHM else ""
    return _check("shared memory", WARNING, text + f"{default}: a worker that finds it full dies with 'killed by "
                  "signal: Bus error', often hours into a run; give it room (docker run --shm-size=8g, or "
                  "Kubernetes an emptyDir with medium: Memory at /dev/shm), or lower num_workers or "
                  "prefetch_factor", **numbers)


def cpus(workers: int, usable: int) -> Dict:
    """Workers beyond the CPUs this process may run on take turns with each other and the main process."""
    text = f"num_workers={workers}, CPUs this process may use: {usable}"
    if workers <= usable:
        return _check("CPUs", OK, text, workers=workers, usable_cpus=usable)
    return _check("CPUs", WARNING, text + f": {workers} workers take turns on {usable} CPUs with the training "
                  f"process; use at most {usable}", workers=workers, usable_cpus=usable)


def open_files(strategy: str, soft_limit: int, in_flight: int) -> Dict:
    """Under the file_descriptor sharing strategy each tensor in flight holds an open file."""
    text = (f"sharing strategy {strategy}, open-file limit {soft_limit}; tensors in flight at once: "
            f"{in_flight} (workers x prefetch_factor x tensors per batch)")
    numbers = {"strategy": strategy, "soft_limit": soft_limit, "tensors_in_flight": in_flight}
    if strategy != "file_descriptor" or in_flight <= soft_limit // 2:
        return _check("open files", OK, text, **numbers)
    return _check("open files", WARNING, text + ": workers can run out of file descriptors ('received 0 items "
                  "of ancdata', 'Too many open files'); raise the limit (ulimit -n) or call "
                  "torch.multiprocessing.set_sharing_strategy('file_system')", **numbers)


def start_method(method: str, explicit: bool, python: tuple = sys.version_info[:2],
                 platform: str = sys.platform) -> Dict:
    """Which start method the loader's workers get, and what that costs each time they start."""
    numbers = {"method": method, "explicit": explicit}
    fresh = method in ("spawn", "forkserver")
    text = f"workers start with {method}" + (" (set on the loader)" if explicit else " (the default here)")
    if fresh:
        text += ": every fresh worker imports torch and your modules again"
    elif platform.startswith("linux") and not explicit and python < (3, 14):
        text += ("; from Python 3.14 the Linux default is forkserver, where fresh workers import everything "
                 "again: persistent workers matter more there")
    return _check("start method", OK, text, **numbers)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def shm_size(path: str) -> int:
    try:
        return shutil.disk_usage(path).total
    except OSError:
        return 0


def shm_used(path: str) -> float:
    return float(shutil.disk_usage(path).used)


def checks(loader, peak: float, batch_bytes: int, tensors_per_batch: int, shm_path: str) -> List[Dict]:
    """The four checks for ``loader``, from the numbers measured while it ran."""
    import torch.multiprocessing

    workers = loader.num_workers
    prefetch = (loader.prefetch_factor or 2) if workers else 0
    context = loader.multiprocessing_context
    method = context.get_start_method() if context is not None else multiprocessing.get_start_method()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return [
        shared_memory(shm_path, shm_size(shm_path), peak, workers * prefetch * batch_bytes),
        cpus(workers, usable_cpus()),
        open_files(torch.multiprocessing.get_sharing_strategy(), soft, workers * prefetch * tensors_per_batch),
        start_method(method, context is not None),
    ]


def shm_problem(path: Optional[str]) -> Optional[str]:
    """Why --shm-path cannot be read, checked before any scenario runs."""
    if path is not None and not os.path.isdir(path):
        return f"--shm-path {path}: no such directory"
    return None
