"""Capacity: request traces replayed through a block-level prefix cache (`kvreport replay`): the token-weighted
hit rate against pool size with the GPU counts marked, the unlimited-capacity ceiling, TTL pools beside LRU,
and the answer first: how many GPUs (and how much host memory) reach the target share of the ceiling.

Every figure is a simulation over a published or user-supplied trace with the model facts' analytic bytes,
never a measurement on an engine; trace paths and reject reasons are untrusted text (autoescaped)."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis import charts
from kvreport.analysis.site import PageSpec, Table

PAGE = PageSpec(slug="capacity", title="Capacity", order=75)
MAX_DETAILED = 3  # the newest replays get a chart and their tables; the list has every replay


def _cid(replay_id: str, name: str) -> str:
    return f"capacity-{replay_id}-{name}"


def _detail(q, r: dict) -> dict:
    rid = r["replay_id"]
    curve = q("replay_curve", replay_id=rid)
    lru = [c for c in curve if c["policy"] == "lru"]
    host = [c for c in curve if c["policy"] == "lru+host"]
    series = {"GPU pool (LRU)": ([c["capacity_tokens"] for c in lru], [c["hit_rate"] for c in lru])}
    if host:
        series["GPU pool + host tier"] = ([c["capacity_tokens"] for c in host], [c["hit_rate"] for c in host])
    marks = [(r["ceiling_hit_rate"], f"ceiling {100 * r['ceiling_hit_rate']:.1f}%"),
             (r["target_hit_rate"], f"target: {r['target']:.0%} of the ceiling")]
    chart = charts.lines(
        _cid(rid, "curve"), series, f"Hit rate against GPU pool size · {r['model']}, {r['gpu']}, TP {r['tp']}",
        "Token-weighted prefix-cache hit rate of the replayed trace against the GPU KV pool in tokens (the host "
        "tier's line: the same GPU pools with the offload tier behind them, plotted at the GPU pool size); each "
        "point is a GPU count (the table beside it names them); dashed: the unlimited-capacity ceiling and the "
        "target share of it.", "GPU KV pool (tokens)", "hit rate", log_x=True, hlines=marks,
        rows=curve, columns=list(curve[0]) if curve else None)
    ttl = q("replay_ttl", replay_id=rid)
    rejects = q("replay_rejects", replay_id=rid)
    return {
        "replay": r, "chart": chart,
        "curve_table": Table(_cid(rid, "curve-table"), curve, [
            ("gpus", "GPUs", "int"), ("policy", "pool", "text"), ("capacity_tokens", "GPU pool tokens", "int"),
            ("hit_rate", "hit rate", "pct"), ("prefill_tokens_saved", "prefill tokens saved", "int"),
            ("host_bytes", "host tier", "bytes"), ("capacity_bytes", "GPU KV bytes", "bytes"),
            ("peak_blocks", "peak blocks", "int"), ("mean_blocks", "mean blocks", "int"),
            ("evictions", "blocks evicted", "int"), ("unadmitted", "not admitted", "int")],
            caption="Every pool replayed (GPUs –: a size given with --capacity-tokens); blocks are "
                    f"{r['engine_block_tokens']}-token engine blocks; peak and mean sampled at arrivals"),
        "ttl_table": Table(_cid(rid, "ttl"), ttl, [
            ("ttl_s", "TTL (s)", "int"), ("hit_rate", "hit rate", "pct"),
            ("prefill_tokens_saved", "prefill tokens saved", "int"), ("peak_blocks", "peak blocks held", "int"),
            ("mean_blocks", "mean blocks held", "int"), ("expired", "blocks expired", "int")],
            caption="TTL eviction beside LRU: unlimited capacity, unreferenced blocks dropped this long after "
                    "release (the providers' 5-minute and 1-hour cache lifetimes)"),
        "rejects_table": None if not rejects else Table(_cid(rid, "rejects"), rejects, [
            ("file", "file", "text"), ("line", "line", "int"), ("field", "field", "text"),
            ("reason", "reason", "text")], caption="Rejected lines (the first 100)"),
    }


@dataclass
class CapacityPage:
    answer: dict | None
    replays: list[dict]
    details: list[dict]
    list_table: Table | None


def context(q, site) -> CapacityPage:
    replays = q("replay_list")
    details = [_detail(q, r) for r in replays[:MAX_DETAILED]]
    return CapacityPage(
        answer=replays[0] if replays else None, replays=replays, details=details,
        list_table=None if not replays else Table("capacity-replays", replays, [
            ("replay_id", "replay", "text"), ("model", "model", "text"), ("gpu", "GPU", "text"), ("tp", "TP", "int"),
            ("n_requests", "requests", "int"), ("n_rejects", "rejects", "int"),
            ("ceiling_hit_rate", "ceiling", "pct"), ("gpus_for_target", "GPUs for target", "int"),
            ("gpus_for_target_with_host", "with host tier", "int"), ("target", "target", "pct"),
            ("sources", "trace", "text")], caption="Every replay in this DB, newest first"))
