"""A loader subclass's own `__init__` decides `num_workers` for the calls that omit it (rule book, Across
files v8: "its `__init__`'s own defaults and the arguments it forwards decide what is Known").

One definition (facts/subclass_init.py) serves the analysis, for same-file classes and for the summaries of
other modules, and the project index the gate asks: both must give the same answer for every class.
"""

import ast
import contextlib
import io
import textwrap

import pytest

from flake8_dataloader.autofix import fix_source
from flake8_dataloader.engine import check_source
from flake8_dataloader.facts.subclass_init import class_omitted_workers, omitted_workers
from flake8_dataloader.project import index, store
from flake8_dataloader.project.definitions import loader_classes
from flake8_dataloader.screen import gate
from flake8_dataloader.settings import Settings


def _init(body: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(body)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    ("init", "workers"),
    [
        # MONAI's shape: a default, other arguments set through kwargs, handed on by keyword.
        ("def __init__(self, dataset, num_workers: int = 0, **kwargs):\n"
         "    kwargs.setdefault('collate_fn', None)\n"
         "    super().__init__(dataset=dataset, num_workers=num_workers, **kwargs)\n", 0),
        ("def __init__(self, ds, *, num_workers=4):\n    DataLoader.__init__(self, ds, num_workers=num_workers)\n", 4),
        ("def __init__(self, ds, num_workers=2):\n    if num_workers:\n        print(num_workers)\n"
         "    super().__init__(ds, num_workers=num_workers)\n", 2),
        # Undecided: the omitted argument stays unknown.
        ("def __init__(self, ds, num_workers=0):\n    num_workers = max(2, num_workers)\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    num_workers += 2\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    for num_workers in (1, 2):\n        pass\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0, **kwargs):\n    super().__init__(ds, **kwargs)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    super().__init__(ds, num_workers=num_workers * 2)\n", None),
        ("def __init__(self, ds, num_workers=0):\n"
         "    super().__init__(ds, 1, False, None, None, num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    super().__init__(ds, num_workers=num_workers)\n"
         "    super().__init__(ds)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    self.num_workers = num_workers\n", None),  # no base __init__
        ("def __init__(self, ds, num_workers=None):\n    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=True):\n    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=-1):\n    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=W):\n    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers):\n    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, num_workers=0, /):\n    super().__init__(num_workers=num_workers)\n", None),
        ("@wraps(f)\ndef __init__(self, ds, num_workers=0):\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    global num_workers\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
        ("def __init__(self, ds, num_workers=0):\n    pick = lambda num_workers=3: num_workers\n"
         "    super().__init__(ds, num_workers=num_workers)\n", None),
    ],
)
def test_the_own_default_counts_only_when_handed_on_unchanged(init, workers):
    assert omitted_workers(_init(init)) == workers


HANDS_ON = (
    "    def __init__(self, ds, num_workers=0, **kw):\n        super().__init__(ds, num_workers=num_workers, **kw)\n"
)


@pytest.mark.parametrize(
    ("source", "workers"),
    [
        ("class L(DataLoader):\n" + HANDS_ON, 0),
        ("class L(data.DataLoader):\n" + HANDS_ON, 0),
        # A base of the module may change what is handed on; two bases, a metaclass, a computed base: undecided.
        ("class Base(DataLoader):\n    pass\n\n\nclass L(Base):\n" + HANDS_ON, None),
        ("class L(DataLoader, Mixin):\n" + HANDS_ON, None),
        ("class L(DataLoader, metaclass=Meta):\n" + HANDS_ON, None),
        ("class L(bases[0]):\n" + HANDS_ON, None),
        ("class L(DataLoader):\n    pass\n", None),
    ],
)
def test_a_class_decides_only_over_a_base_of_another_module(source, workers):
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    assert class_omitted_workers(tree.body[-1], classes) == workers


LOADERS = (
    "from torch.utils.data import DataLoader as TorchLoader\n\n\n"
    "class Quiet(TorchLoader):\n"
    "    def __init__(self, ds, num_workers=0, **kwargs):\n"
    "        kwargs.setdefault('drop_last', True)\n"
    "        super().__init__(ds, num_workers=num_workers, **kwargs)\n\n\n"
    "class Busy(TorchLoader):\n"
    "    def __init__(self, ds, num_workers=2, **kwargs):\n"
    "        super().__init__(ds, num_workers=num_workers, **kwargs)\n\n\n"
    "class Clamped(TorchLoader):\n"
    "    def __init__(self, ds, num_workers=0, **kwargs):\n"
    "        num_workers = max(num_workers, 1)\n"
    "        super().__init__(ds, num_workers=num_workers, **kwargs)\n"
)
CALLS = (
    "def train(ds):\n"
    "    loader = DataLoader(ds, batch_size=8, collate_fn=lambda b: b)\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            pass\n"
)
# The class each file imports under torch's name, and what it reports (DL302: the lambda pickled for workers).
EXPECTED = {"Quiet": [], "Busy": [(2, "DL302")], "Clamped": [(2, "DL302")]}


def test_the_analysis_reads_the_default_and_the_gate_skips_only_what_it_would_clear(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .loaders import Busy, Clamped, Quiet\n")
    (tmp_path / "pkg" / "loaders.py").write_text(LOADERS)
    settings = Settings(selected=frozenset({"DL302"}))
    for name, expected in EXPECTED.items():
        store.clear()
        path = tmp_path / f"train_{name.lower()}.py"
        source = f"from pkg import {name} as DataLoader\n\n\n" + CALLS
        path.write_text(source)
        found = [(line - 3, code)
                 for line, _, code, _ in check_source(source, str(path), settings, tree=ast.parse(source))]
        assert found == expected, name
        # The gate passes the file exactly when the analysis may report (a lambda, a loader that may use workers).
        assert gate.may_report(ast.parse(source), settings, str(path)) is bool(expected), name
    # The same classes defined in the linted file: the same readings.
    for name, expected in EXPECTED.items():
        source = LOADERS + f"\n\nDataLoader = {name}\n\n\n" + CALLS
        found = [code for _, _, code, _ in check_source(source, "same.py", settings) if code == "DL302"]
        assert found == [code for _, code in expected], name


def test_the_index_and_the_summary_read_the_same_classes(tmp_path):
    tree = ast.parse(LOADERS)
    classes = loader_classes(tree, {"TorchLoader"}, frozenset())
    assert classes.custom == {"Quiet", "Busy", "Clamped"}
    assert classes.workers == {"Busy", "Clamped"}
    module = tmp_path / "loaders.py"
    module.write_text(LOADERS)
    store.clear()
    summary = store.entry(str(module), Settings()).summary
    assert summary.loader_workers == {"Quiet": 0, "Busy": 2}
    assert {name for name, forwards in summary.loader_classes.items() if not forwards} == classes.custom
    index.clear()


def test_the_message_says_where_the_count_comes_from(tmp_path):
    source = LOADERS + "\n\ndef build(ds):\n    return Quiet(ds, persistent_workers=True)\n"
    found = check_source(source, "loaders.py", Settings(selected=frozenset({"DL101"})))
    assert found == [(22, 21, "DL101", "DL101 persistent_workers=True with num_workers omitted (Quiet.__init__ "
                      "defaults it to 0) raises ValueError; drop persistent_workers or set num_workers > 0")]


RUNNABLE = (
    "from torch.utils.data import DataLoader as TorchLoader\n\n\n"
    "class Quiet(TorchLoader):\n"
    "    def __init__(self, ds, num_workers=0, **kwargs):\n"
    "        super().__init__(ds, num_workers=num_workers, **kwargs)\n\n\n"
    "loader = Quiet(list(range(6)), batch_size=3, persistent_workers=True)\n"
    "print([batch.tolist() for batch in loader])\n"
)


def test_the_reading_is_what_torch_does_and_the_fix_runs():
    """Real torch: the subclass's default count crashes the call as DL101 says; the fixed text runs."""
    pytest.importorskip("torch", reason="real torch: pip install torch")
    with pytest.raises(ValueError, match=r"^persistent_workers option needs num_workers > 0$"):
        exec(compile(RUNNABLE, "quiet.py", "exec"), {"__name__": "quiet"})
    assert [(line, code) for line, _, code, _ in check_source(RUNNABLE, "quiet.py")] == [(9, "DL101")]
    result = fix_source(RUNNABLE, codes=("DL101",))
    assert "persistent_workers" not in result.source
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(result.source, "quiet.py", "exec"), {"__name__": "quiet"})
    assert printed.getvalue() == "[[0, 1, 2], [3, 4, 5]]\n"


def test_a_positional_only_parameter_before_it_does_not_shift_the_defaults():
    init = ("def __init__(self, ds, flag=True, /, num_workers=3, **kw):\n"
            "    super().__init__(ds, num_workers=num_workers)\n")
    assert omitted_workers(_init(init)) == 3


def test_a_base_of_the_module_defined_under_a_condition_counts_as_one():
    source = ("if FAST:\n    class Base(DataLoader):\n        pass\nelse:\n    Base = DataLoader\n\n\n"
              "class L(Base):\n" + HANDS_ON)
    tree = ast.parse(source)
    # `Base` names a loader class either way; the index reads the conditional class as the module's own.
    classes = loader_classes(tree, {"DataLoader", "Base"}, frozenset())
    assert (classes.custom, classes.workers) == ({"L"}, {"L"})
