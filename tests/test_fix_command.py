"""`python -m flake8_dataloader fix` as users run it: exit codes, --diff, flake8 config, encodings."""

import subprocess
import sys

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
    assert result.returncode == 0
    assert result.stderr.startswith("broken.py: skipped: LibCST cannot parse it (")
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
    assert result.stdout.splitlines() == [
        "custom.py: fixed DL402 x1",
        "custom.py:5:13: DL402 left as is: persistent_workers is written explicitly as a false value; "
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
    assert (result.returncode, result.stdout.decode()) == (0, broken), "an unparsable input comes back as it was"
    assert result.stderr.decode().startswith("stdin: skipped: LibCST cannot parse it (")
    assert piped(BAD, "--diff").returncode == 1
