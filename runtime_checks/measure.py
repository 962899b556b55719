"""Run each scenario in its own process group with a timeout; time things honestly.

The parent imports torch once and forks a fresh child per scenario (where
fork exists), so no scenario pays torch's import again and none can leak
workers, caches or a hang into the next: on return or timeout the whole
process group is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from typing import Callable, Dict, Optional


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` and its leader (which may not have called setsid yet)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pid: int, patience: float = 10.0) -> None:
    """Wait for a killed child without ever blocking for good (an interrupt must end the tool)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)


def _error_result(exc: BaseException) -> Dict:
    return {"status": "error", "summary": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}


def run_forked(func: Callable[[], Dict], timeout: float) -> Dict:
    """Run ``func`` in a forked child in a new session; its dict result comes back through a pipe."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler is not the child's
        os.close(read_fd)
        try:
            result = func()
        except BaseException as exc:  # noqa: B902 - report everything, the child exits anyway
            result = _error_result(exc)
        with os.fdopen(write_fd, "w") as out:
            out.write(json.dumps(result, default=str))
        os._exit(0)
    os.close(write_fd)
    return _collect(pid, read_fd, timeout)


# After the scenario process has exited, how long its output may still take to arrive.
_GRACE_S = 2.0


def _collect(pid: int, read_fd: int, timeout: float) -> Dict:
    """Read the child's result until EOF; reap it exactly once.

    Workers the child forked inherit the pipe: when the child exits before them (a dataset
    that raised, processes of the user's own), EOF only comes once its process group is
    killed, so the group goes as soon as the child is reaped.
    """
    deadline = time.monotonic() + timeout
    chunks = []
    reaped_at: Optional[float] = None
    os.set_blocking(read_fd, False)
    try:
        while True:
            try:
                chunk = os.read(read_fd, 65536)
                if chunk:
                    chunks.append(chunk)
                    continue
                break  # EOF: every holder of the write end has closed it
            except BlockingIOError:
                pass
            if reaped_at is None and os.waitpid(pid, os.WNOHANG)[0]:
                reaped_at = time.monotonic()
                kill_group(pid)  # the child is gone: what is left of its group holds the pipe
            if reaped_at is not None and time.monotonic() - reaped_at > _GRACE_S:
                break  # a process outside the group (setsid) still holds it
            if reaped_at is None and time.monotonic() > deadline:
                kill_group(pid)
                _reap(pid)
                reaped_at = time.monotonic()
                return {"status": "timeout", "summary": f"stopped after {timeout:.0f} s"}
            time.sleep(0.01)
    finally:
        os.close(read_fd)
        kill_group(pid)  # leftover workers of the scenario die with its group
        if reaped_at is None:
            _reap(pid)
    data = b"".join(chunks).decode(errors="replace")
    if not data:
        return {"status": "error", "summary": "scenario process died without a result"}
    try:
        return json.loads(data)
    except ValueError:
        return {"status": "error", "summary": "scenario process sent an incomplete result"}


def run_script(path: str, timeout: float, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None) -> Dict:
    """Run a Python script in its own session; return rc, stdout, stderr, seconds (or timed_out)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        stdout, stderr = proc.communicate()
        timed_out = True
    kill_group(proc.pid)
    return {
        "rc": proc.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "seconds": time.perf_counter() - started,
        "timed_out": timed_out,
    }


class Clock:
    """perf_counter that first waits for queued GPU work, so GPU time is not misread."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"

    def __call__(self) -> float:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        return time.perf_counter()
