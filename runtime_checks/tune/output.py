"""--tune's table (stdout) and plot: batches/s and the step's data-wait share against num_workers."""

from __future__ import annotations

from typing import Dict, List

from ..machine_checks import size_text


def _cell(stat, percent: bool = False) -> str:
    if not stat:
        return "-"
    if percent:
        return f"{stat['median']:.0%} [{stat['iqr']:.0%}]"
    return f"{stat['median']:.1f} [{stat['iqr']:.1f}]{'*' if stat['noisy'] else ''} n={stat['n']}"


def table(result: Dict, spec: str) -> str:
    metrics = result["metrics"]
    verdict = metrics["recommendation"]
    cap = metrics["batches_per_epoch_cap"]
    epochs = "whole epochs" if cap is None else f"epochs cut at {cap} batches"
    step = f"step {metrics['step']} after each batch" if metrics["step"] else "no step: loading alone"
    lines = [f"tuning your loader {spec} ({metrics['usable_cpus']} usable CPUs, start method "
             f"{metrics['start_method']}, budget {metrics['budget_s']:g} s; {epochs}, {step}; "
             "medians [IQR] of epochs 2..N)",
             f"{'setting':<62} {'batches/s':>22} {'first batch':>11} {'data wait':>11} {'/dev/shm':>9} "
             f"{'workers mem':>11}"]
    for row in metrics["rows"]:
        mark = " <- given" if row.get("given") else ""
        if row["label"] == verdict.get("recommended"):
            mark += " <- recommended"
        first = f"{row['first_batch_s']:.3f} s" if row["first_batch_s"] is not None else "-"
        memory = size_text(row["workers_memory_bytes"]) if row["setting"]["workers"] else "-"
        lines.append(f"{row['label']:<62} {_cell(row['rate']):>22} {first:>11} "
                     f"{_cell(row['wait_share'], percent=True):>11} {size_text(row['shm_peak_bytes']):>9} "
                     f"{memory:>11}{mark}")
    lines.append("  * noisy: IQR above 10% of the median; first batch: epoch 1's, workers starting included")
    lines.append(f"{'recommendation' if verdict['verdict'] == 'change' else 'verdict'}: {verdict['text']}")
    lines.append(f"this machine for {metrics.get('machine_checks_for', 'the loader as given')}:")
    for check in metrics["machine_checks"]:
        level = check["level"].upper() if check["level"] != "ok" else "ok"
        lines.append(f"  {level:<8}{check['check']}: {check['text']}")
    return "\n".join(lines)


def _positions(rows: List[Dict]) -> Dict[int, int]:
    """num_workers on an evenly spaced axis (0, 1, 2, 4, 8... a step each)."""
    return {workers: index for index, workers in enumerate(sorted({r["setting"]["workers"] for r in rows}))}


def plot(result: Dict, path: str, spec: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = result["metrics"]
    rows = [r for r in metrics["rows"] if r["rate"]]
    recommended = metrics["recommendation"].get("recommended")
    where = _positions(metrics["rows"])
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    panels = (("rate", "batches per second (median, IQR)", 1.0), ("wait_share", "share of wall time waiting for "
                                                                  "data (%)", 100.0))
    for axis, (key, title, scale) in zip(axes, panels):
        groups: Dict[str, List[Dict]] = {}
        shown = [row for row in rows if row.get(key)]
        for row in shown:  # the sweep as a line; the given loader off it and each variant as points
            name = {"sweep": "workers sweep", "given": "as given (off the sweep)"}.get(row["kind"]) or _variant(row)
            groups.setdefault(name, []).append(row)
        for offset, (name, members) in enumerate(groups.items()):
            members.sort(key=lambda r: r["setting"]["workers"])
            x = [where[r["setting"]["workers"]] + 0.1 * offset for r in members]
            y = [r[key]["median"] * scale for r in members]
            low = [(r[key]["median"] - r[key]["q1"]) * scale for r in members]
            high = [(r[key]["q3"] - r[key]["median"]) * scale for r in members]
            axis.errorbar(x, y, yerr=[low, high], marker="o", capsize=4, label=name,
                          linestyle="-" if name == "workers sweep" else "none")
            for row, at in zip(members, x):
                row["_x"] = at
        for row in shown:
            x, y = row["_x"], row[key]["median"] * scale
            if row.get("given"):
                axis.scatter([x], [y], s=260, marker="*", color="black", zorder=5,
                             label="as given" if key == "rate" else None)
            if row["label"] == recommended:
                axis.scatter([x], [y], s=300, facecolors="none", edgecolors="green", linewidths=2.5, zorder=6,
                             label="recommended" if key == "rate" else None)
        axis.set_xticks(list(where.values()), [str(w) for w in where])
        axis.set_xlabel("num_workers")
        axis.set_title(title)
        axis.set_ylim(bottom=0, top=105 if key == "wait_share" else None)
        axis.grid(True, alpha=0.3)
    if not metrics["step"]:
        note = "no training step given (--step-ms or --step):\nthe loop only loads, so it always waits"
        axes[1].text(0.5, 0.45, note, transform=axes[1].transAxes, ha="center", fontsize="small", color="dimgray")
    axes[0].legend(loc="best", fontsize="small")
    step = f"step {metrics['step']} per batch" if metrics["step"] else "no training step: loading alone"
    verdict = metrics["recommendation"]
    headline = f"recommended: {recommended}" if recommended else verdict["verdict"].replace(
        "given", "nothing measurably beats the loader as given").replace("too-few", "too few epochs to compare")
    figure.suptitle(f"--tune {spec} ({metrics['usable_cpus']} CPUs, {metrics['start_method']}, {step})\n{headline}")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _variant(row: Dict) -> str:
    """A variant's legend entry: what differs from the sweep at its worker count."""
    s = row["setting"]
    return f"prefetch_factor={s['prefetch']}" + (", pin_memory=True" if s["pin"] else "")
