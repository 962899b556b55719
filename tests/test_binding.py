"""A call's arguments bound to a function's parameters, and the branches of a factory a call takes."""

import libcst as cst
import pytest

from flake8_dataloader.facts.analysis import FileFacts
from flake8_dataloader.facts.binding import Bound, Signature, bind, taken
from flake8_dataloader.facts.collector import Collector
from flake8_dataloader.facts.constants import DEFAULT_LOADER_NAMES
from flake8_dataloader.facts.states import Known, Unknown
from flake8_dataloader.syntax.positions import node_starts

from .conftest import FIXTURES
from .test_facts import facts_of

SIGNATURE = Signature(("dataset", "batch_size", "is_training"), ("dataset", "batch_size", "is_training", "workers"),
                      (("is_training", Known(False)), ("workers", Known(4))))


def bound(call_text):
    facts = facts_of(f"def f(dataset, batch_size, is_training=False, *, workers=4):\n    pass\n\n\n{call_text}\n")
    record = next(r for r in facts.file.calls if r.ctx.function is None)
    return bind(record.node, record.ctx.scope, SIGNATURE, 0)


@pytest.mark.parametrize(
    "call, training, workers",
    [
        ("f(ds, 32, True)", Known(True), Known(4)),
        ("f(ds, 32, is_training=True, workers=0)", Known(True), Known(0)),
        ("f(ds, 32)", Known(False), Known(4)),
        ("f(ds, 32, **dict(is_training=True, workers=2))", Known(True), Known(2)),
        ("f(ds, 32, **{'is_training': True})", Known(True), Known(4)),
    ],
)
def test_known_by_position_keyword_splatted_literal_and_default(call, training, workers):
    parameters = bound(call)
    assert (parameters["is_training"].state, parameters["workers"].state) == (training, workers)


@pytest.mark.parametrize("call", ["f(ds, 32, **cfg)", "f(*args)", "f(ds, 32, is_training=args.train)"])
def test_what_a_splat_may_carry_or_a_cli_value_is_unknown(call):
    assert isinstance(bound(call)["is_training"].state, Unknown)


def test_a_receiver_fills_the_first_parameter():
    signature = Signature(("self", "dataset", "train"), ("self", "dataset", "train"), ())
    facts = facts_of("obj.make(ds, True)\n")
    assert bind(facts.file.calls[0].node, facts.file.calls[0].ctx.scope, signature, 1)["train"].state == Known(True)


def test_a_branch_is_taken_unless_a_known_argument_decides_against_it():
    assert taken((("is_training", True),), {"is_training": Bound(Known(True))})
    assert not taken((("is_training", True),), {"is_training": Bound(Known(0))})
    assert taken((("is_training", False),), {"is_training": Bound(Unknown("cli"))})
    assert taken((), {})


def _built_lines(path, function):
    """For each name bound in ``function`` from a factory call: the lines of the DataLoader calls it builds."""
    source = path.read_text(encoding="utf-8")
    module = cst.parse_module(source)
    collector = Collector()
    collector.walk(module)
    facts = FileFacts(collector, DEFAULT_LOADER_NAMES)
    calls = {c.node for site in facts.flow.loader_sites() for c in site.calls}
    starts = node_starts(module, calls, source)
    func = next(f for f in facts.file.functions.values() if f.name == function)
    out = {}
    for name, bindings in func.scope.bindings.items():
        value = bindings[0].value
        site = facts.flow.sites.get(value) if isinstance(value, cst.Call) else None
        if site is not None:
            out[name] = sorted(starts[c.node][0] for c in site.calls)
    return out


def test_each_call_of_a_two_branch_factory_builds_the_branch_it_takes():
    path = FIXTURES / "flow_branch_factories.py"
    assert _built_lines(path, "train") == {
        "by_keyword": [10], "by_position": [10], "splatted": [10], "literal": [10], "built": [21],
    }
    assert _built_lines(path, "evaluate_every_epoch") == {
        "default": [12], "known_false": [12], "unknown": [10, 12], "splat": [10, 12], "evaluation": [19],
    }
    assert _built_lines(path, "fit") == {"loader": [29]}  # after the guard clause `if not train: return ...`
    assert _built_lines(path, "train_with_named_kwargs") == {"named": [67], "tweaked": [73, 74]}
