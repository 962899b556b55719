"""DL1xx: DataLoader settings PyTorch rejects: what several of these rules ask of the facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ..facts.model import LoaderCall

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts


def _anchor(call: LoaderCall, name: str) -> cst.CSTNode:
    return call.args[name].anchor or call.node


def calls_and_configs(facts: FileFacts) -> Iterator[LoaderCall]:
    """The file's DataLoader calls, then its `TrainingArguments(...)` calls read as DataLoader settings."""
    yield from facts.flow.loader_calls.values()
    for config in facts.frameworks.config_calls:
        yield config.call


def names(call: LoaderCall, name: str = "persistent_workers") -> dict:
    return dict(name=call.spelled(name), workers_name=call.spelled("num_workers"))
