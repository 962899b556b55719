"""The README's pre-commit snippet for real, in a throwaway git repository.

The snippet is read from the README; only its placeholders are replaced: the repository
is a git repository holding this working tree (as a user's clone or host would), and
`rev` is its commit id. pre-commit clones it and installs it into an environment of its
own (from the package registry, ~30 s), so this test is marked `precommit`; it is not
`slow` and CI runs it.
"""

import os
import re
import shlex
import shutil
import subprocess
from typing import List

import pytest

from .conftest import ROOT

CLEAN = (
    "import random\n"
    "\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "\n"
    "\n"
    "class Noisy(Dataset):\n"
    "    def __init__(self, n):\n"
    "        self.n = n\n"
    "\n"
    "    def __len__(self):\n"
    "        return self.n\n"
    "\n"
    "    def __getitem__(self, i):\n"
    "        return i + random.random()\n"
    "\n"
    "\n"
    "def train(dataset):\n"
    "    loader = DataLoader(dataset, batch_size=4)\n"
    "    return loader\n"
)
# DL101 (the fix hook removes it) and DL201 (no fix: the lint hook reports it).
BAD = CLEAN.replace("        self.n = n\n", "        self.n = n\n        self.rng = random.Random(0)\n").replace(
    "i + random.random()", "i + self.rng.random()").replace("batch_size=4)", "batch_size=4, persistent_workers=True)")
LEFT = (
    "train.py:9:20: DL201 self.rng of Noisy is copied into every worker with the same state (workers draw "
    "identical numbers); reseed it per worker from get_worker_info().seed"
)
# DL410, opt-in: single-process loading in a training loop.
SYNCHRONOUS = (
    "\n\n"
    "def fit(dataset, model):\n"
    "    loader = DataLoader(dataset, batch_size=4)\n"
    "    for epoch in range(3):\n"
    "        for batch in loader:\n"
    "            model(batch)\n"
)
OPT_IN_LEFT = (
    "train.py:23:14: DL410 single-process DataLoader (num_workers omitted (defaults to 0)) in a training loop: "
    "loading blocks every step; set num_workers > 0"
)
FINDING = re.compile(r"\S+:\d+:\d+: [A-Z]+\d+ ")  # flake8's default format
IDENTITY = {
    "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def have_tools() -> bool:
    return shutil.which("git") is not None and shutil.which("pre-commit") is not None


def readme_snippets() -> List[str]:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def with_opt_in(config: str, opt_in: str) -> str:
    """The config with the README's opt-in lint hook in place of the plain one."""
    lint = re.compile(r"^( *)- id: flake8-dataloader +#.*\n", re.M)
    assert len(lint.findall(config)) == 1 and opt_in.startswith("      - id: flake8-dataloader\n")
    return lint.sub(lambda _: opt_in, config)


def rev_command(snippet: str, clone) -> List[str]:
    """The command the snippet's `rev:` comment gives for the commit id, for this clone."""
    command = re.search(r"rev: <commit-sha> .*?`([^`]*)`", snippet)
    assert command is not None, "the rev line names a command"
    return [str(clone) if word == "<clone>" else word for word in shlex.split(command[1])]


def publish_working_tree(upstream, env) -> str:
    """A git repository holding this working tree, committed; its commit id."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not published
            (upstream / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, upstream / name)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=upstream, env=env, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=upstream, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.precommit
@pytest.mark.skipif(not have_tools() and not os.environ.get("CI"), reason="needs git and pre-commit (CI has both)")
def test_the_readmes_snippet_fixes_then_lints(tmp_path):
    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    upstream, project = tmp_path / "upstream", tmp_path / "project"
    upstream.mkdir()
    project.mkdir()
    sha = publish_working_tree(upstream, env)
    snippet, opt_in = readme_snippets()
    printed = subprocess.run(rev_command(snippet, upstream), capture_output=True, text=True, check=True).stdout
    assert printed == sha + "\n", "the rev recipe prints the one commit id"
    assert "<repository-url>" in snippet and "<commit-sha>" in snippet
    config = snippet.replace("<repository-url>", str(upstream)).replace("<commit-sha>", sha)

    def run(*args):
        return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=300)

    assert run("git", "init", "-q").returncode == 0
    (project / ".pre-commit-config.yaml").write_text(config)
    (project / "train.py").write_text(BAD)
    (project / "notes.txt").write_text("DataLoader(persistent_workers=True)\n")  # not Python: not linted
    assert run("git", "add", "-A").returncode == 0

    first = run("pre-commit", "run", "--all-files")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "mutable reference" not in first.stdout + first.stderr  # a commit id is what pre-commit asks for
    fix_part, lint_part = first.stdout.split("- hook id: flake8-dataloader\n")
    assert "- hook id: flake8-dataloader-fix" in fix_part
    assert "files were modified by this hook" in fix_part
    assert "train.py: fixed DL101 x1" in fix_part
    # The fix hook runs first: the lint hook sees the fixed file and reports what no fix covers.
    assert [line for line in lint_part.splitlines() if ": DL" in line] == [LEFT]
    assert "notes.txt" not in first.stdout
    assert (project / "train.py").read_text() == BAD.replace(", persistent_workers=True)", ")")

    (project / "train.py").write_text(CLEAN)
    second = run("pre-commit", "run", "--all-files")
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.count("Passed") == 2

    # The opt-in snippet as written: the lint hook reports DL410 too (unquoted, YAML split the
    # value and flake8 read `DL620` as a file: E902).
    (project / ".pre-commit-config.yaml").write_text(with_opt_in(config, opt_in))
    (project / "train.py").write_text(CLEAN + SYNCHRONOUS)
    third = run("pre-commit", "run", "--all-files")
    assert third.returncode == 1, third.stdout + third.stderr
    assert [line for line in third.stdout.splitlines() if FINDING.match(line)] == [OPT_IN_LEFT]


def test_the_lint_hook_selects_every_default_rule_and_no_opt_in_one():
    # The next family cannot be forgotten: the hook's --select must cover it.
    from flake8_dataloader.manifest import CODES, DEFAULT_OFF

    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entry = next(line for line in hooks.splitlines() if line.strip().startswith("entry: flake8 "))
    selected = [item for item in entry.split("--select=")[1].split()[0].split(",") if item.startswith("DL")]
    chosen = {code for code in CODES if any(code.startswith(prefix) for prefix in selected)}
    assert chosen == set(CODES) - set(DEFAULT_OFF)


# nbQA's `nbqa-flake8` hook as its repository declares it (entry, language, file types, dependencies):
# pre-commit installs this stand-in's package, which installs nbQA from the registry.
NBQA_HOOKS = """\
- id: nbqa-flake8
  name: nbqa-flake8
  entry: nbqa flake8
  language: python
  require_serial: true
  types: [jupyter]
  additional_dependencies: [flake8]
"""
NBQA_PACKAGE = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "nbqa-hook-stand-in"
version = "0.0.0"
dependencies = ["nbqa=={version}"]

[tool.setuptools]
py-modules = []
"""


def readme_notebook_snippet() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Notebooks\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)[0]


@pytest.mark.precommit
@pytest.mark.skipif(not have_tools() and not os.environ.get("CI"), reason="needs git and pre-commit (CI has both)")
def test_the_readmes_notebook_hook_reports_notebook_cells(tmp_path):
    from importlib.metadata import version

    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    upstream, nbqa_repo, project = tmp_path / "upstream", tmp_path / "nbqa", tmp_path / "project"
    for folder in (upstream, nbqa_repo, project):
        folder.mkdir()
    sha = publish_working_tree(upstream, env)
    (nbqa_repo / ".pre-commit-hooks.yaml").write_text(NBQA_HOOKS)
    (nbqa_repo / "pyproject.toml").write_text(NBQA_PACKAGE.format(version=version("nbqa")))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "hook"]):
        subprocess.run(["git", *args], cwd=nbqa_repo, env=env, check=True)
    nbqa_sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=nbqa_repo, capture_output=True, text=True,
                              check=True).stdout.strip()
    snippet = readme_notebook_snippet()
    assert "repo: https://github.com/nbQA-dev/nbQA\n" in snippet and "rev: 1.9.1\n" in snippet
    config = (snippet.replace("https://github.com/nbQA-dev/nbQA", str(nbqa_repo)).replace("1.9.1", nbqa_sha)
              .replace("<repository-url>", f"file://{upstream}").replace("<commit-sha>", sha))

    def run(*args):
        return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=600)

    assert run("git", "init", "-q").returncode == 0
    (project / ".pre-commit-config.yaml").write_text(config)
    shutil.copy(ROOT / "fixtures" / "notebooks" / "shapes_course.ipynb", project / "course.ipynb")
    (project / "train.py").write_text(BAD)  # not a notebook: the hook does not lint it
    assert run("git", "add", "-A").returncode == 0
    result = run("pre-commit", "run", "--all-files")
    assert result.returncode == 1, result.stdout + result.stderr
    assert [line.split(" ", 2)[:2] for line in result.stdout.splitlines() if ": DL" in line] == [
        ["course.ipynb:cell_3:3:16:", "DL302"],
        ["course.ipynb:cell_3:3:16:", "DL402"],
        ["course.ipynb:cell_3:3:78:", "DL302"],
    ], result.stdout + result.stderr
