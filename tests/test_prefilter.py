"""The prefilter is sound: a file it rejects yields nothing with the prefilter off."""

import ast
import random
import sysconfig
from pathlib import Path

import pytest

from flake8_dataloader.engine import ParseFailure, analyse
from flake8_dataloader.screen.tokens import could_trigger, could_trigger_in_code
from flake8_dataloader.screen.tokens import tokens as _tokens
from flake8_dataloader.settings import DEFAULT_SETTINGS, Settings

from .conftest import FIXTURES
from .harness import expectations, fixture_files

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _sample(root: Path, count: int, seed: int = 0):
    files = sorted(root.rglob("*.py"))
    random.Random(seed).shuffle(files)
    return files[:count]


def _real_files():
    files = _sample(STDLIB, 60)
    try:
        import torch

        files += _sample(Path(torch.__file__).parent, 60)
    except ImportError:
        pass
    return files


def _check(source: str, settings: Settings = DEFAULT_SETTINGS) -> bool:
    """Rejected by either stage (raw text, then identifiers in the ast) means silent. True when rejected."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = None
    if could_trigger(source, _tokens(settings)) and (tree is None or could_trigger_in_code(tree, _tokens(settings))):
        return False
    try:
        assert analyse(source, settings, use_prefilter=False) == []
    except ParseFailure:
        pass
    return True


def without_triggers(source: str, settings: Settings = DEFAULT_SETTINGS) -> str:
    """The source with every trigger token misspelt: what the prefilter must reject, and the rules too."""
    for alternative in _tokens(settings):
        for token in alternative:
            source = source.replace(token, token[:-1] + "Q" + token[-1])
    return source


@pytest.mark.parametrize("path", fixture_files(FIXTURES), ids=lambda p: p.name)
def test_fixtures_without_their_trigger_tokens_are_rejected_and_silent(path):
    # Every fixture has findings, so it passes the prefilter; without the tokens no rule may fire,
    # or a rule reads something its TRIGGERS do not name.
    source = path.read_text()
    if expectations(source):
        assert not _check(source)
    assert _check(without_triggers(source)), "misspelling every trigger token must make the prefilter reject it"


def test_real_files_rejected_only_when_silent():
    rejected = sum(_check(path.read_text(encoding="utf-8", errors="replace")) for path in _real_files())
    assert rejected >= 60, "most stdlib files name no DataLoader: the soundness assertion must run"


def test_rejects_ordinary_code_and_keeps_loader_code():
    tokens = _tokens(DEFAULT_SETTINGS)
    assert not could_trigger("import os\nprint(os.getcwd())\n", tokens)
    assert could_trigger("from torch.utils.data import DataLoader\n", tokens)
    assert could_trigger("def init(worker_id):\n    pass\n", tokens)


def test_configured_names_join_the_tokens():
    settings = Settings.build(["mypkg.data.FastLoader"])
    source = "from mypkg.data import FastLoader\nFastLoader(ds, persistent_workers=True)\n"
    assert could_trigger(source, _tokens(settings))
    assert [code for _, _, code, _ in analyse(source, settings)] == ["DL101"]


def test_mentions_in_strings_do_not_cost_a_parse():
    source = '"""Use a DataLoader with worker_init_fn here."""\nx = 1\n'
    tokens = _tokens(DEFAULT_SETTINGS)
    assert could_trigger(source, tokens)
    assert not could_trigger_in_code(ast.parse(source), tokens)
    code = "import torch.utils.data as tud\nloader = tud.DataLoader(ds, persistent_workers=True)\n"
    assert could_trigger_in_code(ast.parse(code), tokens)
    assert [c for _, _, c, _ in analyse(code, tree=ast.parse(code))] == ["DL101"]
