"""Writing a replay into the DB (schema step 009_replay.sql): one transaction, parameterised inserts."""
from __future__ import annotations

import datetime as _dt
import json

from ..core.connections import transaction

_REPLAY_COLUMNS = (
    "replay_id", "created_at", "sources", "shapes", "model", "dtype", "gpu", "gpu_bytes", "tp",
    "engine_block_tokens", "trace_block_tokens", "block_mapping", "block_bytes_per_rank", "block_bytes_host",
    "pool_blocks_per_group", "pool_basis", "decode_tokens_per_s", "n_lines", "n_requests", "n_rejects",
    "input_tokens", "ceiling_hit_rate", "ceiling_prefill_tokens_saved", "ceiling_tokens", "target",
    "gpus_for_target", "hit_rate_at_target", "host_bytes_per_gpu", "gpus_for_target_with_host",
    "host_bytes_at_target", "duration_s")
_CURVE_COLUMNS = ("replay_id", "policy", "capacity_tokens", "capacity_bytes", "gpus", "host_bytes", "hit_rate",
                  "prefill_tokens_saved", "peak_blocks", "mean_blocks", "evictions", "unadmitted")
_TTL_COLUMNS = ("replay_id", "ttl_s", "hit_rate", "prefill_tokens_saved", "peak_blocks", "mean_blocks", "expired")
_REJECT_COLUMNS = ("replay_id", "file", "line", "field", "reason")


def next_replay_id(con) -> str:
    """replay-N, N one more than any stored."""
    ids = [r[0] for r in con.execute("SELECT replay_id FROM replays").fetchall()]
    numbers = [int(i.split("-", 1)[1]) for i in ids if i.startswith("replay-") and i[7:].isdigit()]
    return f"replay-{max(numbers, default=0) + 1}"


def _insert(con, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    if rows:
        names = ", ".join(f'"{c}"' for c in columns)
        con.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})', rows)


def persist(con, replay_id: str, result: dict) -> None:
    """The replay's rows in every replay table, all or nothing."""
    s = result["setup"]
    at = result["at_target"] or {}
    at_host = result["at_target_with_host"] or {}
    row = {
        "replay_id": replay_id, "created_at": _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None),
        "sources": " | ".join(s["sources"]), "shapes": json.dumps(result["shapes"], sort_keys=True),
        "model": s["model"], "dtype": s["dtype"], "gpu": s["gpu"], "gpu_bytes": s["gpu_bytes"], "tp": s["tp"],
        "engine_block_tokens": s["engine_block_tokens"], "trace_block_tokens": s["trace_block_tokens"],
        "block_mapping": s["block_mapping"], "block_bytes_per_rank": s["block_bytes_per_rank"],
        "block_bytes_host": s["block_bytes_host"], "pool_blocks_per_group": s["pool_blocks_per_group"],
        "pool_basis": s["pool_basis"], "decode_tokens_per_s": s["decode_tokens_per_s"],
        "n_lines": result["lines"], "n_requests": result["requests"], "n_rejects": result["rejects"],
        "input_tokens": result["input_tokens"], "ceiling_hit_rate": result["ceiling_hit_rate"],
        "ceiling_prefill_tokens_saved": result["ceiling_prefill_tokens_saved"],
        "ceiling_tokens": result["ceiling_tokens"], "target": result["target"],
        "gpus_for_target": result["gpus_for_target"], "hit_rate_at_target": at.get("hit_rate"),
        "host_bytes_per_gpu": s["host_bytes_per_gpu"],
        "gpus_for_target_with_host": result["gpus_for_target_with_host"],
        "host_bytes_at_target": at_host.get("host_bytes"), "duration_s": result["seconds"],
    }
    with transaction(con):
        _insert(con, "replays", _REPLAY_COLUMNS, [tuple(row[c] for c in _REPLAY_COLUMNS)])
        curve = [("lru", p) for p in result["curve"]] + [("lru+host", p) for p in result["curve_with_host"]]
        _insert(con, "replay_curve", _CURVE_COLUMNS, [
            (replay_id, policy, p["capacity_tokens"], p["capacity_bytes"], p["gpus"], p["host_bytes"], p["hit_rate"],
             p["prefill_tokens_saved"], p["peak_blocks"], p["mean_blocks"], p["evictions"], p["unadmitted"])
            for policy, p in curve])
        _insert(con, "replay_ttl", _TTL_COLUMNS, [
            (replay_id, t["ttl_s"], t["hit_rate"], t["prefill_tokens_saved"], t["peak_blocks"], t["mean_blocks"],
             t["expired"]) for t in result["ttl"]])
        _insert(con, "replay_rejects", _REJECT_COLUMNS, [
            (replay_id, r["file"], r["line"], r["field"], r["reason"]) for r in result["reject_lines"]])
