"""The pre-commit hooks for real: `pre-commit try-repo` of this checkout in a throwaway git repository.

pre-commit installs this repository into an environment of its own (from the
package registry, ~15 s), so this test is marked `precommit`; it is not `slow`
and CI runs it.
"""

import os
import shutil
import subprocess

import pytest

from .conftest import ROOT

BAD = (
    "from torch.utils.data import DataLoader\n"
    "\n"
    "\n"
    "def train(dataset):\n"
    "    loader = DataLoader(dataset, batch_size=4, persistent_workers=True)\n"
    "    return loader\n"
)
FINDING = (
    "train.py:5:48: DL101 persistent_workers=True with num_workers omitted (defaults to 0) raises ValueError; "
    "drop persistent_workers or set num_workers > 0"
)
IDENTITY = {
    "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def have_tools() -> bool:
    return shutil.which("git") is not None and shutil.which("pre-commit") is not None


@pytest.mark.precommit
@pytest.mark.skipif(not have_tools() and not os.environ.get("CI"), reason="needs git and pre-commit (CI has both)")
def test_lint_hook_reports_and_fix_hook_rewrites(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def run(*args):
        return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=300)

    assert run("git", "init", "-q").returncode == 0
    (project / "train.py").write_text(BAD)
    (project / "notes.txt").write_text("DataLoader(persistent_workers=True)\n")  # not Python: not linted
    assert run("git", "add", "train.py", "notes.txt").returncode == 0

    both = run("pre-commit", "try-repo", str(ROOT), "--all-files")
    assert both.returncode == 1, both.stdout + both.stderr
    lint_part, fix_part = both.stdout.split("- hook id: flake8-dataloader-fix")
    assert "- hook id: flake8-dataloader\n" in lint_part
    assert FINDING in lint_part.splitlines()
    assert "notes.txt" not in both.stdout
    assert "files were modified by this hook" in fix_part
    assert "train.py: fixed DL101 x1" in fix_part
    assert (project / "train.py").read_text() == BAD.replace(", persistent_workers=True)", ")")

    lint_again = run("pre-commit", "try-repo", str(ROOT), "flake8-dataloader", "--all-files")
    assert lint_again.returncode == 0, lint_again.stdout + lint_again.stderr
    assert "Passed" in lint_again.stdout


def test_the_lint_hook_selects_every_default_rule_and_no_opt_in_one():
    # The next family cannot be forgotten: the hook's --select must cover it.
    from flake8_dataloader.manifest import CODES, DEFAULT_OFF

    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entry = next(line for line in hooks.splitlines() if line.strip().startswith("entry: flake8"))
    selected = [item for item in entry.split("--select=")[1].split()[0].split(",") if item.startswith("DL")]
    chosen = {code for code in CODES if any(code.startswith(prefix) for prefix in selected)}
    assert chosen == set(CODES) - set(DEFAULT_OFF)
