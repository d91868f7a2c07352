"""Regressions between runs: for runs of the same device, model and dtype, every metric that moved by more
than THRESHOLD from the previous such run, called a regression or an improvement (or noise, when the timed
spreads overlap). Metrics come from every analysis/queries/compare_*.sql (columns COMPARE_COLUMNS), so a new
experiment joins the comparison by adding one query. Read by the compare page and `kvreport findings`."""
from __future__ import annotations

from .queries import Queries, QueryError
from .runs import config_key
from .verdicts import Change

COMPARE_COLUMNS = ["topic", "metric", "run_id", "value", "unit", "better", "p25", "p75", "summary", "page"]
THRESHOLD = 0.10  # a change smaller than 10% between two runs of one configuration is not called out


def metrics(q: Queries, run_ids) -> list[dict]:
    """Every compare_*.sql row, checked: its run exists and `better` says which way is better (or nothing)."""
    rows = q.union("compare_", COMPARE_COLUMNS)
    known = set(run_ids)
    for m in rows:
        if m["run_id"] not in known:
            raise QueryError(f"{q.where(m['query'])}: run_id {m['run_id']} is not in the runs table")
        if m["better"] not in (None, "lower", "higher"):
            raise QueryError(f"{q.where(m['query'])}: better must be 'lower', 'higher' or NULL, "
                             f"not {m['better']!r}")
    return rows


def classify(base: dict, new: dict, threshold: float = THRESHOLD) -> tuple[float | None, str]:
    """(relative change, Change) of one metric between a baseline run and a later run."""
    if base["value"] is None or new["value"] is None or base["value"] == 0:
        return None, Change.NOT_COMPARABLE
    change = (new["value"] - base["value"]) / abs(base["value"])
    if abs(change) < threshold:
        return change, Change.UNCHANGED
    spreads = [base["p25"], base["p75"], new["p25"], new["p75"]]
    if all(s is not None for s in spreads) and max(base["p25"], new["p25"]) <= min(base["p75"], new["p75"]):
        return change, Change.WITHIN_NOISE  # the medians moved but the interquartile ranges still overlap
    if new["better"] not in ("lower", "higher"):
        return change, Change.CHANGED
    got_better = change < 0 if new["better"] == "lower" else change > 0
    return change, Change.IMPROVEMENT if got_better else Change.REGRESSION


def changes(metric_rows: list[dict], runs: list[dict], threshold: float = THRESHOLD) -> tuple[list[dict], int]:
    """Each run against the previous run of its configuration, metric by metric: the metrics that changed,
    and how many metric pairs were compared."""
    by_run: dict[int, dict[tuple, dict]] = {}
    for m in metric_rows:
        by_run.setdefault(m["run_id"], {})[(m["topic"], m["metric"], m["unit"])] = m
    out, n_compared = [], 0
    previous: dict[tuple, int] = {}
    for run in sorted(runs, key=lambda r: r["run_id"]):
        key = config_key(run)
        mine = by_run.get(run["run_id"], {})
        base_id = previous.get(key)
        if mine:
            previous[key] = run["run_id"]
        if base_id is None:
            continue
        base = by_run[base_id]
        for mkey in sorted(mine):
            if mkey not in base:
                continue
            n_compared += 1
            change, verdict = classify(base[mkey], mine[mkey], threshold)
            if verdict in (Change.UNCHANGED, Change.NOT_COMPARABLE):
                continue
            new = mine[mkey]
            out.append({"topic": mkey[0], "metric": mkey[1], "unit": mkey[2], "base_run": base_id,
                        "run_id": run["run_id"], "base_value": base[mkey]["value"], "value": new["value"],
                        "change": change, "verdict": verdict, "page": new["page"]})
    return out, n_compared


def repeated_configs(runs: list[dict]) -> dict[tuple, list[int]]:
    """Configurations measured more than once -> their run ids, oldest first."""
    configs: dict[tuple, list[int]] = {}
    for r in runs:
        configs.setdefault(config_key(r), []).append(r["run_id"])
    return {k: v for k, v in configs.items() if len(v) > 1}


def answer(found: list[dict], n_compared: int, runs: list[dict], n_compared_runs: int) -> dict:
    """The comparison's one number and sentence (the compare page opens with it; `kvreport findings` prints it).
    `n_compared_runs`: how many runs have metrics to set side by side."""
    repeated = repeated_configs(runs)
    if not repeated:
        return {"run_id": None, "value": 0, "unit": "configurations run twice",
                "finding": f"No model, dtype and device was measured twice, so no change can be called a "
                           f"{Change.REGRESSION}; "
                           + ("the one run is shown on normalised metrics only." if n_compared_runs == 1 else
                              f"the {n_compared_runs} runs differ by what their labels below name and are set side "
                              "by side on normalised metrics only.")}
    kinds = {v: sum(c["verdict"] == v for c in found) for v in (Change.REGRESSION, Change.IMPROVEMENT,
                                                               Change.WITHIN_NOISE)}
    return {"run_id": None, "value": len(found), "unit": f"of {n_compared} metrics changed",
            "finding": f"Across {len(repeated)} configuration(s) measured more than once, each run against the "
                       f"previous one: {kinds[Change.REGRESSION]} {Change.REGRESSION}(s), "
                       f"{kinds[Change.IMPROVEMENT]} {Change.IMPROVEMENT}(s), {kinds[Change.WITHIN_NOISE]} "
                       f"{Change.WITHIN_NOISE} (threshold {THRESHOLD:.0%})."}
