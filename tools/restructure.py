"""Move flake8_dataloader's top-level modules into the packages that name their stage, and rewrite
every import and mention of them. Re-runnable: a second run changes nothing.

    python tools/restructure.py          # from the repository's root (any working directory works)
    python tools/restructure.py --check  # change nothing; exit 1 when a run would change something

What it does, in order:

1. Creates the new packages (``screen/``, ``syntax/``) with an ``__init__.py`` when they have none,
   and ``git mv``s each old module that still exists to its new path (a plain rename when git does
   not track it). Both paths existing is an error: merge them by hand first.
2. Rewrites the imports of every ``.py`` file under flake8_dataloader/, runtime_checks/, tests/,
   benchmarks/ and tools/ (every file found, not a list: modules and tests written on the old layout
   by other branches are rewritten too), with ``ast`` so that only import statements change:
   ``from ..tokens import words``, ``from . import manifest``, ``from flake8_dataloader import gate``
   (split into one statement per package when the names go to different ones; a renamed module keeps
   the name it was bound to, ``decide as prefilter``). A module that moved has its relative imports
   spelled again from its new place; one found already at its new place with imports written for its
   old one (a merge that followed the rename) has them resolved from the old place when the new one
   does not resolve.
3. Rewrites the dotted names and paths of the moved modules wherever they are written out in the
   repository's text files (``"flake8_dataloader.gate.GATE_ENV"`` in a monkeypatch, ``import
   flake8_dataloader.parsing``, ``flake8_dataloader/gate.py`` in a doc), this script and its test
   (tests/test_restructure.py) excepted.

Bare module names in prose (``gate.py``) are left alone: the basenames stay, except the renamed ones.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "flake8_dataloader"

# old module -> new module
MOVES: Dict[str, str] = {
    # The screen: may this file hold a finding of the selected rules? (text, identifiers, the ast gate)
    "flake8_dataloader.prefilter": "flake8_dataloader.screen.decide",
    "flake8_dataloader.tokens": "flake8_dataloader.screen.tokens",
    "flake8_dataloader.gate": "flake8_dataloader.screen.gate",
    "flake8_dataloader.gate_values": "flake8_dataloader.screen.gate_values",
    "flake8_dataloader.gate_names": "flake8_dataloader.screen.gate_names",
    "flake8_dataloader.ast_walk": "flake8_dataloader.screen.ast_walk",
    # The LibCST side: a parse that cannot crash, and the positions of the nodes a finding names.
    "flake8_dataloader.parsing": "flake8_dataloader.syntax.parsing",
    "flake8_dataloader.positions": "flake8_dataloader.syntax.positions",
    "flake8_dataloader.ast_positions": "flake8_dataloader.syntax.ast_positions",
    # What the rules compose into messages and fixes, and the rule pages made from the rules.
    "flake8_dataloader.compose": "flake8_dataloader.rules.compose",
    "flake8_dataloader.docs": "flake8_dataloader.rules.pages",
}
INVERSE = {new: old for old, new in MOVES.items()}

# Names that moved out of a package's __init__: (package, name) -> module, rewritten only in the
# package's own modules (the __init__ still re-exports them for everyone else).
NAME_MOVES: Dict[Tuple[str, str], str] = {
    ("runtime_checks.scenarios", "Options"): "runtime_checks.scenarios.base",
    ("runtime_checks.scenarios", "Scenario"): "runtime_checks.scenarios.base",
}

NEW_PACKAGES = {
    "flake8_dataloader.screen": (
        '"""The screen: may this file hold a finding of the selected rules? Decided before LibCST is imported.\n\n'
        "`decide.may_find` is the one entry point: the rules' tokens in the text (`tokens.py`), then on\n"
        "flake8's ast whether some selected rule's condition holds (`gate.py` over the one walk of\n"
        "`ast_walk.py`, with `gate_values.py` and `gate_names.py`); a file without the tokens passes only\n"
        'when it may use a loader its project builds (the project index, `project/service.py`).\n"""\n'
    ),
    "flake8_dataloader.syntax": (
        '"""The LibCST side: a parse that cannot crash, hang or exhaust the stack (`parsing.py`), and the\n'
        "line and column of the nodes a finding names (`positions.py`, placed through flake8's ast where\n"
        'a call is unique: `ast_positions.py`).\n"""\n'
    ),
}

PY_FOLDERS = ("flake8_dataloader", "runtime_checks", "tests", "benchmarks", "tools")
TEXT_SUFFIXES = (".py", ".md", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".txt")
# This script and its test write the old names on purpose.
SKIPPED = {Path("tools", "restructure.py"), Path("tests", "test_restructure.py")}
MAX_LINE = 120  # .flake8's max-line-length


def module_path(name: str) -> Path:
    return ROOT.joinpath(*name.split(".")).with_suffix(".py")


def module_of(path: Path) -> Optional[str]:
    """The dotted name of a .py file of one of the two packages (None elsewhere: tests, benchmarks)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] not in (PACKAGE, "runtime_checks"):
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def listed_files() -> List[Path]:
    """The repository's files as git sees them: tracked, and untracked but not ignored."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    return sorted({ROOT / name for name in out.split("\0") if name and (ROOT / name).is_file()})


# ---------------------------------------------------------------------------------------------- moves


def move_modules(check: bool, log: List[str]) -> Dict[str, str]:
    """Create the packages and move the modules; the moved files' new name -> their old name."""
    moved: Dict[str, str] = {}
    for package, docstring in NEW_PACKAGES.items():
        init = ROOT.joinpath(*package.split("."), "__init__.py")
        if not init.exists():
            log.append(f"create {init.relative_to(ROOT)}")
            if not check:
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text(docstring, encoding="utf-8")
                subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
    for old, new in MOVES.items():
        source, target = module_path(old), module_path(new)
        if not source.exists():
            continue
        if target.exists():
            sys.exit(f"both {source.relative_to(ROOT)} and {target.relative_to(ROOT)} exist: merge them by hand first")
        log.append(f"move {source.relative_to(ROOT)} -> {target.relative_to(ROOT)}")
        moved[new] = old
        if check:
            continue
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(source)], cwd=ROOT,
                                 capture_output=True).returncode == 0
        if tracked:
            subprocess.run(["git", "mv", str(source), str(target)], cwd=ROOT, check=True)
        else:
            os.rename(source, target)
    return moved


# -------------------------------------------------------------------------------------------- imports


class Modules:
    """The modules of the two packages once moved, and the names each defines at its top level."""

    def __init__(self, files: Iterable[Tuple[Path, Path]], moved_paths: Dict[Path, str]) -> None:
        self.paths: Dict[str, Path] = {}  # module -> the file to read it from
        for path, source in files:
            name = moved_paths.get(path) or module_of(path)
            if name is not None and path.suffix == ".py":
                self.paths[MOVES.get(name, name)] = source
        self._defined: Dict[str, Set[str]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.paths

    def defines(self, module: str, name: str) -> bool:
        if module not in self._defined:
            self._defined[module] = _top_level_names(self.paths[module])
        return name in self._defined[module] or "__getattr__" in self._defined[module]

    def resolves(self, target: str, names: List[str]) -> bool:
        """``from target import names`` works in the new layout (each name a module or defined there)."""
        target = MOVES.get(target, target)
        if target not in self:
            return False
        return all(MOVES.get(f"{target}.{n}", f"{target}.{n}") in self or self.defines(target, n) for n in names)


def _top_level_names(path: Path) -> Set[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return set()
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def absolute(base_module: str, is_package: bool, level: int, module: Optional[str]) -> str:
    """What ``from <level dots><module> import`` names, written in ``base_module``."""
    package = base_module.split(".") if is_package else base_module.split(".")[:-1]
    if level:
        package = package[: len(package) - level + 1]
        return ".".join([*package, module] if module else package)
    return module or ""


def relative(importer: str, is_package: bool, target: str) -> Tuple[int, str]:
    """``target`` spelled relatively from ``importer``: (level, module after the dots)."""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    parts = target.split(".")
    common = 0
    while common < min(len(package), len(parts)) and package[common] == parts[common]:
        common += 1
    return len(package) - common + 1, ".".join(parts[common:])


def _spell(node: ast.ImportFrom, importer: str, is_package: bool, target: str) -> str:
    if node.level:
        level, rest = relative(importer, is_package, target)
        return "." * level + rest
    return target


def rewrite_imports(path: Path, name: Optional[str], old_name: Optional[str], modules: Modules) -> Optional[str]:
    """The file's text with its imports of moved modules rewritten; None when nothing changes.

    ``name`` is the file's module in the new layout (None outside the packages), ``old_name`` where
    its relative imports were written, when known (a file moved by this run); a file found at a new
    place (``name`` a move's target) is tried from there first, then from its old place.
    """
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    is_package = path.name == "__init__.py"
    lines = text.splitlines(keepends=True)
    edits: List[Tuple[int, int, List[str]]] = []  # (first line, last line, new lines), 0-based
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        names = [alias.name for alias in node.names]
        if node.level:
            if name is None:
                continue
            bases = [old_name] if old_name else [name] + ([INVERSE[name]] if name in INVERSE else [])
            found = [absolute(b, is_package, node.level, node.module) for b in bases]
            target = next((t for t in found if modules.resolves(t, names)), found[0])
        else:
            target = node.module or ""
            if target != PACKAGE and not target.startswith(PACKAGE + ".") and not target.startswith("runtime_checks"):
                continue
        groups: Dict[str, List[ast.alias]] = {}
        for alias in node.names:
            full = f"{target}.{alias.name}"
            if full in MOVES:
                new = MOVES[full]
                parent, _, base = new.rpartition(".")
                bound = alias.asname or alias.name
                groups.setdefault(parent, []).append(ast.alias(base, None if bound == base else bound))
            elif (target, alias.name) in NAME_MOVES and name and name.startswith(target + ".") \
                    and NAME_MOVES[target, alias.name] != name:
                groups.setdefault(NAME_MOVES[target, alias.name], []).append(alias)
            else:
                groups.setdefault(MOVES.get(target, target), []).append(alias)
        spelled = {t: _spell(node, name or "", is_package, t) for t in groups}
        original = "." * node.level + (node.module or "")
        if list(spelled.values()) == [original]:
            continue
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        head = lines[first][: node.col_offset]
        tail = lines[last][node.end_col_offset:]
        if len(groups) == 1:
            segment = "".join(lines[first: last + 1])
            start = len(head)
            match = re.compile(r"from\s+([.\w]+|\.+\s*[\w.]*)\s+import").match(segment, start)
            if match is None:
                print(f"{path.relative_to(ROOT)}:{node.lineno}: cannot read this import; left as is", file=sys.stderr)
                continue
            segment = segment[: match.start(1)] + next(iter(spelled.values())) + segment[match.end(1):]
            if first == last and len(segment.rstrip("\n")) > MAX_LINE and "(" not in segment:
                segment = _wrapped(head, next(iter(spelled.values())), node.names, tail)
            edits.append((first, last, segment.splitlines(keepends=True)))
            continue
        if head.strip() or (tail.strip() and not tail.strip().startswith("#")):
            print(f"{path.relative_to(ROOT)}:{node.lineno}: import shares its line; left as is", file=sys.stderr)
            continue
        comment = ("  " + tail.strip()) if tail.strip() else ""
        newline = "\n" if lines[last].endswith("\n") else ""
        ordered = sorted(groups, key=lambda t: (t != MOVES.get(target, target), spelled[t]))
        new_lines = []
        for group in ordered:
            aliases = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in groups[group])
            line = f"{head}from {spelled[group]} import {aliases}{comment}"
            if len(line) > MAX_LINE:
                new_lines.extend(_wrapped(head, spelled[group], groups[group], comment + newline).splitlines(True))
            else:
                new_lines.append(line + newline)
        edits.append((first, last, new_lines))
    if not edits:
        return None
    for first, last, new_lines in sorted(edits, reverse=True):
        lines[first: last + 1] = new_lines
    return "".join(lines)


def _wrapped(head: str, module: str, aliases: List[ast.alias], tail: str) -> str:
    """``from module import (...)``, the names filled up to the line length; ``tail`` (a comment, the
    newline) after the opening parenthesis, where flake8 reads a noqa for the statement."""
    comment = tail.strip()
    out = [f"{head}from {module} import ({'  ' + comment if comment else ''}\n"]
    line = head + "    "
    for alias in aliases:
        word = alias.name + (f" as {alias.asname}" if alias.asname else "") + ","
        if len(line) + 1 + len(word) > MAX_LINE and line.strip():
            out.append(line.rstrip() + "\n")
            line = head + "    "
        line += ("" if not line.strip() else " ") + word
    out.append(line.rstrip() + "\n")
    out.append(f"{head})" + ("\n" if tail.endswith("\n") else ""))
    return "".join(out)


# ------------------------------------------------------------------------------------ dotted names, paths

_OLD = sorted((old.rpartition(".")[2] for old in MOVES), key=len, reverse=True)
_DOTTED = re.compile(r"(?<![\w.])flake8_dataloader\.(" + "|".join(_OLD) + r")(?![\w])")
_PATH = re.compile(r"(?<![\w/])flake8_dataloader/(" + "|".join(_OLD) + r")\.py(?![\w])")


def rewrite_mentions(text: str) -> str:
    text = _DOTTED.sub(lambda m: MOVES[f"{PACKAGE}.{m.group(1)}"], text)
    return _PATH.sub(lambda m: MOVES[f"{PACKAGE}.{m.group(1)}"].replace(".", "/") + ".py", text)


# ----------------------------------------------------------------------------------------------- main


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a run would change something")
    args = parser.parse_args(argv)
    log: List[str] = []
    moved = move_modules(args.check, log)
    moved_paths = {module_path(new): old for new, old in moved.items()}
    files = []  # (the path after the moves, the file to read now)
    for path in listed_files():
        if args.check and (module_of(path) or "") in MOVES:  # not moved: read where it is
            files.append((module_path(MOVES[module_of(path) or ""]), path))
        else:
            files.append((path, path))
    modules = Modules(files, moved_paths)
    for path, source in files:
        relative_path = path.relative_to(ROOT)
        if relative_path in SKIPPED or path.suffix not in TEXT_SUFFIXES or relative_path.parts[0] in (".git", ".venv"):
            continue
        text = source.read_text(encoding="utf-8")
        new_text = text
        if path.suffix == ".py" and relative_path.parts[0] in PY_FOLDERS:
            name = module_of(path)
            rewritten = rewrite_imports(source, name, moved_paths.get(path), modules)
            new_text = rewritten if rewritten is not None else text
        new_text = rewrite_mentions(new_text)
        if new_text != text:
            log.append(f"rewrite {relative_path}")
            before = set(text.splitlines())
            for number, line in enumerate(new_text.splitlines(), 1):
                if len(line) > MAX_LINE and line not in before and path.suffix == ".py":
                    print(f"{relative_path}:{number}: over {MAX_LINE} characters after the rewrite", file=sys.stderr)
            if not args.check:
                path.write_text(new_text, encoding="utf-8")
    print("\n".join(log) if log else "nothing to change")
    return 1 if (args.check and log) else 0


if __name__ == "__main__":
    sys.exit(main())
