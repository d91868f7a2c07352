"""Comparison across runs: the summary metrics of every run side by side (normalised where that makes
sense: bytes per token, % of the copy roof, % of peak), charts of the normalised ones, and the metrics that
changed between runs of one configuration (analysis/regressions.py classifies them)."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis import charts
from kvreport.analysis.regressions import THRESHOLD, answer, changes, metrics as compare_metrics, repeated_configs
from kvreport.analysis.site import Download, PageSpec, Table

PAGE = PageSpec(slug="compare", title="Compare", order=85)

NORMALISED_UNITS = ["B/token", "% of roof", "% of peak"]


# What can differ between two runs of a comparison, in the order a label names it.
DIFFERS = [("device_name", ""), ("model", ""), ("dtype", ""), ("transformers_version", "transformers "),
           ("torch_version", "torch "), ("kvreport_commit", "commit ")]


def differing_labels(runs: list[dict]) -> dict[int, str]:
    """run_id -> a label naming only what differs between these runs (`float16 · H200` against `float32 ·
    AMD EPYC`), so a bar says what changed rather than "run 3". Runs that read the same (a repeat of one
    configuration) add their own label, else their run id."""
    keys = [(k, prefix) for k, prefix in DIFFERS if len({str(r.get(k)) for r in runs}) > 1]
    labels = {r["run_id"]: " · ".join(f"{prefix}{str(r.get(k))[:7] if k == 'kvreport_commit' else r.get(k)}"
                                      for k, prefix in keys if r.get(k) is not None) for r in runs}
    counts: dict[str, int] = {}
    for text in labels.values():
        counts[text] = counts.get(text, 0) + 1
    by_id = {r["run_id"]: r for r in runs}
    out = {}
    for rid, text in labels.items():
        if not text or counts[text] > 1:
            text = " · ".join(x for x in (text, by_id[rid].get("label") or f"run {rid}") if x)
        out[rid] = text
    return out


@dataclass
class ComparePage:
    metrics: list[dict]
    runs: list[dict]
    run_ids: list[int]
    side: list[dict]          # one row per summary metric, values by run
    side_csv: Download
    charts: list
    changes: list[dict]       # metrics that moved by more than the threshold between runs of one config
    n_compared: int
    threshold: float
    repeated: list[dict]      # configurations with more than one run
    repeated_table: Table | None
    changes_csv: Download | None  # the changes listed (none: nothing changed, or nothing measured twice)
    labels: dict[int, str]
    differs: dict[int, str]   # run_id -> what sets it apart from the other runs compared
    answers: list[dict]       # the page's opening number and sentence


def context(q, site) -> ComparePage:
    metrics = compare_metrics(q, site.run_ids)
    for m in metrics:
        if m["page"] and not site.has_page(m["page"].split("#")[0].removesuffix(".html")):
            m["page"] = None  # the experiment's page is not built (yet): show the number without a link
    run_ids = sorted({m["run_id"] for m in metrics})
    runs = [r for r in site.runs if r["run_id"] in run_ids]

    # Side by side: one row per summary metric, one column per run.
    table: dict[tuple, dict] = {}
    for m in metrics:
        if not m["summary"]:
            continue
        row = table.setdefault((m["topic"], m["metric"], m["unit"]), {
            "topic": m["topic"], "metric": m["metric"], "unit": m["unit"], "page": m["page"], "values": {}})
        row["values"][m["run_id"]] = m["value"]
    # Numbers inside names sort as numbers: 256-token requests before 1,024-token ones.
    side = [table[k] for k in sorted(table, key=lambda k: (k[0], charts.natural_key(k[1].replace(",", "")), k[2]))]
    side_csv = Download("compare-side-by-side", [
        {"topic": r["topic"], "metric": r["metric"], "unit": r["unit"],
         **{f"run_{i}": r["values"].get(i) for i in run_ids}} for r in side],
        ["topic", "metric", "unit"] + [f"run_{i}" for i in run_ids])

    # The normalised summaries as charts, one per unit, runs on the x axis, each named by what differs.
    differs = differing_labels(runs)
    chart_list = []
    for unit in NORMALISED_UNITS:
        rows = [m for m in metrics if m["summary"] and m["unit"] == unit and m["value"] is not None]
        if len({m["run_id"] for m in rows}) < 2:
            continue  # a comparison needs two runs; one run's numbers are in the table above
        series: dict[str, tuple[list, list]] = {}
        for m in sorted(rows, key=lambda m: (m["metric"], m["run_id"])):
            xs, ys = series.setdefault(m["metric"], ([], []))
            xs.append(differs.get(m["run_id"], f"run {m['run_id']}"))
            ys.append(m["value"])
        slug = {"B/token": "bytes-per-token", "% of roof": "pct-of-roof", "% of peak": "pct-of-peak"}[unit]
        chart_list.append(charts.bars(
            f"compare-{slug}", series, f"{unit} by run",
            f"Each run's summary metrics measured in {unit}, one group of bars per run, each run named by what "
            "sets it apart (device, model, dtype, library versions, commit), so runs can be compared on a "
            "common scale.", "run (what differs)", unit))

    found, n_compared = changes(metrics, site.runs)
    repeated = repeated_configs(site.runs)
    answers = [answer(found, n_compared, site.runs, len(runs))]
    repeated_rows = [{"device": k[0], "model": k[1], "dtype": k[2], "runs": ", ".join(map(str, v))}
                     for k, v in sorted(repeated.items())]
    return ComparePage(metrics=metrics, answers=answers, runs=runs, run_ids=run_ids, side=side, side_csv=side_csv,
                       charts=chart_list, changes=found, n_compared=n_compared, threshold=THRESHOLD,
                       repeated=repeated_rows,
                       repeated_table=None if not repeated_rows else Table("compare-configurations", repeated_rows, [
                           ("device", "device", "text"), ("model", "model", "text"), ("dtype", "dtype", "text"),
                           ("runs", "runs", "text")],
                           caption="Configurations measured more than once"),
                       changes_csv=None if not found else Download("compare-changes", found, [
                           "topic", "metric", "unit", "base_run", "run_id", "base_value", "value", "change",
                           "verdict"]),
                       labels={i: site.run_label(i) for i in site.run_ids}, differs=differs)
