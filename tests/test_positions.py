"""Findings are placed without generating the whole file, and where its generation would put them."""

import ast

import pytest

import libcst as cst

from flake8_dataloader.engine import inspect_source
from flake8_dataloader.facts.nodes import walk
from flake8_dataloader.syntax import positions
from flake8_dataloader.syntax.ast_positions import Definitions
from flake8_dataloader.syntax.positions import node_starts
from flake8_dataloader.syntax.text_places import SourceText

from .conftest import FIXTURES
from .test_parsing import _parsed_or_skipped

# Two loaders of one call shape, written over two lines inside a function, each given the nested
# worker_init_fn: neither call nor the name passed is unique in the file.
NESTED_TRAINING = """\
import random

from torch.utils.data import DataLoader


def train(args, db_train, db_val):
    def worker_init_fn(worker_id):
        random.seed(args.seed + worker_id)

    train_loader = DataLoader(db_train, batch_size=args.batch_size, shuffle=True,
                              num_workers=8, worker_init_fn=worker_init_fn)
    val_loader = DataLoader(db_val, batch_size=1, shuffle=False,
                            num_workers=2, worker_init_fn=worker_init_fn)
    for epoch in range(args.epochs):
        for batch in train_loader:
            pass
        for batch in val_loader:
            pass
"""


def found_once(text, source, low=0, high=None):
    return SourceText(source).found_once(text, low, high)


def test_a_text_found_once_maps_its_offsets_to_the_source():
    source = "a = f(1)\nb = g(1)\n"
    mapped = found_once("g(1)", source)
    assert mapped is not None and mapped(2) == source.index("g(1)") + 2
    assert found_once("(1)", source) is None  # twice
    assert found_once("h(1)", source) is None  # nowhere


def test_a_text_without_its_indentation_is_found_with_whitespace_left_out():
    source = "def f():\n    x = g(\n        a,\n        b,\n    )\n"
    generated = "g(\n    a,\n    b,\n)"  # a node's own generation lacks the block's indentation
    mapped = found_once(generated, source)
    assert mapped is not None
    assert mapped(generated.index("b")) == source.index("b,")
    assert mapped(0) == source.index("g(")


def test_a_text_found_twice_without_whitespace_is_left_undecided():
    # "a b" and "ab" are the same without whitespace: neither is taken for the other.
    assert found_once("(a\nb)", "x = (a b)\ny = (ab)\n") is None


def test_a_text_is_looked_for_only_within_the_stretch_given():
    source = "f(x)\nf(x)\n"
    assert found_once("f(x)", source) is None
    mapped = found_once("f(x)", source, 5, len(source))
    assert mapped is not None and mapped(2) == 7


def test_one_text_without_whitespace_serves_every_stretch_searched():
    source = "a = f(\n    x)\nb = f(\n    x)\n"
    text = SourceText(source)
    assert text.found_once("f(\nx)") is None  # twice, once the indentation is left out
    second = source.index("b = ")
    first_only = text.found_once("f(\nx)", 0, second)
    second_only = text.found_once("f(\nx)", second)
    assert first_only is not None and second_only is not None
    assert (first_only(3), second_only(3)) == (source.index("x"), source.rindex("x"))
    assert text.found_once("f(\nx)", 2, source.index("x") + 1) is None  # the stretch ends inside the call
    assert text.position(source.rindex("x")) == (4, 4)


def test_definitions_with_a_unique_name_are_placed_from_the_ast():
    source = (
        "import functools\n\n\n"
        "@functools.cache\n"
        "async  def  load(n):\n"
        "    class Batch:\n        pass\n"
        "    def collate(items):\n        return items\n"
        "    return collate\n\n\n"
        "def collate(items):\n    return items\n"
    )
    module = cst.parse_module(source)
    definitions = Definitions(ast.parse(source), SourceText(source))
    found = [node for node in walk(module) if isinstance(node, (cst.FunctionDef, cst.ClassDef))]
    generated = node_starts(module, found)
    placed = {node.name.value: definitions.start(node) for node in found}
    assert placed == {"load": (5, 0), "Batch": (6, 4), "collate": None}  # two functions are named collate
    assert all(generated[node] == placed[node.name.value] for node in found if placed[node.name.value])
    load = next(node for node in found if node.name.value == "load")
    span = definitions.span(load)
    assert span is not None and source[span[0]:span[1]].endswith("return collate")
    shifted = Definitions(ast.parse("\n" + source), SourceText(source))  # an ast whose lines are not the text's
    assert [shifted.start(node) for node in found] == [None] * len(found)


@pytest.mark.parametrize("name", ["unusual", *[str(p.relative_to(FIXTURES)) for p in sorted(FIXTURES.rglob("*.py"))]])
def test_starts_within_calls_and_definitions_are_those_of_libcst(name):
    """Every argument, call, loop and assignment placed from the call it is given to, or from the
    function or class around it, and every definition placed from the ast, is where the code
    generation of the whole file puts it."""
    source, tree, _ = _parsed_or_skipped(name)
    analysis = inspect_source(source, use_prefilter=False, tree=tree)
    assert analysis is not None
    module, around = analysis.module, analysis.surroundings()
    definitions = Definitions(tree, SourceText(source))
    nodes = [node for node in walk(module) if id(node) in around.owners or id(node) in around.enclosing]
    generated = node_starts(module, [*nodes, *walk(module)])
    enclosed = positions._enclosed_starts(module, nodes, SourceText(source), around, definitions)
    assert enclosed.items() <= generated.items()
    for node in walk(module):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and definitions.start(node) is not None:
            assert definitions.start(node) == generated[node]


def test_a_training_function_s_findings_are_placed_without_generating_the_file(monkeypatch):
    tree = ast.parse(NESTED_TRAINING)
    analysis = inspect_source(NESTED_TRAINING, use_prefilter=False, tree=tree)
    assert analysis is not None

    def generated(*args):
        raise AssertionError("generated the file or a module-level statement")

    expected = [(7, 4, "DL203"), (10, 19, "DL402"), (11, 60, "DL302"), (12, 17, "DL402"), (13, 58, "DL302")]
    assert [(line, column, code) for line, column, code, _ in analysis.results()] == expected
    monkeypatch.setattr(positions, "_generated_starts", generated)
    monkeypatch.setattr(positions, "_statement_starts", generated)
    assert [(line, column, code) for line, column, code, _ in analysis.results()] == expected
