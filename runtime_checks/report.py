"""The table on stdout, the JSON file and the plot."""

from __future__ import annotations

import json
import textwrap
from typing import Dict, List

STATUS_MARK = {"ok": "ok", "failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT", "skipped": "skipped",
               "needs-cuda": "needs CUDA", "needs-package": "needs package"}


def table(results: List[Dict], width: int = 100) -> str:
    """One row per scenario; the result column wraps to fit ``width`` columns (never below 30)."""
    rows = [("rules", "scenario", "status", "time", "result")]
    for r in results:
        rows.append((",".join(r["rules"]), r["name"], STATUS_MARK.get(r["status"], r["status"]),
                     f"{r.get('seconds', 0):.1f}s", r.get("summary", "")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    indent = sum(widths) + 2 * len(widths)
    room = max(30, width - indent - 1)
    lines = []
    for index, row in enumerate(rows):
        wrapped = textwrap.wrap(row[4], room, break_on_hyphens=False) or [""]
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + wrapped[0])
        lines.extend(" " * indent + more for more in wrapped[1:])
        if index == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 6)
    return "\n".join(line.rstrip() for line in lines)


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


def seconds_label(value: float, _position=None) -> str:
    """A tick label a person reads: 5 ms, 250 ms, 1.5 s, 4 s."""
    if value <= 0:
        return "0"
    if value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value:.3g} s"


def plot(result: Dict, path: str, quick: bool = False) -> None:
    """Per-epoch values of each configuration, and their median with IQR whiskers (epochs 2..N)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from .stats import quantile

    per_epoch = result["metrics"]["per_epoch"]
    keys = (("first_batch_s", "first-batch latency"), ("epoch_s", "epoch time"),
            ("data_wait_s", "time waiting for data"))
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for axis, (key, label) in zip(axes, keys):
        values = [r[key] for records in per_epoch.values() for r in records if r[key] > 0]
        epochs = sorted({r["epoch"] for records in per_epoch.values() for r in records})
        last_epoch = epochs[-1]
        for offset, (config, records) in enumerate(per_epoch.items()):
            line, = axis.plot([r["epoch"] for r in records], [r[key] for r in records], marker="o", alpha=0.6,
                              label=config)
            later = [r[key] for r in records if r["epoch"] >= 2] or [r[key] for r in records]
            median, low, high = quantile(later, 0.5), quantile(later, 0.25), quantile(later, 0.75)
            x = last_epoch + 0.7 + 0.25 * offset
            axis.errorbar([x], [median], yerr=[[median - low], [high - median]], fmt="s", color=line.get_color(),
                          capsize=4, markersize=6)
        axis.set_xlabel("epoch")
        summary_x = last_epoch + 0.7 + 0.25 * (len(per_epoch) - 1) / 2
        axis.set_xticks([*epochs, summary_x], [*map(str, epochs), "median\n[IQR]"])
        axis.set_title(label)
        if values and max(values) / min(values) > 10:
            axis.set_yscale("log")  # configurations an order of magnitude apart (spawn)
            axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.yaxis.set_minor_formatter(NullFormatter())
        else:
            axis.set_ylim(bottom=0)
        axis.yaxis.set_major_formatter(FuncFormatter(seconds_label))
        axis.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    title = (f"DataLoader workers: rebuilt vs built once vs persistent "
             f"({result['metrics']['workers']} workers, {result['metrics']['start_method']})")
    if quick:
        title += "\n--quick run: tiny sizes, few epochs; the numbers are noisy"
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
