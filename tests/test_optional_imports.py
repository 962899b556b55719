"""Every optional import that is missing ends in one line with its install hint, never a traceback.

Nothing is uninstalled: a blocker in sys.modules makes the import fail as it would without the package.
"""

import subprocess
import sys

import pytest

from .conftest import FIXTURES, ROOT

BLOCK = "import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"


def run_blocked(blocked, code, cwd=ROOT):
    script = BLOCK.format(blocked=blocked) + code
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120)


RUNTIME_CHECKS = "from runtime_checks.__main__ import main\nsys.exit(main({argv!r}))\n"


@pytest.mark.parametrize("module", ["torch", "numpy"])
def test_runtime_checks_without_a_runtime_module(module):
    from runtime_checks.install import command

    # --list and --help need neither (test_runtime_cli.py); running a scenario needs both.
    result = run_blocked([module], RUNTIME_CHECKS.format(argv=["--quick", "--rule", "DL101"]))
    assert result.returncode == 2
    assert result.stderr == f"runtime_checks needs {module}: {command('runtime')} (or pip install {module})\n"


def test_plot_without_matplotlib(tmp_path):
    argv = ["--quick", "--rule", "DL402", "--plot", str(tmp_path / "timing.png")]
    result = run_blocked(["matplotlib"], RUNTIME_CHECKS.format(argv=argv))
    assert result.returncode == 2
    from runtime_checks.install import command

    assert result.stderr == f"runtime_checks: error: --plot needs matplotlib: {command('plot')}\n"


def test_the_linter_and_the_fix_command_need_no_torch_numpy_or_matplotlib(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "dl101_dl102_single_process.py").read_text())
    lint = run_blocked(
        ["torch", "numpy", "matplotlib"],
        "from flake8.main.cli import main\nsys.exit(main(['--isolated', '--select=DL', 'train.py']))\n",
        cwd=tmp_path,
    )
    assert lint.returncode == 1 and "DL101" in lint.stdout and lint.stderr == ""
    fix = run_blocked(
        ["torch", "numpy", "matplotlib"],
        "from flake8_dataloader.autofix.command import main\nsys.exit(main(['--isolated', 'train.py']))\n",
        cwd=tmp_path,
    )
    assert fix.returncode == 0 and "fixed DL101" in fix.stdout, fix.stderr
