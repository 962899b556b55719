"""The table on stdout, the JSON file and the plot."""

from __future__ import annotations

import json
import textwrap
from typing import Dict, List

from .stats import NO_DIFFERENCE, TOO_FEW
from .timeline import draw_timelines, seconds_label


def metrics_epochs(result: Dict) -> int:
    return int(result["metrics"].get("epochs", 3))


STATUS_MARK = {"ok": "ok", "failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT", "skipped": "skipped",
               "needs-cuda": "needs CUDA", "needs-package": "needs package", "not-reproduced": "not reproduced"}


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
    measured = result["metrics"].get("measurable", {})
    for name, value in result["metrics"]["ratios"].items():
        shown = f"{value:.1f}x" if measured.get(name, True) else f"{NO_DIFFERENCE} (IQRs overlap)"
        if metrics_epochs(result) < 3:
            shown = TOO_FEW
        lines.append(f"  {name}: {shown}")
    lines.append("  * noisy: IQR above 10% of the median")
    return "\n".join(lines)


def loader_checks(result: Dict, spec: str) -> str:
    """--loader: its timings per configuration, then the machine checks, one line each."""
    metrics = result["metrics"]
    lines = [f"your loader {spec} ({metrics['workers']} workers, start method {metrics['start_method']}; "
             "medians [IQR] of epochs 2..N)",
             f"{'configuration':<26} {'first batch':>20} {'epoch':>20}"]
    for config, row in metrics["summary"].items():
        cells = [f"{row[key]['median']:.3f} [{row[key]['iqr']:.3f}]".rjust(20) for key in ("first_batch_s", "epoch_s")]
        lines.append(f"{config:<26} " + " ".join(cells))
    lines.append("this machine for it:")
    for check in metrics["machine_checks"]:
        lines.append(f"  {check['level'].upper() if check['level'] != 'ok' else 'ok':<8}{check['check']}: "
                     f"{check['text']}")
    return "\n".join(lines)


def write_json(payload: Dict, path: str) -> None:
    text = json.dumps(payload, indent=2, sort_keys=True, default=str)
    if path == "-":
        print(text)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


def plot(result: Dict, path: str, quick: bool = False) -> None:
    """Per-epoch values of each configuration with their median [IQR] (epochs 2..N), and below them the
    timeline: each batch's wait for data over wall-clock time, one row per configuration compared."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = result["metrics"]
    per_epoch = metrics["per_epoch"]
    keys = (("first_batch_s", "first-batch latency"), ("epoch_s", "epoch time"),
            ("data_wait_s", "time waiting for data"))
    timelines = {name: line for name, line in metrics.get("timeline", {}).items() if name != "built once"}
    figure = plt.figure(figsize=(15, 4.6 + 2.4 * len(timelines)))
    grid = figure.add_gridspec(1 + len(timelines), 3, height_ratios=[1.9] + [1] * len(timelines))
    axes = [figure.add_subplot(grid[0, column]) for column in range(3)]
    for axis, (key, label) in zip(axes, keys):
        _epoch_panel(axis, per_epoch, key, label)
    axes[0].legend(loc="best", fontsize="small")
    if timelines:
        first = figure.add_subplot(grid[1, :])
        rows = [first] + [figure.add_subplot(grid[1 + index, :], sharex=first) for index in range(1, len(timelines))]
        draw_timelines(rows, timelines)
    configs = " vs ".join(per_epoch)
    title = f"DataLoader workers: {configs} ({metrics['workers']} workers, {metrics['start_method']})"
    if quick:
        title += "\n--quick run: tiny sizes, few epochs; the numbers are noisy"
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _epoch_panel(axis, per_epoch: Dict, key: str, label: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from .stats import quantile

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
