"""Loader subclasses of the project at any depth (rule book, Across files: "loader subclasses ... of the
project"): a class of one module whose base is a loader subclass of another module is a loader too, read
as its base when it adds nothing, and otherwise with what its own `__init__` decides or hands on. As for
every imported loader class, only a module that names a loader class is read (MONAI's thread loader
subclasses the project's own `DataLoader`).

MONAI's shape: `ThreadDataLoader(DataLoader)` over its own `DataLoader(torch DataLoader)` whose `__init__`
defaults `num_workers` to 0; the thread loader hands an omitted count on through `**kwargs` and iterates
through a thread buffer (its own `__iter__`).
"""

import ast
import textwrap

import pytest

from flake8_dataloader.engine import check_source
from flake8_dataloader.facts.subclass_init import class_hands_on_workers, hands_on_workers
from flake8_dataloader.project import index, store, summary_cache
from flake8_dataloader.screen import gate
from flake8_dataloader.settings import Settings

BASE = (
    "from torch.utils.data import DataLoader as TorchLoader\n\n\n"
    "class DataLoader(TorchLoader):\n"
    "    def __init__(self, ds, num_workers=0, **kwargs):\n"
    "        super().__init__(ds, num_workers=num_workers, **kwargs)\n"
)
BUSY = BASE.replace("num_workers=0", "num_workers=2")  # another module's DataLoader, with 2 workers by default
CHAINED = (
    "from . import busy\nfrom .base import DataLoader\n\n\n"
    "class Threaded(DataLoader):\n"
    "    def __init__(self, ds, buffer_size=1, threads=False, **kwargs):\n"
    "        if threads and kwargs.get('num_workers', 0) > 0:\n"
    "            kwargs['persistent_workers'] = False\n"
    "        super().__init__(ds, **kwargs)\n"
    "        self.buffer_size = buffer_size\n\n"
    "    def __iter__(self):\n"
    "        yield from super().__iter__()\n\n\n"
    "class Plain(DataLoader):\n"
    "    pass\n\n\n"
    "class Eager(DataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        super().__init__(ds, **kwargs)\n\n\n"
    "class Changed(DataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        kwargs.update(num_workers=4)\n"
    "        super().__init__(ds, **kwargs)\n\n\n"
    "class Relay(busy.DataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        super().__init__(ds, **kwargs)\n"
)
SCRIPT = (
    "from pkg import {name}\n\n\n"
    "def train(ds):\n"
    "    for epoch in range(3):\n"
    "        loader = {name}(ds, num_workers=2, collate_fn=lambda b: b)\n"
    "        for batch in loader:\n"
    "            pass\n\n\n"
    "def quiet(ds):\n"
    "    loader = {name}(ds, collate_fn=lambda b: b)\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            pass\n"
)
SELECTED = Settings(selected=frozenset({"DL302", "DL401", "DL410"}))
OMITTED = (
    "DL410 single-process DataLoader (num_workers omitted (DataLoader.__init__ defaults it to 0)) in a training loop"
)
# Per class: what `quiet` reports past the rebuilt loader's DL401 and DL302 (DL410 at the call, DL302 at the lambda).
EXPECTED = {
    # Threaded iterates through its own `__iter__`: its single-process loading is not proven synchronous.
    "Threaded": [],
    "Plain": ["DL410"],
    "Eager": ["DL410"],
    # Its `__init__` may add a count (`kwargs.update`): the omitting call may use workers.
    "Changed": ["DL302"],
    # It hands the omitted count on to a base whose own default is 2 workers.
    "Relay": ["DL302"],
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        "from .base import DataLoader\nfrom .chained import Changed, Eager, Plain, Relay, Threaded\n"
    )
    (tmp_path / "pkg" / "base.py").write_text(BASE)
    (tmp_path / "pkg" / "busy.py").write_text(BUSY)
    (tmp_path / "pkg" / "chained.py").write_text(CHAINED)
    store.clear()
    yield tmp_path
    store.clear()
    index.clear()


def lint(path, source, settings=SELECTED):
    path.write_text(source)
    store.clear()
    return check_source(source, str(path), settings, tree=ast.parse(source))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_subclass_of_a_project_subclass_is_a_loader(project, name):
    source = SCRIPT.format(name=name)
    found = lint(project / "train.py", source)
    columns = {"DL410": 13, "DL302": len(f"    loader = {name}(ds, collate_fn=")}
    assert [(line, col, code) for line, col, code, _ in found] == [
        (6, 17, "DL401"), (6, len(f"        loader = {name}(ds, num_workers=2, collate_fn="), "DL302"),
        *[(12, columns[code], code) for code in EXPECTED[name]],
    ]
    for _, _, code, message in found:
        if code == "DL410":
            assert message.startswith(OMITTED)
    # Every finding comes through an imported name the gate reads as a possible builder.
    assert gate.may_report(ast.parse(source), SELECTED, str(project / "train.py"))


def test_the_summary_links_each_class_to_its_base_and_keeps_the_link_on_disk(project):
    summary = store.entry(str(project / "pkg" / "chained.py"), Settings()).summary
    assert summary.loader_classes == {}  # read alone, its module's classes subclass no loader it knows
    links = {name: tuple(link) for name, link in summary.subclass_links.items()}
    assert links == {
        "Threaded": (".base.DataLoader", False, None, True, True),
        "Plain": (".base.DataLoader", True, None, False, False),
        "Eager": (".base.DataLoader", False, None, True, False),
        "Changed": (".base.DataLoader", False, None, False, False),
        "Relay": (".busy.DataLoader", False, None, True, False),
    }
    text = summary_cache.encode(summary, ({}, ()))
    assert text is not None and summary_cache.decode(text)[0] == summary


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # Past the dataset, a positional argument fills the subclass's own `num_workers`, not batch_size.
        ("DataLoader(ds, 4, collate_fn=lambda b: b)",
         [(12, len("    loader = DataLoader(ds, 4, collate_fn="), "DL302")]),
        ("DataLoader(ds, collate_fn=lambda b: b)", [(12, 13, "DL410")]),
    ],
)
def test_positional_arguments_of_a_subclass_follow_its_own_init(project, call, expected):
    source = SCRIPT.format(name="DataLoader").replace("DataLoader(ds, collate_fn=lambda b: b)", call)
    found = lint(project / "train.py", source)
    assert [(line, col, code) for line, col, code, _ in found][2:] == expected
    settings = Settings(selected=frozenset({"DL302"}))
    quiet = "from pkg import DataLoader\n\n\ndef quiet(ds):\n    return " + call + "\n"
    (project / "quiet.py").write_text(quiet)
    # The gate passes the positional call (it may use workers), and skips the omitting one.
    assert gate.may_report(ast.parse(quiet), settings, str(project / "quiet.py")) is ("4" in call)


def test_the_readings_are_what_torch_does(project, monkeypatch):
    """Real torch, nothing iterated: the counts the analysis reads are the loaders' own."""
    pytest.importorskip("torch", reason="real torch: pip install torch")
    monkeypatch.syspath_prepend(str(project))
    from pkg import Changed, DataLoader, Eager, Plain, Relay, Threaded

    data = list(range(4))
    assert [cls(data).num_workers for cls in (Threaded, Plain, Eager, Changed, Relay)] == [0, 0, 0, 4, 2]
    assert DataLoader(data, 4).num_workers == 4 and DataLoader(data, 4).batch_size == 1


def _init(body: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(body)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


HANDED = (
    "def __init__(self, ds, buffer_size=1, threads=False, **kwargs):\n"
    "    if threads and kwargs.get('num_workers', 0) > 0 and 'x' in kwargs:\n"
    "        kwargs['multiprocessing_context'] = kwargs['context']\n"
    "    super().__init__(ds, **kwargs)\n"
)


@pytest.mark.parametrize(
    ("init", "hands_on"),
    [
        (HANDED, True),
        (HANDED.replace("kwargs['multiprocessing_context']", "kwargs['num_workers']"), False),
        (HANDED.replace("kwargs['multiprocessing_context']", "kwargs[key]"), False),
        (HANDED.replace("(ds, **kwargs)", "(ds, num_workers=2, **kwargs)"), False),
        (HANDED.replace("(ds, **kwargs)", "(ds, 2, **kwargs)"), False),
        (HANDED.replace("(ds, **kwargs)", "(*ds, **kwargs)"), False),
        (HANDED.replace("(ds, **kwargs)", "(ds, **dict(kwargs))"), False),
        (HANDED.replace("(ds, **kwargs)", "(ds)"), False),
        (HANDED.replace("    super().__init__(ds, **kwargs)\n", "    pass\n"), False),
        (HANDED.replace("    super()", "    kwargs.update(extra)\n    super()"), False),
        (HANDED.replace("    super()", "    kwargs.setdefault('num_workers', 4)\n    super()"), False),
        (HANDED.replace("    super()", "    configure(kwargs)\n    super()"), False),
        (HANDED.replace("    super()", "    kwargs = dict(kwargs)\n    super()"), False),
        (HANDED.replace("    super()", "    del kwargs['num_workers']\n    super()"), False),
        (HANDED.replace("**kwargs):", "num_workers=0, **kwargs):"), False),
        (HANDED.replace("def __init__", "@wraps\ndef __init__"), False),
        (HANDED.replace(", **kwargs):", "):").replace("(ds, **kwargs)", "(ds)"), False),
    ],
)
def test_an_init_hands_an_omitted_count_on_only_when_kwargs_keep_it(init, hands_on):
    assert hands_on_workers(_init(init)) is hands_on


@pytest.mark.parametrize(
    ("bases", "hands_on"),
    [("Base", True), ("pkg.Base", True), ("Base, Mixin", False), ("Local", False), ("make()", False)],
)
def test_a_class_hands_on_only_to_one_base_of_another_module(bases, hands_on):
    source = f"class Local:\n    pass\n\n\nclass L({bases}):\n" + textwrap.indent(HANDED, "    ")
    tree = ast.parse(source)
    assert class_hands_on_workers(tree.body[1], {"Local", "L"}) is hands_on


SAME_FILE = (
    "from pkg import Changed, DataLoader, Threaded\n\n\n"
    "class Mine(Threaded):\n"
    "    pass\n\n\n"
    "class Later(Changed):\n"
    "    pass\n\n\n"
    "class Own(DataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        super().__init__(ds, **kwargs)\n\n\n"
    "class Adds(DataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        kwargs.update(num_workers=4)\n"
    "        super().__init__(ds, **kwargs)\n\n\n"
    "def quiet(ds):\n"
    "    loader = {name}(ds, collate_fn=lambda b: b)\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            pass\n"
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Mine", []),  # Threaded's reading: 0 workers, and its own `__iter__` (no DL410)
        ("Later", ["DL302"]),  # Changed's reading: its `__init__` may add workers
        ("Own", ["DL410"]),  # hands the omitted count on to the project's DataLoader: 0
        ("Adds", ["DL302"]),  # its `__init__` may add workers
    ],
)
def test_a_class_of_the_file_over_a_project_loader_subclass_reads_as_it(project, name, expected):
    source = SAME_FILE.replace("{name}", name)
    found = lint(project / "train.py", source)
    columns = {"DL410": 13, "DL302": len(f"    loader = {name}(ds, collate_fn=")}
    assert [(line, col, code) for line, col, code, _ in found] == [(24, columns[code], code) for code in expected]
    for _, _, code, message in found:
        if code == "DL410":
            assert message.startswith(OMITTED)


FORWARDING = "from torch.utils.data import DataLoader as TorchLoader\n\n\nclass DataLoader(TorchLoader):\n    pass\n"
CUDA_SCRIPT = (
    "import torch\nfrom pkg.chained import Threaded\n\ntorch.set_default_device('cuda')\n\n\n"
    "class Mine(Threaded):\n    pass\n\n\n"
    "def train(ds):\n"
    "    loader = Threaded(ds, batch_size=4, shuffle=True)\n    for batch in loader:\n        pass\n"
    "    loader = Mine(ds, batch_size=4, shuffle=True)\n    for batch in loader:\n        pass\n"
)


@pytest.mark.parametrize("gate_on", [True, False])
def test_a_chain_of_forwarding_subclasses_reads_as_dataloader_itself(tmp_path, gate_on):
    """Omitted arguments are DataLoader's own defaults through the whole chain: no generator, so DL603."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "loaders.py").write_text(FORWARDING)
    chained = "from .loaders import DataLoader\n\n\nclass Threaded(DataLoader):\n    pass\n"
    (tmp_path / "pkg" / "chained.py").write_text(chained)
    settings = Settings(selected=frozenset({"DL603"}), gate=gate_on)
    store.clear()
    found = lint(tmp_path / "train.py", CUDA_SCRIPT, settings)
    assert [(line, col, code) for line, col, code, _ in found] == [(12, 13, "DL603"), (15, 13, "DL603")]
    store.clear()
    index.clear()


SETS_AFTER_INIT = (
    "from pkg import Threaded as ThreadDataLoader\n\n\n"
    "class Sized(ThreadDataLoader):\n"
    "    def __init__(self, ds, **kwargs):\n"
    "        super().__init__(ds, **kwargs)\n"
    "        self.batch_size = 4\n"
)


def test_an_attribute_set_after_init_in_a_class_over_a_project_subclass_is_dl105(project, monkeypatch):
    """DL105 reads such a class as a loader subclass; real torch raises as the message says. (MONAI's
    spelling: a file whose text names no loader token at all is left to the text prefilter.)"""
    found = lint(project / "sized.py", SETS_AFTER_INIT, Settings(selected=frozenset({"DL105"})))
    assert [(line, col, code) for line, col, code, _ in found] == [(7, 8, "DL105")]
    pytest.importorskip("torch", reason="real torch: pip install torch")
    monkeypatch.syspath_prepend(str(project))
    namespace: dict = {"__name__": "sized"}
    exec(compile(SETS_AFTER_INIT, "sized.py", "exec"), namespace)
    raised = r"^batch_size attribute should not be set after Sized is initialized$"  # torch names the class
    with pytest.raises(ValueError, match=raised):
        namespace["Sized"](list(range(4)))


CUDA_DIRECT = (
    "import torch\nfrom torch.utils.data import DataLoader\nfrom pkg.chained import Threaded\n\n"
    "torch.set_default_device('cuda')\n\n\n"
    "def train(ds):\n"
    "    loader = Threaded(ds, batch_size=4, shuffle=True)\n    for batch in loader:\n        pass\n"
    "    return DataLoader\n"
)


def test_dl603_alone_selected_passes_the_gate_for_a_project_subclass_called_by_its_own_name(tmp_path):
    """The gate's DL603 condition reads loader calls by loader names; a project subclass called under
    its own name is an imported builder for it (found with DL603 alone selected: before, only the other
    rules' imported-builder alternatives let such a file through)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "loaders.py").write_text(FORWARDING)
    chained = "from .loaders import DataLoader\n\n\nclass Threaded(DataLoader):\n    pass\n"
    (tmp_path / "pkg" / "chained.py").write_text(chained)
    for gate_on in (True, False):
        store.clear()
        found = lint(tmp_path / "train.py", CUDA_DIRECT, Settings(selected=frozenset({"DL603"}), gate=gate_on))
        assert [(line, col, code) for line, col, code, _ in found] == [(9, 13, "DL603")], gate_on
    store.clear()
    index.clear()
