"""The command lines the README and docs/ci.md give users, and a small project to run them on."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import FIXTURES, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI_PAGE = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
# A step's command in a workflow (`- run: ...`, `- ...` under `script:`), or a shell line.
_STEP = re.compile(r"^\s*(?:-\s+)?(?:run:\s+)?")
# The console script beside this interpreter: what `pip install` put on PATH.
CONSOLE = Path(sys.executable).with_name("flake8-dataloader")


def blocks(text: str, language: str):
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def command_lines(text: str, program: str):
    """The lines of the page's bash and yaml blocks that run ``program``, as written."""
    found = []
    for block in blocks(text, "bash") + blocks(text, "yaml"):
        for line in block.splitlines():
            command = _STEP.sub("", line, count=1)
            if command.startswith(program + " "):
                found.append(command)
    return found


def dl_only_invocation() -> str:
    """The lint hook's entry: the one DL-only invocation."""
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    return next(line.split("entry: ", 1)[1] for line in hooks.splitlines() if line.strip().startswith("entry: flake8 "))


def make_project(root: Path) -> Path:
    """A project with default-on findings (src/train.py), only opt-in ones (src/slow.py,
    src/copies.py) and a file that does not parse (src/broken.py)."""
    src = root / "src"
    src.mkdir(parents=True)
    shutil.copy(FIXTURES / "flow_tutorial_script.py", src / "train.py")
    shutil.copy(FIXTURES / "dl410_synchronous.py", src / "slow.py")
    shutil.copy(FIXTURES / "dl620_copy_on_read.py", src / "copies.py")
    (src / "broken.py").write_text("def broken(:\n    pass\n")
    return root


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` as a user's shell runs it, with this environment's flake8 and console script."""
    words = shlex.split(command, comments=True)
    program = {"flake8": f"{shlex.quote(sys.executable)} -m flake8",
               "flake8-dataloader": shlex.quote(str(CONSOLE))}[words[0]]
    line = program + command[len(words[0]):]
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=300)


def line_findings(output: str, pattern: str):
    """(path, line, code) of a format of one line per finding: ``pattern`` names those groups."""
    found = set()
    for line in output.splitlines():
        match = re.fullmatch(pattern, line)
        assert match, line
        found.add((match["path"], int(match["line"]), match["code"]))
    return found


def text_findings(output: str):
    """(path, line, code) of flake8's default format."""
    return line_findings(output, r"(?:\./)?(?P<path>.+?):(?P<line>\d+):\d+: (?P<code>[A-Z]+\d+) .*")
