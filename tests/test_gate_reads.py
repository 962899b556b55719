"""The gate reads what the analysis reads: which loader class a name is bound to, what a loader subclass
of the project sets itself, and what DL302, DL402, DL501 and DL602 need beyond a loader with workers.
Each test pairs a file the gate passes (the analysis reports there) with its twin that it spares, and
the analysis agrees with both."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict

from flake8_dataloader.engine import check_source
from flake8_dataloader.facts.constants import DEFAULT_LOADER_NAMES
from flake8_dataloader.project import store
from flake8_dataloader.screen import gate
from flake8_dataloader.settings import Settings

EPOCHS = (
    "\n\ndef train(model, dataset, epochs):\n"
    "    loader = DataLoader(dataset, batch_size=8, num_workers=2{extra})\n"
    "    for epoch in range(epochs):\n"
    "        for batch in loader:\n"
    "            model(batch)\n"
)


def _project(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _decide(path: Path, code: str, settings: Settings = Settings()):
    """(the gate's answer, the codes the analysis reports) for one file with only ``code`` selected."""
    store.clear()
    source = path.read_text()
    settings = settings._replace(selected=frozenset({code})).for_file(source, str(path))
    passes = gate.may_report(ast.parse(source), settings, str(path))
    found = {c for _, _, c, _ in check_source(source, str(path), settings, use_prefilter=False) if c == code}
    store.clear()
    return passes, found


def test_a_loader_name_from_a_module_outside_the_project_is_no_loader(tmp_path):
    """`from monai.data import DataLoader` where no such module is found: the analysis resolves the name to
    that module's class, which is no loader, so the epoch loop holds no DL402; torch's name does."""
    root = _project(tmp_path, {
        "elsewhere.py": "from vendor.data import DataLoader" + EPOCHS.format(extra=""),
        "torch_loader.py": "from torch.utils.data import DataLoader" + EPOCHS.format(extra=""),
        "rebound.py": (
            "from vendor.data import DataLoader\nimport torch\n\nDataLoader = torch.utils.data.DataLoader"
            + EPOCHS.format(extra="")
        ),
    })
    assert _decide(root / "elsewhere.py", "DL402") == (False, set())
    assert _decide(root / "torch_loader.py", "DL402") == (True, {"DL402"})
    named = Settings(loader_names=DEFAULT_LOADER_NAMES | {"vendor.data.DataLoader"})  # `dataloader-names`
    assert _decide(root / "elsewhere.py", "DL402", named) == (True, {"DL402"})
    # Bound again in the file: left to the names' closure, which passes it (the analysis, reading two
    # bindings, resolves neither).
    assert _decide(root / "rebound.py", "DL402")[0]


def test_a_project_loader_subclass_with_an_init_reads_omitted_arguments_as_unknown(tmp_path):
    """Imported under torch's name, the project's subclass sets what a call omits: with persistent_workers
    omitted there is no DL402 to find; given as a value that may be False, there is. A call without
    num_workers gets the `__init__`'s own default, 0 here: no workers, no DL302 for its lambda; where the
    `__init__` changes the count, it may use workers. The subclass is no factory."""
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/loading.py": (
            "from torch.utils.data import DataLoader as TorchDataLoader\n\n\n"
            "class DataLoader(TorchDataLoader):\n"
            "    def __init__(self, dataset, num_workers=0, **kwargs):\n"
            "        super().__init__(dataset, num_workers=num_workers, **kwargs)\n\n\n"
            "class Clamped(TorchDataLoader):\n"
            "    def __init__(self, dataset, num_workers=0, **kwargs):\n"
            "        super().__init__(dataset, num_workers=max(num_workers, 2), **kwargs)\n"
        ),
        "pkg/omitted.py": "from .loading import DataLoader" + EPOCHS.format(extra=""),
        "pkg/given.py": (
            "from .loading import DataLoader\n\nKEEP = False" + EPOCHS.format(extra=", persistent_workers=KEEP")
        ),
        "pkg/lambdas.py": (
            "from .loading import DataLoader\n\n\ndef peek(dataset):\n"
            "    for batch in DataLoader(dataset, collate_fn=lambda batch: batch):\n        return batch\n"
        ),
        "pkg/clamped.py": (
            "from .loading import Clamped as DataLoader\n\n\ndef peek(dataset):\n"
            "    for batch in DataLoader(dataset, collate_fn=lambda batch: batch):\n        return batch\n"
        ),
    })
    assert _decide(root / "pkg" / "omitted.py", "DL402") == (False, set())
    assert _decide(root / "pkg" / "given.py", "DL402") == (True, {"DL402"})
    assert _decide(root / "pkg" / "lambdas.py", "DL302") == (False, set())
    assert _decide(root / "pkg" / "clamped.py", "DL302") == (True, {"DL302"})


def test_literal_persistent_workers_is_decided_for_dl402(tmp_path):
    root = _project(tmp_path, {
        "kept.py": "from torch.utils.data import DataLoader" + EPOCHS.format(extra=", persistent_workers=True"),
        "declined.py": "from torch.utils.data import DataLoader" + EPOCHS.format(extra=", persistent_workers=False"),
        "named.py": (
            "from torch.utils.data import DataLoader\n\nKEEP = 0" + EPOCHS.format(extra=", persistent_workers=KEEP")
        ),
    })
    assert _decide(root / "kept.py", "DL402") == (False, set())
    assert _decide(root / "declined.py", "DL402") == (False, set())
    assert _decide(root / "named.py", "DL402") == (True, {"DL402"})


def test_dl302_needs_something_workers_cannot_take(tmp_path):
    """A module-level dataset class pickles; a lambda, one defined under the `__main__` guard, or any class
    of a notebook's cells does not. An imported class holding a lambda on self counts too."""
    plain = (
        "from torch.utils.data import DataLoader, Dataset\n\n\nclass Squares(Dataset):\n"
        "    def __len__(self):\n        return 8\n\n    def __getitem__(self, i):\n        return i * i\n"
    )
    root = _project(tmp_path, {
        "plain.py": plain + "\n\nDataLoader(Squares(), num_workers=2)\n",
        "lambda.py": plain + "\n\nDataLoader(Squares(), num_workers=2, collate_fn=lambda b: b)\n",
        "guarded.py": (
            "from torch.utils.data import DataLoader, Dataset\n\nif __name__ == '__main__':\n"
            "    class Squares(Dataset):\n        def __len__(self):\n            return 8\n\n"
            "        def __getitem__(self, i):\n            return i * i\n\n"
            "    for batch in DataLoader(Squares(), num_workers=2):\n        print(batch)\n"
        ),
        "holds.py": (
            "from torch.utils.data import Dataset\n\n\nclass Shifted(Dataset):\n    def __init__(self):\n"
            "        self.shift = lambda x: x + 1\n\n    def __len__(self):\n        return 8\n\n"
            "    def __getitem__(self, i):\n        return self.shift(i)\n"
        ),
        "uses_holds.py": (
            "from torch.utils.data import DataLoader\nfrom holds import Shifted\n\n\n"
            "def run():\n    for batch in DataLoader(Shifted(), num_workers=2):\n        print(batch)\n"
        ),
    })
    assert _decide(root / "plain.py", "DL302") == (False, set())
    assert _decide(root / "lambda.py", "DL302") == (True, {"DL302"})
    assert _decide(root / "guarded.py", "DL302") == (True, {"DL302"})
    assert _decide(root / "uses_holds.py", "DL302") == (True, {"DL302"})
    notebook = root / "course_nbqa_ipynb.py"  # nbQA's copy of a one-cell notebook: its classes count
    notebook.write_text((root / "plain.py").read_text())
    assert _decide(notebook, "DL302") == (True, {"DL302"})


def test_dl602_and_dl501_need_cuda_and_a_stream_class(tmp_path):
    base = "from torch.utils.data import DataLoader, Dataset, IterableDataset\n\n\n"
    root = _project(tmp_path, {
        "cpu.py": base + "class Ones(Dataset):\n    def __getitem__(self, i):\n        return i\n\n"
                         "    def __len__(self):\n        return 4\n\n\nDataLoader(Ones(), num_workers=2)\n",
        "gpu.py": base + "class Ones(Dataset):\n    def __getitem__(self, i):\n        return self.t[i].cuda()\n\n"
                         "    def __len__(self):\n        return 4\n\n\nfor b in DataLoader(Ones(), num_workers=2):\n"
                         "    print(b)\n",
        "stream.py": base + "class Count(IterableDataset):\n    def __iter__(self):\n"
                            "        return iter(range(8))\n\n\nfor b in DataLoader(Count(), num_workers=2):\n"
                            "    print(b)\n",
    })
    assert _decide(root / "cpu.py", "DL602") == (False, set())
    assert _decide(root / "gpu.py", "DL602") == (True, {"DL602"})
    assert _decide(root / "cpu.py", "DL501") == (False, set())
    assert _decide(root / "stream.py", "DL501") == (True, {"DL501"})
