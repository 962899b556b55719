"""The plugin costs nothing at flake8 start-up: LibCST and the rules load only for a file that needs them."""

import json
import subprocess
import sys

from flake8_dataloader import manifest
from flake8_dataloader.autofix.codemods import CODEMODS, MODULE_CODEMODS
from flake8_dataloader.screen.tokens import triggers
from flake8_dataloader.rules import RULES

# facts.constants (plain data) is light; everything that imports LibCST is not.
HEAVY = ("libcst", "flake8_dataloader.engine", "flake8_dataloader.syntax.parsing", "flake8_dataloader.rules",
         "flake8_dataloader.facts.analysis", "flake8_dataloader.facts.collector", "flake8_dataloader.facts.resolve",
         "flake8_dataloader.autofix.fixer", "flake8_dataloader.autofix.codemods", "torch",
         "flake8_dataloader.cache")  # the cache (and hashlib) load for a file past the gate only
ORDINARY = "import os\n\n\ndef main():\n    return os.getcwd()\n"
LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, persistent_workers=True)\n"

PROBE = """
import json, sys
{setup}
heavy = sorted({{name.split(".")[0] if name.startswith("libcst") else name for name in sys.modules
                 if name.startswith({heavy!r})}})
print(json.dumps(heavy))
"""


def loaded_after(setup: str, cwd, heavy=HEAVY) -> list:
    code = PROBE.format(setup=setup, heavy=heavy)
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def flake8_run(*args: str) -> str:
    return (
        "from flake8.main.application import Application\n"
        f"try:\n    Application().run({list(args)!r})\nexcept SystemExit:\n    pass\n"
    )


def test_manifest_restates_the_rules():
    assert manifest.CODES == tuple(rule.CODE for rule in RULES)
    assert manifest.DEFAULT_OFF == tuple(rule.CODE for rule in RULES if rule.DEFAULT_OFF)
    assert manifest.TRIGGERS == triggers(RULES)
    assert manifest.FIXABLE == tuple(sorted([*CODEMODS, *MODULE_CODEMODS]))
    assert manifest.CONDITIONS == {rule.CODE: rule.CONDITION for rule in RULES}


def test_flake8_on_ordinary_files_never_imports_libcst(tmp_path):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(ORDINARY)
    (tmp_path / "doc.py").write_text('"""Mentions DataLoader and worker_init_fn in prose only."""\n')
    assert loaded_after(flake8_run("--isolated", "-j1", "a.py", "b.py", "doc.py"), tmp_path) == []
    assert loaded_after(flake8_run("--version"), tmp_path) == []


def test_flake8_on_ordinary_files_never_imports_the_project_index(tmp_path):
    """A file naming no token costs a text scan: the project index (3 ms of imports) is not loaded,
    nor the cache (2.7 ms) for a file whose only `loader` is in its docstring."""
    (tmp_path / "a.py").write_text(ORDINARY)
    (tmp_path / "b.py").write_text('"""Ordinary code: no loader here."""\n' + ORDINARY)
    run = flake8_run("--isolated", "-j1", "a.py", "b.py")
    heavy = ("flake8_dataloader.project", "flake8_dataloader.cache")
    for cache in ("off", "on"):  # two paths: the prefilter alone, and the text stage before the cache
        setup = f"import os\nos.environ['FLAKE8_DATALOADER_CACHE'] = {cache!r}\n{run}"
        assert loaded_after(setup, tmp_path, heavy=heavy) == [], cache


def test_a_loader_file_that_no_selected_rule_can_report_in_never_imports_libcst(tmp_path):
    """The gate (gate.py) decides on flake8's ast: single-process loaders only, or no DL code selected."""
    (tmp_path / "evaluate.py").write_text(
        "from torch.utils.data import DataLoader\n\n\ndef evaluate(model, data):\n"
        "    return [model(b) for b in DataLoader(data, batch_size=64)]\n"
    )
    (tmp_path / "train.py").write_text(LOADER)
    assert loaded_after(flake8_run("--isolated", "-j1", "evaluate.py"), tmp_path) == []
    assert loaded_after(flake8_run("--isolated", "-j1", "--select=E,F", "train.py"), tmp_path) == []
    assert "libcst" in loaded_after(flake8_run("--isolated", "-j1", "--select=E,DL1", "train.py"), tmp_path)


def test_a_file_with_a_loader_loads_the_engine(tmp_path):
    (tmp_path / "train.py").write_text(LOADER)
    loaded = loaded_after(flake8_run("--isolated", "-j1", "train.py"), tmp_path)
    assert "libcst" in loaded and "flake8_dataloader.engine" in loaded


def test_the_first_analysed_file_freezes_what_libcst_and_the_rules_brought(tmp_path):
    """Once LibCST and the rules are loaded, the collector no longer walks them on each full collection;
    an ordinary file loads nothing and freezes nothing; FLAKE8_DATALOADER_GC_FREEZE=off leaves it as it is."""
    (tmp_path / "train.py").write_text(LOADER)
    (tmp_path / "plain.py").write_text(ORDINARY)
    probe = "import gc, os\nos.environ['FLAKE8_DATALOADER_GC_FREEZE'] = {switch!r}\n{run}print(gc.get_freeze_count())\n"

    def frozen(name: str, switch: str) -> int:
        code = probe.format(switch=switch, run=flake8_run("--isolated", "--select=DL", name))
        result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return int(result.stdout.splitlines()[-1])

    assert frozen("train.py", "on") > 20_000
    assert frozen("train.py", "off") == 0
    assert frozen("plain.py", "on") == 0


def test_fix_command_on_files_without_findings_never_imports_libcst(tmp_path):
    (tmp_path / "a.py").write_text(ORDINARY)
    setup = "from flake8_dataloader.autofix.command import main\nassert main(['--isolated', 'a.py']) == 0\n"
    assert loaded_after(setup, tmp_path) == []


def test_runtime_checks_help_never_imports_torch(tmp_path):
    setup = (
        "from runtime_checks.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    assert "torch" not in loaded_after(setup, tmp_path)
