"""The fix command: fixture twins, idempotence, what it refuses and why, layout and comments kept."""

import re
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_dataloader.autofix import FIXABLE, fix_source
from flake8_dataloader.autofix.edits import CallEdit, keyword_arg
from flake8_dataloader.engine import analyse

from .conftest import FIXTURES
from .harness import EXPECT, fixture_files, option_args, settings_from_argv

TWINS = FIXTURES / "fixed"
ORIGINALS = [p for p in fixture_files(FIXTURES) if TWINS not in p.parents]


def without_expectations(text: str) -> str:
    """The text with the `# DLnnn:col` comments gone (a fix keeps them; a twin states its own)."""
    return "\n".join(EXPECT.sub("", line).rstrip() for line in text.split("\n"))


def fixed(path: Path):
    source = path.read_text(encoding="utf-8")
    return source, fix_source(source, settings_from_argv(option_args(source)))


@pytest.mark.parametrize("path", ORIGINALS, ids=[str(p.relative_to(FIXTURES)) for p in ORIGINALS])
def test_fix_turns_each_fixture_into_its_twin_and_is_idempotent(path):
    source, result = fixed(path)
    twin = TWINS / path.relative_to(FIXTURES)
    if not result.changed:
        assert result.source == source
        assert not twin.exists(), "a fixture the fix leaves alone needs no twin"
        return
    assert twin.exists(), f"the fix changes {path.name}: its expected result belongs in fixtures/fixed/"
    expected = twin.read_text(encoding="utf-8")
    assert without_expectations(result.source) == without_expectations(expected)
    assert fix_source(result.source, settings_from_argv(option_args(source))).source == result.source
    assert not fix_source(expected, settings_from_argv(option_args(expected))).changed


@pytest.mark.parametrize("path", ORIGINALS, ids=[str(p.relative_to(FIXTURES)) for p in ORIGINALS])
def test_second_lint_shows_each_fixed_finding_gone(path):
    source, result = fixed(path)
    settings = settings_from_argv(option_args(source))
    before = Counter(code for _, _, code, _ in analyse(source, settings))
    after = Counter(code for _, _, code, _ in analyse(result.source, settings))
    fixed_codes = Counter(f.code for f in result.fixed)
    assert after == before - fixed_codes
    assert set(fixed_codes) <= set(FIXABLE)


def test_every_twin_has_its_original():
    for twin in fixture_files(TWINS):
        assert (FIXTURES / twin.relative_to(TWINS)).exists(), twin


def test_fixed_spawn_script_is_the_guarded_twin_that_runs_under_spawn():
    # test_spawn_behaviour runs spawn/dl301_guarded_training.py under spawn: the fix writes the same code.
    _, result = fixed(FIXTURES / "spawn" / "dl301_unguarded_training.py")
    guarded = (FIXTURES / "spawn" / "dl301_guarded_training.py").read_text(encoding="utf-8")
    after_docstring = lambda text: without_expectations(text).split("\n", 1)[1]  # noqa: E731
    assert after_docstring(result.source) == after_docstring(guarded)


def fix(source, **kwargs):
    return fix_source(source, **kwargs)


HEADER = "from torch.utils.data import DataLoader\n\n\n"


def reasons(source):
    return [(left.line, left.code, left.reason) for left in fix(source).left]


def test_drop_argument_leaves_its_own_comment_where_it_stood_and_keeps_the_others():
    source = HEADER + (
        "loader = DataLoader(\n"
        "    dataset,\n"
        "    batch_size=8,\n"
        "    # the probe runs in the main process\n"
        "    persistent_workers=True,  # TODO(ana): drop once the probe uses workers\n"
        "    drop_last=True,  # whole batches only\n"
        ")\n"
    )
    assert fix(source).source == HEADER + (
        "loader = DataLoader(\n"
        "    dataset,\n"
        "    batch_size=8,\n"
        "    # the probe runs in the main process\n"
        "    # TODO(ana): drop once the probe uses workers\n"
        "    drop_last=True,  # whole batches only\n"
        ")\n"
    )


def test_drop_argument_sharing_its_line_leaves_the_lines_comment_there():
    source = HEADER + "loader = DataLoader(\n    dataset, persistent_workers=True,  # the probe\n)\n"
    assert fix(source).source == HEADER + "loader = DataLoader(\n    dataset,  # the probe\n)\n"


def test_drop_argument_refuses_to_lose_a_comment_inside_it():
    source = HEADER + "loader = DataLoader(dataset, persistent_workers=(  # why\n    True))\n"
    result = fix(source)
    assert not result.changed
    assert reasons(source) == [(4, "DL101", "a comment inside the argument would be lost")]


def test_dl104_leaves_a_worker_count_that_is_a_call():
    source = HEADER + "def make(ds):\n    return DataLoader(ds, num_workers=get(), persistent_workers=True)\n"
    assert reasons(source) == [
        (5, "DL104", "num_workers (get()) is not a plain name or attribute: it would be evaluated twice")
    ]


def test_dl104_guards_prefetch_and_persistent_with_the_same_expression():
    source = HEADER + (
        "def make(ds, cfg):\n"
        '    return DataLoader(ds, num_workers=cfg["w"], persistent_workers=True, prefetch_factor=4)\n'
    )
    assert fix(source).source == HEADER + (
        "def make(ds, cfg):\n"
        '    return DataLoader(ds, num_workers=cfg["w"], persistent_workers=cfg["w"] > 0, '
        'prefetch_factor=4 if cfg["w"] > 0 else None)\n'
    )


EPOCHS = "    for epoch in range(3):\n        for batch in loader:\n            pass\n"


@pytest.mark.parametrize(
    "construction, reason",
    [
        (
            "loader = DataLoader(ds, num_workers=2, persistent_workers=0)",  # a literal False is not reported
            "persistent_workers=0 is written as a false value; change it by hand if that was not deliberate",
        ),
        (
            "keep = False; loader = DataLoader(ds, num_workers=2, persistent_workers=keep)",
            "persistent_workers=keep is False here; change it where it is set if that was not deliberate",
        ),
        (
            "loader = DataLoader(ds, num_workers=workers())",
            "num_workers is not a plain name or attribute: write persistent_workers=<workers> > 0 by hand",
        ),
        (
            "loader = Custom(ds, num_workers=2)",
            "the loader class is not torch's DataLoader or StatefulDataLoader: its signature is not known",
        ),
    ],
)
def test_dl402_leaves_what_it_cannot_prove(construction, reason):
    source = HEADER + "class Custom(DataLoader):\n    pass\n\n\ndef train(ds):\n    " + construction + "\n" + EPOCHS
    assert reasons(source) == [(9, "DL402", reason)]


@pytest.mark.parametrize(
    "factory, call, reason",
    [
        ("def make(ds, **kw):\n    return DataLoader(ds, num_workers=2, **kw)\n",
         "make(ds, persistent_workers=False)",
         "persistent_workers comes in as False (through a ** splat or the factory's caller); "
         "change it where it is set"),
        ("def make(ds, pw):\n    return DataLoader(ds, num_workers=2, persistent_workers=pw)\n", "make(ds, False)",
         "persistent_workers=pw is False here; change it where it is set if that was not deliberate"),
    ],
)
def test_dl402_says_where_a_false_persistent_workers_comes_from_in_a_factory(factory, call, reason):
    source = HEADER + factory + "\n\ndef train(ds):\n    loader = " + call + "\n" + EPOCHS
    assert reasons(source) == [(5, "DL402", reason)]


@pytest.mark.parametrize(
    "change",
    [
        "ds.epoch = epoch",
        "bump(ds, epoch)",
        "setattr(ds, 'epoch', epoch)",
        "random.shuffle(ds.items)",
        "ds.items.sort()",
        "ds.items[0] = epoch",
        "ds.set_epoch(epoch)",
        "loader.dataset.update_data()",
    ],
)
def test_dl402_neither_reported_nor_fixed_when_the_loop_may_change_the_dataset(change):
    source = "import random\n" + HEADER + (
        "def bump(d, e):\n"
        "    d.level = e\n"
        "\n"
        "def train(ds):\n"
        "    loader = DataLoader(ds, num_workers=2)\n"
        "    for epoch in range(3):\n"
        f"        {change}\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    assert [code for _, _, code, _ in analyse(source)] == []
    assert not fix(source).changed
    unchanged = source.replace(change, "print(len(ds), epoch)")
    assert [code for _, _, code, _ in analyse(unchanged)] == ["DL402"]


def test_dl402_respects_noqa_and_flake8_noqa_file():
    source = HEADER + "def train(ds):\n    loader = DataLoader(ds, num_workers=2)  # noqa: DL402\n" + EPOCHS
    assert not fix(source).changed and fix(source).left == []
    assert fix(source, honour_noqa=False).changed
    assert not fix("# flake8: noqa\n" + source.replace("  # noqa: DL402", "")).changed
    other_code = source.replace("# noqa: DL402", "# noqa: DL401")
    assert fix(other_code).changed


def test_dl404_attribute_and_later_use_are_left():
    source = HEADER + (
        "def run(ds):\n"
        "    loader = DataLoader(ds, num_workers=2)\n"
        "    loader._shutdown_workers()\n"
        "    return loader\n"
    )
    assert reasons(source) == [(6, "DL404", "loader is used after this point")]


def test_dl404_unwraps_closing_and_drops_its_now_unused_import():
    source = (
        "from contextlib import closing, suppress\n\n"
        "from torch.utils.data import DataLoader\n\n\n"
        "def evaluate(ds):\n"
        "    # evaluation pass\n"
        "    with closing(DataLoader(ds, num_workers=2)) as loader:  # no close() here\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    assert fix(source).source == (
        "from contextlib import suppress\n\n"
        "from torch.utils.data import DataLoader\n\n\n"
        "def evaluate(ds):\n"
        "    # evaluation pass\n"
        "    loader = DataLoader(ds, num_workers=2)  # no close() here\n"
        "    for batch in loader:\n"
        "        pass\n"
    )


CLOSE = (
    "import contextlib  # closing() below\n\nfrom torch.utils.data import DataLoader\n\n\n"
    "def evaluate(ds):\n"
    "    loader = DataLoader(ds, num_workers=2)\n"
    "    # workers go when the block ends\n"
    "    with contextlib.closing(loader):  # release them\n"
    "        pass  # nothing else to do\n"
)


CLOSED = (
    "    loader = DataLoader(ds, num_workers=2)\n"
    "    # workers go when the block ends\n    # release them\n    # nothing else to do\n"
)


@pytest.mark.parametrize(
    "after, fixed",
    [
        # Nothing follows: the comments end the function.
        ("", CLOSED),
        # A statement follows: the comments come before it; no `pass` is left.
        ("    return loader\n", CLOSED + "    return loader\n"),
    ],
)
def test_dl404_a_closing_block_of_only_pass_goes_and_its_comments_stay(after, fixed):
    result = fix(CLOSE + after).source
    assert result == "# closing() below\n\nfrom torch.utils.data import DataLoader\n\n\ndef evaluate(ds):\n" + fixed


def test_dl404_a_closing_block_alone_in_its_function_leaves_the_pass_it_needs():
    module = "loader = DataLoader(range(4))\n\n\ndef close():\n"
    source = "from contextlib import closing\n\n" + HEADER + module + "    with closing(loader):  # bye\n        pass\n"
    assert fix(source).source == HEADER + module + "    # bye\n    pass\n"


def test_dl404_unwrapping_a_block_of_pass_leaves_no_pass():
    source = "from contextlib import closing\n\n" + HEADER + (
        "def close(ds):\n    with closing(DataLoader(ds, num_workers=2)):  # bye\n        pass\n"
    )
    assert fix(source).source == HEADER + "def close(ds):\n    DataLoader(ds, num_workers=2)  # bye\n"


LOADER = HEADER + "loader = DataLoader(range(8), num_workers=2)\n"


def test_dl301_merges_an_existing_guard_and_keeps_its_comment():
    source = LOADER + (
        "for batch in loader:\n"
        "    pass\n"
        "\n"
        "if __name__ == '__main__':  # entry point\n"
        "    print('done')\n"
    )
    assert fix(source).source == LOADER + (
        "if __name__ == '__main__':  # entry point\n"
        "    for batch in loader:\n"
        "        pass\n"
        "\n"
        "    print('done')\n"
    )


@pytest.mark.parametrize(
    "tail, reason",
    [
        ("for batch in loader:\n    pass\n\n\ndef helper():\n    return 1\n", None),
        (
            "for batch in loader:\n    pass\nif batch:\n    def helper():\n        return 1\n",
            "a def or class inside a moved statement would be out of reach of spawned workers",
        ),
        (
            "for batch in loader:\n    pass\nscale = 2\n\n\n@register(scale)\ndef helper():\n    return 1\n",
            "helper uses scale when it is defined, and the moved code binds scale before it",
        ),
        (
            "for batch in loader:\n    pass\nSIZE = 3\n\n\nclass Net:\n    size = SIZE\n",
            "Net uses SIZE when it is defined, and the moved code binds SIZE before it",
        ),
        (
            "for batch in loader:\n    helper()\n\n\ndef helper():\n    return 1\n",
            "the moved code uses helper before it is defined",
        ),
        (
            "for batch in loader:\n    pass\nhelper = None\n\n\ndef helper():\n    return 1\n",
            "the moved code binds helper before the def or class of that name",
        ),
        (
            "def scale(x):\n    return x * factor\n\n\nfactor = 2\nfor batch in loader:\n    pass\n",
            None,
        ),
        (
            "def scale(x):\n    return x * factor\n\n\nfor batch in loader:\n    pass\nfactor = 2\n",
            "scale() reads factor, which the moved code binds: spawned workers would not see it",
        ),
        (
            "collate = lambda b: b * factor\nfor batch in loader:\n    pass\nfactor = 2\n",
            "a lambda reads factor, which the moved code binds: spawned workers would not see it",
        ),
    ],
)
def test_dl301_moves_only_what_workers_cannot_need(tail, reason):
    source = LOADER + tail
    result = fix(source, codes=("DL301",))
    if reason is None:
        assert result.changed and result.left == []
    else:
        assert not result.changed
        assert {left.reason for left in result.left} == {reason}


def test_dl301_keeps_later_defs_and_classes_at_module_level():
    source = LOADER + (
        "# Look at one batch first.\n"
        "print(next(iter(loader)))\n"
        "\n"
        "\n"
        "class Net:\n"
        "    def __call__(self, batch, scale=2):\n"
        "        return batch * scale\n"
        "\n"
        "\n"
        "model = Net()\n"
        "for batch in loader:\n"
        "    model(batch)\n"
    )
    assert fix(source).source == LOADER + (
        "\n"
        "\n"
        "class Net:\n"
        "    def __call__(self, batch, scale=2):\n"
        "        return batch * scale\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    # Look at one batch first.\n"
        "    print(next(iter(loader)))\n"
        "\n"
        "    model = Net()\n"
        "    for batch in loader:\n"
        "        model(batch)\n"
    )


def test_fork_start_method_means_no_dl301_fix():
    source = LOADER + "for batch in loader:\n    pass\n"
    assert fix(source).changed
    assert not fix(source, settings=settings_from_argv(["--dataloader-start-method=fork"])).changed


def call_after(src, edit):
    return cst.Module(body=[]).code_for_node(edit(cst.parse_expression(src)))


@pytest.mark.parametrize(
    "src, removed, expected",
    [
        ("f(a, b)", {1}, "f(a)"),
        ("f(a, b)", {0}, "f(b)"),
        ("f(a)", {0}, "f()"),
        ("f(a, b, c)", {0, 2}, "f(b)"),
        ("f(\n    a,\n    b,\n)", {1}, "f(\n    a,\n)"),
        ("f(\n    a,\n    b,\n)", {0}, "f(\n    b,\n)"),
        ("f(a,  # ca\n  b,  # cb\n  c)", {1}, "f(a,  # ca\n  # cb\n  c)"),
        ("f(a,  # ca\n  # above b\n  b,  # cb\n  c)", {1}, "f(a,  # ca\n  # above b\n  # cb\n  c)"),
        ("f(a,\n  b,  # cb\n  c)", {1}, "f(a,\n  # cb\n  c)"),
        ("f(a, b,  # ab\n  c)", {1}, "f(a,  # ab\n  c)"),
        ("f(\n    a,\n    b)", {1}, "f(\n    a)"),
        ("f(\n    a,  # ca\n    b)", {1}, "f(\n    a  # ca\n    )"),
    ],
)
def test_removing_arguments_keeps_commas_layout_and_comments(src, removed, expected):
    assert call_after(src, CallEdit(remove=removed)) == expected


@pytest.mark.parametrize(
    "src, expected",
    [
        ("f()", "f(p=True)"),
        ("f(a, b)", "f(a, b, p=True)"),
        ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    p=True,\n)"),
        ("f(\n    a,\n    b\n)", "f(\n    a,\n    b,\n    p=True\n)"),
        ("f(a, b = 2)", "f(a, b = 2, p = True)"),
        ("f(a,  # c\n  b)", "f(a,  # c\n  b,\n  p=True)"),
        ("f(\n    a,\n    b,  # cb\n)", "f(\n    a,\n    b,  # cb\n    p=True,\n)"),
        ("f(\n    a,\n    b  # cb\n    # end\n)", "f(\n    a,\n    b,  # cb\n    p=True\n    # end\n)"),
        ("f(a, b,  # ab\n)", "f(a, b, p=True,  # ab\n)"),
    ],
)
def test_appending_a_keyword_follows_the_call_layout(src, expected):
    call = cst.parse_expression(src)
    assert call_after(src, CallEdit(append=[keyword_arg(call, "p", cst.Name("True"))])) == expected


def test_int_of_a_cli_value_is_repeated_in_the_guard():
    source = HEADER + (
        "def train(ds, opt):\n"
        "    loader = DataLoader(ds, num_workers=int(opt.workers))\n" + EPOCHS
    )
    assert "num_workers=int(opt.workers), persistent_workers=int(opt.workers) > 0)" in fix(source).source
    shadowed = source.replace("def train", "int = len\n\n\ndef train")
    assert not fix(shadowed).changed


def test_dl301_ignores_attribute_and_keyword_names_that_match_moved_names():
    source = LOADER + (
        "def init(m):\n"
        "    m.weight.data.normal_(std=0.02)\n"
        "\n"
        "\n"
        "for data in loader:\n"
        "    std = data\n"
    )
    result = fix(source)
    assert result.left == [] and [f.code for f in result.fixed] == ["DL301"]


@pytest.mark.parametrize("path", sorted((FIXTURES.parent / "docs" / "rules").glob("DL*.md")), ids=lambda p: p.stem)
def test_fixing_each_rule_page_example_is_safe_and_idempotent(path):
    from flake8_dataloader.rules.pages import code_blocks

    for block in code_blocks(path.read_text(encoding="utf-8")):
        result = fix(block)
        compile(result.source, str(path), "exec")
        assert not fix(result.source).changed
        assert Counter(f.code for f in result.fixed) <= Counter(code for _, _, code, _ in analyse(block))


@pytest.mark.parametrize("code", ["DL102", "DL104", "DL301", "DL402"])
def test_fix_turns_the_rule_page_example_into_its_use_instead(code):
    from flake8_dataloader.rules.pages import code_blocks, sections
    from flake8_dataloader.rules import RULES

    (rule,) = [r for r in RULES if r.CODE == code]
    (example,) = code_blocks(sections(rule)["Example"])
    (use_instead,) = code_blocks(sections(rule)["Use instead"])
    assert fix(example).source == use_instead


def test_removing_the_first_import_takes_its_blank_lines_along():
    source = (
        "from contextlib import closing\n\n"
        "from torch.utils.data import DataLoader\n\n\n"
        "def evaluate(ds):\n"
        "    with closing(DataLoader(ds, num_workers=2)) as loader:\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    assert fix(source).source.startswith("from torch.utils.data import DataLoader\n\n\ndef evaluate(ds):\n")


# Generated training scripts: every combination of the fixable patterns, their look-alikes and
# the uses that make a fix unsafe. The fix must never raise, must compile, must be idempotent
# and must never add a finding.
LOADER_CALLS = [
    "DataLoader(ds, persistent_workers=True)",
    "DataLoader(ds, num_workers=0, prefetch_factor=2, persistent_workers=True)",
    "DataLoader(ds, num_workers=args.workers, persistent_workers=True, prefetch_factor=4)",
    "DataLoader(ds, num_workers=int(args.workers))",
    "DataLoader(ds, num_workers=4)",
    "DataLoader(\n    ds,\n    num_workers=2,  # workers\n)",
    "DataLoader(ds, num_workers=2, **kw)",
    "DataLoader(ds, num_workers=get())",
]
STATEMENTS = [
    "loader = {call}",
    "for epoch in range(2):\n    for batch in loader:\n        pass",
    "for batch in loader:\n    pass",
    "ds.epoch = 1",
    "loader._shutdown_workers()",
    "if hasattr(loader, '_shutdown_workers'):\n    loader._shutdown_workers()",
    "with closing(loader):\n    pass",
    "with closing({call}) as loader:\n    for batch in loader:\n        pass",
    "with contextlib.closing(loader) as other, open('f') as handle:\n    pass",
    "print(loader)",
    "for epoch in range(2):\n    loader = {call}\n    for batch in loader:\n        pass",
    "def helper():\n    return loader",
    "if __name__ == '__main__':\n    main(ds, args, {{}})",
]


def _indent(text, prefix):
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


@st.composite
def training_scripts(draw):
    def block(prefix):
        chosen = draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6))
        calls = draw(st.lists(st.sampled_from(LOADER_CALLS), min_size=len(chosen), max_size=len(chosen)))
        return "\n".join(_indent(s.format(call=_indent(c, "    ").lstrip()), prefix) for s, c in zip(chosen, calls))

    return (
        "import contextlib\nfrom contextlib import closing\n\nfrom torch.utils.data import DataLoader\n\n"
        "ds = list(range(8))\nargs = None\nloader = None\n\n\n"
        "def main(ds, args, kw):\n" + block("    ") + "\n\n\n" + block("") + "\n"
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_scripts())
def test_fix_of_generated_scripts_is_safe(source):
    compile(source, "<generated>", "exec")
    result = fix(source)
    compile(result.source, "<fixed>", "exec")
    assert fix(result.source).source == result.source
    before = Counter(code for _, _, code, _ in analyse(source))
    after = Counter(code for _, _, code, _ in analyse(result.source))
    fixed_codes = Counter(f.code for f in result.fixed)
    assert set(after) <= set(before)
    assert all(after[code] <= before[code] - fixed_codes[code] for code in after)


def test_fixed_twins_add_no_pycodestyle_or_pyflakes_warning():
    # Line length aside (an added keyword can pass the limit), a fix leaves flake8's own checks as they were.
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=E,W,F", "--extend-ignore=E501", str(TWINS)],
        capture_output=True, text=True, timeout=120,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_fixes_that_pass_alone_but_not_together_join_one_by_one():
    # Unwrapping both closing() blocks binds `loader` only from loader calls, which turns the
    # `_shutdown_workers()` between them into a new DL404: only the first unwrap can go.
    source = (
        "from contextlib import closing\n\nfrom torch.utils.data import DataLoader\n\n\n"
        "def main(ds):\n"
        "    loader = DataLoader(ds, persistent_workers=True)\n"
        "    with closing(DataLoader(ds, persistent_workers=True)) as loader:\n"
        "        for batch in loader:\n"
        "            pass\n"
        "    loader._shutdown_workers()\n"
        "    with closing(DataLoader(ds)) as loader:\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    result = fix(source)
    assert sorted((f.line, f.code) for f in result.fixed) == [(7, "DL101"), (8, "DL101"), (8, "DL404")]
    assert [(left.line, left.code, left.reason) for left in result.left] == [
        (12, "DL404", "the finding would remain after the fix")
    ]
    assert not fix(result.source).changed


def _long_lines(text, limit):
    # A comma the fix puts after an argument already past the limit (or the bracket it moves to the
    # next line with the new argument) does not make a new long line. A comment stays on its
    # keyword's line even when the fixed value makes it long, and a `# noqa` line is never split
    # (docs/fix.md): the code before the comment is what must fit.
    code = [re.sub(r"\s+#.*$", "", line) for line in without_expectations(text).split("\n") if "# noqa" not in line]
    return {line.rstrip(",)") for line in code if len(line) > limit}


@pytest.mark.parametrize("path", ORIGINALS, ids=[str(p.relative_to(FIXTURES)) for p in ORIGINALS])
def test_no_fix_adds_a_line_past_max_line_length(path):
    source = path.read_text(encoding="utf-8")
    result = fix_source(source, settings_from_argv(option_args(source)), max_line_length=79)
    assert _long_lines(result.source, 79) <= _long_lines(source, 79)
    again = fix_source(result.source, settings_from_argv(option_args(source)), max_line_length=79)
    assert again.source == result.source


def test_a_call_lengthened_past_the_limit_gets_one_argument_per_line():
    source = HEADER + (
        "def train(args, dataset):\n"
        "    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers)  # keep me\n"
        + EPOCHS
    )
    assert fix(source, max_line_length=79).source == HEADER + (
        "def train(args, dataset):\n"
        "    loader = DataLoader(\n"
        "        dataset,\n"
        "        batch_size=args.batch_size,\n"
        "        num_workers=args.workers,\n"
        "        persistent_workers=args.workers > 0,\n"
        "    )  # keep me\n"
        + EPOCHS
    )
    assert fix(source, max_line_length=140).source.count("\n") == source.count("\n")  # fits: one line as before


def test_a_multi_line_call_gets_its_new_last_argument_on_a_line_of_its_own_when_it_overflows():
    source = HEADER + (
        "def train(args, dataset):\n"
        "    loader = DataLoader(dataset, batch_size=args.batch_size,\n"
        "                        shuffle=True, num_workers=args.workers)\n"
        + EPOCHS
    )
    assert fix(source, max_line_length=79).source == HEADER + (
        "def train(args, dataset):\n"
        "    loader = DataLoader(dataset, batch_size=args.batch_size,\n"
        "                        shuffle=True, num_workers=args.workers,\n"
        "                        persistent_workers=args.workers > 0)\n"
        + EPOCHS
    )
    fits = fix(source, max_line_length=120).source
    assert "num_workers=args.workers, persistent_workers=args.workers > 0)\n" in fits
