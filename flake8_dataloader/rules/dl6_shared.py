"""DL6xx: resources a worker's copy of the dataset cannot share (handles, CUDA, copied containers): what several of these rules ask of the facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from ..facts.model import ClassInfo

if TYPE_CHECKING:
    from ..facts.analysis import FileFacts


def dataset_classes(facts: FileFacts) -> List[ClassInfo]:
    return [cls for cls in facts.file.classes.values() if facts.file.dataset_kind(cls) is not None]
