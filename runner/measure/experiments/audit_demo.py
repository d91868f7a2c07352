"""Audit: the built-in demo workload (runner/audit/demo.py), priced in this run's measured KV bytes.

The article's three sessions plus a generated multi-turn chat workload in OpenAI and Anthropic log
formats go through the same audit code as `kvreport audit` (in an in-memory DuckDB, then into the run's
DB with this experiment's other rows), so the audit page is never empty and always priced with the
model this run measured. Bytes/token come from cache_tensors when it ran; otherwise this experiment
measures them itself from one prefill's cache tensors. Free memory for the TTL sweep is measured now.
"""
from __future__ import annotations

import tempfile

import torch

from ...audit.demo import write_demo
from ...audit.engine import TABLES as AUDIT_TABLES
from ...audit.engine import AuditOptions, fetch, run_audit
from ...audit.kv_pricing import Memory, Pricing
from ...audit.tokenizer import load_tokenizer
from ...core.connections import connect
from ...core.migrations import create_schema
from ..devices import dtype_name
from ..kv_cache import cache_bytes, forward_with_cache
from ..probes import cuda_free_bytes, host_available
from . import Result, RunContext

NAME = "audit_demo"
GROUP = "traffic"
ORDER = 10
TABLES = AUDIT_TABLES  # the audit tables it fills, through runner/audit (the engine's list)


def _pricing(ctx: RunContext):
    dt = dtype_name(ctx.dtype)
    bpt = ctx.shared.get("measured_bytes_per_token")
    if bpt:
        return _deployment(ctx, float(bpt), f"measured in this run: {bpt:,.0f} B/token from {ctx.loaded.name}'s "
                                            f"cache tensors at {dt} (cache_tensors)")

    seq = min(32, ctx.max_positions)
    with torch.no_grad():
        _, cache = forward_with_cache(ctx.model, ctx.input_ids(1, seq))
    bpt = cache_bytes(cache) / seq
    ctx.shared["measured_bytes_per_token"] = bpt
    return _deployment(ctx, float(bpt), f"measured here: {bpt:,.0f} B/token from a {seq}-token prefill of "
                                        f"{ctx.loaded.name} at {dt} (cache_tensors did not run)")


DEPLOYMENT_BYTES = 2  # a served model's KV is 16-bit (float16/bfloat16), whatever dtype this run measured at


def _deployment(ctx: RunContext, bpt: float, how: str):
    """Traffic is priced as it would be served: the KV at 16-bit. A CPU run measures at float32, which would
    double every footprint; the measured size is scaled by element size (exact: same shapes, fewer bytes)."""
    element = ctx.dtype.itemsize
    if element == DEPLOYMENT_BYTES:
        return Pricing(bpt, "measured", f"{how}; the 16-bit deployment dtype")
    priced = bpt * DEPLOYMENT_BYTES / element
    return Pricing(priced, "measured", f"{how}, priced at 16 bits (the deployment dtype): {priced:,.0f} B/token")


def _relabel(rows: list[dict], folder: str) -> None:
    # Temp paths would make every run's rows differ; the files are the same demo every time.
    for r in rows:
        for key in ("source", "sources", "tokenizer"):
            if isinstance(r.get(key), str):
                r[key] = r[key].replace(folder.rstrip("/") + "/", "demo/")


def memory_now(device) -> Memory:
    """Free memory measured right now on the device the run uses: what the demo's sessions must fit into."""
    if getattr(device, "type", "cpu") == "cuda":
        return Memory(cuda_free_bytes(device)[0],
                      f"measured: free GPU memory now (torch.cuda.mem_get_info on {device})")
    free, source = host_available()
    return Memory(free, f"measured: {source}" if source else None)


def run(ctx: RunContext) -> Result:
    pricing = _pricing(ctx)
    memory = memory_now(ctx.device)
    with tempfile.TemporaryDirectory(prefix="kvreport-demo-") as folder:
        ctx.progress("writing the demo logs (article sessions + generated OpenAI/Anthropic chats)")
        paths, tok_path = write_demo(folder)
        con = connect()  # in memory: the run's store writes the rows, with the experiment's status
        try:
            create_schema(con)  # the audit works against the DB's own table definitions
            res = run_audit(con, paths, AuditOptions(), audit_id=f"run-{ctx.run_id}-demo",
                            run_id=ctx.run_id, model=ctx.loaded.name, pricing=pricing, memory=memory,
                            tokenizer=load_tokenizer(tok_path))
            tables = fetch(con, res)
        finally:
            con.close()
        for rows in tables.values():
            _relabel(rows, folder)
    s = res.summary
    pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    return Result(tables, [
        f"demo audit ({s['n_calls']} calls, {s['n_sessions']} sessions, {pricing.bytes_per_token:,.0f} B/token "
        f"at 16 bits, {pricing.source}): PCER {pct(s['overall_pcer'])}, SPOR {pct(s['overall_spor'])}, "
        f"KV leakage index {pct(s['leakage_index'])} (idle > {s['idle_timeout_s']:g}s)"])
