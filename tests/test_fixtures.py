"""Every fixture yields exactly the (line, column, code) set its comments state."""

import pytest

from flake8_dataloader.engine import analyse

from .conftest import FIXTURES
from flake8_dataloader.rules import RULES

from .harness import enabled_default_off, expectations, fixture_files, option_args, settings_from_argv

FILES = fixture_files(FIXTURES)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_findings_are_exact(path):
    source = path.read_text(encoding="utf-8")
    argv = option_args(source)
    settings = settings_from_argv(argv)
    default_off = {rule.CODE for rule in RULES if rule.DEFAULT_OFF} - enabled_default_off(argv)
    results = [(line, col, code) for line, col, code, _ in analyse(source, settings) if code not in default_off]
    found = set(results)
    expected = expectations(source)
    assert sorted(found - expected) == [], "unexpected findings"
    assert sorted(expected - found) == [], "missing findings"
    assert len(results) == len(found), "one finding per defect: two messages at one anchor"


def test_every_fixture_finding_is_also_found_without_prefilter():
    for path in FILES:
        source = path.read_text(encoding="utf-8")
        settings = settings_from_argv(option_args(source))
        assert analyse(source, settings) == analyse(source, settings, use_prefilter=False), path
