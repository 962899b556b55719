"""No input makes the plugin raise out of flake8; failures are contained, logged, and cost no other file."""

import logging
import subprocess
import sys
import textwrap

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from flake8_dataloader import engine
from flake8_dataloader.engine import ParseFailure, analyse, check_source
from flake8_dataloader.plugin import DataLoaderChecker

from .conftest import FIXTURES

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, persistent_workers=True)\n"


def codes(source):
    return [(line, col, code) for line, col, code, _ in check_source(source)]


def plugin_run(lines):
    return [(line, col, message.split()[0]) for line, col, message, _ in DataLoaderChecker(None, lines, "t.py").run()]


def analyse_unfiltered(source):
    """The whole analysis; only the input's own limits may stop it."""
    try:
        analyse(source, use_prefilter=False)
    except (ParseFailure, RecursionError):
        pass


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_programs_never_raise(source):
    analyse_unfiltered(source)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node())
def test_many_generated_programs_never_raise(source):
    analyse_unfiltered(source)


def test_libcst_type_error_on_valid_code_is_contained(caplog):
    source = "from torch.utils.data import DataLoader\nx = () if 0 else(lambda:())\n"
    with pytest.raises(ParseFailure):
        analyse(source)
    with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
        assert check_source(source, "weird.py") == []
    assert "skipped weird.py: LibCST cannot parse it (TypeError" in caplog.text


def test_syntax_error_yields_nothing():
    assert check_source("from torch.utils.data import DataLoader\ndef f(:\n") == []


def test_internal_error_is_logged_and_contained_unless_strict(monkeypatch, caplog):
    def explode(facts, settings):
        raise KeyError("boom")

    rule = engine.RULES[0]
    monkeypatch.setattr(rule, "check", explode)
    monkeypatch.delenv(engine.STRICT_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger="flake8.dataloader"):
        assert check_source(LOADER, "buggy.py") == []
    assert "internal error on buggy.py: KeyError" in caplog.text
    monkeypatch.setenv(engine.STRICT_ENV, "1")
    with pytest.raises(KeyError):
        check_source(LOADER, "buggy.py")


def test_deep_nesting_never_reaches_libcst(caplog):
    # LibCST's native parser segfaults near 5,000 levels; CPython itself stops at 200.
    source = "from torch.utils.data import DataLoader\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
        assert check_source(source, "deep.py") == []
    assert "brackets nested deeper than 200 levels" in caplog.text
    assert codes("from torch.utils.data import DataLoader\nx = " + "(" * 150 + "1" + ")" * 150 + "\n") == []


def test_long_elif_chain_is_contained(caplog):
    # The analysis walks iteratively, but LibCST's code generation (for positions) recurses:
    # a file nested beyond Python's stack loses its DL findings, with one log line. (Beyond
    # 1,000 branches the chain never reaches LibCST: tests/test_parsing.py.)
    branches = "".join(f"elif x == {i}:\n    pass\n" for i in range(600))
    source = "from torch.utils.data import DataLoader\nif x:\n    pass\n" + branches + LOADER
    with caplog.at_level(logging.WARNING, logger="flake8.dataloader"):
        assert check_source(source, "chain.py") == []
    assert "skipped chain.py: nested too deeply to analyse" in caplog.text


def test_bom_crlf_cr_tabs_formfeed():
    assert plugin_run(["\ufeff" + LOADER.splitlines(True)[0], LOADER.splitlines(True)[1]]) == [(2, 24, "DL101")]
    assert codes(LOADER.replace("\n", "\r\n")) == [(2, 24, "DL101")]
    assert codes(LOADER.replace("\n", "\r")) == [(2, 24, "DL101")]
    tabbed = "from torch.utils.data import DataLoader\nif True:\n\tloader = DataLoader(ds, persistent_workers=True)\n"
    assert codes(tabbed) == [(3, 25, "DL101")]
    assert codes("\x0c\n" + LOADER) == [(3, 24, "DL101")]


def test_nul_bytes_and_odd_text_do_not_raise():
    assert check_source("from torch.utils.data import DataLoader\x00\n") == []
    assert check_source("DataLoader = '\udcff'\n") == []


@pytest.mark.parametrize(
    "source",
    [
        "from torch.utils.data import DataLoader\ndef make[T](ds: T) -> T:\n    return DataLoader(ds)\n",
        "from torch.utils.data import DataLoader\ntype Loader = DataLoader\n",
        "from torch.utils.data import DataLoader\nmatch cmd:\n    case {'w': int(w)}:\n"
        "        DataLoader(ds, num_workers=w)\n    case _:\n        pass\n",
        "from torch.utils.data import DataLoader\nx = f\"{f'{DataLoader}'}\"\n",
        "from torch.utils.data import DataLoader\nx = f\"{f\"{DataLoader}\"}\"\n",
        "from torch.utils.data import DataLoader\nmsg = t\"{DataLoader}\"\n",
        "from torch.utils.data import DataLoader\ntry:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
        "from torch.utils.data import DataLoader\nasync def f():\n    async for b in DataLoader(ds, num_workers=2):\n"
        "        pass\n",
        "from torch.utils.data import DataLoader\nprint(*[DataLoader], sep='')\nlambda: (yield)\n",
    ],
)
def test_recent_syntax_is_analysed(source):
    # A probe finding after the new syntax proves the file was parsed and analysed, not skipped.
    probe = "probe = DataLoader(ds, persistent_workers=True)\n"
    line = (source + probe).count("\n")
    assert codes(source + probe) == [(line, 23, "DL101")]


def test_five_megabyte_file():
    body = "".join(f"value_{i} = compute({i}, 'DataLoader')\n" for i in range(140_000))
    source = LOADER + body
    assert len(source) > 5_000_000
    assert codes(source) == [(2, 24, "DL101")]


def test_flake8_parallel_and_serial_agree(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for path in sorted(FIXTURES.glob("*.py")):
        (project / path.name).write_text(path.read_text())
    (project / "setup.cfg").write_text(
        textwrap.dedent(
            """\
            [flake8]
            select = DL
            dataloader-start-method = fork
            dataloader-names = mylib.loaders.FastDataLoader
            """
        )
    )

    def run(jobs):
        result = subprocess.run([sys.executable, "-m", "flake8", f"-j{jobs}", "."], cwd=project,
                                capture_output=True, text=True, timeout=300)
        assert "Traceback" not in result.stderr
        return sorted(result.stdout.splitlines())

    serial = run(1)
    assert serial == run(2)
    assert not [line for line in serial if "DL301" in line or "DL302" in line]
    assert [line for line in serial if "loader_spellings.py:59:" in line]  # FastDataLoader is a loader now


def test_positions_after_a_byte_order_mark_and_with_crlf_newlines():
    from flake8_dataloader.engine import analyse

    body = "from torch.utils.data import DataLoader\nx = 1\nloader = DataLoader(ds, persistent_workers=True)\n"
    expected = [(3, 24, "DL101")]
    for text in (body, "\ufeff" + body, body.replace("\n", "\r\n")):
        assert [result[:3] for result in analyse(text)] == expected
