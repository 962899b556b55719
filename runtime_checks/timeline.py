"""The timeline of one run: per-batch data waits over wall-clock time, and readings sampled beside it.

A `Sampler` reads a value (the GPU's busy percentage through NVML, the bytes used in /dev/shm)
every few milliseconds in a thread while a loader runs; `draw` plots the waits as the "heartbeat"
users recognise: a spike at every epoch start where workers are started again.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Optional

Reading = Callable[[], float]


class Sampler:
    """Calls ``read`` every ``interval`` seconds in a daemon thread; samples are [seconds since origin, value]."""

    def __init__(self, read: Reading, interval: float = 0.05, origin: Optional[float] = None):
        self.read, self.interval = read, interval
        self.origin = time.perf_counter() if origin is None else origin
        self.samples: List[List[float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while True:
            try:
                value = float(self.read())
            except Exception:  # a reading that fails once (a driver hiccup) is skipped, not fatal
                value = None
            if value is not None:
                self.samples.append([round(time.perf_counter() - self.origin, 4), value])
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def peak(self) -> float:
        return max((value for _, value in self.samples), default=0.0)


def gpu_busy_reader(device_index: int = 0) -> Optional[Reading]:
    """The GPU's busy percentage (NVML utilization), or None without nvidia-ml-py or a driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        pynvml.nvmlDeviceGetUtilizationRates(handle)
    except Exception:  # NVMLError_LibraryNotFound on a machine without the driver, and its kin
        return None
    return lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu


class Recorder:
    """Per-batch waits of one configuration: [seconds since its start, wait] and the epoch starts."""

    def __init__(self, origin: float):
        self.origin = origin
        self.batches: List[List[float]] = []
        self.epoch_starts: List[float] = []
        self.epoch_ends: List[List[float]] = []  # the last next(): workers shut down when not persistent

    def epoch(self, at: float) -> None:
        self.epoch_starts.append(round(at - self.origin, 4))

    def batch(self, at: float, wait: float) -> None:
        self.batches.append([round(at - self.origin, 4), round(wait, 6)])

    def end(self, at: float, wait: float) -> None:
        self.epoch_ends.append([round(at - self.origin, 4), round(wait, 6)])

    def as_dict(self, gpu: Optional[Sampler] = None) -> Dict:
        """Times from the first epoch's start (what came before it, building a model, is not the loader's)."""
        zero = self.epoch_starts[0] if self.epoch_starts else 0.0

        def shift(pairs: List[List[float]]) -> List[List[float]]:
            return [[round(t - zero, 4), value] for t, value in pairs if t >= zero]

        out: Dict = {"batches": shift(self.batches), "epoch_starts": [round(t - zero, 4) for t in self.epoch_starts],
                     "epoch_ends": shift(self.epoch_ends)}
        if gpu is not None:
            out["gpu_busy"] = shift(gpu.samples)
        return out


def seconds_label(value: float, _position=None) -> str:
    """A tick label a person reads: 5 ms, 250 ms, 1.5 s, 4 s (the report's epoch panels use it too)."""
    if value <= 0:
        return "0"
    if value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value:.3g} s"


def draw(axis, name: str, timeline: Dict, top: float) -> None:
    """One configuration's heartbeat on ``axis``: waits per batch, epoch starts, GPU busy when sampled."""
    # Each wait as a bar over the interval it lasted (it ends when the batch arrives), as high as it is long.
    starts = [t - w for t, w in timeline["batches"]]
    waits = [w for _, w in timeline["batches"]]
    axis.bar(starts, waits, width=waits, align="edge", color="tab:red", alpha=0.6, edgecolor="tab:red",
             linewidth=0.8, label="waiting for data, per batch")
    ends = timeline.get("epoch_ends", [])
    if ends:
        axis.bar([t - w for t, w in ends], [w for _, w in ends], width=[w for _, w in ends], align="edge",
                 color="tab:grey", alpha=0.5, label="epoch end (fresh workers shut down)")
    for start in timeline["epoch_starts"]:
        axis.axvline(start, color="grey", linestyle=":", linewidth=0.8)
    axis.set_ylim(0, top * 1.1 if top > 0 else 1)
    axis.set_ylabel(f"{name}\nwait per batch")
    axis.yaxis.set_major_formatter(_formatter(seconds_label))
    axis.grid(True, alpha=0.3)
    if timeline.get("gpu_busy"):
        busy = axis.twinx()
        busy.fill_between([t for t, _ in timeline["gpu_busy"]], [v for _, v in timeline["gpu_busy"]], step="post",
                          color="tab:green", alpha=0.25, label="GPU busy (NVML)")
        busy.set_ylim(0, 105)
        busy.set_ylabel("GPU busy %")
        busy.legend(loc="upper right", fontsize="small")
    axis.legend(loc="upper left", fontsize="small")


def _formatter(function):
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(function)


def draw_timelines(figure_row, timelines: Dict[str, Dict]) -> None:
    """Each configuration on its own axis of ``figure_row``, sharing the wait scale; x is wall-clock time."""
    top = max((w for tl in timelines.values() for _, w in tl["batches"]), default=0.0)
    last = max((t for tl in timelines.values() for t, _ in tl["batches"]), default=1.0)
    for axis, (name, timeline) in zip(figure_row, timelines.items()):
        draw(axis, name, timeline, top)
        axis.set_xlim(0, last * 1.02)
    figure_row[-1].set_xlabel("wall-clock seconds since the first epoch started (dotted: epoch starts)")
