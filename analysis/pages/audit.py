"""Token audit: PCER, SPOR, the KV each session holds and leaks, what TTL eviction would give back, prompt
bloat, and the prefix-reuse experiment that measures the article's claims on the model itself.

Every string from a log (session ids, instruction text, prompt snippets) is untrusted: the templates
autoescape it and charts entity-escape it (analysis/charts.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from kvreport.analysis import charts
from kvreport.analysis.site import PageSpec

PAGE = PageSpec(slug="audit", title="Token audit", order=70)
TOP_SESSIONS = 20  # sessions listed per audit; the CSV beside the table has every session
MAX_DETAILED = 2  # the newest standalone audit and the newest demo audit get the full breakdown
MODES = ("recompute", "system_prefix", "session_prefix")


def _featured(audits: list[dict]) -> list[dict]:
    standalone = [a for a in audits if a["run_id"] is None]
    demo = [a for a in audits if a["run_id"] is not None]
    return (standalone[:1] + demo[:1])[:MAX_DETAILED]


def _cid(audit_id: str, name: str) -> str:
    return f"audit-{audit_id}-{name}"


def _advice(a: dict, warnings: list[dict]) -> list[dict]:
    """Each guardrail's advice once, with how many sessions it applies to (not once per session)."""
    out = []
    for kind, col, n in (("SPOR", "spor_advice", a["n_spor_warnings"]), ("KV", "kv_advice", a["n_kv_warnings"])):
        text = next((w[col] for w in warnings if w[col]), None)
        if n and text:
            out.append({"kind": kind, "n": n, "text": text})
    return out


def _detail(q, a: dict, site) -> dict:
    aid = a["audit_id"]
    every = q("audit_sessions", audit_id=aid)  # largest KV first; the page shows the top, the CSV all of them
    sessions = every[:TOP_SESSIONS]
    dist = q("audit_distribution", audit_id=aid)
    leak = q("audit_leakage", audit_id=aid)
    ttl = q("audit_ttl", audit_id=aid)
    bloat = q("audit_bloat", audit_id=aid)
    d = {
        "audit": a, "sessions": sessions, "dist": dist, "leak": leak, "ttl": ttl, "bloat": bloat,
        "bloat_summary": q.one("audit_bloat_summary", audit_id=aid),
        "repeats": q("audit_repeats", audit_id=aid), "warnings": q("audit_warnings", audit_id=aid),
        "rejects": q("audit_rejects", audit_id=aid), "n_sessions": len(every),
        "sessions_csv": site.shown_csv(_cid(aid, "all-sessions"), every),
    }
    d["advice"] = _advice(a, d["warnings"])
    d["dist_chart"] = charts.bars(
        _cid(aid, "distribution"),
        {"PCER": ([r["label"] for r in dist], [r["pcer_sessions"] for r in dist]),
         "SPOR": ([r["label"] for r in dist], [r["spor_sessions"] for r in dist])},
        "Sessions by PCER and SPOR",
        "How many sessions fall in each 10-point band of prompt-cache efficiency (cached / total input) and "
        "of system-prompt overhead (system / total input).", "ratio band", "sessions",
        rows=dist, columns=["label", "pcer_sessions", "spor_sessions", "no_spor_sessions"])
    top = sessions[:15]
    d["kv_chart"] = charts.bars(
        _cid(aid, "top-kv"), {"KV footprint": ([r["session_id"] for r in top], [r["kv_cache_mb"] for r in top])},
        "Sessions holding the most KV",
        f"Largest context each session held, in MB (10^6 bytes) at {a['kv_bytes_per_token']:,.0f} B/token "
        f"({a['kv_bytes_source']}); the dashed line is the {a['kv_max_mb']:g} MB guardrail.", "session", "MB",
        hlines=[(a["kv_max_mb"], f"guardrail {a['kv_max_mb']:g} MB")],
        rows=top, columns=["session_id", "context_tokens", "kv_cache_mb", "pcer", "spor", "kv_warning"])
    d["leak_chart"] = charts.lines(
        _cid(aid, "leakage"),
        {"held (no eviction)": ([r["offset_min"] for r in leak], [r["held_mb"] for r in leak]),
         f"idle > {a['idle_timeout_s']:g} s": ([r["offset_min"] for r in leak], [r["idle_mb"] for r in leak])},
        "KV held over time, and the idle part",
        "KV-cache megabytes resident with no eviction policy, sampled at evenly spaced instants over the log, "
        "and the part held by sessions idle beyond the idle timeout or disconnected.",
        "minutes since the first call", "MB", markers=False,
        rows=leak, columns=["sample", "t", "offset_min", "held_bytes", "idle_bytes", "sessions_held", "sessions_idle"])
    d["ttl_chart"] = charts.bars(
        _cid(aid, "ttl"), {"capacity multiplier": ([r["ttl"] for r in ttl], [r["capacity_multiplier"] for r in ttl])},
        "What TTL eviction would buy",
        "Times more concurrent work of this traffic's shape the same memory holds when each session's KV is "
        "dropped this long after its last activity (or at its disconnect), against never evicting; the "
        "dashed line is the article's 2x.", "evict after", "x capacity", hlines=[(2.0, "article: 2x")],
        rows=ttl, columns=["ttl", "capacity_multiplier", "freed_share", "mean_held_bytes", "peak_held_bytes",
                           "recompute_tokens", "active_sessions_fit", "extra_sessions"])
    if bloat and bloat[0]["achievable_pcer"] is not None:
        shown = bloat[:15]
        d["bloat_chart"] = charts.bars(
            _cid(aid, "bloat"),
            {"actual (provider)": ([r["session_id"] for r in shown], [r["actual_pcer"] for r in shown]),
             "achievable (prompts as sent)": ([r["session_id"] for r in shown], [r["achievable_pcer"] for r in shown]),
             "with a stable prefix": ([r["session_id"] for r in shown], [r["stable_prefix_pcer"] for r in shown])},
            "PCER: what the provider gave, what a prefix cache could, what a stable prefix would",
            "Per session: the cached share the provider reported; the share a perfect prefix cache could have "
            "served given the prompts as sent (longest common token prefix with the previous call); and the "
            "share if every call had extended the previous prompt unchanged.", "session", "PCER",
            rows=shown, columns=["session_id", "actual_pcer", "achievable_pcer", "stable_prefix_pcer",
                                 "broken_pairs", "diverge_in"])
    else:
        d["bloat_chart"] = None
    d.update(_cost(q, a))
    return d


COST_PARTS = (("input_cost_usd", "uncached input"), ("cache_read_cost_usd", "cache reads"),
              ("cache_write_cost_usd", "cache writes"), ("output_cost_usd", "output"))


def _cost(q, a: dict) -> dict:
    """The audit's bill (issue 18): totals, what-if savings, and the cost of each model by token class."""
    aid = a["audit_id"]
    models = q("audit_cost_models", audit_id=aid)
    priced = [r for r in models if r["cost_usd"] is not None]
    chart = None
    if priced:
        names = [f"{r['model']} ({r['provider']})" for r in priced]
        chart = charts.bars(
            _cid(aid, "cost-by-model"), {label: (names, [r[key] for r in priced]) for key, label in COST_PARTS},
            "Dollars per model, by token class",
            "US dollars each model's calls cost, split into uncached input, cache reads, cache writes and output, "
            "at the rates in the table below (models no price table knows are listed there, not charted).",
            "model", "USD", stacked=True,
            rows=models, columns=["model", "provider", "priced_as", "n_calls", "input_tokens", "cached_input_tokens",
                                  "cache_write_tokens", "output_tokens", "cost_usd", *(k for k, _ in COST_PARTS),
                                  "input_usd_mtok", "cache_read_usd_mtok", "output_usd_mtok", "note"])
    return {"cost": q.one("audit_cost", audit_id=aid), "cost_models": models, "cost_chart": chart}


def _price_snapshots(audits: list[dict]) -> list[dict]:
    """Which price snapshot priced which audits, for the page footer."""
    seen: dict[tuple, list[str]] = {}
    for a in audits:
        if a.get("price_snapshot_date") is not None:
            seen.setdefault((a["price_source"], a["price_snapshot_date"]), []).append(a["audit_id"])
    return [dict(source=s, date=d, audits=ids) for (s, d), ids in seen.items()]


def _prefix(q) -> dict:
    rows = q("audit_prefix_reuse")
    totals = q("audit_prefix_totals")
    evict = q("audit_evict")
    chart = None
    if rows:
        rid = rows[0]["run_id"]  # newest run charted; every run is in the tables
        mine = [r for r in rows if r["run_id"] == rid]
        series = {m: ([f"turn {r['turn']}" for r in mine if r["mode"] == m],
                      [r["time_ms"] for r in mine if r["mode"] == m]) for m in MODES}
        err = {m: ([r["time_ms"] - r["p25_ms"] for r in mine if r["mode"] == m],
                   [r["p75_ms"] - r["time_ms"] for r in mine if r["mode"] == m]) for m in MODES}
        label = f"run {rid} · {mine[0]['model']} · {mine[0]['dtype']} · {mine[0]['device_name']}"
        chart = charts.bars(
            "audit-prefix-reuse", series, f"Prefill time with and without a reused prefix · {label}",
            "Median prefill time per turn of a multi-turn session: recomputing the whole prompt, reusing the "
            "shared system prompt's KV, or keeping the session's own previous context; bars span p25-p75.",
            "turn", "ms", error_y=err,
            rows=mine, columns=["turn", "mode", "prompt_tokens", "cached_tokens", "computed_tokens", "time_ms",
                                "p25_ms", "p75_ms", "n", "max_abs_logit_diff", "logits_match"])
    return {"prefix_rows": rows, "prefix_totals": totals, "evict": evict, "prefix_chart": chart}


@dataclass
class AuditPage:
    audits: list[dict]
    details: list[dict]      # the featured audits' breakdowns (_detail)
    prefix_rows: list[dict]
    prefix_totals: list[dict]
    evict: list[dict]
    prefix_chart: object | None
    price_snapshots: list[dict] = field(default_factory=list)  # footer: the price data each audit used
    demo_only: bool = False  # every audit reads generated demo traffic: the page says DEMONSTRATION at its top


def context(q, site) -> AuditPage:
    audits = q("audit_list")
    details = [_detail(q, a, site) for a in _featured(audits)]
    return AuditPage(audits=audits, details=details, **_prefix(q), price_snapshots=_price_snapshots(audits),
                     demo_only=bool(audits) and all(a["run_id"] is not None for a in audits))
