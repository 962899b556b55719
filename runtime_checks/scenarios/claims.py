"""Claims in circulation about persistent workers, run rather than repeated."""

from __future__ import annotations

from torch.utils.data import DataLoader

from ..workloads import ReturnsSelf, Tensors
from .base import Options, Scenario
from .common import outcome


def drop_last_deadlock(opts: Options) -> dict:
    """'persistent workers need drop_last=True or a worker deadlocks on the partial last batch'."""
    epochs = 5 if opts.quick else 50
    loader = DataLoader(Tensors(10), batch_size=4, drop_last=False, num_workers=opts.workers,
                        persistent_workers=opts.workers > 0, multiprocessing_context=opts.start_method)
    result = outcome(lambda: [sum(1 for _ in loader) for _ in range(epochs)])
    verdict = "refuted" if result.get("ran") else "confirmed"
    return {
        "status": "ok",
        "summary": f"claim in circulation about persistent workers, \"they need drop_last=True or a worker "
                   f"deadlocks on the partial last batch\": {verdict}, {epochs} epochs with a partial last batch "
                   "finished without a hang",
        "metrics": {"epochs": epochs, "outcome": result, "verdict": verdict},
    }


def cannot_reenter(opts: Options) -> dict:
    """'an IterableDataset with persistent workers fails with cannot re-enter'."""
    loader = DataLoader(ReturnsSelf(10), batch_size=5, num_workers=opts.workers,  # noqa: DL501 - measured as is
                        persistent_workers=opts.workers > 0, multiprocessing_context=opts.start_method)
    counts = []
    result = outcome(lambda: counts.extend(sum(len(b) for b in loader) for _ in range(3)))
    raised = result.get("raised", "")
    verdict = "confirmed" if "re-enter" in raised else "refuted"
    return {
        "status": "ok",
        "summary": "claim in circulation about persistent workers, \"an IterableDataset fails with "
                   f"'cannot re-enter'\": {verdict}, "
                   + (f"no error raised; samples per epoch {counts} (silently empty instead)"
                      if verdict == "refuted" else raised),
        "metrics": {"samples_per_epoch": counts, "outcome": result, "verdict": verdict},
    }


SCENARIOS = [
    Scenario("claim-drop-last-deadlock", ("DL402",), drop_last_deadlock, 120),
    Scenario("claim-cannot-reenter", ("DL502",), cannot_reenter, 60),
]
