"""A newcomer's first hour: the README's shell commands, as written, from a fresh virtual environment.

The checkout is copied (the files git lists) and committed to a throwaway git repository, which
stands for `<repository-url>`; a small training project with planted mistakes (two modules: a
factory in data.py, the loop in train.py) stands for `src/`. The virtual environment is made with
`--system-site-packages` so that torch and the other large packages come from this machine's Python
(set NEWCOMER_VENV_FLAGS="" for a bare one, which downloads them); flake8 is installed into it
again, so that its `flake8` command is the venv's, as in a bare one. Every command of the README's
```bash blocks runs in order, but `python -m pytest -q` (the whole suite: the CI's job), with its
comment stripped and its placeholders replaced; each must exit as documented. Then the fixed
training script must run.

Run: python benchmarks/newcomer.py [--keep]      (a few minutes: pip installs the checkout twice)
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = {"GIT_AUTHOR_NAME": "newcomer", "GIT_AUTHOR_EMAIL": "newcomer@example.invalid",
            "GIT_COMMITTER_NAME": "newcomer", "GIT_COMMITTER_EMAIL": "newcomer@example.invalid"}
SKIPPED = {"python -m pytest -q": "the whole test suite (CI runs it)"}

DATA = '''\
import random

import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n, path):
        self.n = n
        self.path = path
        self.rng = random.Random(0)
        self.log = open(path, "a")

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i) + self.rng.random() * 0])


def make_train_loader(path):
    return DataLoader(Noisy(16, path), batch_size=4,
                      num_workers=2)  # two workers is enough here
'''
TRAIN = '''\
import sys
import tempfile

from torch.utils.data import DataLoader

from data import Noisy, make_train_loader


def identity(batch):
    return batch


def evaluate(path):
    probe = DataLoader(
        Noisy(8, path),
        batch_size=4,
        persistent_workers=True,  # keep the workers between epochs
    )
    return sum(len(batch) for batch in probe)


def main(path):
    loader = make_train_loader(path)
    total = 0.0
    for epoch in range(2):
        for batch in loader:
            total += float(batch.sum())
    extra = DataLoader(Noisy(8, path), batch_size=4, num_workers=2,
                       collate_fn=lambda b: b)  # identity collate
    for epoch in range(2):
        for batch in extra:
            total += len(batch)
    single = DataLoader(Noisy(8, path), batch_size=4)
    for epoch in range(2):
        for batch in single:
            total += float(batch.sum())
    print("total", total)


main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mktemp())
'''


# What the README's notebook and --tune commands name: a notebook whose dataset class is defined in a
# cell (DL302 stays after the fix), and a package with a loader factory.
NOTEBOOK_CELLS = [
    "import torch\nfrom torch.utils.data import DataLoader, Dataset",
    "class Squares(Dataset):\n    def __len__(self):\n        return 16\n\n"
    "    def __getitem__(self, i):\n        return torch.tensor([float(i * i)])",
    "loader = DataLoader(Squares(), batch_size=4, num_workers=2)\n"
    "for epoch in range(2):\n    for batch in loader:\n        pass",
]
MYPKG_TRAIN = '''\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Reads(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        time.sleep(0.002)  # storage
        return torch.full((8,), float(i))


def make_train_loader():
    return DataLoader(Reads(), batch_size=4, shuffle=True)
'''


def notebook(cells: List[str]) -> str:
    import json

    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": cell} for cell in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def readme_commands() -> List[str]:
    """Every line of the README's ```bash blocks, comments stripped, `&&` chains split."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            code = line.split("  #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            commands += [part.strip() for part in code.split("&&") if part.strip()]
    return commands


def expected_status(command: str) -> int:
    """What the README says the command exits with: 1 where findings remain or would be fixed."""
    words = command.split()
    if "flake8" in words[:3] or words[:2] == ["python", "-m"] and "flake8" in words[2:3]:
        return 1  # the bundled fixtures and the planted project hold findings
    if words[0] == "nbqa" and "fix" in command:
        return 1  # the notebook's own dataset class (DL302) remains: no fix moves it to a module
    if "fix" in words and "flake8-dataloader" in words[0]:
        return 1  # --diff: something would be fixed; in place: what no fix covers remains (DL201, DL302...)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    keep = parser.parse_args().keep
    work = Path(tempfile.mkdtemp(prefix="newcomer-"))
    env = {**os.environ, **IDENTITY, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("FLAKE8_DATALOADER_STRICT", None)
    checkout, project = work / "flake8-dataloader", work / "project"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=checkout, env=env, check=True)
    (project / "src").mkdir(parents=True)
    (project / "src" / "data.py").write_text(DATA)
    (project / "src" / "train.py").write_text(TRAIN)
    (project / "notebooks").mkdir()
    (project / "notebooks" / "course.ipynb").write_text(notebook(NOTEBOOK_CELLS))
    (project / "mypkg").mkdir()
    (project / "mypkg" / "__init__.py").write_text("")
    (project / "mypkg" / "train.py").write_text(MYPKG_TRAIN)
    flags = shlex.split(os.environ.get("NEWCOMER_VENV_FLAGS", "--system-site-packages"))
    subprocess.run([sys.executable, "-m", "venv", *flags, str(work / "venv")], check=True)
    env["PATH"] = f"{work / 'venv' / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(work / "venv")
    if flags:
        # flake8 comes from the system's packages, its `flake8` command from outside the venv (which
        # would run without the plugin): installed into the venv, as a bare venv's install would.
        from importlib.metadata import version

        # So is nbQA (the README says `pip install nbqa`): its command runs its own interpreter's flake8.
        subprocess.run(["python", "-m", "pip", "install", "-q", "--ignore-installed", "--no-deps",
                        f"flake8=={version('flake8')}", f"nbqa=={version('nbqa')}"], env=env, check=True)

    rows: List[Tuple[str, int, int, str]] = []
    for command in readme_commands():
        if command in SKIPPED:
            rows.append((command, -1, -1, f"skipped: {SKIPPED[command]}"))
            continue
        shell = command.replace("<repository-url>", f"file://{checkout}")
        # Commands naming the bundled fixtures or installing "." run in the checkout; the rest in the project.
        cwd = checkout if "fixtures/" in shell or re.search(r"-e \.?\S*\.( |$)|-e \"\.", shell) else project
        if "git+file://" in shell:
            subprocess.run(["python", "-m", "pip", "install", "-q", "-U", "pip"], cwd=cwd, env=env, check=True)
        done = subprocess.run(shell, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
        want = expected_status(command)
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        rows.append((command, done.returncode, want, last[0][:110]))
        print(f"[{'ok' if done.returncode == want else 'FAIL'}] exit {done.returncode} (documented {want}): {command}",
              flush=True)
        if "fix" in command.split() and "--diff" not in command or "--select" in command and "src/" in command:
            print("    " + "\n    ".join((done.stdout + done.stderr).strip().splitlines()), flush=True)
    ran = subprocess.run(["python", "train.py", str(work / "log.txt")], cwd=project / "src", env=env,
                         capture_output=True, text=True, timeout=300)
    rows.append(("python src/train.py (the fixed script)", ran.returncode, 0, (ran.stdout + ran.stderr).strip()[-110:]))
    print(f"[{'ok' if ran.returncode == 0 else 'FAIL'}] the fixed script: {(ran.stdout + ran.stderr).strip()[-200:]}")
    failed = [row for row in rows if row[1] != row[2]]
    skipped = [row for row in rows if row[1] == -1]
    print(f"\n{len(rows) - len(failed) - len(skipped)} of {len(rows) - len(skipped)} as documented; "
          f"skipped: {', '.join(row[0] for row in skipped) or 'none'}")
    if keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
