"""Docs and codes agree across registry, rule book, docs pages and fixtures."""

import re

import pytest

from flake8_dataloader.rules.pages import code_blocks, generate, sections
from flake8_dataloader.engine import analyse
from flake8_dataloader.rules import RULES

from .conftest import FIXTURES, ROOT
from .harness import expectations, fixture_files

CODES = [rule.CODE for rule in RULES]
RULE_BOOK = ROOT.parent / "shared" / "RULES.md"
REQUIRED_SECTIONS = [
    "What it does", "Why is this bad?", "Example", "Use instead", "Not reported", "Options", "Known limits",
    "References",
]


def test_generated_pages_are_current():
    stale = [str(path) for path, text in generate(ROOT).items() if not path.exists() or path.read_text() != text]
    assert stale == [], "run `python -m flake8_dataloader docs`"


def test_codes_are_unique_and_well_formed():
    assert len(set(CODES)) == len(CODES)
    assert all(re.fullmatch(r"DL\d{3}", code) for code in CODES)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.NAME) for rule in RULES)


@pytest.mark.skipif(not RULE_BOOK.exists(), reason="the shared rule book is not beside this checkout")
def test_registry_matches_the_rule_book():
    # Every bold code of the book is registered; a registered code is bold or a planned heading
    # (`### DL105 ...`: the book moves a landed rule into its family in its own text).
    text = RULE_BOOK.read_text()
    book = set(re.findall(r"\*\*(DL\d{3})\*\*", text))
    planned = set(re.findall(r"^### (DL\d{3})\b", text, re.M))
    assert book <= set(CODES)
    assert set(CODES) <= book | planned


def test_every_code_has_a_page_and_fixtures_use_only_known_codes():
    pages = {p.stem for p in (ROOT / "docs" / "rules").glob("DL*.md")}
    assert pages == set(CODES)
    used = set()
    for path in fixture_files(FIXTURES):
        used |= {code for _, _, code in expectations(path.read_text())}
    assert used == set(CODES), "every rule needs a positive fixture, and fixtures use only registered codes"


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_docstring_sections(rule):
    # "Details", where a rule has more to say than "What it does" holds, comes after the fix.
    titles = list(sections(rule))
    if "Details" in titles:
        assert titles.index("Details") == titles.index("Use instead") + 1
        titles.remove("Details")
    assert titles == REQUIRED_SECTIONS


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_what_it_does_fits_a_glance(rule):
    # The detail goes to "Details" and "Known limits" as bullet lists.
    assert len(sections(rule)["What it does"].strip().splitlines()) <= 12


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_known_limits_and_details_are_bullet_lists(rule):
    # A paragraph is bullets, or a lead-in line ending in ":" above them.
    for title in ("Known limits", "Details"):
        for paragraph in sections(rule).get(title, "- none").strip().split("\n\n"):
            lines = paragraph.splitlines()
            if lines[0].endswith(":") and len(lines) > 1:
                lines = lines[1:]
            assert lines[0].startswith("- "), (title, paragraph)


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_example_yields_the_code_and_use_instead_yields_nothing(rule):
    parts = sections(rule)
    (example,) = code_blocks(parts["Example"])
    (fixed,) = code_blocks(parts["Use instead"])
    assert rule.CODE in {code for _, _, code, _ in analyse(example)}
    assert {code for _, _, code, _ in analyse(fixed)} == set()


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_not_reported_blocks_yield_nothing(rule):
    # Nothing from the page's own rule, nor from any rule that is on by default.
    default_off = {r.CODE for r in RULES if r.DEFAULT_OFF} - {rule.CODE}
    blocks = code_blocks(sections(rule)["Not reported"])
    assert blocks
    for block in blocks:
        assert {code for _, _, code, _ in analyse(block)} - default_off == set(), block


@pytest.mark.parametrize("rule", RULES, ids=CODES)
def test_pages_cite_pytorch_or_our_results_never_files_beside_the_checkout(rule):
    page = (ROOT / "docs" / "rules" / f"{rule.CODE}.md").read_text()
    assert "FACTS.md" not in page and "RULES.md" not in page and "../shared" not in page
    assert "https://" in sections(rule)["References"]
    assert page.count("Off by default") == (1 if rule.DEFAULT_OFF else 0)


def test_a_gpu_run_kept_in_a_folder_of_its_own_is_on_the_pages_with_its_plot():
    """The CUDA-only scenarios (DL602, DL603) show what the GPU run measured, not only the CPU's "needs CUDA"."""
    page = (ROOT / "docs" / "rules" / "DL603.md").read_text()
    measured = page.split("## Measured cost", 1)[1]
    assert "(needs-cuda): needs CUDA" in measured  # the CPU run, first
    assert "On NVIDIA H200 (cuda, " in measured and "(`docs/results/h200-2026-12-04/`):" in measured
    assert ("- **cuda-default-device** (ok): bad: RuntimeError: Expected a 'cuda' device type for generator "
            "but found 'cpu'; generator=torch.Generator(device='cuda'): ran") in measured
    timing = (ROOT / "docs" / "rules" / "DL401.md").read_text()
    assert "![epoch timing](../results/h200-2026-12-04/cuda.png)" in timing
    assert (ROOT / "docs" / "results" / "h200-2026-12-04" / "cuda.png").is_file()
