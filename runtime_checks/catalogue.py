"""The scenarios' names and rules, read from their source: --list and --rule work without torch.

Each family module declares `SCENARIOS = [Scenario("name", ("DLnnn", ...), run, timeout), ...]` and the
registry lists the families in order (`*family.SCENARIOS`); reading both with `ast` gives the same
list as `scenarios.registry()` (a test compares them) without importing torch.
"""

from __future__ import annotations

import ast
import os
from typing import List, Optional, Tuple

Entry = Tuple[Tuple[str, ...], str]  # (rules, name)
_PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")


def _tree(module: str) -> ast.Module:
    with open(os.path.join(_PACKAGE, f"{module}.py"), encoding="utf-8") as handle:
        return ast.parse(handle.read())


def _families() -> List[str]:
    """The family modules in registry()'s order."""
    return [node.value.value.id for node in ast.walk(_tree("__init__"))
            if isinstance(node, ast.Starred) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "SCENARIOS" and isinstance(node.value.value, ast.Name)]


def _declared(module: str) -> List[Entry]:
    entries: List[Entry] = []
    target: ast.expr
    value: Optional[ast.expr]
    for node in _tree(module).body:
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id == "SCENARIOS" and isinstance(value, ast.List)):
            continue
        for call in value.elts:
            if isinstance(call, ast.Call) and len(call.args) >= 2:
                name, rules = ast.literal_eval(call.args[0]), ast.literal_eval(call.args[1])
                entries.append((tuple(rules), name))
    return entries


def listing() -> List[Entry]:
    """(rules, name) of every registered scenario, in the order they run."""
    return [entry for family in _families() for entry in _declared(family)]
