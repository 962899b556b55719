"""tools/restructure.py, the layout move: this checkout is on the new layout, and a branch written on the
old one (new modules, tests, a merge that followed a rename) is moved and rewritten, the same on a rerun."""

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "restructure.py"


def load():
    spec = importlib.util.spec_from_file_location("restructure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_this_checkout_is_on_the_new_layout(capsys):
    assert load().main(["--check"]) == 0
    assert capsys.readouterr().out == "nothing to change\n"


OLD = {
    "flake8_dataloader/__init__.py": "",
    "flake8_dataloader/manifest.py": "CODES = ()\n",
    "flake8_dataloader/settings.py": "class Settings:\n    pass\n",
    "flake8_dataloader/tokens.py": "def words(text):\n    return text.split()\n",
    "flake8_dataloader/prefilter.py": "from .settings import Settings\nfrom .tokens import words\n",
    "flake8_dataloader/gate.py": (
        "from . import manifest\n"
        "from .tokens import words  # the gate's own\n"
        "\n\ndef f():\n    from .project import index\n"
    ),
    "flake8_dataloader/docs.py": "from .rules import RULES\n",
    "flake8_dataloader/rules/__init__.py": "RULES = ()\n",
    "flake8_dataloader/project/__init__.py": "",
    "flake8_dataloader/project/index.py": "from ..tokens import words\n",
    "runtime_checks/__init__.py": "",
    "runtime_checks/scenarios/__init__.py": "from .base import Options, Scenario\n",
    "runtime_checks/scenarios/base.py": "class Options:\n    pass\n\n\nclass Scenario:\n    pass\n",
    "runtime_checks/scenarios/family.py": "from . import Options, Scenario\nfrom .base import Options as O\n",
    "tests/test_new.py": (
        "from flake8_dataloader import gate, manifest, prefilter  # noqa: E402\n"
        "import flake8_dataloader.tokens\n"
        "\n\ndef test(monkeypatch):\n"
        "    monkeypatch.setattr('flake8_dataloader.gate.PREDICATES', {})\n"
        "    from flake8_dataloader.docs import describe\n"
    ),
    "docs/architecture.md": "The gate (`flake8_dataloader/gate.py`) and `flake8_dataloader.gate_values`.\n",
}

NEW = {
    "flake8_dataloader/screen/decide.py": "from ..settings import Settings\nfrom .tokens import words\n",
    "flake8_dataloader/screen/gate.py": (
        "from .. import manifest\n"
        "from .tokens import words  # the gate's own\n"
        "\n\ndef f():\n    from ..project import index\n"
    ),
    "flake8_dataloader/screen/tokens.py": OLD["flake8_dataloader/tokens.py"],
    "flake8_dataloader/rules/pages.py": "from . import RULES\n",
    "flake8_dataloader/project/index.py": "from ..screen.tokens import words\n",
    "runtime_checks/scenarios/family.py": "from .base import Options, Scenario\nfrom .base import Options as O\n",
    "tests/test_new.py": (
        "from flake8_dataloader import manifest  # noqa: E402\n"
        "from flake8_dataloader.screen import gate, decide as prefilter  # noqa: E402\n"
        "import flake8_dataloader.screen.tokens\n"
        "\n\ndef test(monkeypatch):\n"
        "    monkeypatch.setattr('flake8_dataloader.screen.gate.PREDICATES', {})\n"
        "    from flake8_dataloader.rules.pages import describe\n"
    ),
    "docs/architecture.md": (
        "The gate (`flake8_dataloader/screen/gate.py`) and `flake8_dataloader.screen.gate_values`.\n"
    ),
}


def run(tree: Path, monkeypatch):
    script = load()
    monkeypatch.setattr(script, "ROOT", tree)
    assert script.main([]) == 0
    return script


def test_a_tree_on_the_old_layout_is_moved_and_rewritten_once(tmp_path, monkeypatch, capsys):
    for name, text in OLD.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    run(tmp_path, monkeypatch)
    assert {name: (tmp_path / name).read_text() for name in NEW} == NEW
    assert not (tmp_path / "flake8_dataloader" / "gate.py").exists()
    assert (tmp_path / "flake8_dataloader" / "screen" / "__init__.py").read_text().startswith('"""The screen')
    capsys.readouterr()
    run(tmp_path, monkeypatch)
    assert capsys.readouterr().out == "nothing to change\n"
    assert {name: (tmp_path / name).read_text() for name in NEW} == NEW


def test_a_module_merged_into_its_new_place_with_imports_of_its_old_one(tmp_path, monkeypatch):
    """A merge that follows the rename puts a branch's new line, written for gate.py at the top, into
    screen/gate.py: its relative imports are read from the old place when they do not resolve from the new."""
    files = {**OLD, "flake8_dataloader/gate.py": None, "flake8_dataloader/screen/__init__.py": "",
             "flake8_dataloader/screen/gate.py": OLD["flake8_dataloader/gate.py"] + "from .settings import Settings\n"}
    for name, text in files.items():
        if text is not None:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    run(tmp_path, monkeypatch)
    assert (tmp_path / "flake8_dataloader/screen/gate.py").read_text() == (
        NEW["flake8_dataloader/screen/gate.py"] + "from ..settings import Settings\n"
    )
