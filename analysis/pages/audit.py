"""Token audit: PCER, SPOR, the KV each session holds and leaks, what TTL eviction would give back, prompt
bloat, and the prefix-reuse experiment that measures the token-audit article's claims on the model itself.

Every string from a log (session ids, instruction text, prompt snippets) is untrusted: the templates
autoescape it and charts entity-escape it (analysis/charts.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from kvreport.analysis import charts
from kvreport.analysis.site import Download, PageSpec, Table

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
        "all_sessions": Download(_cid(aid, "all-sessions"), every),  # linked beside the top sessions
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
    priced = a["kv_bytes_per_token"] is not None  # an audit without --model stores no KV bytes
    d["kv_chart"] = None if not priced else charts.bars(
        _cid(aid, "top-kv"), {"KV footprint": ([r["session_id"] for r in top], [r["kv_cache_mb"] for r in top])},
        "Sessions holding the most KV",
        f"Largest context each session held, in MB (10^6 bytes) at {a['kv_bytes_per_token']:,.0f} B/token "
        f"({a['kv_bytes_source']}); the dashed line is the {a['kv_max_mb']:g} MB guardrail.", "session", "MB",
        hlines=[(a["kv_max_mb"], f"guardrail {a['kv_max_mb']:g} MB")],
        rows=top, columns=["session_id", "context_tokens", "kv_cache_mb", "pcer", "spor", "kv_warning"])
    d["leak_chart"] = _sessions_held(aid, a, leak) if not priced else charts.lines(
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
        "dashed line is the token-audit article's 2x.", "evict after", "x capacity",
        hlines=[(2.0, "token-audit article: 2x")],
        rows=ttl, columns=["ttl", "capacity_multiplier", "freed_share", "mean_held_bytes", "peak_held_bytes",
                           "recompute_tokens", "active_sessions_fit", "extra_sessions"])
    if a["content_calls"] and bloat and bloat[0]["achievable_pcer"] is not None:
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
    d.update(_detail_tables(d, a, site))
    return d


def _sessions_held(aid: str, a: dict, leak: list[dict]):
    """The leakage timeline of an audit without KV pricing: sessions held and idle, not bytes."""
    x = [r["offset_min"] for r in leak]
    return charts.lines(
        _cid(aid, "leakage"),
        {"held (no eviction)": (x, [r["sessions_held"] for r in leak]),
         f"idle > {a['idle_timeout_s']:g} s": (x, [r["sessions_idle"] for r in leak])},
        "Sessions held over time, and the idle ones",
        "Sessions whose KV would be resident with no eviction policy, sampled at evenly spaced instants over the "
        "log, and those idle beyond the idle timeout or disconnected (KV not priced: no bytes).",
        "minutes since the first call", "sessions", markers=False,
        rows=leak, columns=["sample", "t", "offset_min", "sessions_held", "sessions_idle"])


def _detail_tables(d: dict, a: dict, site) -> dict:
    """The tables of one audit's breakdown; None where the page says instead why there is nothing to list."""
    aid, csv, warnings = a["audit_id"], site.csv_files.get, d["warnings"]
    shown_bloat = bool(a["content_calls"])  # the prompt-bloat section lists sessions only for logged messages
    return {
        "cost_models_table": None if not d["cost_models"] else Table(_cid(aid, "cost-models"), d["cost_models"], [
            ("model", "model", "text"), ("provider", "provider", "text"), ("priced_as", "priced as", "text"),
            ("n_calls", "calls", "int"), ("input_tokens", "input", "int"),
            ("cached_input_tokens", "cache reads", "int"), ("cache_write_tokens", "cache writes", "int"),
            ("output_tokens", "output", "int"), ("cost_usd", "cost ($)", "auto"),
            ("usd_per_call", "$ per call", "auto"), ("input_usd_mtok", "$/M input", "auto"),
            ("cache_read_usd_mtok", "$/M cached", "auto"), ("output_usd_mtok", "$/M output", "auto"),
            ("note", "price source, or why unpriced", "text")],
            caption="Calls, tokens and cost per model", csv=csv("token_prices")),
        "sessions_table": Table(_cid(aid, "sessions"), d["sessions"], [
            ("session_id", "session", "text"), ("n_calls", "calls", "int"), ("input_tokens", "input", "int"),
            ("cached_input_tokens", "cached", "int"), ("system_tokens", "system", "int"),
            ("output_tokens", "output", "int"), ("pcer", "PCER", "pct"), ("spor", "SPOR", "pct"),
            ("context_tokens", "largest context (tokens)", "int"), ("kv_cache_mb", "KV footprint (MB)", "num"),
            ("idle_share", "idle share of its KV time", "pct"), ("kv_warning", "KV warning", "bool"),
            ("spor_warning", "SPOR warning", "bool"), ("cost_usd", "cost ($)", "auto")],
            caption=f"Top {len(d['sessions'])} of {d['n_sessions']} sessions by KV footprint",
            csv=d["all_sessions"].link),
        "warnings_table": Table(_cid(aid, "warnings"), d["warnings"], [
            ("session_id", "session", "text"), ("warning", "over", "text"), ("spor", "SPOR", "pct"),
            ("kv_cache_mb", "KV footprint (MB)", "num")],
            caption=f"{len(warnings)} session{('' if len(warnings) == 1 else 's')} over a guardrail "
                    "(up to 50; sessions under every limit are not listed)",
            answer="kv_cache_mb"),
        "ttl_table": None if not d["ttl"] else Table(_cid(aid, "ttl-table"), d["ttl"], [
            ("ttl", "evict after", "text"), ("freed_share", "KV byte-seconds freed", "pct"),
            ("mean_held_mb", "mean held (MB)", "num"), ("peak_held_mb", "peak held (MB)", "num"),
            ("freed_mb_at_peak", "peak reduction (MB)", "num"),
            ("recompute_tokens", "tokens recomputed on return", "int"),
            ("evicted_sessions", "sessions evicted", "int"), ("capacity_multiplier", "capacity ×", "num2"),
            ("active_sessions_fit", "active sessions that fit", "int"),
            ("extra_sessions", "more than never evicting", "int"), ("freed_gpu_hours", "GPU-hours freed", "auto"),
            ("freed_cost_usd", "freed ($, --gpu-hour-price)", "auto")],
            caption="TTL sweep", csv=csv("token_ttl_sweep")),
        "bloat_table": None if not shown_bloat else Table(_cid(aid, "bloat-table"), d["bloat"], [
            ("session_id", "session", "text"), ("n_calls", "calls", "int"), ("actual_pcer", "actual PCER", "pct"),
            ("achievable_pcer", "achievable", "pct"), ("stable_prefix_pcer", "stable prefix", "pct"),
            ("broken_pairs", "calls breaking the prefix", "int"), ("diverge_in", "first break in", "text"),
            ("diverge_offset_chars", "at character", "int"), ("diverge_context", "…shared text", "code"),
            ("diverge_prev", "previous call went on", "code"), ("diverge_next", "this call went on", "code")],
            caption="Where prompts stop sharing a prefix (top 20)", csv=csv("token_bloat")),
        "repeats_table": None if not shown_bloat else Table(_cid(aid, "repeats"), d["repeats"], [
            ("session_id", "session", "text"), ("instruction", "instruction", "text"), ("n_turns", "turns", "int"),
            ("also_in_system", "already in system prompt", "bool"), ("tokens", "tokens each", "int"),
            ("repeated_tokens", "tokens re-sent", "int")],
            caption="Sentences sent again in the new part of several turns (top 20)", csv=csv("token_repeats")),
        "rejects_table": None if not d["rejects"] else Table(_cid(aid, "rejects"), d["rejects"], [
            ("reason", "reason", "text"), ("n", "records", "int"), ("source", "file", "text"),
            ("first_line", "first line", "int")],
            caption="Why records were rejected", csv=csv("token_rejects")),
    }


COST_PARTS = (("input_cost_usd", "uncached input"), ("cache_read_cost_usd", "cache reads"),
              ("cache_write_cost_usd", "cache writes"), ("output_cost_usd", "output"))


def _cost(q, a: dict) -> dict:
    """The audit's bill: totals, what-if savings, and the cost of each model by token class."""
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


def _prefix(q, site) -> dict:
    rows = q("audit_prefix_reuse")
    # A reused prefix can time slower than recomputing (noise at small prompts): the time is shown as a signed
    # change against recomputing, never as a negative "saving".
    totals = [dict(r, time_vs_recompute=None if r["time_saved"] is None else -r["time_saved"])
              for r in q("audit_prefix_totals")]
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
    csv = site.csv_files.get
    return {"prefix_rows": rows, "prefix_totals": totals, "evict": evict, "prefix_chart": chart,
            "prefix_totals_table": None if chart is None else Table("audit-prefix-totals", totals, [
                ("run_id", "run", "int"), ("model", "model", "text"), ("device_name", "device", "text"),
                ("mode", "mode", "text"), ("prompt_tokens", "prompt tokens", "int"),
                ("cached_tokens", "cached", "int"), ("computed_tokens", "computed", "int"),
                ("computed_saved", "computation saved", "pct"), ("time_ms", "prefill", "ms"),
                ("time_vs_recompute", "prefill time vs recomputing", "signed_pct"),
                ("logits_match", "logits match", "bool")],
                caption="Per run and mode, summed over the turns timed"),
            "prefix_rows_table": None if chart is None else Table("audit-prefix-rows", rows, [
                ("run_id", "run", "int"), ("turn", "turn", "int"), ("mode", "mode", "text"),
                ("prompt_tokens", "prompt", "int"), ("cached_tokens", "cached", "int"),
                ("computed_tokens", "computed", "int"), ("time_ms", "median", "ms"), ("p25_ms", "p25", "ms"),
                ("p75_ms", "p75", "ms"), ("n", "n", "int"), ("copy_ms", "cache copy", "ms"),
                ("max_abs_logit_diff", "max |Δ logit|", "auto"), ("logits_match", "match", "bool")],
                caption="Every turn and mode", csv=csv("prefix_reuse")),
            "evict_table": None if not evict else Table("audit-evict", evict, [
                ("run_id", "run", "int"), ("phase", "phase", "text"), ("sessions_held", "sessions held", "int"),
                ("disconnected_held", "of which disconnected", "int"), ("kv_bytes_held", "KV held", "bytes"),
                ("kv_bytes_expected", "formula", "bytes"), ("freed_bytes", "freed", "bytes"),
                ("allocator_freed_bytes", "allocator freed", "bytes"), ("free_bytes", "free memory", "bytes"),
                ("sessions_fit", "sessions that fit", "int"),
                ("capacity_if_full", "capacity if memory were full", "num2")],
                caption="KV held before and after dropping the sessions that disconnected",
                csv=csv("prefix_reuse_evict"))}


@dataclass
class AuditPage:
    audits: list[dict]
    details: list[dict]      # the featured audits' breakdowns (_detail)
    prefix_rows: list[dict]
    prefix_totals: list[dict]
    evict: list[dict]
    prefix_chart: object | None
    audits_table: Table
    prefix_totals_table: Table | None    # the prefix-reuse tables, beside prefix_chart
    prefix_rows_table: Table | None
    evict_table: Table | None
    price_snapshots: list[dict] = field(default_factory=list)  # footer: the price data each audit used
    demo_only: bool = False  # every audit reads generated demo traffic: the page says DEMONSTRATION at its top


def context(q, site) -> AuditPage:
    audits = q("audit_list")
    details = [_detail(q, a, site) for a in _featured(audits)]
    return AuditPage(audits=audits, details=details, **_prefix(q, site), price_snapshots=_price_snapshots(audits),
                     audits_table=Table("audit-list", audits, [
                         ("audit_id", "audit", "text"), ("run_id", "run", "int"), ("format", "format", "text"),
                         ("model", "priced as", "text"), ("kv_bytes_per_token", "B/token", "int"),
                         ("kv_bytes_source", "B/token from", "text"), ("n_calls", "calls", "int"),
                         ("n_sessions", "sessions", "int"), ("n_rejects", "rejected", "int"),
                         ("overall_pcer", "PCER", "pct"), ("overall_spor", "SPOR", "pct"),
                         ("leakage_index", "leakage index", "pct"), ("idle_timeout_s", "idle timeout (s)", "int"),
                         ("n_spor_warnings", "SPOR warnings", "int"), ("n_kv_warnings", "KV warnings", "int"),
                         ("cost_usd", "cost ($)", "auto"), ("unpriced_calls", "unpriced calls", "int")],
                         caption="Every audit (run empty: a standalone kvreport audit)",
                         csv=site.csv_files.get("audits")),
                     demo_only=bool(audits) and all(a["run_id"] is not None for a in audits))
