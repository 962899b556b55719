"""The facts model on small inputs: argument states, resolution, the parameter table."""

import inspect

import libcst as cst
import pytest

from flake8_dataloader.facts.analysis import FileFacts
from flake8_dataloader.facts.collector import Collector
from flake8_dataloader.facts.constants import DEFAULT_LOADER_NAMES
from flake8_dataloader.facts.states import OMITTED, Known, Unknown
from flake8_dataloader.facts.signature import KEYWORD_ONLY, POSITIONAL


def facts_of(source):
    collector = Collector()
    collector.walk(cst.parse_module(source))
    return FileFacts(collector, DEFAULT_LOADER_NAMES)


def only_call(source):
    (call,) = facts_of(source).flow.loader_calls.values()
    return call.args


def test_parameter_table_matches_installed_torch():
    torch_data = pytest.importorskip("torch.utils.data")
    parameters = inspect.signature(torch_data.DataLoader.__init__).parameters.values()
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD][1:]
    keyword_only = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]
    assert tuple(positional) == POSITIONAL
    assert tuple(keyword_only) == KEYWORD_ONLY


HEADER = "from torch.utils.data import DataLoader\n"


def test_positional_keyword_and_omitted():
    args = only_call(HEADER + "DataLoader(ds, 32, True, None, None, 4, pin_memory=True)\n")
    assert args["batch_size"].state == Known(32)
    assert args["num_workers"].state == Known(4)
    assert args["pin_memory"].state == Known(True)
    assert args["persistent_workers"].state is OMITTED


def test_kwargs_splat_makes_keywords_unknown_never_omitted():
    args = only_call(HEADER + "DataLoader(ds, batch_size=8, **cfg)\n")
    assert args["batch_size"].state == Known(8)
    assert isinstance(args["num_workers"].state, Unknown) and args["num_workers"].via_splat
    assert isinstance(args["persistent_workers"].state, Unknown)


def test_star_args_make_positionals_unknown_but_not_keyword_only():
    args = only_call(HEADER + "DataLoader(ds, *rest)\n")
    assert isinstance(args["num_workers"].state, Unknown)
    assert args["persistent_workers"].state is OMITTED


@pytest.mark.parametrize(
    "source, expected",
    [
        ("W = 2\nDataLoader(ds, num_workers=W)\n", Known(2)),
        ("W = 2\nW = 4\nDataLoader(ds, num_workers=W)\n", Unknown("W is bound 2 times")),
        ("def f(w=2):\n    return DataLoader(ds, num_workers=w)\n", Unknown("w is a parameter")),
        ("W = -(1 + 1) * 2\nDataLoader(ds, num_workers=W)\n", Known(-4)),
        ("import os\nDataLoader(ds, num_workers=os.cpu_count())\n", Unknown("expression", not_none=True)),
        ("if __name__ == '__main__':\n    W = 0\n    DataLoader(ds, num_workers=W)\n", Known(0)),
    ],
)
def test_constant_resolution(source, expected):
    assert only_call(HEADER + source)["num_workers"].state == expected


def test_name_bound_in_a_loop_body_is_recorded_on_the_loop():
    facts = facts_of(HEADER + "for epoch in range(3):\n    ds = make(epoch)\n    dl = DataLoader(ds, num_workers=2)\n")
    (call,) = facts.flow.loader_calls.values()
    (loop,) = call.ctx.loops
    assert loop.target_names == {"epoch"}
    assert loop.bound_names == {"epoch", "ds", "dl"}


def test_factory_calls_become_loader_sites():
    facts = facts_of(
        HEADER + "def make(ds, w):\n    dl = DataLoader(ds, num_workers=w)\n    return dl\n\nloader = make(data, 2)\n"
    )
    assert len(facts.flow.loader_calls) == 1
    assert len(facts.flow.sites) == 2
