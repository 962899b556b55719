"""Machine information recorded next to every result."""

from __future__ import annotations

import multiprocessing
import os
import platform
import shutil
import subprocess
from typing import Dict


def machine_info(device: str) -> Dict:
    import torch

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "default_start_method": multiprocessing.get_start_method(allow_none=True)
        or multiprocessing.get_context().get_start_method(),
        "device": device,
        "device_name": platform.processor() or platform.machine(),
        "cuda_available": torch.cuda.is_available(),
    }
    if device == "cuda":
        info["device_name"] = torch.cuda.get_device_name(0)
        info["cuda_version"] = torch.version.cuda
        info["driver"] = _driver_version()
    return info


def _driver_version() -> str:
    if not shutil.which("nvidia-smi"):
        return "unknown"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
