"""The interference experiment's judgement, without torch: the physical bound a timing must respect
(`check_bounds`: `both` can beat neither its longer part nor its bytes over the ceiling, else it is flagged
`bound_violated`) and the run's one-line summary (`summary_line`), as analysis/queries/headline_interference.sql
judges the stored rows. Method: docs/methods/interference.md."""

from __future__ import annotations

MODES = ("compact", "decode", "both")
BALANCE = (0.5, 2.0)  # compact / decode alone must land in here
# Tolerances of the sanity bound, on medians. The copy roof is measured, not a physical limit: a kernel
# may beat it by a little. Perfect overlap puts `both` at the longer part's time, so noise may land it a
# little below: up to MAX_TOLERANCE is not a violation. Below bytes / theoretical peak always is.
ROOF_SLACK = 0.9
MAX_TOLERANCE = 0.05


def check_bounds(
    times: dict[str, dict], bytes_moved: dict[str, int], roof_gbs: float | None, peak_gbs: float | None = None
) -> dict[str, dict]:
    """Per mode: the lower bound on its time (ms), whether the measurement violates it, and why.

    `both` must take at least as long as the longer part alone (median within MAX_TOLERANCE below it) and
    at least its bytes over the bandwidth ceiling (ROOF_SLACK: a measured ceiling is not a hard limit).
    The ceiling is the copy roof, or the faster part's own GB/s when that beat the roof (on a CPU a
    gather can outrun a memcpy roof: cache hits, no write-allocate reads), so the bound never rests on
    a roof the workload itself disproved. Any mode faster than its bytes over the theoretical peak is
    impossible outright. The alone modes get no roof bound of their own: their share of the roof is
    reported, not judged. `times[mode]` has median_ms (p25/p75 are ignored: on a noisy machine a wide
    spread must not hide a median that breaks the bound)."""
    alone_gbs = [bytes_moved[m] / (times[m]["median_ms"] * 1e6) for m in MODES[:2] if times[m]["median_ms"] > 0]
    ceiling_gbs = max([roof_gbs, *alone_gbs]) if roof_gbs else None
    out = {}
    for mode in MODES:
        t, b = times[mode]["median_ms"], bytes_moved[mode]
        notes = []
        bound = b / (roof_gbs * 1e6) if roof_gbs else None
        if peak_gbs and t < b / (peak_gbs * 1e6):
            notes.append(f"faster than its bytes over the theoretical peak ({b / (peak_gbs * 1e6):.3f} ms)")
        if mode == "both":
            slower = max(MODES[:2], key=lambda m: times[m]["median_ms"])
            longer = times[slower]["median_ms"]
            floor = b / (ceiling_gbs * 1e6) if ceiling_gbs else 0.0
            bound = max(longer, floor)
            if t < (1 - MAX_TOLERANCE) * longer:
                notes.append(f"faster than {slower} alone ({longer:.3f} ms)")
            if t < ROOF_SLACK * floor:
                notes.append(
                    f"faster than its bytes over the bandwidth ceiling ({floor:.3f} ms at {ceiling_gbs:.1f} GB/s)"
                )
        out[mode] = {"bound_ms": bound, "bound_violated": bool(notes), "bound_note": "; ".join(notes) or None}
    return out


def summary_line(compact_ms: float, decode_ms: float, both_ms: float, both_bound: dict, shared: dict) -> str:
    """The run's one-line summary, judged as the findings judge it (analysis/queries/headline_interference.sql):
    a timing below the sanity bound is a measurement error, and contention figures outside what running
    together can do (bandwidth lost below 0 or above 100%, decode faster together) are too noisy to say;
    neither is printed as a result."""
    c, d, b = compact_ms, decode_ms, both_ms
    head = (
        f"interference ({shared['concurrency']}, decode {shared['decode_mode']}): compact {c:.3f} ms, "
        f"decode {d:.3f} ms (balance {shared['balance_ratio']:.2f}x"
        f"{'' if shared['balanced'] else ', OUTSIDE 0.5-2x'}), both {b:.3f} ms"
    )
    if both_bound["bound_violated"]:
        return (
            f"{head}: below the sanity bound ({both_bound['bound_note']}), flagged as a measurement error, "
            "not a speed-up; no contention figures from it"
        )
    inflation, lost = shared["decode_inflation"], shared["compact_bw_lost"]
    head += f" ({b / max(c, d):.2f}x the longer alone, {b / (c + d):.2f}x their sum)"
    if inflation is None or lost is None:
        return head
    if not shared["balanced"]:
        return f"{head}; the parts were not balanced, so this run cannot show contention"
    figures = f"decode inflated {inflation:.2f}x, compaction bandwidth lost {lost:.0%}"
    if lost < 0 or lost > 1 or inflation < 1 - MAX_TOLERANCE:
        return f"{head}; contention too noisy to say ({figures}: outside what running together can do)"
    return f"{head}; {figures} when run together"
