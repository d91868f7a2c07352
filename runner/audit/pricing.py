"""What one token of context costs in KV-cache bytes, and how much memory there is to hold it.

Bytes per token: the figure measured from real cache tensors (kv_memory_v2) for that model when the DB
has one, else the formula at 16-bit (2 x layers x KV heads x head dim x 2 bytes). Built-in architectures
are priced from their hyperparameters without importing transformers, so an audit starts fast.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace


@dataclass(frozen=True)
class Pricing:
    bytes_per_token: float
    source: str   # 'measured' | 'formula'
    detail: str


@dataclass(frozen=True)
class Memory:
    bytes: int | None
    source: str | None


def _config(model: str):
    from ..models import BUILTIN, TEST_MODELS, load_config

    table = {**BUILTIN, **TEST_MODELS}
    if model in table:
        return SimpleNamespace(**table[model][1])
    return load_config(model)[0]  # a local checkpoint folder (raises a clear error for unknown names)


def formula(model: str, dtype_bytes: int = 2) -> Pricing:
    from ..kv_formula import kv_shape

    s = kv_shape(_config(model))
    bpt = s.bytes_per_token(dtype_bytes)
    return Pricing(float(bpt), "formula",
                   f"formula for {model}: 2 x {s.n_layers} layers x {s.n_kv_heads} KV heads x {s.head_dim} dims "
                   f"x {dtype_bytes} bytes = {bpt:,} B/token ({8 * dtype_bytes}-bit; no measurement in the DB)")


def _has(con, table: str, column: str | None = None) -> bool:
    sql = "SELECT count(*) FROM information_schema.columns WHERE table_name = ?"
    params = [table]
    if column:
        sql += " AND column_name = ?"
        params.append(column)
    return con.execute(sql, params).fetchone()[0] > 0


def measured(con, model: str) -> Pricing | None:
    """The newest measurement of `model` in the DB, 16-bit runs first (what serving uses)."""
    if con is None or not (_has(con, "kv_memory_v2") and _has(con, "runs")):
        return None
    row = con.execute("""
        SELECT m.run_id, r.dtype, m.seq_len, m.bytes_per_token
        FROM kv_memory_v2 m JOIN runs r USING (run_id)
        WHERE r.model = ? AND m.cached_tokens = m.seq_len
        ORDER BY r.dtype IN ('float16', 'bfloat16') DESC, m.run_id DESC, m.seq_len DESC, m.batch_size DESC
        LIMIT 1""", [model]).fetchone()
    if row is None:
        return None
    run_id, dtype, seq, bpt = row
    return Pricing(float(bpt), "measured",
                   f"measured for {model}: {bpt:,.0f} B/token from the cache tensors of run {run_id} "
                   f"({dtype}, {seq}-token prefill)")


def kv_pricing(model: str, con=None) -> Pricing:
    return measured(con, model) or formula(model)


def memory_from_db(con, model: str) -> Memory:
    """Memory to fit sessions into: measured free KV memory (kv_capacity_v3) when the DB has it, else a
    run's GPU memory (total, so an upper bound). None: the TTL sweep states its assumption instead."""
    if con is None:
        return Memory(None, None)
    if _has(con, "kv_capacity_v3", "free_bytes"):
        row = con.execute("""
            SELECT c.run_id, r.model, coalesce(r.gpu_name, r.device_name), max(c.free_bytes)
            FROM kv_capacity_v3 c JOIN runs r USING (run_id)
            WHERE c.free_bytes IS NOT NULL
            GROUP BY c.run_id, r.model, r.gpu_name, r.device_name
            ORDER BY r.model = ? DESC, c.run_id DESC LIMIT 1""", [model]).fetchone()
        if row:
            return Memory(int(row[3]), f"measured: free memory for KV in run {row[0]} ({row[1]} on "
                                       f"{row[2] or 'its device'}, kv_capacity_v3)")
    if _has(con, "runs", "gpu_memory_bytes"):
        row = con.execute("SELECT run_id, gpu_name, gpu_memory_bytes FROM runs WHERE gpu_memory_bytes IS NOT NULL "
                          "ORDER BY run_id DESC LIMIT 1").fetchone()
        if row:
            return Memory(int(row[2]), f"total GPU memory of run {row[0]} ({row[1]}); weights and activations "
                                       "not subtracted, so an upper bound")
    return Memory(None, None)


def memory_now(device) -> Memory:
    """Free memory measured right now on the device the run uses."""
    from ..probes import cuda_free_bytes, host_available

    if getattr(device, "type", "cpu") == "cuda":
        return Memory(cuda_free_bytes(device)[0], f"measured: free GPU memory now (torch.cuda.mem_get_info on {device})")
    free, source = host_available()
    return Memory(free, f"measured: {source}" if source else None)
