"""The gate's record of a file: what one walk over flake8's ast saw, and what the project index
answers about the file's imports (asked lazily, by the predicates of gate.py)."""

from __future__ import annotations

import ast
import os
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from .ast_walk import nodes_of
from .gate_names import Holders, chain, class_names, is_partial
from .gate_values import CONSTRUCTORS, Arguments, KnownValues, Sources
from ..settings import Settings, loader_tails
from .tokens import DEFINITIONS, identifiers

# Callees that take DataLoader's keywords besides the loader classes.
FRAMEWORK_CALLEES = frozenset({"auto_dataloader", "TrainingArguments", "Seq2SeqTrainingArguments"})
DATASET_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Every node type Record's walk looks at.
_RECORDED = (
    ast.Call, ast.Attribute, ast.Constant, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
    ast.comprehension, ast.While, ast.withitem, ast.Import, ast.ImportFrom, ast.alias, *FUNCTIONS, ast.Lambda,
    ast.ClassDef,
)


class Record:
    """What one walk over flake8's ast saw (and, lazily, what the project index answers)."""

    def __init__(self, tree: ast.AST, settings: Settings, filename: Optional[str]) -> None:
        self.settings, self.filename, self.tree = settings, filename, tree
        self.ids: Set[str] = set(identifiers(tree))
        self.tails = loader_tails(settings)
        self.loops = self.classes_with_bases = self.npz = self.cuda_text = False
        self.dataset_methods: Set[str] = set()  # `__getitem__`, `__getitems__`, `__iter__` defined here
        self.iter_returns_self = False  # an `__iter__` returning `self` or something held on it (DL502)
        self.stored: Set[str] = set()  # attributes assigned, on anything but `self`
        self.stored_on_self: Set[str] = set()
        # The callees of calls whose result is assigned to an attribute or a name (a local handle a dataset
        # may store: `h5 = h5py.File(p)` then `self.images = h5["images"]`).
        self.stored_calls: Set[str] = set()
        self.assigned_rngs: Set[str] = set()  # the same for any assignment, `.seed(...)` chains stripped
        self.classes: Dict[str, Set[str]] = {}  # class of this file -> the names its bases read
        self.initialised: Set[str] = set()  # classes of this file defining `__init__`
        self.imports: List[ast.stmt] = []
        self.reached: Set[str] = set()  # the names along each callee and class base (`m.make` -> m, make)
        self.method_bases: Set[str] = set()  # the same for the bases of classes defining a method
        self.calls: List[ast.Call] = []
        self.callees: Set[str] = set()
        self._project: Dict[str, bool] = {}
        self.sources = Sources()
        self._known: Optional[KnownValues] = None
        self._here: Optional[Set[str]] = None  # what a callee of this file's code may be (``_called_elsewhere``)
        holders = Holders()
        methods: Dict[ast.AST, str] = {}  # a def in a class body -> the class
        for node in nodes_of(tree):  # the one pass (the identifiers read the same list)
            if not isinstance(node, _RECORDED):
                continue  # most nodes (names, operators, contexts): one test, not the chain below
            if isinstance(node, ast.Call):
                self.calls.append(node)
                named = class_names(node.func)
                self.callees |= named
                holders.call(node)
                self.reached |= named | chain(node.func)
                for name in named:
                    self.sources.calls_by_name.setdefault(name, []).append(node)
                if not named:
                    self.sources.opaque_calls.append(node)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                    (self.stored_on_self if on_self else self.stored).add(node.attr)
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    self._text(node.value)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                holders.bind(targets, node.value)
                if isinstance(node.value, ast.Call) and any(isinstance(t, (ast.Attribute, ast.Name)) for t in targets):
                    self.stored_calls |= class_names(node.value.func)
                self.assigned_rngs |= constructed(node.value)
                for target in targets:
                    self.sources.assign(target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self.loops = self.loops or not isinstance(node, ast.comprehension)
                holders.bind([node.target], node.iter)
            elif isinstance(node, ast.While):
                self.loops = True
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                holders.bind([node.optional_vars], node.context_expr)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)
            elif isinstance(node, ast.alias) and node.asname:
                holders.bind_names({node.asname}, [node.name.rsplit(".", 1)[-1]])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                holders.parameters(node.args)
                if not isinstance(node, ast.Lambda):
                    self.sources.functions.append((node, methods.get(node, "")))
                if not isinstance(node, ast.Lambda) and node.name in DATASET_METHODS:
                    self.dataset_methods.add(node.name)
                    self.iter_returns_self |= node.name == "__iter__" and _returns_self(node)
            elif isinstance(node, ast.ClassDef):
                self.classes_with_bases = self.classes_with_bases or bool(node.bases or node.keywords)
                self.classes[node.name] = {name for base in node.bases for name in class_names(base)}
                methods.update((item, node.name) for item in node.body if isinstance(item, FUNCTIONS))
                bases = {name for base in node.bases for name in chain(base)}
                self.reached |= bases
                if any(isinstance(item, FUNCTIONS) for item in node.body):
                    self.method_bases |= bases
                if any(isinstance(item, FUNCTIONS) and item.name == "__init__" for item in node.body):
                    self.initialised.add(node.name)
                holders.bind_names({node.name}, self.classes[node.name])
        self.holders = holders
        self.loader_names = holders.closure(self.tails | FRAMEWORK_CALLEES)
        self._from_imported: Optional[Dict[str, List[str]]] = None
        foreign = self._foreign_tails()
        # Loader calls, and `partial(DataLoader, ...)` (its keywords reach the calls of what it makes).
        self.candidate_calls = [
            call for call in self.calls
            if not (isinstance(call.func, ast.Name) and call.func.id in foreign) and (
                class_names(call.func) & self.loader_names
                or (is_partial(call) and call.args and class_names(call.args[0]) & self.loader_names))
        ]
        self.candidates = [self._arguments(call) for call in self.candidate_calls]
        self._custom: Optional[Set[str]] = None
        self._custom_workers: Optional[Set[str]] = None

    def _text(self, value: str) -> None:
        if value.isidentifier():
            self.ids.add(value)  # a dict key splatted into a call: `**{"persistent_workers": True}`
        self.npz = self.npz or value.endswith(".npz")
        self.cuda_text = self.cuda_text or "cuda" in value

    @staticmethod
    def _arguments(call: ast.Call) -> Arguments:
        return Arguments(call.args[1:], call.keywords) if is_partial(call) else Arguments(call.args, call.keywords)

    def calls_one_of(self, names: FrozenSet[str]) -> bool:
        """A call of one of ``names`` (or of a name bound from one: `from h5py import File as H5`)."""
        return not self.holders.closure(names).isdisjoint(self.callees)

    @property
    def known(self) -> KnownValues:
        """Which names and `self.x` reads the analysis may read as Known (gate_values.py), built on demand."""
        if self._known is None:
            self._known = KnownValues(self.sources, self._called_elsewhere)
        return self._known

    def _called_elsewhere(self, name: str) -> bool:
        """A def or class of this file that calls under another name may reach, so that any call of the
        file may fill its parameters: bound to another name, or handed to a call that may run code of
        this file with it (a def, class or name bound here, `cls`/`super`, `partial`, a callee without a
        name). Handed only to other modules' calls (`LightningCLI(Model, DataModule)`), it is called
        there, where the analysis reads none of its parameters either."""
        if name in self.holders.flows:
            return True
        callees = self.holders.passed_to.get(name)
        if not callees:
            return False
        if self._here is None:
            functions = {function.name for function, _ in self.sources.functions}
            self._here = functions | self.classes.keys() | self.sources.assigned.keys() | CONSTRUCTORS | {"", "partial"}
        return not callees.isdisjoint(self._here)

    def project(self, question: str) -> bool:
        """The project index's answers, asked once and only when they decide."""
        if question not in self._project:
            self._project[question] = self._ask(question)
        return self._project[question]

    def _foreign_tails(self) -> Set[str]:
        """Loader class names (`DataLoader`) the file binds only by `from` imports of modules the analysis
        reads no loader from: not one of the loader classes' modules, and not a module of the file's
        project it follows (`from monai.data import DataLoader` where `monai` is installed or not found).
        The analysis resolves such a name to that module's class, which is no loader: its calls are none."""
        plain = [alias for node in self.imports if isinstance(node, ast.Import) for alias in node.names]
        if any((alias.asname or alias.name.split(".")[0]) in self.tails for alias in plain):
            return set()  # bound by a plain import too: left to the names' closure
        imported = {name: dotted for name, dotted in self.from_imported.items() if name in self.tails}
        loaders = self.settings.loader_names
        candidates = {name for name, dotted in imported.items() if not any(d in loaders for d in dotted)}
        if not candidates:
            return set()
        follows = self._follows_imports()
        if follows:
            from ..project.locate import locate

            importer = os.path.abspath(str(self.filename))
            candidates = {name for name in candidates
                          if all(locate(d, importer) is None for d in imported[name])}
        # Bound only by those imports: not assigned, defined, a parameter or a loop's target anywhere.
        for item in nodes_of(self.tree):
            if isinstance(item, ast.Name) and not isinstance(item.ctx, ast.Load):
                candidates.discard(item.id)
            elif isinstance(item, DEFINITIONS):
                candidates.discard(item.name)
            elif isinstance(item, ast.arg):
                candidates.discard(item.arg)
        return candidates

    @property
    def from_imported(self) -> Dict[str, List[str]]:
        """Each name the file binds by a `from` import (stars apart), with the dotted names it imports there."""
        if self._from_imported is None:
            from ..project.locate import dotted_join  # paths and strings only: no LibCST

            self._from_imported = {}
            for node in self.imports:
                if isinstance(node, ast.ImportFrom):
                    module = "." * (node.level or 0) + (node.module or "")
                    for alias in node.names:
                        if alias.name != "*":
                            self._from_imported.setdefault(alias.asname or alias.name, []).append(
                                dotted_join(module, alias.name))
        return self._from_imported

    def _follows_imports(self) -> bool:
        if self.filename is None or not self.settings.follow_imports or not os.path.isfile(self.filename):
            return False
        from ..project import locate

        return not locate.installed(self.filename)

    def _ask(self, question: str) -> bool:
        if not self._follows_imports():
            return False
        from ..project import index

        kind = "" if question == "builder" else question
        imports, used = self._imports_used(question == "rng")
        # A loader subclass imported under a loader class's name is read here as a loader (``custom_loaders``).
        return index.names_a_builder(imports, str(self.filename), self.tails, used, kind, self.loader_names)

    @property
    def custom_loaders(self) -> Set[str]:
        """Names (and their aliases) of loader subclasses imported from the project under a loader class's
        name whose `__init__` may set what a call omits: the analysis reads every omitted argument of
        their calls as Unknown (`num_workers` apart: see ``workers_loaders``). Asked of the project index
        only when such a name is called."""
        if self._custom is None:
            self._custom = self._custom_names(workers=False)
        return self._custom

    @property
    def workers_loaders(self) -> Set[str]:
        """Of ``custom_loaders``, those whose `__init__` may give a call omitting `num_workers` workers:
        all but those handing on their own default of 0 (facts/subclass_init.py), read as 0 there."""
        if self._custom_workers is None:
            self._custom_workers = self._custom_names(workers=True) if self.custom_loaders else set()
        return self._custom_workers

    def _custom_names(self, workers: bool) -> Set[str]:
        called = {name for call in self.candidate_calls for name in class_names(call.func)}
        bound = self.from_imported.keys() & self.loader_names
        if not bound or self.holders.closure(bound).isdisjoint(called) or not self._follows_imports():
            return set()
        from ..project import index

        module = ast.Module(body=list(self.imports), type_ignores=[])
        return self.holders.closure(index.custom_loaders(module, str(self.filename), self.tails, bound, workers))

    def is_custom(self, call: ast.Call, workers: bool = False) -> bool:
        names = self.workers_loaders if workers else self.custom_loaders
        return bool(names) and not class_names(call.func).isdisjoint(names)

    def _imports_used(self, bases_only: bool) -> Tuple[ast.Module, Set[str]]:
        """The file's imports a finding can come through, and the names they may be used by.

        The analysis reaches another module's builder or class only by calling it, constructing it,
        subclassing it or handing it to a call, under its imported name, through a module imported
        whole (`data.make(...)`), or through a name bound from one (`make = data.make`). An RNG of an
        imported base reaches a subclass here that defines a method (Across files v7). So a name
        imported with `from` counts only when some such use may read it; star imports and modules
        imported whole are kept, their names filtered by ``used``."""
        start = self.method_bases if bases_only else self.reached | self.holders.passed
        used = self.holders.sources(start)
        kept: List[ast.stmt] = []
        for node in self.imports:
            if isinstance(node, ast.ImportFrom):
                names = [alias for alias in node.names if alias.name == "*" or (alias.asname or alias.name) in used]
                if names:
                    kept.append(ast.ImportFrom(module=node.module, names=names, level=node.level))
            else:
                kept.append(node)
        return ast.Module(body=kept, type_ignores=[]), used


def _returns_self(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            root = node.value  # `self`, `self.it`, `self.items[k]`, `self.make_iterator()`
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id == "self":
                return True
    return False


def constructed(value: ast.AST) -> Set[str]:
    """The callee names of a call assigned as it is, through `.seed(...)`/`.manual_seed(...)` chained on it,
    or as an element unpacked (`self.rng, self.n = np.random.default_rng(), n`)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return set().union(*(constructed(element) for element in value.elts))
    while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
           and value.func.attr in ("seed", "manual_seed") and isinstance(value.func.value, ast.Call)):
        value = value.func.value
    return class_names(value.func) if isinstance(value, ast.Call) else set()
