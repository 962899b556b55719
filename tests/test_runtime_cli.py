"""runtime_checks' command line before any measuring: install hints, --list and --help without torch or
numpy, and --loader/--dataset running alone unless --rule or --all asks for scenarios."""

import os
import subprocess
import sys

import pytest

from runtime_checks import catalogue, install

from .conftest import ROOT

# A sitecustomize that makes torch and numpy unimportable, as in a venv without the runtime extra.
HIDE = (
    "import sys\nclass _Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('torch', 'numpy'):\n"
    "            raise ImportError('hidden')\n"
    "sys.meta_path.insert(0, _Block())\n"
)


def tool(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "runtime_checks", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture
def no_torch(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    return dict(os.environ, PYTHONPATH=str(tmp_path))


# -- install hints ------------------------------------------------------------------------------


@pytest.mark.parametrize(("recorded", "expected"), [
    ({}, "pip install 'flake8-dataloader[runtime]'"),
    ({"url": "file:///home/me/flake8-dataloader", "dir_info": {"editable": True}},
     "pip install -e '/home/me/flake8-dataloader[runtime]'"),
    ({"url": "file:///home/me/my%20clone", "dir_info": {}}, "pip install '/home/me/my clone[runtime]'"),
    ({"url": "https://github.com/me/flake8-dataloader.git",
      "vcs_info": {"vcs": "git", "commit_id": "0123abc", "requested_revision": "v0.1.0"}},
     "pip install 'flake8-dataloader[runtime] @ git+https://github.com/me/flake8-dataloader.git@v0.1.0'"),
    ({"url": "file:///srv/repo", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}},
     "pip install 'flake8-dataloader[runtime] @ git+file:///srv/repo@0123abc'"),
    ({"url": "https://example.org/flake8_dataloader-0.1.0-py3-none-any.whl", "archive_info": {}},
     "pip install 'flake8-dataloader[runtime] @ https://example.org/flake8_dataloader-0.1.0-py3-none-any.whl'"),
])
def test_the_hint_follows_how_pip_installed_the_package(recorded, expected):
    assert install.command_for(recorded, "/unused", "runtime") == expected


def test_a_tree_pip_never_installed_gets_both_forms():
    assert install.command_for(None, "/home/me/clone", "plot") == (
        "pip install -e '/home/me/clone[plot]' (or pip install 'flake8-dataloader[plot] @ git+<repository URL>')")
    assert install.command_for(None, None, "plot") == "pip install 'flake8-dataloader[plot] @ git+<repository URL>'"


def test_this_checkout_is_named_as_installed():
    # The test venv installs this tree editable: the hint is pip's own record of it.
    recorded = install.recorded_install()
    assert recorded is not None and recorded["dir_info"] == {"editable": True}
    assert install.command("runtime") == f"pip install -e '{ROOT}[runtime]'"


# -- without torch and numpy --------------------------------------------------------------------


def test_list_works_without_torch_or_numpy(no_torch):
    result = tool("--list", env=no_torch)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [f"{','.join(rules):<12} {name}" for rules, name in catalogue.listing()]
    assert lines[0] == "DL101        persistent-without-workers" and len(lines) >= 28
    only = tool("--list", "--rule", "dl402", env=no_torch)
    assert only.returncode == 0 and "DL402        user-loader" not in only.stdout
    assert all("DL402" in line for line in only.stdout.splitlines()) and "framework-ignite" in only.stdout


def test_help_works_without_torch_or_numpy_and_says_loader_runs_alone(no_torch):
    result = tool("--help", env=no_torch)
    assert result.returncode == 0 and result.stderr == ""
    text = " ".join(result.stdout.split())
    assert "runs alone, with the machine checks, unless --rule or --all asks for scenarios too" in text
    assert "--all with --dataset or --loader: run every scenario too" in text


def test_an_unknown_rule_is_refused_without_torch(no_torch):
    result = tool("--list", "--rule", "DL999", env=no_torch)
    assert result.returncode == 2
    assert result.stderr.startswith("runtime_checks: error: unknown rule DL999 (scenarios exist for DL101, ")


def test_a_run_without_numpy_names_numpy_with_this_install(no_torch):
    result = tool("--quick", env=no_torch)
    assert result.returncode == 2
    assert result.stderr.strip() == f"runtime_checks needs numpy: {install.command('runtime')} (or pip install numpy)"


def test_the_catalogue_is_the_registry():
    pytest.importorskip("torch")
    from runtime_checks.scenarios import registry

    assert catalogue.listing() == [(s.rules, s.name) for s in registry()]


# -- --loader alone -----------------------------------------------------------------------------


def test_loader_runs_alone_unless_rule_or_all_asks():
    pytest.importorskip("torch")
    result = tool("--loader", "tests.runtime_loaders:fork_loader", "--quick", "--device", "cpu", "--epochs", "2",
                  timeout=240)
    assert result.returncode == 0, result.stderr
    assert "runtime_checks on cpu" in result.stderr and ", 1 scenarios" in result.stderr
    rows = [line.split()[1] for line in result.stdout.splitlines()[2:] if line.startswith("DL")]
    assert rows == ["user-loader"]
    with_rule = tool("--loader", "tests.runtime_loaders:fork_loader", "--rule", "DL405", "--quick", "--device",
                     "cpu", "--epochs", "2", timeout=240)
    assert with_rule.returncode == 0, with_rule.stderr
    assert [line.split()[1] for line in with_rule.stdout.splitlines()[2:] if line.startswith("DL")] == [
        "sampler-set-epoch", "user-loader"]
