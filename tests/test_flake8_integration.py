"""Real flake8, in a subprocess: entry point, options from config, noqa, failure isolation."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from flake8.options.parse_args import parse_args

from flake8_dataloader import manifest
from flake8_dataloader.plugin import selected_codes

from .conftest import FIXTURES, ROOT
from .harness import expectations, fixture_files, option_args

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>DL\d{3}) ")


def flake8(*args, cwd=ROOT, env=None):
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def findings(stdout):
    out = set()
    for line in stdout.splitlines():
        match = LINE.match(line)
        if match:
            out.add((match["path"], int(match["line"]), int(match["col"]) - 1, match["code"]))
    return out


def test_version_lists_the_plugin():
    result = flake8("--version")
    assert result.returncode == 0
    assert "flake8-dataloader: 0.1.0" in result.stdout


def test_fixtures_through_flake8_match_their_expectations():
    plain = [p for p in fixture_files(FIXTURES) if not option_args(p.read_text())]
    result = flake8("--select=DL", "--extend-ignore=DL410", *map(str, plain))
    assert "Traceback" not in result.stderr
    expected = set()
    for path in plain:
        expected |= {(str(path), line, col, code) for line, col, code in expectations(path.read_text())}
    assert findings(result.stdout) == expected


def test_dl410_is_off_by_default_and_can_be_enabled():
    path = str(FIXTURES / "dl410_synchronous.py")
    assert findings(flake8("--select=E,F,W,C90", path).stdout) == set()
    assert not [f for f in findings(flake8(path).stdout) if f[3] == "DL410"]
    enabled = findings(flake8("--extend-select=DL410", path).stdout)
    assert (path, 28, 13, "DL410") in enabled


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


UNGUARDED = """\
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.zeros(4)), num_workers=2, persistent_workers=True)
    for batch in loader:
        pass
"""


def test_start_method_option_is_read_from_setup_cfg(tmp_path):
    _write(tmp_path, "train.py", UNGUARDED)
    before = flake8("--select=DL", "train.py", cwd=tmp_path)
    assert [f[1:] for f in findings(before.stdout)] == [(5, 0, "DL301")]
    _write(tmp_path, "setup.cfg", "[flake8]\ndataloader-start-method = fork\n")
    after = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=DL", "train.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout == ""


def test_dataloader_names_option_from_config(tmp_path):
    _write(tmp_path, "train.py", "from mypkg.data import Loader\n\nloader = Loader(ds, persistent_workers=True)\n")
    assert findings(flake8("--select=DL", "train.py", cwd=tmp_path).stdout) == set()
    _write(tmp_path, "tox.ini", "[flake8]\ndataloader-names = mypkg.data.Loader, other.Loader\n")
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=DL", "train.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert [f[1:] for f in findings(result.stdout)] == [(3, 20, "DL101")]


def test_invalid_option_value_is_a_usage_error_not_a_traceback(tmp_path):
    _write(tmp_path, "train.py", UNGUARDED)
    cli = flake8("--dataloader-start-method=bogus", "train.py", cwd=tmp_path)
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    assert "invalid choice: 'bogus'" in cli.stderr
    _write(tmp_path, "setup.cfg", "[flake8]\ndataloader-start-method = bogus\n")
    cfg = subprocess.run([sys.executable, "-m", "flake8", "train.py"], cwd=tmp_path, capture_output=True, text=True)
    # From a config file: the command line's exit status (2, usage error) and its error line.
    assert cli.returncode == cfg.returncode == 2 and "Traceback" not in cfg.stderr
    assert cfg.stderr.strip() == cli.stderr.strip().splitlines()[-1]
    names = flake8("--dataloader-names=mypkg..Loader", "train.py", cwd=tmp_path)
    assert names.returncode == 2 and "Traceback" not in names.stderr
    assert "is not a dotted Python name" in names.stderr


def test_noqa_on_the_anchor_line_suppresses(tmp_path):
    source = UNGUARDED.replace("persistent_workers=True)", "persistent_workers=True)  # noqa: DL101")
    source = source.replace("num_workers=2", "num_workers=0")
    _write(tmp_path, "train.py", source)
    assert findings(flake8("--select=DL", "train.py", cwd=tmp_path).stdout) == set()
    _write(tmp_path, "train.py", source.replace("  # noqa: DL101", ""))
    assert [f[1:] for f in findings(flake8("--select=DL", "train.py", cwd=tmp_path).stdout)] == [(4, 66, "DL101")]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_unparsable_file_leaves_other_findings_intact(tmp_path, jobs):
    _write(tmp_path, "a_broken.py", "from torch.utils.data import DataLoader\nx = () if 0 else(lambda:())\n")
    _write(tmp_path, "b_train.py", UNGUARDED)
    result = flake8(f"-j{jobs}", "--select=DL", "a_broken.py", "b_train.py", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    assert [f[0:2] + (f[3],) for f in sorted(findings(result.stdout))] == [("b_train.py", 5, "DL301")]


def test_plugin_runs_without_torch(tmp_path):
    """The lint stage never installs torch: block its import and lint the fixtures."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch is hidden for this test')\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(blocker))
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert "torch is hidden" in probe.stderr
    result = flake8("--select=DL", str(FIXTURES / "dl101_dl102_single_process.py"), env=env)
    assert "Traceback" not in result.stderr
    assert {f[3] for f in findings(result.stdout)} == {"DL101", "DL102"}


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], set(manifest.CODES) - set(manifest.DEFAULT_OFF)),
        (["--extend-select=DL410"], set(manifest.CODES) - {"DL620"}),
        (["--select=DL1,DL620"], {"DL101", "DL102", "DL103", "DL104", "DL105", "DL620"}),
        (["--select=DL", "--extend-ignore=DL4"], set(manifest.CODES) - {c for c in manifest.CODES if c[2] == "4"}),
        # --ignore replaces flake8's default ignore list, the plugin's opt-in codes with it: flake8 reports them.
        (["--ignore=DL101"], set(manifest.CODES) - {"DL101"}),
        (["--extend-ignore=DL101"], set(manifest.CODES) - set(manifest.DEFAULT_OFF) - {"DL101"}),
        (["--select=E"], set()),
    ],
)
def test_the_gate_asks_the_rules_flake8_will_report(argv, expected):
    """flake8's own select/ignore decision, opt-in codes counted only when selected."""
    _, options = parse_args(["--isolated", *argv, "x.py"])
    assert selected_codes(options) == frozenset(expected)
