"""Inputs LibCST's native parser cannot survive never reach it; the rest parse on a large stack."""

import ast
import logging
import subprocess
import sys

import pytest

import libcst as cst

from flake8_dataloader.syntax import parsing, positions
from flake8_dataloader.syntax.ast_positions import unique_call_starts
from flake8_dataloader.facts.collector import Collector
from flake8_dataloader.facts.nodes import walk
from flake8_dataloader.engine import check_source, inspect_source
from flake8_dataloader.syntax.parsing import (
    MAX_EXPRESSION_DEPTH, MAX_STATEMENT_DEPTH, ParseFailure, nesting_depths, parse,
)

from flake8_dataloader.syntax.positions import node_starts
from flake8_dataloader.syntax.text_places import SourceText

from .conftest import FIXTURES

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, persistent_workers=True)\n"

# Each kills (SIGSEGV) or stalls (minutes) a bare libcst.parse_module on the main thread.
CHAINS = {
    "and": lambda n: "x = " + " and ".join(f"a{i}" for i in range(n)),
    "or": lambda n: "x = " + " or ".join("a" for _ in range(n)),
    "attribute": lambda n: "x = a" + ".b" * n,
    "call": lambda n: "x = f" + "()" * n,
    "subscript": lambda n: "x = a" + "[0]" * n,
    "unary": lambda n: "x = " + "-" * n + "a",
    "plus": lambda n: "x = " + " + ".join("a" for _ in range(n)),
}


@pytest.mark.parametrize("shape", sorted(CHAINS))
def test_chain_beyond_the_limit_is_refused_with_one_log_line(shape, caplog):
    source = LOADER + CHAINS[shape](8000) + "\n"
    with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
        assert check_source(source, "chain.py") == []
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith("flake8-dataloader: skipped chain.py: LibCST cannot parse it (")
    assert "an expression nested" in message or "nested too deeply for Python's own parser" in message


@pytest.mark.parametrize("shape", sorted(CHAINS))
def test_chain_within_the_limit_is_analysed(shape):
    source = LOADER + CHAINS[shape](MAX_EXPRESSION_DEPTH - 5) + "\n"
    assert [(line, col, code) for line, col, code, _ in check_source(source)] == [(2, 24, "DL101")]


def test_nesting_depths_count_boolean_operands_and_elif_branches():
    assert nesting_depths(ast.parse("x = 1\n")) == (1, 1)
    assert nesting_depths(ast.parse("x = a and b and c and d\n")) == (4, 1)
    assert nesting_depths(ast.parse("x = f(a.b[0])\n")) == (4, 1)  # Call > Subscript > Attribute > Name
    assert nesting_depths(ast.parse("def f():\n    return -a\nx = 1\n")) == (2, 2)
    assert nesting_depths(ast.parse("if a:\n    pass\nelif b:\n    pass\nelif c:\n    x = 1\n")) == (1, 4)


def test_long_elif_chain_is_refused(caplog):
    branches = "".join(f"elif x == {i}:\n    pass\n" for i in range(MAX_STATEMENT_DEPTH + 1))
    source = "from torch.utils.data import DataLoader\nif x:\n    pass\n" + branches + LOADER
    with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
        assert check_source(source, "chain.py") == []
    assert "statements nested 1003 levels deep" in caplog.text


def test_text_python_cannot_parse_is_bounded_by_tokens_per_line():
    python2 = "from torch.utils.data import DataLoader\nprint 'python 2'\n"
    assert parsing.refusal(python2) is None
    assert parsing.chain_estimate("x = a.b(c)[0] + d\ny = 1\n") == 4
    for shape in ("and", "attribute", "subscript"):
        deep = python2 + CHAINS[shape](2 * MAX_EXPRESSION_DEPTH + 5) + "\n"
        assert "Python cannot parse it" in parsing.refusal(deep)
        with pytest.raises(ParseFailure):
            parse(deep)
    assert parsing.chain_estimate(python2 + 'x = """unterminated\n') is None
    assert parsing.refusal(python2 + "def f(:\n") == "Python can neither parse nor tokenize it"


def test_too_deep_for_python_itself_is_refused():
    assert parsing.refusal(LOADER + CHAINS["attribute"](8000) + "\n") == "nested too deeply for Python's own parser"


def test_parse_errors_come_back_from_the_parsing_thread():
    with pytest.raises(ParseFailure, match="TypeError"):
        parse("x = () if 0 else(lambda:())\n")
    with pytest.raises(ParseFailure, match="ParserSyntaxError"):
        parse("x = = 1\n")
    assert parse("x = 1\n").code == "x = 1\n"


def test_flake8_parallel_run_keeps_every_other_file(tmp_path):
    # Before: flake8 exited 139 (SIGSEGV) on this file, and with -j2 it hung, losing every finding.
    (tmp_path / "generated.py").write_text(LOADER + CHAINS["and"](8000) + "\n")
    for name in ("dl101_dl102_single_process.py", "dl404_shutdown.py"):
        (tmp_path / name).write_text((FIXTURES / name).read_text())
    runs = {}
    for jobs in ("-j1", "-j2"):
        result = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select=DL", jobs, "."],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 1, result.stderr
        runs[jobs] = sorted(result.stdout.splitlines())
    assert runs["-j1"] == runs["-j2"]
    assert {line.split(":")[0] for line in runs["-j1"]} == {
        "./dl101_dl102_single_process.py", "./dl404_shutdown.py"
    }


UNUSUAL_CALLS = (
    "import torch\r\n"
    "from torch.utils.data import DataLoader\r\n"
    "\r\n"
    "\r\n"
    "@torch.no_grad()\r\n"
    "def évaluer(données, n):\r\n"
    "    noms = 'é' + str(n); (DataLoader)(données, num_workers=2)\r\n"
    "    x = (DataLoader(données, batch_size=1))\r\n"
    "    y = DataLoader(données) if n else DataLoader(données, shuffle=True)\r\n"
    "    print(f\"{len(données)} {DataLoader(données, drop_last=True)}\")\r\n"
    "    return [DataLoader(d, num_workers=n) for d in [données]], torch.no_grad()\r\n"
)


def _parsed_or_skipped(name: str):
    """The named fixture's (or the unusual calls') text, ast and LibCST module; skipped if it does not parse."""
    source = UNUSUAL_CALLS if name == "unusual" else (FIXTURES / name).read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
        return source, tree, parse(source, tree)
    except (SyntaxError, ParseFailure):
        pytest.skip("does not parse")


@pytest.mark.parametrize("name", ["unusual", *[str(p.relative_to(FIXTURES)) for p in sorted(FIXTURES.rglob("*.py"))]])
def test_call_starts_from_the_ast_are_those_of_libcst(name):
    """Every call the ast places (its shape unique in the file) is where LibCST's code generation puts it."""
    source, tree, module = _parsed_or_skipped(name)
    collector = Collector()
    collector.walk(module)
    calls = [record.node for record in collector.calls]
    fast = unique_call_starts(tree, SourceText(source), calls)
    slow = node_starts(module, calls, source)
    assert {call: slow[call] for call in fast} == fast
    if name == "unusual":
        assert len(fast) == 5  # the f-string's call and the twice-used `torch.no_grad()` are left to LibCST


@pytest.mark.parametrize("name", ["unusual", *[str(p.relative_to(FIXTURES)) for p in sorted(FIXTURES.rglob("*.py"))]])
def test_starts_from_unique_texts_are_those_of_libcst(name):
    """Every expression and argument is placed where LibCST's code generation of the whole file puts it,
    also those placed from their text occurring once in the file (no code generation of the file)."""
    source, tree, module = _parsed_or_skipped(name)
    nodes = [node for node in walk(module) if isinstance(node, (cst.BaseExpression, cst.Arg))]
    by_text = positions._unique_text_starts(module, nodes, SourceText(source))
    assert node_starts(module, nodes, source, tree) == node_starts(module, nodes)  # the second generates the file
    assert by_text == {node: position for node, position in node_starts(module, nodes).items() if node in by_text}
    if name == "unusual":  # names written more than once and the twice-written `torch.no_grad()` are not
        assert len(by_text) == 40 and len(nodes) == 81


@pytest.mark.parametrize("name", ["unusual", *[str(p.relative_to(FIXTURES)) for p in sorted(FIXTURES.rglob("*.py"))]])
def test_starts_from_module_level_statements_are_those_of_libcst(name):
    """Every node the engine can report (calls, arguments, loops, functions, statements, expressions)
    is placed where the code generation of the whole file puts it, also those placed from their
    module-level statement's own code generation."""
    source, tree, _ = _parsed_or_skipped(name)
    analysis = inspect_source(source, use_prefilter=False, tree=tree)
    assert analysis is not None
    module, around = analysis.module, analysis.surroundings()
    nodes = list(walk(module))
    generated = node_starts(module, nodes)
    by_statement = positions._statement_starts(module, nodes, around.tops, SourceText(source))
    assert by_statement.items() <= generated.items()
    assert node_starts(module, nodes, source, tree, around) == generated
    if name == "unusual":  # its three module-level statements are unique: every node but the Module
        assert len(by_statement) == len(nodes) - 1
