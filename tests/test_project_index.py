"""The prefilter's cross-module stage: a file without trigger tokens is analysed only when one of
its imports may name a loader factory of its project (project/index.py), never from a bare
`loader` identifier and any project import."""

import ast
import sys

import pytest

from flake8_dataloader.engine import check_source
from flake8_dataloader.screen.decide import may_find
from flake8_dataloader.settings import loader_tails
from flake8_dataloader.project import index, store
from flake8_dataloader.project.text import import_spans
from flake8_dataloader.settings import DEFAULT_SETTINGS
from flake8_dataloader.screen.tokens import identifiers, words

from .test_linear import calls_made

FACTORY = (
    "from torch.utils.data import DataLoader\n\n\n"
    "def build_loader(ds, workers):\n    return DataLoader(ds, num_workers=workers)\n"
)
HELPED = "\n\ndef build_loader(ds, workers):\n    return _make(ds, workers)\n"
# A training script with no trigger token of its own: its loader comes from a factory.
SCRIPT = (
    "from {module} import {name}\n\n\n"
    "def main(ds):\n    loader = {call}(ds, 4)\n    for epoch in range(10):\n        for batch in loader:\n"
    "            pass\n\n\nif __name__ == '__main__':\n    main(None)\n"
)
DL402 = "DL402"


@pytest.fixture(autouse=True)
def _fresh_store():
    store.clear()
    yield
    store.clear()


def tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def codes(path):
    text = path.read_text()  # with flake8's ast, as the plugin runs: the stage reads the file's imports
    return [code for _, _, code, _ in check_source(text, str(path), tree=ast.parse(text))]


def admitted(path):
    text = path.read_text()
    return may_find(text, DEFAULT_SETTINGS, ast.parse(text), str(path))


@pytest.mark.parametrize(
    ("files", "script"),
    [
        ({"data.py": FACTORY}, SCRIPT.format(module="data", name="build_loader", call="build_loader")),
        # A package re-exporting the factory from a sub-module.
        (
            {"data/__init__.py": "from .build import build_loader\n", "data/build.py": FACTORY},
            SCRIPT.format(module="data", name="build_loader", call="build_loader"),
        ),
        # The module imported whole, the factory one re-export down.
        (
            {"data/__init__.py": "from .build import *\n", "data/build.py": FACTORY},
            SCRIPT.format(module="data", name="build_loader", call="build_loader").replace(
                "from data import build_loader", "import data"
            ).replace("= build_loader(", "= data.build_loader("),
        ),
        # The factory builds through a helper of its module.
        (
            {"data.py": FACTORY.replace("def build_loader", "def _make") + HELPED},
            SCRIPT.format(module="data", name="build_loader", call="build_loader"),
        ),
        # DataLoader imported under another name.
        (
            {"data.py": FACTORY.replace("import DataLoader", "import DataLoader as DL").replace("DataLoader(", "DL(")},
            SCRIPT.format(module="data", name="build_loader", call="build_loader"),
        ),
    ],
    ids=["function", "re-export", "module-and-star", "through-a-helper", "alias"],
)
def test_a_script_using_an_imported_factory_is_analysed(tmp_path, files, script):
    root = tree(tmp_path, {**files, "train.py": script})
    assert admitted(root / "train.py")
    assert codes(root / "train.py") == [DL402]


def test_an_import_that_cannot_name_a_factory_is_not_analysed(tmp_path, monkeypatch):
    # `loader` identifiers and a project import, but the imported module builds no loader:
    # no rule can report anything, and no module summary (a LibCST parse) is paid for it.
    models = "import torch\n\n\ndef build_loader_free_model(width):\n    return torch.nn.Linear(width, 1)\n"
    script = SCRIPT.format(module="models", name="build_loader_free_model", call="build_loader_free_model")
    root = tree(tmp_path, {"models.py": models, "train.py": script})
    summarised = []
    monkeypatch.setattr(store, "entry", lambda path, settings: summarised.append(path))
    assert not admitted(root / "train.py")
    assert codes(root / "train.py") == []
    assert summarised == []


def test_a_module_level_loader_object_is_not_a_factory(tmp_path):
    # Summaries carry factories, datasets and callables, never loader objects: nothing to find.
    data = "from torch.utils.data import DataLoader\n\ntrain_loader = DataLoader(None, num_workers=2)\n"
    script = "from data import train_loader\n\nfor epoch in range(3):\n    for batch in train_loader:\n        pass\n"
    root = tree(tmp_path, {"data.py": data, "train.py": script})
    assert not admitted(root / "train.py")


def test_builders_are_found_transitively_and_in_classes():
    module = ast.parse(
        "from torch.utils.data import DataLoader\n\n"
        "class Loaders:\n    def make(self):\n        return DataLoader(None)\n\n"
        "def via_class():\n    return Loaders().make()\n\n"
        "def via_function():\n    return via_class()\n\n"
        "def unrelated():\n    return 1\n"
    )
    assert index.builders(module, loader_tails(DEFAULT_SETTINGS)) == {"Loaders", "via_class", "via_function"}


def test_a_loader_class_read_only_as_a_type_builds_nothing():
    module = ast.parse(
        "from torch.utils.data import DataLoader\n\n"
        "def run(loader: DataLoader) -> DataLoader:\n    seen: DataLoader = loader\n    return seen\n\n"
        "class Engine:\n    def __init__(self, data: 'DataLoader', *rest: DataLoader):\n        self.data = data\n\n"
        "def make(ds):\n    kind: type = DataLoader\n    return kind(ds)\n\n"
        "def checks(x) -> bool:\n    return isinstance(x, DataLoader)\n\n"
        "def either(x) -> bool:\n    return issubclass(x, (torch.utils.data.DataLoader, list))\n\n"
        "def wraps(x):\n    return x if isinstance(x, DataLoader) else DataLoader(x)\n\n"
        "def computed(x) -> bool:\n    return isinstance(x, pick(DataLoader))\n\n"
        "def keyword(x) -> bool:\n    return isinstance(x, DataLoader, strict=True)\n\n"
        "def via_checks(x):\n    return checks(x)\n"
    )
    # A type test reads the class and calls none of it; a second argument that calls code is kept.
    assert index.builders(module, loader_tails(DEFAULT_SETTINGS)) == {"make", "wraps", "computed", "keyword"}


# An engine that takes a loader (annotated as one) and runs it: it builds none, so a script handing it
# a loader it got elsewhere, with no trigger token of its own, is not analysed; its twin's helper builds one.
RUNNER = (
    "from torch.utils.data import DataLoader\n\n\n"
    "class Engine:\n    def __init__(self, loader: DataLoader) -> None:\n        self.loader = loader\n\n"
    "    def run(self, epochs: int) -> None:\n        for _ in range(epochs):\n            for batch in self.loader:\n"
    "                pass\n"
)


CHECKED = "\n\ndef build_loader(x):\n    return isinstance(x, (DataLoader, list))\n"


@pytest.mark.parametrize(
    ("extra", "expected"), [("", False), (CHECKED, False), (HELPED.replace("_make", "DataLoader"), True)]
)
def test_an_import_naming_a_loader_only_in_annotations_admits_nothing(tmp_path, extra, expected):
    script = "from runner import Engine\n\n\ndef main(loader):\n    Engine(loader).run(3)\n"
    if extra:
        script = script.replace("import Engine", "import Engine, build_loader")
    root = tree(tmp_path, {"runner.py": RUNNER + extra, "train.py": script})
    assert admitted(root / "train.py") is expected


def helper_chain(n: int) -> str:  # each helper calls the next, the last builds: written top-down
    helpers = "".join(f"def h{i}():\n    return h{i + 1}()\n\n\n" for i in range(n))
    return "from torch.utils.data import DataLoader\n\n\n" + helpers + f"def h{n}():\n    return DataLoader(None)\n"


def test_the_builder_walk_is_linear():
    tails = loader_tails(DEFAULT_SETTINGS)
    small, large = ast.parse(helper_chain(400)), ast.parse(helper_chain(800))
    assert len(index.builders(large, tails)) == 801
    ratio = calls_made(lambda: index.builders(large, tails)) / calls_made(lambda: index.builders(small, tails))
    assert ratio < 2.3


def test_the_index_is_read_once_per_process(tmp_path, monkeypatch):
    root = tree(tmp_path, {"data.py": FACTORY})
    reads, parses = [], []
    source, parsed = index.module_source, index._parsed
    monkeypatch.setattr(index, "module_source", lambda path: reads.append(path) or source(path))
    monkeypatch.setattr(index, "_parsed", lambda *args: parses.append(args) or parsed(*args))
    for name in ("a.py", "b.py"):
        (root / name).write_text(SCRIPT.format(module="data", name="build_loader", call="build_loader"))
        assert admitted(root / name)
    # read for its text, then again for its one parse (data.py names DataLoader: the text cannot decide)
    assert reads == [str(root / "data.py")] * 2 and len(parses) == 1
    assert "libcst" in sys.modules  # (imported by the suite already; the index itself needs no LibCST)


def test_a_module_imported_whole_counts_only_through_the_names_the_file_uses(tmp_path):
    root = tree(tmp_path, {"data.py": FACTORY + "\n\ndef describe(ds):\n    return len(ds)\n"})
    uses = "import data\n\nloader = None\nprint(data.{name}(loader))\n"
    (root / "factory.py").write_text(uses.format(name="build_loader"))
    (root / "other.py").write_text(uses.format(name="describe"))
    assert admitted(root / "factory.py")
    assert not admitted(root / "other.py")


def test_past_the_module_bound_the_file_is_analysed(tmp_path):
    modules = {f"m{i}.py": "def f():\n    return 1\n" for i in range(index.MAX_MODULES_PER_FILE + 1)}
    imports = "".join(f"import m{i}\n" for i in range(index.MAX_MODULES_PER_FILE + 1))
    root = tree(tmp_path, {**modules, "train.py": imports + "loader = None\n"})
    assert admitted(root / "train.py")
    (root / "train.py").write_text(imports.replace(f"import m{index.MAX_MODULES_PER_FILE}\n", "") + "loader = None\n")
    assert not admitted(root / "train.py")


ENGINE = (
    "def fit(model, loader, epochs):\n    for epoch in range(epochs):\n        for batch in loader:\n"
    "            model(batch)\n"
)


def test_an_imported_callable_is_looked_up_only_when_handed_a_loader(tmp_path, monkeypatch):
    script = (
        "from torch.utils.data import DataLoader\n\nfrom engine import fit\n\n\n"
        "def main(ds, model):\n    loader = DataLoader(ds, num_workers=4)\n    fit(model, {handed}, 10)\n"
    )
    files = {"engine.py": ENGINE, "a.py": script.format(handed="loader"), "b.py": script.format(handed="ds")}
    root = tree(tmp_path, files)
    engine = str(root / "engine.py")
    summarised = []
    original = store._summarised
    monkeypatch.setattr(store, "_summarised", lambda *args: summarised.append(args[0]) or original(*args))
    assert codes(root / "b.py") == []  # fit is handed no loader: engine.py is never summarised
    assert engine not in summarised
    assert codes(root / "a.py") == [DL402]  # fit iterates the loader every epoch
    assert summarised.count(engine) == 1


def test_a_factory_question_about_a_name_that_builds_nothing_costs_no_summary(tmp_path, monkeypatch):
    helpers = "def scale(values, factor):\n    return [v * factor for v in values]\n"  # iterates what it is given
    script = "from torch.utils.data import DataLoader\n\nfrom helpers import scale\n\nweights = scale([1, 2], 3)\n"
    root = tree(tmp_path, {"helpers.py": helpers, "train.py": script})
    summarised = []
    original = store._summarised
    monkeypatch.setattr(store, "_summarised", lambda *args: summarised.append(args[0]) or original(*args))
    assert codes(root / "train.py") == []
    assert str(root / "helpers.py") not in summarised


def test_a_factory_module_with_a_byte_order_mark_is_read_as_the_summaries_read_it(tmp_path):
    root = tree(tmp_path, {"train.py": SCRIPT.format(module="data", name="build_loader", call="build_loader")})
    (root / "data.py").write_bytes(b"\xef\xbb\xbf" + FACTORY.encode())
    assert admitted(root / "train.py")
    assert codes(root / "train.py") == [DL402]


# Each import binds `Net` (or `x`), written as real code writes imports; the text's words must hold it.
IMPORT_SHAPES = [
    "from models import (  # see README (section 2)\n    Other,\n    Net,\n)\n",
    "from models import Other, \\\n    Net\n",
    "import os; from models import (\n    Net,\n)\n",
    "from models import \\\n    (Other,\n     Net)\n",
    "if True:\n    from models import Net as x\n",
    "try:\n    import models.net as Net\nexcept ImportError:\n    pass\n",
    "doc = '''import ( nothing'''\nfrom models import (Net)\n",
    "from models import *\n",
]


@pytest.mark.parametrize("source", IMPORT_SHAPES)
def test_the_words_of_import_statements_hold_every_name_they_bind(source):
    exports, _ = index.import_table(ast.parse(source))
    spans = import_spans(source)
    assert spans is not None
    assert set(exports) <= words(" ".join(spans))
    assert ("*" in source) == any("*" in span for span in spans)


def test_an_import_list_never_closed_leaves_the_question_to_the_parse():
    assert import_spans("'''\nfrom x import (a,\n b\n'''\n") is None


def test_words_hold_every_identifier_normalized():
    source = "ﬁle = 1\ncafé = 'naïve'  # ünï\nprint(ﬁle, café)\n"
    assert identifiers(ast.parse(source)) <= words(source)
    assert "file" in words(source)  # the ligature, as the parser normalizes it (NFKC)


def test_a_module_that_only_defines_the_imported_name_is_not_parsed(tmp_path, monkeypatch):
    parses = []
    parsed = index._parsed
    monkeypatch.setattr(index, "_parsed", lambda *args: parses.append(args) or parsed(*args))
    root = tree(tmp_path, {"models.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n"})
    (root / "train.py").write_text(SCRIPT.format(module="models", name="Net", call="Net"))
    assert not admitted(root / "train.py")
    assert parses == []


@pytest.mark.parametrize("shape", [0, 1, 2, 3, 7])
def test_a_factory_re_exported_through_any_import_shape_is_found(tmp_path, shape):
    reexport = IMPORT_SHAPES[shape].replace("Net", "build_loader").replace("models", "data")
    root = tree(tmp_path, {"data.py": FACTORY + "\n\nclass Other:\n    pass\n", "api.py": reexport})
    (root / "train.py").write_text(SCRIPT.format(module="api", name="build_loader", call="build_loader"))
    assert admitted(root / "train.py")


def test_the_answer_does_not_depend_on_the_order_of_the_imports(tmp_path):
    # Through a.x, the pair (m, n) is met with one re-export hop left, too few to reach q's factory;
    # through m.n directly, with four. Either order must find it.
    chain = {
        "a.py": "from c import x\n",
        "c.py": "from d import x\n",
        "d.py": "from m import n as x\n",
        "m.py": "from p import n\n",
        "p.py": "from q import n\n",
        "q.py": FACTORY.replace("build_loader", "n"),
    }
    root = tree(tmp_path, chain)
    loop = "\nloader = n(None, 4)\nfor epoch in range(3):\n    for b in loader:\n        pass\n"
    (root / "train.py").write_text("from a import x\nfrom m import n\n" + loop)
    (root / "swapped.py").write_text("from m import n\nfrom a import x\n" + loop)
    assert admitted(root / "swapped.py")
    store.clear()
    assert admitted(root / "train.py")
