"""The recommendation, from the measured rows alone (a pure function, tested with recorded numbers).

It cannot mislead: a setting counts as faster only where its batches/s IQR lies wholly above the other's
(overlapping IQRs are no measurable difference). Among the settings no measurably slower than the best,
it names the smallest (fewest workers, then fewest batches in flight, then no pinning) that is measurably
faster than the loader as given; when none is, the given settings stand.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..machine_checks import size_text
from ..stats import measurable

WAIT_KEEPS_UP = 0.10  # a step that waits for data less than this share of the time is fed


def _cost(row: Dict) -> tuple:
    s = row["setting"]
    return s["workers"], s["prefetch"] or 0, s["pin"], s["persistent"]


def _rate(row: Dict) -> str:
    r = row["rate"]
    return f"{r['median']:.1f} batches/s [IQR {r['iqr']:.1f}]"


def _comparable(row: Dict) -> bool:
    return bool(row.get("rate")) and row["rate"]["n"] >= 2


def _memory_line(chosen: Dict, given: Dict) -> str:
    extra = chosen["workers_memory_bytes"] - given["workers_memory_bytes"]
    shm = chosen["shm_peak_bytes"]
    more = f"{size_text(extra)} more" if extra > 0 else f"{size_text(-extra)} less"
    return f"workers' memory {size_text(chosen['workers_memory_bytes'])} ({more} than as given), " \
           f"/dev/shm peak {size_text(shm)}"


def warnings_for(row: Dict, headroom: Dict) -> List[str]:
    """Where a setting would not fit: half of /dev/shm, or half the memory available before the run."""
    found = []
    shm, free = headroom.get("shm_bytes", 0), headroom.get("available_memory_bytes", 0)
    if shm and row["shm_peak_bytes"] > shm / 2:
        found.append(f"its /dev/shm peak {size_text(row['shm_peak_bytes'])} is over half of /dev/shm "
                     f"({size_text(shm)}): workers die of a Bus error when it fills; give it room or lower "
                     "num_workers or prefetch_factor")
    if free and row["workers_memory_bytes"] > free / 2:
        found.append(f"its workers' memory {size_text(row['workers_memory_bytes'])} is over half the memory "
                     f"available ({size_text(free)}): with a model beside it, the machine may swap or kill")
    return found


def recommend(rows: List[Dict], headroom: Dict, stepped: bool) -> Dict:
    """{'verdict': 'change'|'given'|'too-few', 'recommended': label or None, 'text', 'warnings', ...}."""
    given = next(r for r in rows if r.get("given"))
    usable = [r for r in rows if _comparable(r)]
    if not _comparable(given) or len(usable) < 2:
        return {"verdict": "too-few", "recommended": None, "gain": None, "warnings": [],
                "text": "too few whole epochs after the first to compare within the budget: raise --budget "
                        "(or cap epochs with --loader-batches)"}
    best = max(usable, key=lambda r: r["rate"]["median"])
    near_best = sorted((r for r in usable if not measurable(r["rate"], best["rate"])), key=_cost)
    faster = [r for r in near_best if r["rate"]["median"] > given["rate"]["median"]
              and measurable(r["rate"], given["rate"])]
    chosen: Optional[Dict] = faster[0] if faster else None
    if chosen is None:
        text = f"nothing measurably beats the loader as given ({given['label']}: {_rate(given)})"
        if best is not given:
            text += f"; the fastest, {best['label']} at {_rate(best)}, is within its noise"
        cheaper = [r for r in near_best if _cost(r) < _cost(given) and not measurable(r["rate"], given["rate"])]
        if cheaper and cheaper[0]["setting"]["workers"] < given["setting"]["workers"]:
            text += f"; {cheaper[0]['label']} is as fast within noise with fewer workers " \
                    f"({_memory_line(cheaper[0], given)})"
        verdict, gain, warned = "given", None, []
    else:
        gain = chosen["rate"]["median"] / given["rate"]["median"]
        text = f"use {chosen['label']}: {gain:.1f}x the batches/s of the loader as given " \
               f"({_rate(chosen)} vs {_rate(given)}); {_memory_line(chosen, given)}"
        verdict, warned = "change", warnings_for(chosen, headroom)
    shown = chosen or given
    if stepped and shown.get("wait_share"):
        share = shown["wait_share"]["median"]
        text += f"; the step waits for data {share:.0%} of the time" + (
            " there: loading does not keep up" if share > WAIT_KEEPS_UP else "")
    if warned:
        text += "; WARNING: " + "; ".join(warned)
    unmeasured = [r["label"] for r in rows if not _comparable(r)]
    if unmeasured:
        text += f"; not compared, too few whole epochs within the budget: {', '.join(unmeasured)}"
    return {"verdict": verdict, "recommended": chosen["label"] if chosen else None, "gain": gain,
            "best": best["label"], "warnings": warned, "text": text}
