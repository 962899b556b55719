"""DL302 in a notebook: a dataset class defined in a cell, next to the same class imported from a module.

A generated notebook runs in a real Jupyter kernel (nbclient + ipykernel, `pip install
'flake8-dataloader[notebook]'`; without them the scenario reports "needs <package>") under spawn and
forkserver. The kernel's main module has no file, so workers cannot import what a cell defined: each
worker dies on its stderr (the terminal Jupyter was started from, captured here in a file), and
the cell shows only "DataLoader worker ... exited unexpectedly". The imported class runs, with no
`__main__` guard anywhere.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import multiprocessing
import os
import re
import tempfile
import time
from typing import Dict, Iterator, List, Optional

from .base import Options, Scenario
from .common import progress, verdict

NEEDS_PACKAGE = "needs-package"
PACKAGES = ("nbformat", "nbclient", "ipykernel")
METHODS = ("spawn", "forkserver")

MODULE = '''\
import torch
from torch.utils.data import Dataset


class Shapes(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([float(i)])
'''

# The notebook's cells before the dataset cells. `attempt` marks the kernel's stderr, so that each
# worker error is read under the attempt it belongs to.
SETUP = """\
import json, multiprocessing, os, time
import torch
from torch.utils.data import DataLoader, Dataset"""

ATTEMPT = """\
def attempt(dataset, method):
    os.write(2, f"== {method} {type(dataset).__module__}\\n".encode())
    start = time.perf_counter()
    try:
        loader = DataLoader(dataset, batch_size=4, num_workers=1,
                            multiprocessing_context=multiprocessing.get_context(method))
        outcome = f"ran: {sum(len(batch) for batch in loader)} samples"
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}".splitlines()[0]
    print(json.dumps({"outcome": outcome, "seconds": round(time.perf_counter() - start, 2)}))"""

IMPORTED = "from shapes_data import Shapes as ImportedShapes"
DEFINED = MODULE.split("\n\n\n", 1)[1].rstrip()


def cells(methods) -> List[str]:
    """The notebook's code cells: under each start method the imported class, then the one a cell defines."""
    tries = [f"attempt({cls}(), {method!r})" for method in methods for cls in ("ImportedShapes", "Shapes")]
    return [SETUP, ATTEMPT, IMPORTED, DEFINED, *tries]


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a parent that is not a package, a module set to None
        return True


def _missing() -> Optional[Dict]:
    absent = [name for name in PACKAGES if _absent(name)]
    if not absent:
        return None
    return {"status": NEEDS_PACKAGE, "metrics": {},
            "summary": f"needs {', '.join(absent)}: pip install 'flake8-dataloader[notebook]'"}


@contextlib.contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _attempt(cell) -> Dict:
    text = "".join(out.get("text", "") for out in cell.outputs if out.get("output_type") == "stream")
    return json.loads(text.strip().splitlines()[-1])


def run_notebook(methods, timeout: float) -> Dict[str, Dict]:
    """Execute the notebook in a fresh kernel: per start method, each attempt's outcome and time and the
    workers' error lines."""
    import nbformat
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="runtime_checks_nb_") as folder:
        with open(os.path.join(folder, "shapes_data.py"), "w") as handle:
            handle.write(MODULE)
        log = os.path.join(folder, "kernel-stderr.txt")
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells(methods)]
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": folder}})
        started = time.perf_counter()
        with _stderr_to(log):  # the kernel and its workers inherit it: Jupyter's terminal, not the notebook
            client.execute()
        seconds = time.perf_counter() - started
        with open(log) as handle:
            stderr = handle.read()
    errors: Dict[str, set] = {}
    current: set = set()  # what the kernel printed before the first attempt
    for line in stderr.splitlines():
        if line.startswith("== "):
            current = errors.setdefault(line[3:], set())
        elif re.match(r"^\w+Error: ", line.strip()):
            current.add(line.strip())
    runs = {}
    for index, method in enumerate(methods):
        imported, defined = (_attempt(cell) for cell in notebook.cells[4 + 2 * index:6 + 2 * index])
        runs[method] = {"imported": imported, "defined": defined,
                        "worker_errors": sorted(errors.get(f"{method} __main__", ())),
                        "imported_worker_errors": sorted(errors.get(f"{method} shapes_data", ()))}
    return {"runs": runs, "notebook_seconds": round(seconds, 2)}


def notebook_payload(opts: Options) -> Dict:
    missing = _missing()
    if missing is not None:
        return missing
    methods = [m for m in METHODS if m in multiprocessing.get_all_start_methods()]
    progress(opts, "notebook-payload", f"running a notebook in a fresh kernel ({', '.join(methods)})")
    executed = run_notebook(methods, 60 if opts.quick else 120)
    runs = executed["runs"]
    expected = "AttributeError: Can't get attribute 'Shapes' on <module '__main__' (built-in)>"
    ok = bool(runs) and all(
        run["imported"]["outcome"] == "ran: 8 samples" and not run["imported_worker_errors"]
        and run["defined"]["outcome"].startswith("RuntimeError: DataLoader worker (pid(s) ")
        and run["defined"]["outcome"].endswith(") exited unexpectedly")
        and expected in run["worker_errors"]
        for run in runs.values()
    )
    summary = "; ".join(
        f"{method}: class from a cell fails after {run['defined']['seconds']:.1f} s "
        f"({run['worker_errors'][0] if run['worker_errors'] else 'no worker error'}), imported: "
        f"{run['imported']['outcome']} in {run['imported']['seconds']:.1f} s"
        for method, run in runs.items()
    )
    return verdict(ok, summary or "neither spawn nor forkserver exists here", executed)


SCENARIOS = [Scenario("notebook-payload", ("DL302",), notebook_payload, 300)]
