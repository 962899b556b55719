import os
import sys
from pathlib import Path

import pytest

# Bugs in the plugin must fail tests, never be swallowed.
os.environ.setdefault("FLAKE8_DATALOADER_STRICT", "1")
# Runs of flake8 in tests write no findings cache (tests/test_cache.py turns it on where it tests it).
os.environ["FLAKE8_DATALOADER_CACHE"] = "off"

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def analyses(monkeypatch):
    """How many files were analysed (cache misses): a counter of the engine's analyses."""
    from flake8_dataloader import engine

    count = [0]
    real = engine.checked

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "checked", counting)
    return count
