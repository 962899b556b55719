"""Every transitive walk is memoised and linear: generated shapes at sizes n and 2n.

Work is counted, not timed: the number of Python function calls the analysis (or the fix
command) makes, which does not depend on how busy the machine is. Doubling the input must
not triple the work (the shapes of real model files: not go past 2.3 times). Each shape
once took minutes or hung (the sizes in the comments); benchmarks/linear_shapes.py times them.
"""

import ast
import logging
import subprocess
import sys
from typing import Callable, Dict

import pytest

from flake8_dataloader.autofix import fix_source
from flake8_dataloader.engine import analyse, check_source, inspect_source
from flake8_dataloader.facts.walk import DEFAULT_BUDGET

HEADER = "from torch.utils.data import DataLoader, Dataset\n\n"
LOOP = "loader = {call}\nfor epoch in range(3):\n    for batch in loader:\n        pass\n"


def aliases(n: int) -> str:  # 3 lines: flake8 ran > 600 s
    return HEADER + "DataLoader = DataLoader\n" * n + LOOP.format(call="DataLoader(ds, num_workers=2)")


def conditional_rebinding(n: int) -> str:  # 4 lines: 31 s
    return (HEADER + "def passthrough(x):\n    return x\n\n\nwrap = DataLoader\n"
            + "wrap = wrap if flag else passthrough\n" * n + LOOP.format(call="wrap(ds, num_workers=2)"))


def redefined_subclass(n: int) -> str:  # 300 classes: 98 s
    redefinition = "class D(D):\n    def __getitem__(self, i):\n        return i\n\n\n"
    classes = "class D(Dataset):\n    pass\n\n\n" + redefinition * n
    return HEADER + classes + LOOP.format(call="DataLoader(D(), num_workers=2)")


def doubling_constants(n: int) -> str:
    constants = "c0 = 1\n" + "".join(f"c{i} = c{i - 1} + c{i - 1}\n" for i in range(1, n))
    return HEADER + constants + LOOP.format(call=f"DataLoader(ds, num_workers=c{n - 1} - c{n - 1} + 2)")


def mutual_names(n: int) -> str:
    names = "".join(f"n{i} = n{(i + 1) % n} if flag else n{(i + 2) % n}\n" for i in range(n))
    return HEADER + "n0 = DataLoader\n" + names + LOOP.format(call="n0(ds, num_workers=2)")


def self_attribute(n: int) -> str:
    methods = "".join(f"    def m{i}(self):\n        self.ds = self.ds\n\n" for i in range(n))
    return (HEADER + "class Trainer:\n    def __init__(self, ds):\n        self.ds = ds\n\n" + methods
            + "    def fit(self):\n        loader = DataLoader(self.ds, num_workers=2)\n"
            "        for epoch in range(3):\n            for batch in loader:\n                pass\n")


def name_chain(n: int) -> str:  # every name of a chain iterated: each query must not walk the chain again
    names = "l0 = DataLoader(ds, num_workers=2)\n" + "".join(f"l{i} = l{i - 1}\n" for i in range(1, n))
    loops = "".join(f"    for batch in l{i}:\n        pass\n" for i in range(n))
    return HEADER + names + "for epoch in range(3):\n" + loops


def container_chain(n: int) -> str:  # a loader carried through n nested list elements
    chain = "c0 = [DataLoader(ds, num_workers=2)]\n" + "".join(f"c{i} = [c{i - 1}[0], c{i - 1}]\n" for i in range(1, n))
    loops = "".join(f"    for batch in c{i}[0]:\n        pass\n" for i in range(n))
    return HEADER + chain + "for epoch in range(3):\n" + loops


def many_findings(n: int) -> str:  # fixing 200 findings: 15.8 s
    return HEADER + "".join(f"loader{i} = DataLoader(ds, persistent_workers=True)\n" for i in range(n))


EPOCHS = "for epoch in range(3):\n"


def resnet_forward(k: int) -> str:  # 10 blocks: 83 s (a cycle-safe memo that stored nothing inside a cycle)
    """torchvision's ResNet shape: k `if self.c: x = self.f(x)` blocks, ten to a layer method, each
    layer handing x to the next, and a loop-carried `output = self.cat(output, out)` in forward."""
    layers = (k + 9) // 10
    methods = ""
    for j in range(layers):
        block = "        if self.c{j}_{i}:\n            x = self.f{j}_{i}(x)\n"
        blocks = "".join(block.format(j=j, i=i) for i in range(min(10, k - 10 * j)))
        handed = f"self.layer{j + 1}(x)" if j + 1 < layers else "x"
        methods += f"    def layer{j}(self, x):\n{blocks}        return {handed}\n\n"
    forward = (
        "    def forward(self, inputs):\n        output = None\n        for end in inputs:\n"
        "            out = self.layer0(end)\n            if output is None:\n                output = out\n"
        "            else:\n                output = self.cat(output, out)\n        return self.layer0(output)\n\n\n"
    )
    main = (
        "def main(ds):\n    loader = DataLoader(ds, num_workers=2)\n    for e in range(3):\n        for b in loader:\n"
        "            pass\n"
    )
    return HEADER + "\nclass Net:\n" + methods + forward + main


def factory_chain(n: int) -> str:  # each factory returns a loader and the next factory's result
    factories = "".join(
        f"def make{i}(ds, n):\n    return DataLoader(ds, num_workers=n), make{i + 1}(ds, n)\n\n\n" for i in range(n)
    )
    factories += f"def make{n}(ds, n):\n    return DataLoader(ds, num_workers=n), None\n\n\n"
    return HEADER + factories + "loaders = make0(ds, 2)\n" + EPOCHS + "    for batch in loaders[0]:\n        pass\n"


def independent_factories(n: int) -> str:  # 2,000 factory + user pairs: 14.4 s through flake8
    pair = (
        "def make{i}(ds, workers):\n    loader = DataLoader(ds, num_workers=workers)\n    return loader\n\n\n"
        "def train{i}(ds):\n    loader = make{i}(ds, 2)\n    for epoch in range(3):\n        for batch in loader:\n"
        "            pass\n\n\n"
    )
    return HEADER + "".join(pair.format(i=i) for i in range(n))


def parameter_chain(n: int) -> str:  # a round-robin fixpoint: 3.14x at 400 -> 800
    """A loader handed down n functions, callers written before their callees, the last iterating it."""
    steps = "".join(f"def step{i}(loader):\n    step{i + 1}(loader)\n\n\n" for i in range(n))
    last = f"def step{n}(loader):\n    for batch in loader:\n        pass\n\n\n"
    return HEADER + steps + last + "loader = DataLoader(ds, num_workers=2)\n" + EPOCHS + "    step0(loader)\n"


def global_chain(n: int) -> str:
    """A global loader iterated n calls below an unguarded module-level epoch loop."""
    steps = "".join(f"def run{i}():\n    run{i + 1}()\n\n\n" for i in range(n))
    last = f"def run{n}():\n    for batch in LOADER:\n        pass\n\n\n"
    return HEADER + "LOADER = DataLoader(ds, num_workers=2)\n\n\n" + steps + last + EPOCHS + "    run0()\n"


def builder_chain(n: int) -> str:
    """An unguarded module-level call n calls above the function that builds and iterates a loader."""
    steps = "".join(f"def run{i}():\n    run{i + 1}()\n\n\n" for i in range(n))
    last = f"def run{n}():\n    loader = DataLoader(ds, num_workers=2)\n    for batch in loader:\n        pass\n\n\n"
    return HEADER + steps + last + "run0()\n"


def worker_init_chain(n: int, called_from_main: bool = False) -> str:
    """Seeding n helpers below a worker_init_fn: worker code, not the run's seeding (DL202)."""
    helpers = "".join(f"def helper{i}():\n    helper{i + 1}()\n\n\n" for i in range(n))
    main = "    helper0()\n" if called_from_main else ""
    return (
        "import random\n\n" + HEADER + "def init(worker_id):\n    helper0()\n\n\n" + helpers
        + f"def helper{n}():\n    random.seed(3)\n\n\nif __name__ == '__main__':\n" + main
        + "    loader = DataLoader(ds, num_workers=2, worker_init_fn=init)\n    for batch in loader:\n        pass\n"
    )


def search_loop(n: int) -> str:
    """A loop changing n dictionaries in place, each handed to a function that builds a loader from it."""
    evaluate = ("def evaluate(cfg, ds):\n    loader = DataLoader(ds, batch_size=cfg['b'], num_workers=2)\n"
                "    for batch in loader:\n        pass\n\n\n")
    body = "".join(f"    cfg{i}['b'] = epoch\n    evaluate(cfg{i}, ds)\n    log(cfg{i})\n" for i in range(n))
    return HEADER + evaluate + EPOCHS + body


def reseeded_loop(n: int) -> str:
    """One loader iterated n times in an epoch loop that reseeds torch after them (not before: DL402 stays)."""
    body = "".join(f"    for batch in loader:\n        step{i}(batch)\n" for i in range(n))
    loader = "loader = DataLoader(ds, num_workers=2)\n"
    return "import torch\n" + HEADER + loader + EPOCHS + body + "    torch.manual_seed(0)\n"


def guard_clauses(n: int) -> str:
    """A factory of n guard clauses (`if p: return ...`), each marking the statements after it."""
    guard = "    if p{i}:\n        return DataLoader(ds, num_workers={i})\n    x{i} = {i}\n"
    guards = "".join(guard.format(i=i) for i in range(n))
    params = ", ".join(f"p{i}=False" for i in range(n))
    factory = f"def make(ds, {params}):\n{guards}    return DataLoader(ds, num_workers=2)\n\n\n"
    return HEADER + factory + "loader = make(ds, p0=True)\n" + EPOCHS + "    for batch in loader:\n        pass\n"


def container_through_functions(n: int) -> str:
    """A list of two loaders handed down n functions, the last unpacking it and iterating both."""
    steps = "".join(f"def step{i}(loaders):\n    step{i + 1}(loaders)\n\n\n" for i in range(n))
    iterate = "    for batch in a:\n        pass\n    for batch in b:\n        pass\n\n\n"
    last = f"def step{n}(loaders):\n    a, b = loaders\n" + iterate
    built = "la = DataLoader(ds, num_workers=2)\nlb = DataLoader(ds, num_workers=2)\n"
    return HEADER + steps + last + built + EPOCHS + "    step0([la, lb])\n"


def comprehension_chain(n: int) -> str:
    """n dict comprehensions, each reading the one before by key, the last iterated every epoch."""
    first = "c0 = {k: DataLoader(ds[k], num_workers=2) for k in keys}\n"
    chain = "".join(f"c{i} = {{k: c{i - 1}[k] for k in keys}}\n" for i in range(1, n))
    return HEADER + first + chain + EPOCHS + f"    for batch in c{n - 1}['train']:\n        pass\n"


def many_loaders_one_loop(n: int) -> str:  # 3.4x at 200 -> 400 when each loader scanned the whole loop
    """n loaders iterated in one epoch loop that also calls n methods and writes n attributes."""
    loaders = "".join(f"    loader{i} = DataLoader(data{i}, num_workers=2)\n" for i in range(n))
    body = "".join(
        f"        for batch in loader{i}:\n            step(batch)\n        stats{i}.update(epoch)\n"
        f"        cfg{i}.lr = epoch\n" for i in range(n)
    )
    return HEADER + "def main(" + ", ".join(f"data{i}" for i in range(n)) + "):\n" + loaders + "    " + EPOCHS + body


def datasets_changed_through_loaders(n: int) -> str:
    """n loaders, each one's dataset changed through `loader.dataset` in the loop that iterates it all."""
    loaders = "".join(f"loader{i} = DataLoader(ds, num_workers=2)\n" for i in range(n))
    each = "    loader{i}.dataset.set_epoch(epoch)\n    for batch in loader{i}:\n        pass\n"
    body = "".join(each.format(i=i) for i in range(n))
    return HEADER + loaders + EPOCHS + body


NOTEBOOK_CELL = "# %%NBQA-CELL-SEP0a1b2c\n"


def notebook_dataset_chain(n: int) -> str:
    """A notebook's dataset class handed down n functions, the last building a loader from it (DL302)."""
    steps = "".join(f"def step{i}(ds):\n    step{i + 1}(ds)\n\n\n" for i in range(n))
    last = f"def step{n}(ds):\n    return DataLoader(ds, num_workers=2)\n\n\n"
    return HEADER + "class Shapes(Dataset):\n    pass\n\n\n" + NOTEBOOK_CELL + steps + last + "step0(Shapes())\n"


def notebook_many_calls(n: int) -> str:
    """Two loaders built from one parameter of a notebook function that n cells call with a cell's class."""
    loaders = "    train = DataLoader(ds, num_workers=2)\n    val = DataLoader(ds, num_workers=2)\n"
    calls = "".join(f"{NOTEBOOK_CELL}build(Shapes{i}())\n" for i in range(n))
    classes = "".join(f"class Shapes{i}(Dataset):\n    pass\n\n\n" for i in range(n))
    return HEADER + classes + NOTEBOOK_CELL + "def build(ds):\n" + loaders + calls


def subclass_calls(n: int) -> str:
    """n calls of a loader subclass whose `__init__` (n lines long) hands on its own num_workers default."""
    body = "".join(f"        self.option{i} = {i}\n" for i in range(n))
    cls = ("class Loader(DataLoader):\n    def __init__(self, ds, num_workers=0, **kwargs):\n" + body
           + "        super().__init__(ds, num_workers=num_workers, **kwargs)\n\n\n")
    calls = "".join(f"loader{i} = Loader(ds, batch_size={i + 1})\n" for i in range(n))
    return HEADER + cls + calls + "for epoch in range(3):\n    for batch in loader0:\n        pass\n"


def helper_called_n_times(n: int, dataset: str = "ds") -> str:
    """n loaders built from one parameter of a helper that a function calls n times."""
    loaders = "".join(f"    loader{i} = DataLoader(ds, num_workers=2)\n" for i in range(n))
    calls = "".join(f"    build({dataset})\n" for _ in range(n))
    return HEADER + "def build(ds):\n" + loaders + "\n\ndef main(ds):\n" + calls


SHAPES: Dict[str, Callable[[int], str]] = {
    "helper_called_n_times": helper_called_n_times,
    "subclass_calls": subclass_calls,
    "notebook_dataset_chain": notebook_dataset_chain,
    "notebook_many_calls": notebook_many_calls,
    "many_loaders_one_loop": many_loaders_one_loop,
    "datasets_changed_through_loaders": datasets_changed_through_loaders,
    "container_through_functions": container_through_functions,
    "comprehension_chain": comprehension_chain,
    "guard_clauses": guard_clauses,
    "search_loop": search_loop,
    "reseeded_loop": reseeded_loop,
    "aliases": aliases,
    "conditional_rebinding": conditional_rebinding,
    "redefined_subclass": redefined_subclass,
    "doubling_constants": doubling_constants,
    "mutual_names": mutual_names,
    "self_attribute": self_attribute,
    "name_chain": name_chain,
    "container_chain": container_chain,
    "factory_chain": factory_chain,
    "independent_factories": independent_factories,
    "parameter_chain": parameter_chain,
    "global_chain": global_chain,
    "builder_chain": builder_chain,
    "worker_init_chain": worker_init_chain,
}


def calls_made(work: Callable[[], object]) -> int:
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def ratio(shape: Callable[[int], str], analyse: Callable[[str], object], n: int) -> float:
    small, large = shape(n), shape(2 * n)
    analyse(shape(2))  # the first file pays the lazy imports and caches: not part of either count
    return calls_made(lambda: analyse(large)) / calls_made(lambda: analyse(small))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_analysis_work_grows_linearly(name):
    assert ratio(SHAPES[name], check_source, 150) < 3


@pytest.mark.parametrize("k", [10, 20, 40])
def test_a_resnet_forward_costs_linear_work_in_its_if_blocks(k):
    # k -> 2k: 10 -> 20, 20 -> 40, 40 -> 80 conditional re-bindings (one was 83 s at k = 10).
    assert ratio(resnet_forward, check_source, k) < 2.3


@pytest.mark.parametrize("name", ["factory_chain", "independent_factories", "parameter_chain"])
def test_factories_and_parameter_chains_cost_linear_work(name):
    assert ratio(SHAPES[name], check_source, 250) < 2.3


@pytest.mark.parametrize(
    ("name", "n", "codes"),
    [
        ("aliases", 3, ["DL402", "DL301"]),
        ("conditional_rebinding", 4, []),  # wrap may be passthrough: not certainly a loader
        ("redefined_subclass", 3, ["DL402", "DL301"]),
        ("doubling_constants", 5, ["DL402", "DL301"]),
        ("mutual_names", 4, ["DL402", "DL301"]),  # every name of the cycle is DataLoader
        ("self_attribute", 4, ["DL402"]),  # once a RecursionError that dropped the file's findings
        ("name_chain", 4, ["DL402", "DL301"]),
        ("container_chain", 4, ["DL402", "DL301"]),
        ("factory_chain", 4, ["DL402", "DL301"]),
        ("independent_factories", 3, ["DL402"] * 3),
        ("parameter_chain", 4, ["DL402", "DL301"]),
        ("global_chain", 4, ["DL402", "DL301"]),
        ("builder_chain", 4, ["DL301"]),
        ("worker_init_chain", 4, []),  # seeded only in worker code: the run is not half-seeded
    ],
)
def test_the_shapes_still_give_their_findings(name, n, codes):
    assert [code for _, _, code, _ in analyse(SHAPES[name](n))] == codes


def test_a_class_workers_cannot_import_is_reported_once_per_loader_of_a_helper():
    """What n calls pass to the helper's parameter is found once for all its loaders (it was once per loader)."""
    source = helper_called_n_times(3, "Shapes()").replace(
        "def main(ds):\n", "if __name__ == '__main__':\n    class Shapes(Dataset):\n        pass\n\n"
    )
    assert [(line, code) for line, _, code, _ in analyse(source)] == [(4, "DL302"), (5, "DL302"), (6, "DL302")]


def test_fix_command_work_grows_linearly():
    assert ratio(many_findings, lambda source: fix_source(source), 100) < 3
    assert len(fix_source(many_findings(200)).fixed) == 200


def reversed_chain(n: int) -> str:  # the last name of an alias chain iterated first
    names = "l0 = DataLoader(ds, num_workers=2)\n" + "".join(f"l{i} = l{i - 1}\n" for i in range(1, n))
    return HEADER + names + f"for epoch in range(3):\n    for batch in l{n - 1}:\n        pass\n"


def test_a_file_of_many_findings_is_placed_by_one_code_generation(monkeypatch):
    """Each placement by text searches the whole file: past MAX_TEXT_SEARCHES nodes, the positions
    come from one code generation (thousands of findings would otherwise cost n searches of n)."""
    from flake8_dataloader.syntax import positions

    n = positions.MAX_TEXT_SEARCHES + 1
    source = many_findings(n)  # one call shape and text, n times: only the statements tell them apart
    analysis = inspect_source(source, use_prefilter=False, tree=ast.parse(source))
    assert analysis is not None

    def searched(*args):
        raise AssertionError("searched the source")

    monkeypatch.setattr(positions, "_unique_text_starts", searched)
    monkeypatch.setattr(positions, "_statement_starts", searched)
    assert [(line, column, code) for line, column, code, _ in analysis.results()] == [
        (3 + i, 24 + len(str(i)), "DL101") for i in range(n)  # at `persistent_workers=True`
    ]


def test_a_value_carried_too_deep_for_the_stack_is_given_up_not_a_crash():
    # Within the flow's depth limit the loader is followed; past it, nothing is guessed and the
    # file's other findings stay (a RecursionError would have dropped them all).
    assert [code for _, _, code, _ in analyse(reversed_chain(90))] == ["DL402", "DL301"]
    deep = reversed_chain(2000) + "DataLoader(ds, persistent_workers=True)\n"
    assert [code for _, _, code, _ in analyse(deep)] == ["DL101"]


def test_seeding_reached_from_the_main_process_too_is_the_runs_seeding():
    # The twin of worker_init_chain: helper0 also runs in the main process, so random is seeded
    # for the run while torch is not (DL202); the worker-only walk must not take it in.
    assert [code for _, _, code, _ in analyse(worker_init_chain(4, called_from_main=True))] == ["DL202"]


@pytest.mark.parametrize("k", [10, 80])
def test_the_resnet_shape_finds_the_loader_after_its_model(k):
    source = resnet_forward(k)
    assert [(line, code) for line, _, code, _ in analyse(source)] == [(source.count("\n") - 3, "DL402")]


def many_container_reads(n: int) -> str:  # n loaders in a list, read n times by an unknown index: n * n steps
    loaders = "loaders = [\n" + "    DataLoader(ds, num_workers=2),\n" * n + "]\n"
    return HEADER + loaders + EPOCHS + "    for batch in loaders[idx]:\n        pass\n" * n


def test_past_the_work_budget_a_file_gives_up_with_one_log_line(caplog):
    with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
        assert check_source(many_container_reads(600), "generated.py") == []
    assert [r.getMessage() for r in caplog.records] == [
        f"flake8-dataloader: skipped generated.py: its analysis took more than {DEFAULT_BUDGET:,} flow steps"
        " (no DL findings)"
    ]
    # Below the budget the same shape is analysed in full: every loader is restarted every epoch.
    analysis = inspect_source(many_container_reads(100))
    assert analysis is not None and len(analysis.findings) == 101  # 100 DL402 and the DL301
    assert analysis.facts.file.budget.spent < DEFAULT_BUDGET / 10


def test_past_the_work_budget_flake8_runs_on_as_usual(tmp_path):
    (tmp_path / "generated.py").write_text(many_container_reads(600))
    (tmp_path / "train.py").write_text(HEADER + "loader = DataLoader(ds, persistent_workers=True)\n")
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=DL", "-v", "generated.py", "train.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1  # train.py's finding, as without the generated file
    assert result.stdout.splitlines() == [
        "train.py:3:25: DL101 persistent_workers=True with num_workers omitted (defaults to 0) raises ValueError; "
        "drop persistent_workers or set num_workers > 0"
    ]
    assert result.stderr.count("skipped generated.py: its analysis took more than") == 1


def test_a_summary_past_the_budget_is_remembered_as_none(tmp_path, monkeypatch, caplog):
    from flake8_dataloader.facts import walk
    from flake8_dataloader.project import store

    # A module whose facts take more steps than a tiny budget; its importers lint on without it.
    heavy = many_container_reads(60) + "\n\ndef build(ds):\n    return DataLoader(ds, num_workers=2)\n"
    (tmp_path / "data.py").write_text(heavy)
    user = "from data import build\n\nloader = build(None)\n" + EPOCHS + "    for batch in loader:\n        pass\n"
    (tmp_path / "a.py").write_text(user)
    (tmp_path / "b.py").write_text(user)
    store.clear()
    summarised = []
    original = store._summarised
    monkeypatch.setattr(store, "_summarised", lambda *args: summarised.append(args[0]) or original(*args))
    monkeypatch.setattr(walk.WorkBudget.__init__, "__defaults__", (2_000,))
    try:
        with caplog.at_level(logging.INFO, logger="flake8.dataloader"):
            for name in ("a.py", "b.py"):
                path = tmp_path / name
                text = path.read_text()
                check_source(text, str(path), tree=ast.parse(text))
    finally:
        store.clear()
    # Summarised once for the process, not once per importer (a.py and b.py are remembered after their lint).
    assert summarised.count(str(tmp_path / "data.py")) == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"flake8-dataloader: not following {tmp_path / 'data.py'}: its summary took more than 2,000 flow steps"
    ]
