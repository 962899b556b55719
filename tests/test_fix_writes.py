"""The fix command never loses a byte: atomic replacement, nothing written over a file that changed."""

import os
import resource
import signal
import subprocess
import sys

import pytest

from flake8_dataloader.autofix import command, writing

from .test_fix_command import BAD, FIXED


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".fix"))


def _limit_file_size(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_write_that_fails_half_way_leaves_the_file_whole_and_the_run_goes_on(tmp_path):
    big = BAD + "".join(f"# padding line {i} so the fixed text outgrows the limit\n" for i in range(120))
    (tmp_path / "a_big.py").write_text(big)
    (tmp_path / "b_small.py").write_text(BAD)
    result = subprocess.run(
        [sys.executable, "-m", "flake8_dataloader", "fix", "--isolated", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size(len(big) // 2),
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == "./a_big.py: not written: File too large\n"
    assert (tmp_path / "a_big.py").read_text() == big
    assert (tmp_path / "b_small.py").read_text() == FIXED
    assert leftovers(tmp_path) == []


def test_a_file_edited_while_fixing_is_left_as_it_is_now(tmp_path, monkeypatch, capsys):
    script = tmp_path / "train.py"
    script.write_text(BAD)
    real_fix_file = command.fix_file

    def edit_meanwhile(path, data, view, requests=frozenset()):
        fixed = real_fix_file(path, data, view, requests)
        script.write_text(BAD + "# the user's edit\n")
        return fixed

    monkeypatch.setattr(command, "fix_file", edit_meanwhile)
    assert command.main(["--isolated", str(script)]) == 2
    assert capsys.readouterr().err == f"{script}: changed while fixing: left as it is now; run the fix again\n"
    assert script.read_text() == BAD + "# the user's edit\n"
    assert leftovers(tmp_path) == []


def test_ctrl_c_while_writing_leaves_the_original(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text(BAD)

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(writing.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        command.main(["--isolated", str(script)])
    assert script.read_text() == BAD
    assert leftovers(tmp_path) == []


def test_permissions_are_kept(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(BAD)
    script.chmod(0o640)
    assert command.main(["--isolated", str(script)]) == 0
    assert script.read_text() == FIXED
    assert script.stat().st_mode & 0o777 == 0o640


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_file_is_reported_and_the_others_are_fixed(tmp_path, capsys):
    locked, other = tmp_path / "a.py", tmp_path / "b.py"
    locked.write_text(BAD)
    other.write_text(BAD)
    locked.chmod(0o444)
    assert command.main(["--isolated", str(tmp_path)]) == 2
    assert f"{locked}: not written: the file is not writable" in capsys.readouterr().err
    assert locked.read_text() == BAD and other.read_text() == FIXED


def test_symbolic_links_are_followed_only_inside_the_tree(tmp_path, capsys):
    outside, tree = tmp_path / "outside", tmp_path / "tree"
    outside.mkdir()
    tree.mkdir()
    (outside / "real.py").write_text(BAD)
    (tree / "escape.py").symlink_to(outside / "real.py")
    (tree / "target.py").write_text(BAD)
    (tree / "alias.py").symlink_to(tree / "target.py")
    assert command.main(["--isolated", str(tree)]) == 0
    out = capsys.readouterr()
    assert f"{tree / 'escape.py'}: skipped: a symbolic link to {outside / 'real.py'}, outside {tree}" in out.err
    assert (outside / "real.py").read_text() == BAD
    assert (tree / "target.py").read_text() == FIXED
    assert (tree / "alias.py").is_symlink(), "the link itself stays a link"
