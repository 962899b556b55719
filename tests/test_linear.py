"""Every transitive walk is memoised and linear: generated shapes at sizes n and 2n.

Work is counted, not timed: the number of Python function calls the analysis (or the fix
command) makes, which does not depend on how busy the machine is. Doubling the input must
not triple the work. Each shape once took minutes or hung (the sizes in the comments).
"""

import sys
from typing import Callable, Dict

import pytest

from flake8_dataloader.autofix import fix_source
from flake8_dataloader.engine import analyse, check_source

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


SHAPES: Dict[str, Callable[[int], str]] = {
    "aliases": aliases,
    "conditional_rebinding": conditional_rebinding,
    "redefined_subclass": redefined_subclass,
    "doubling_constants": doubling_constants,
    "mutual_names": mutual_names,
    "self_attribute": self_attribute,
    "name_chain": name_chain,
    "container_chain": container_chain,
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
    return calls_made(lambda: analyse(large)) / calls_made(lambda: analyse(small))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_analysis_work_grows_linearly(name):
    assert ratio(SHAPES[name], check_source, 150) < 3


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
    ],
)
def test_the_shapes_still_give_their_findings(name, n, codes):
    assert [code for _, _, code, _ in analyse(SHAPES[name](n))] == codes


def test_fix_command_work_grows_linearly():
    assert ratio(many_findings, lambda source: fix_source(source), 100) < 3
    assert len(fix_source(many_findings(200)).fixed) == 200


def reversed_chain(n: int) -> str:  # the last name of an alias chain iterated first
    names = "l0 = DataLoader(ds, num_workers=2)\n" + "".join(f"l{i} = l{i - 1}\n" for i in range(1, n))
    return HEADER + names + f"for epoch in range(3):\n    for batch in l{n - 1}:\n        pass\n"


def test_a_value_carried_too_deep_for_the_stack_is_given_up_not_a_crash():
    # Within the flow's depth limit the loader is followed; past it, nothing is guessed and the
    # file's other findings stay (a RecursionError would have dropped them all).
    assert [code for _, _, code, _ in analyse(reversed_chain(90))] == ["DL402", "DL301"]
    deep = reversed_chain(2000) + "DataLoader(ds, persistent_workers=True)\n"
    assert [code for _, _, code, _ in analyse(deep)] == ["DL101"]
