"""`python -m flake8_dataloader fix` as users run it: exit codes, --diff, flake8 config, encodings."""

import re
import subprocess
import sys

import pytest

BAD = (
    "from torch.utils.data import DataLoader\n"
    "\n"
    "\n"
    "def train(dataset):\n"
    "    probe = DataLoader(dataset, batch_size=4, persistent_workers=True)\n"
    "    loader = DataLoader(dataset, num_workers=2)\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            pass\n"
    "    return probe\n"
)
FIXED = BAD.replace(", persistent_workers=True)", ")").replace(
    "num_workers=2)", "num_workers=2, persistent_workers=True)"
)


def fix(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "flake8_dataloader", "fix", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )


def test_diff_then_fix_then_nothing_left(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(BAD)
    diff = fix("--isolated", "--diff", "train.py", cwd=tmp_path)
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.startswith("--- train.py\n+++ train.py\n")
    assert "-    probe = DataLoader(dataset, batch_size=4, persistent_workers=True)\n" in diff.stdout
    assert "+    loader = DataLoader(dataset, num_workers=2, persistent_workers=True)\n" in diff.stdout
    assert diff.stderr == "train.py: fixed DL101 x1, DL402 x1\n"
    assert script.read_text() == BAD, "--diff writes nothing"

    applied = fix("--isolated", ".", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == "./train.py: fixed DL101 x1, DL402 x1\n"
    assert script.read_text() == FIXED

    again = fix("--isolated", "--diff", "train.py", cwd=tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_max_line_length_from_flake8_decides_the_layout(tmp_path):
    long = BAD.replace("num_workers=2)", "num_workers=2, pin_memory=True, drop_last=True)")
    (tmp_path / "train.py").write_text(long)
    assert fix("--isolated", "train.py", cwd=tmp_path).returncode == 0
    assert "        persistent_workers=True,\n    )\n" in (tmp_path / "train.py").read_text()
    (tmp_path / "train.py").write_text(long)
    assert fix("--isolated", "--max-line-length=120", "train.py", cwd=tmp_path).returncode == 0
    assert "drop_last=True, persistent_workers=True)\n" in (tmp_path / "train.py").read_text()


def test_unknown_options_get_the_fix_commands_usage(tmp_path):
    result = fix("--bogus", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "usage: python -m flake8_dataloader fix [-h] [--diff]\n"
        "python -m flake8_dataloader fix: error: unrecognized arguments: --bogus\n"
    )


def test_flake8_config_decides_what_is_fixed(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "setup.cfg").write_text("[flake8]\nextend-ignore = DL402\n")
    result = fix("--diff", "train.py", cwd=tmp_path)
    assert result.stderr == "train.py: fixed DL101 x1\n"
    (tmp_path / "setup.cfg").write_text("[flake8]\nper-file-ignores = train.py:DL1\n")
    result = fix("--diff", "train.py", cwd=tmp_path)
    assert result.stderr == "train.py: fixed DL402 x1\n"
    assert fix("--diff", "--isolated", "--select=DL101", "train.py", cwd=tmp_path).stderr == (
        "train.py: fixed DL101 x1\n"
    )


def test_start_method_option_from_config_keeps_module_level_code(tmp_path):
    script = "from torch.utils.data import DataLoader\n\nfor batch in DataLoader(range(4), num_workers=2):\n    pass\n"
    (tmp_path / "run.py").write_text(script)
    assert fix("--isolated", "--diff", "run.py", cwd=tmp_path).returncode == 1
    (tmp_path / ".flake8").write_text("[flake8]\ndataloader-start-method = fork\n")
    result = fix("--diff", "run.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")


def test_encoding_newlines_and_bom_survive(tmp_path):
    latin = tmp_path / "latin.py"
    source = "# -*- coding: latin-1 -*-\r\n# caf\xe9\r\n" + BAD.replace("\n", "\r\n")
    latin.write_bytes(source.encode("latin-1"))
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + BAD.encode("utf-8"))
    result = fix("--isolated", "latin.py", "bom.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = "# -*- coding: latin-1 -*-\r\n# caf\xe9\r\n" + FIXED.replace("\n", "\r\n")
    assert latin.read_bytes() == expected.encode("latin-1")
    assert bom.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode("utf-8")


def test_unparsable_and_missing_files_do_not_stop_the_others(tmp_path):
    (tmp_path / "broken.py").write_text("def broken(:\n    DataLoader\n")
    (tmp_path / "train.py").write_text(BAD)
    result = fix("--isolated", "broken.py", "train.py", cwd=tmp_path)
    assert result.returncode == 1, "flake8 reports E999 in broken.py"
    assert result.stderr == (
        "broken.py: not fixed: Python %d.%d cannot parse it (line 1: invalid syntax); flake8 reports E999 there\n"
        % sys.version_info[:2]
    )
    assert (tmp_path / "train.py").read_text() == FIXED
    missing = fix("--isolated", "nowhere.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("nowhere.py: not read: [Errno 2] No such file or directory")


def test_left_findings_are_listed_with_reasons(tmp_path):
    (tmp_path / "custom.py").write_text(BAD.replace("persistent_workers=True)", "persistent_workers=False)").replace(
        "probe = DataLoader(dataset, batch_size=4, persistent_workers=False)",
        "probe = DataLoader(dataset, num_workers=2, persistent_workers=0)\n    for _ in range(2):\n"
        "        for _ in probe:\n            pass",
    ))
    result = fix("--isolated", "custom.py", cwd=tmp_path)
    assert result.returncode == 1, "a finding remains"
    assert result.stdout.splitlines() == [
        "custom.py: fixed DL402 x1",
        "custom.py:5:13: DL402 left as is: persistent_workers=0 is written as a false value; "
        "change it by hand if that was not deliberate",
    ]


def test_bad_option_value_is_a_usage_error(tmp_path):
    result = fix("--isolated", "--dataloader-names=my-pkg.Loader", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert "is not a dotted Python name" in result.stderr


def test_stdin_to_stdout_for_editors(tmp_path):
    def piped(text, *args):
        return subprocess.run(
            [sys.executable, "-m", "flake8_dataloader", "fix", "--isolated", *args, "-"],
            input=text.encode(), cwd=tmp_path, capture_output=True, timeout=120,
        )

    result = piped(BAD, "--stdin-display-name=train.py")
    assert (result.returncode, result.stdout.decode()) == (0, FIXED)
    assert result.stderr.decode() == "train.py: fixed DL101 x1, DL402 x1\n"
    broken = "def broken(:\n    DataLoader\n"
    result = piped(broken)
    assert (result.returncode, result.stdout.decode()) == (1, broken), "an unparsable input comes back as it was"
    assert result.stderr.decode().startswith("stdin: not fixed: Python ")
    assert piped(BAD, "--diff").returncode == 1


def test_fix_dot_leaves_virtual_environments_and_build_output_alone(tmp_path):
    installed = [
        ".venv/lib/python3.11/site-packages/x/train.py", "venv/lib/python3.11/site-packages/x/train.py",
        "env/bin/train.py",  # any name, outside site-packages: its pyvenv.cfg says what it is
        "build/lib/x/train.py", "dist/x/train.py", "node_modules/x/train.py", ".tox/py311/x/train.py",
    ]
    for path in [*installed, "src/train.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(BAD)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    result = fix("--isolated", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "./src/train.py: fixed DL101 x1, DL402 x1\n", "")
    assert all((tmp_path / path).read_text() == BAD for path in installed)


def test_exclude_and_extend_exclude_as_flake8_spells_them(tmp_path):
    for path in (".venv/x/train.py", "src/train.py", "scripts/train.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(BAD)

    def changed(*args):
        return sorted(line.split(":")[0] for line in fix("--diff", *args, ".", cwd=tmp_path).stderr.splitlines())

    assert changed("--isolated") == ["./scripts/train.py", "./src/train.py"]
    assert changed("--isolated", "--extend-exclude=scripts") == ["./src/train.py"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nextend-exclude = src\n")
    assert changed() == ["./scripts/train.py"]
    # --exclude replaces the defaults, as in flake8 and ruff: the environment is walked again.
    assert changed("--isolated", "--exclude=scripts") == ["./.venv/x/train.py", "./src/train.py"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="`type X = ...` parses from Python 3.12 on")
def test_newer_syntax_than_the_running_python_is_never_rewritten(tmp_path):
    source = BAD.replace("\n\n\ndef train", "\ntype Batch = list[int]\n\n\ndef train")
    (tmp_path / "train.py").write_text(source)
    lint = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=E9", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert lint.stdout.startswith("train.py:2:7: E999 SyntaxError: invalid syntax")
    result = fix("--isolated", "train.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "train.py: not fixed: Python 3.%d cannot parse it (line 2: invalid syntax); flake8 reports E999 there\n"
        % sys.version_info[1]
    )
    assert (tmp_path / "train.py").read_text() == source
    assert fix("--isolated", "--extend-ignore=E999", "train.py", cwd=tmp_path).returncode == 0


def test_a_syntax_libcst_accepts_and_python_refuses_is_not_rewritten(tmp_path):
    source = BAD.replace("    return probe\n", "    return probe(**{}, *())\n")
    (tmp_path / "train.py").write_text(source)
    result = fix("--isolated", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("train.py: not fixed: Python 3.")
    assert (tmp_path / "train.py").read_text() == source


UNFIXABLE = (
    "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
    "class Crops(Dataset):\n    def __init__(self, seed=0):\n        self.rng = np.random.default_rng(seed)\n\n"
    "    def __len__(self):\n        return 8\n\n"
    "    def __getitem__(self, index):\n        return self.rng.integers(0, 8)\n\n\n"
    "def train():\n    return DataLoader(Crops(), num_workers=2)\n"
)


@pytest.mark.parametrize(
    "files, args, status",
    [
        ({"train.py": FIXED}, [], 0),  # nothing to report
        ({"train.py": BAD}, [], 0),  # everything fixed: nothing left
        ({"train.py": BAD}, ["--diff"], 1),  # would be fixed: the file still has it
        ({"train.py": UNFIXABLE}, [], 1),  # a finding without a fix remains
        ({"train.py": UNFIXABLE}, ["--exit-zero"], 0),
        ({"train.py": UNFIXABLE}, ["--extend-ignore=DL2"], 0),
        ({"train.py": FIXED}, ["--bogus"], 2),
        ({"train.py": FIXED}, ["nowhere.py"], 2),
    ],
)
def test_exit_status_as_ruff_check_fix(tmp_path, files, args, status):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = [] if any(arg.endswith(".py") for arg in args) else ["."]
    assert fix("--isolated", *args, *paths, cwd=tmp_path).returncode == status


def test_findings_without_a_fix_are_printed_as_flake8_prints_them(tmp_path):
    (tmp_path / "train.py").write_text(UNFIXABLE)
    lint = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=DL", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    result = fix("--isolated", "train.py", cwd=tmp_path)
    assert lint.stdout.startswith("train.py:7:20: DL201 ")
    assert (result.returncode, result.stdout) == (1, lint.stdout)


LONG = BAD.replace("num_workers=2)", "num_workers=2, pin_memory=True)")
# 89 characters
ONE_LINE = "    loader = DataLoader(dataset, num_workers=2, pin_memory=True, persistent_workers=True)\n"


@pytest.mark.parametrize(
    "config, args, one_line",
    [
        ({}, [], False),  # 79
        ({"pyproject.toml": "[tool.black]\nline-length = 89\n"}, [], True),
        ({"pyproject.toml": "[tool.black]\nline-length = 88\n"}, [], False),
        ({"pyproject.toml": "[tool.ruff]\nline-length = 88\n\n[tool.black]\nline-length = 100\n"}, [], False),
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, ["--max-line-length=79"], False),
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "setup.cfg": "[flake8]\nmax-line-length = 79\n"},
         [], False),
        ({"pyproject.toml": "[tool.black]\nline-length = 100\n", "setup.cfg": "[flake8]\nselect = DL\n"}, [], True),
        ({"pyproject.toml": "[project]\nname = 'x'\n", "../pyproject.toml": "[tool.ruff]\nline-length = 90\n"},
         [], True),
    ],
)
def test_line_length_from_flake8_else_ruff_or_black_else_79(tmp_path, config, args, one_line):
    project = tmp_path / "project"
    project.mkdir()
    for name, text in config.items():
        (project / name).write_text(text)
    (project / "train.py").write_text(LONG)
    assert fix(*args, "train.py", cwd=project).returncode == 0
    assert (ONE_LINE in (project / "train.py").read_text()) == one_line


def test_the_sample_summary_of_docs_fix_md_is_what_the_command_prints():
    from .conftest import ROOT

    doc = (ROOT / "docs" / "fix.md").read_text(encoding="utf-8")
    intro, rest = doc.split("summary lines, part):\n\n```\n", 1)
    command = re.findall(r"\(`python -m flake8_dataloader (fix [^`]*)`", intro)[-1].split()
    printed = subprocess.run([sys.executable, "-m", "flake8_dataloader", *command], cwd=ROOT, capture_output=True,
                             text=True, timeout=300).stderr.splitlines()
    sample = rest.split("```", 1)[0].splitlines()
    assert [line for line in printed if line in sample] == sample  # every line, in this order
