"""The fix keeps every comment: the fix fixtures with comments inserted at every legal position.

No comment disappears. A trailing comment of a keyword that stays stays on that keyword's
line; that of a keyword the fix removes stays as a comment line where the keyword was
(docs/fix.md).
"""

import io
import re
import tokenize
from collections import Counter
from pathlib import Path
from typing import List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_dataloader.autofix import fix_source

from .conftest import FIXTURES
from .harness import EXPECT, fixture_files, option_args, settings_from_argv

TWINS = FIXTURES / "fixed"
FIXED_BY_THE_FIX = [
    p for p in fixture_files(FIXTURES) if TWINS not in p.parents and (TWINS / p.relative_to(FIXTURES)).exists()
]
KEYWORD_LINE = re.compile(r"\s*([A-Za-z_]\w*)=(?!=)")


def without_expectations(text: str) -> str:
    return "\n".join(EXPECT.sub("", line).rstrip() for line in text.split("\n"))


Position = Tuple[str, int]  # ("end", line): a comment ending the line; ("own", line): a comment line before it


def legal_positions(source: str) -> List[Position]:
    """Where a comment can go without changing the program: the end of a line that ends a token
    (not inside a string, no backslash continuation, no comment yet), or a line of its own before
    a line that starts one."""
    clean_ends, commented = set(), set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.NEWLINE, tokenize.NL):
            clean_ends.add(token.start[0])
        elif token.type == tokenize.COMMENT:
            commented.add(token.start[0])
    count = source.count("\n")
    ends = [("end", n) for n in range(1, count + 1) if n in clean_ends and n not in commented]
    owns = [("own", n) for n in range(1, count + 1) if n == 1 or n - 1 in clean_ends]
    return ends + owns


def with_comments(source: str, positions: List[Position]) -> str:
    lines = source.split("\n")
    ends = {n for kind, n in positions if kind == "end"}
    owns = {n for kind, n in positions if kind == "own"}
    out = []
    for n, line in enumerate(lines, start=1):
        if n in owns:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# own{n}")
        out.append(f"{line}  # end{n}" if n in ends and line.strip() else (f"{line}# end{n}" if n in ends else line))
    return "\n".join(out)


def comments(source: str) -> List[Tuple[str, str]]:
    """Each comment with the code before it on its line (empty for a comment line)."""
    lines = source.split("\n")
    return [
        (token.string, lines[token.start[0] - 1][: token.start[1]].rstrip())
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]


def _keyword(code: str):
    match = KEYWORD_LINE.match(code)
    return match[1] if match and code.lstrip() == code.strip() else None


def check_comments_kept(source: str) -> None:
    result = fix_source(source, settings_from_argv(option_args(source)), max_line_length=79)
    before, after = comments(source), comments(result.source)
    texts_before, texts_after = Counter(text for text, _ in before), Counter(text for text, _ in after)
    assert not texts_after - texts_before, "no comment is invented"
    # A keyword's trailing comment that is not on that keyword's line any more.
    on_keyword_before = Counter((text, _keyword(code)) for text, code in before if _keyword(code))
    on_keyword_after = Counter((text, _keyword(code)) for text, code in after if _keyword(code))
    left_its_keyword = on_keyword_before - on_keyword_after
    assert texts_before == texts_after, "a comment was lost"
    code_before = Counter(line.split("#")[0].rstrip() for line in source.split("\n"))
    code_after = Counter(line.split("#")[0].rstrip() for line in result.source.split("\n"))
    for text, code in before:
        if (text, _keyword(code)) in left_its_keyword:
            assert code_after[code] < code_before[code], f"{text} left its keyword, which is still there: {code!r}"
            assert (text, "") in after, f"{text}: its keyword went, it is no comment line of its own"


@pytest.mark.parametrize("path", FIXED_BY_THE_FIX, ids=[str(p.relative_to(FIXTURES)) for p in FIXED_BY_THE_FIX])
def test_a_comment_at_every_legal_position_survives_the_fix(path: Path):
    source = path.read_text(encoding="utf-8")
    check_comments_kept(with_comments(source, legal_positions(source)))


@st.composite
def commented_fixtures(draw):
    path = draw(st.sampled_from(FIXED_BY_THE_FIX))
    source = path.read_text(encoding="utf-8")
    positions = legal_positions(source)
    chosen = draw(st.lists(st.sampled_from(positions), max_size=12, unique=True))
    return with_comments(source, chosen)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commented_fixtures())
def test_comments_at_any_legal_positions_survive_the_fix(source):
    # Fewer comments than above: fixes that a comment inside an argument blocks do happen here.
    check_comments_kept(source)


COMMENTED = FIXTURES / "runnable" / "dl104_dl402_comments.py"


def test_each_comment_of_the_commented_fixture_is_where_the_twin_has_it():
    # Exact text, descriptive comments included (the twin test compares without the expectation comments).
    source = COMMENTED.read_text(encoding="utf-8")
    fixed = fix_source(source, max_line_length=79).source
    assert without_expectations(fixed) == (TWINS / "runnable" / COMMENTED.name).read_text(encoding="utf-8")
    assert "        persistent_workers=(0 if ram else nw) > 0,  # keep the decoders warm  # DL104:8\n" in fixed
    assert "        num_workers=2,  # one per image decoder\n        persistent_workers=True,\n    )" in fixed
    assert "pin_memory=False, persistent_workers=True)  # noqa: E501  # DL402:13\n" in fixed
    assert (  # the removed keyword's own comment stays where the keyword was
        "        # the probe runs in the main process\n"
        "        # TODO(ana): drop once the probe has workers  # DL101:8\n"
        "        drop_last=True,  # whole batches only\n"
    ) in fixed
    assert "    print([batch[0].tolist() for batch in loader])\n    # release the workers  # DL404:9\n" in fixed


def test_a_comment_ending_a_calls_closing_line_stays_with_the_last_argument():
    # The comment ended the line of `num_workers=2)`: it stays on that argument's line, not on the
    # new one's. A removed keyword's comment stays as a comment line where the keyword was.
    name = "dl101_dl402_closing_comments.py"
    fixed = fix_source((FIXTURES / "runnable" / name).read_text(encoding="utf-8"), max_line_length=79).source
    assert without_expectations(fixed) == (TWINS / "runnable" / name).read_text(encoding="utf-8")
    assert (
        "                        num_workers=2,  # two workers is enough here\n"
        "                        persistent_workers=True)\n"
    ) in fixed
    assert "                     collate_fn=identity,  # identity collate\n" in fixed
    assert "        batch_size=4,\n        # keep the workers between epochs  # DL101:8\n    )\n" in fixed


@pytest.mark.parametrize(
    "line, wrapped",
    [
        ("    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)  # noqa: E501\n", False),
        ("    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)  # type: DataLoader\n", False),
        ("    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)  # the training set\n", True),
    ],
)
def test_a_line_with_noqa_or_a_type_comment_is_never_split(line, wrapped):
    source = (
        "from torch.utils.data import DataLoader\n\n\ndef train(dataset):\n" + line
        + "    for epoch in range(3):\n        for batch in loader:\n            pass\n"
    )
    fixed = fix_source(source, max_line_length=79).source
    comment = line[line.index("#"):]
    if wrapped:
        assert "        persistent_workers=True,\n    )  " + comment in fixed
    else:
        assert line.replace("num_workers=4)", "num_workers=4, persistent_workers=True)") in fixed


def test_a_new_last_argument_breaks_its_line_and_the_line_keeps_its_comment():
    source = (
        "from torch.utils.data import DataLoader\n\n\ndef train(args, dataset):\n"
        "    loader = DataLoader(dataset, batch_size=args.batch_size,\n"
        "                        shuffle=True, num_workers=args.workers)  # shuffled\n"
        "    for epoch in range(3):\n        for batch in loader:\n            pass\n"
    )
    assert (
        "                        shuffle=True, num_workers=args.workers,  # shuffled\n"
        "                        persistent_workers=args.workers > 0)\n"
    ) in fix_source(source, max_line_length=79).source
