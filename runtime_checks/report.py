"""The table on stdout, the JSON file and the plot."""

from __future__ import annotations

import json
from typing import Dict, List

STATUS_MARK = {"ok": "ok", "failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT", "skipped": "skipped"}


def table(results: List[Dict]) -> str:
    rows = [("rules", "scenario", "status", "time", "result")]
    for r in results:
        rows.append((",".join(r["rules"]), r["name"], STATUS_MARK.get(r["status"], r["status"]),
                     f"{r.get('seconds', 0):.1f}s", r.get("summary", "")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
        if index == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 6)
    return "\n".join(lines)


def timing_table(result: Dict) -> str:
    """The DL401/DL402 headline: one row per configuration."""
    summary = result["metrics"]["summary"]
    epochs = result["metrics"]["epochs"]
    lines = [
        f"epoch timing ({result['metrics']['workers']} workers, start method "
        f"{result['metrics']['start_method']}; medians [IQR] of epochs 2..{epochs}, epoch 1 apart)",
        f"{'configuration':<24} {'epoch1 first':>12} {'first batch':>20} {'epoch':>20} {'data wait':>20}",
    ]
    for config, row in summary.items():
        cells = []
        for key in ("first_batch_s", "epoch_s", "data_wait_s"):
            stat = row[key]
            noisy = "*" if stat["noisy"] else " "
            cells.append(f"{stat['median']:.3f} [{stat['iqr']:.3f}]{noisy}".rjust(20))
        lines.append(f"{config:<24} {row['epoch1']['first_batch_s']:>11.3f}s " + " ".join(cells))
    for name, value in result["metrics"]["ratios"].items():
        lines.append(f"  {name}: {value:.1f}x")
    lines.append("  * noisy: IQR above 10% of the median")
    return "\n".join(lines)


def write_json(payload: Dict, path: str) -> None:
    text = json.dumps(payload, indent=2, sort_keys=True, default=str)
    if path == "-":
        print(text)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


def plot(result: Dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    per_epoch = result["metrics"]["per_epoch"]
    keys = (("first_batch_s", "first-batch latency (s)"), ("epoch_s", "epoch time (s)"),
            ("data_wait_s", "time waiting for data (s)"))
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for axis, (key, label) in zip(axes, keys):
        for config, records in per_epoch.items():
            axis.plot([r["epoch"] for r in records], [r[key] for r in records], marker="o", label=config)
        axis.set_xlabel("epoch")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylabel(label)
        axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
    axes[0].legend()
    figure.suptitle(f"DataLoader workers: rebuilt vs built once vs persistent "
                    f"({result['metrics']['workers']} workers, {result['metrics']['start_method']})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
