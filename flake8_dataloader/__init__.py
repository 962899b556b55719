"""flake8 plugin catching PyTorch DataLoader worker mistakes."""

import time

__version__ = "0.1.0"

# When flake8 loaded the plugin: the findings cache keeps no result that rests on a module modified
# after this (cache.py). Taken here so that the cache itself can load only when a file needs it.
STARTED_NS = time.time_ns()
