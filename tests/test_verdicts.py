"""Every verdict every claim_*.sql can give, each reached by a minimal fixture written through the Store and
asserted exactly by claim id, after the ledger's one rule (claims_verdicts.sql) has been applied.

Each case names the branch it covers. Runs are numbered 1, 2, ... in the order a case lists them; an
expected row is (run id or None for the no-run row, verdict) or (run, verdict, the data's own verdict) where
the rule changed it. Only the claim query under test runs (the ledger code is the real one), so a case
costs about a tenth of a second.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field

import duckdb
import pytest

from kvreport.analysis import queries as queries_mod
from kvreport.analysis import claims as claims_mod
from kvreport.analysis.verdicts import SQL_PARAMETERS, VERDICTS, Verdict
from kvreport.runner.core.store import Store

from htmldoc import Doc

GPT2_PARAMS = 124_439_808  # tied embeddings counted once
GPT2_BPT16 = 2 * 12 * 12 * 64 * 2  # 36,864 B/token at 2-byte elements
RTX = "NVIDIA GeForce RTX 2070"
PENDING = Verdict.GPU_PENDING


@dataclass
class Run:
    """One run: its `runs` row and the rows of one experiment (table -> rows)."""
    meta: dict
    tables: dict = field(default_factory=dict)
    experiment: str = "fixture"
    status: str = "ok"
    reason: str | None = None


def cuda(model="gpt2", dtype="float16", **meta) -> dict:
    return {"device_kind": "cuda", "device_name": "NVIDIA H200", "gpu_name": "NVIDIA H200", "model": model,
            "dtype": dtype, **meta}


def cpu(model="gpt2", dtype="float32", **meta) -> dict:
    return {"device_kind": "cpu", "device_name": "Some CPU", "model": model, "dtype": dtype, **meta}


@dataclass
class Case:
    query: str
    branch: str       # what this case covers, in words
    runs: list
    expect: dict      # claim_id -> [(run_id | None, verdict[, data_verdict]), ...] in ledger order
    values: dict = field(default_factory=dict)  # (claim_id, run_id | None) -> the published measured_value

    @property
    def id(self) -> str:
        return f"{self.query[6:]}: {self.branch}"


# --- row builders (only the columns the claim queries read) -----------------------------------------

def xover(model, source, batch, tokens, bpt=GPT2_BPT16, weights=2 * GPT2_PARAMS, heads=(12, 12), **kw):
    return {"model": model, "source": source, "dtype": "float16", "kv_bytes_per_token": float(bpt),
            "weight_bytes": weights, "batch_size": batch, "crossover_tokens": tokens, "n_heads": heads[0],
            "n_kv_heads": heads[1], "n_layers": 12, "head_dim": 64, "parameters": weights // 2, "dtype_bytes": 2,
            "crossover_total_tokens": None if tokens is None else tokens * batch, "max_positions": 1024, **kw}


def gpt2_formula(tokens):
    return xover("gpt2", "formula", 1, tokens)


LLAMA2 = {"bpt": 524_288, "weights": 13_476_839_424, "heads": (32, 32)}
LLAMA3 = {"bpt": 131_072, "weights": 16_060_522_496, "heads": (32, 8)}


def seven_b(source, t1, t2, model="llama-2-7b", shape=LLAMA2):
    return [xover(model, source, b, t, **shape) for b, t in ((1, t1), (2, t2), (64, None if t2 is None else t2 / 32))]


def memory_rows(bpt, formula=None, heads=(12, 12), layers=12, head_dim=64, seqs=(16, 64), bpts=None, match=True):
    """cache_tensors at each sequence length (uncapped) and kv_per_layer with the cache's k_shape."""
    formula = bpt if formula is None else formula
    bpts = bpts or [bpt] * len(seqs)
    v2 = [{"seq_len": s, "batch_size": 1, "kv_bytes": int(s * b), "bytes_per_token": float(b),
           "formula_bytes_per_token": formula, "expected_kv_bytes": s * formula, "cached_tokens": s,
           "n_layers": layers, "n_heads": heads[0], "n_kv_heads": heads[1], "head_dim": head_dim,
           "match": match} for s, b in zip(seqs, bpts)]
    per_layer = [{"layer": 0, "seq_len": seqs[-1], "batch_size": 1, "k_bytes": 1, "v_bytes": 1,
                  "cached_tokens": seqs[-1], "k_shape": f"1x{heads[1]}x{seqs[-1]}x{head_dim}"}]
    return {"cache_tensors": v2, "kv_per_layer": per_layer}


def layered_rows(kinds, growth, state=0, heads=(16, 2), head_dim=256, seqs=(16, 64)):
    """A cache of several layer kinds (kv_per_layer.kind, one row per layer; K shape on the layers that hold
    K): `growth` bytes per token on top of `state` constant bytes per request, as a hybrid or MLA model measures."""
    v2 = [{"seq_len": s, "batch_size": 1, "kv_bytes": state + s * growth, "bytes_per_token": (state + s * growth) / s,
           "formula_bytes_per_token": growth, "expected_kv_bytes": state + s * growth, "cached_tokens": s,
           "n_layers": len(kinds), "n_heads": heads[0], "n_kv_heads": heads[1], "head_dim": head_dim, "match": True}
          for s in seqs]
    per_layer = [{"layer": i, "kind": kind, "seq_len": seqs[-1], "batch_size": 1, "k_bytes": 1, "v_bytes": 1,
                  "cached_tokens": seqs[-1],
                  "k_shape": None if kind.endswith("_state") else f"1x{heads[1]}x{seqs[-1]}x{head_dim}"}
                 for i, kind in enumerate(kinds)]
    return {"cache_tensors": v2, "kv_per_layer": per_layer}


# A hybrid: 1 attention layer (2 KV heads x 256 dims at 2 bytes: 2,048 B/token) beside 3 linear-attention layers
# holding 1 MiB of state; the seed's formula over all 4 layers and 16 heads gives 2 x 4 x 16 x 256 x 2 = 65,536.
HYBRID = layered_rows(["linear_state", "linear_state", "linear_state", "full"], growth=2048, state=2 ** 20)
# Multi-head latent attention: 2 layers, each caching one latent of 576 values at 2 bytes: 2,304 B/token.
MLA = layered_rows(["mla_latent", "mla_latent"], growth=2 * 576 * 2, heads=(128, 1), head_dim=576)


def capacity(bpr=512 * GPT2_BPT16, stop="cap", measured=20, ceiling_max=300, theoretical=414,
             free=int(7.5 * 2**30), weights=2 * GPT2_PARAMS, dtype_bytes=2, seq=512):
    return {"seq_len": seq, "max_requests_measured": measured, "theoretical_max_requests": theoretical,
            "bytes_per_request": bpr, "free_bytes": free, "ceiling_bytes": int(0.9 * free), "ceiling_fraction": 0.9,
            "stop_reason": stop,
            "ceiling_max_requests": ceiling_max, "weight_bytes": weights, "dtype_bytes": dtype_bytes}


def decode(rows, batch=1, growth=GPT2_BPT16, match=True, roof=0.1, over_roof=None, dram_sized=None, mode="eager"):
    """(prefix_len, step_ms) pairs at one batch size and decode mode."""
    return [{"prefix_len": p, "batch_size": batch, "step_ms": ms, "kv_growth_bytes": growth * batch,
             "growth_match": match, "pct_of_roof": roof, "pct_of_peak": None, "achieved_gbs": 1.0,
             "weights_floor_ms": 1.0, "spread_wide": False, "mode": mode, "over_roof": over_roof,
             "dram_sized": dram_sized} for p, ms in rows]


def compact(method, kv_bytes, gbs, pct_peak=None, pct_roof=0.3, peak=None, over_roof=None, dram_sized=None):
    return {"method": method, "kv_bytes": kv_bytes, "bytes_moved": 2 * kv_bytes, "gbs": gbs, "time_ms": 1.0,
            "pct_of_peak": pct_peak, "pct_of_roof": pct_roof, "peak_gbs": peak, "over_roof": over_roof,
            "dram_sized": dram_sized}


def frag(retained_mb, evicted_mb):
    mb = 1_000_000
    return [{"allocator": "default", "phase": "after_evict", "allocated_bytes": 100 * mb,
             "reserved_bytes": (100 + retained_mb) * mb, "evicted_bytes": evicted_mb * mb},
            {"allocator": "default", "phase": "after_empty_cache", "allocated_bytes": 100 * mb,
             "reserved_bytes": 100 * mb, "evicted_bytes": evicted_mb * mb}]


def interference(compact_ms, decode_ms, both_ms, compact_gbs=20.0, violated=False):
    common = {"concurrency": "cuda_streams", "compact_bytes": 66_000_000, "decode_bytes": 1_000_000,
              "roof_gbs": None, "bound_violated": violated}
    return [{**common, "mode": "compact", "time_ms": compact_ms, "bytes_moved": 66_000_000, "gbs": compact_gbs},
            {**common, "mode": "decode", "time_ms": decode_ms, "bytes_moved": 1_000_000, "gbs": 1.0},
            {**common, "mode": "both", "time_ms": both_ms, "bytes_moved": 67_000_000, "gbs": 1.0}]


# The article's three sessions: (session, PCER, SPOR, KV bytes at 16-bit, SPOR warning) as the article has them.
SESSIONS = [("sess-001", 0.930233, 0.930233, 3.68e6, True), ("sess-002", 0.0, 0.987654, 6.23e6, True),
            ("sess-003", 0.592593, 0.111111, 21.0e6, False)]


def demo_audit(run_id, kv_scale=1.0, kv_bytes=None, spor_flags=None, pcer=None, bpt=1500.0):
    """The demo audit every run makes ('run-N-demo') over the article's sessions."""
    audit_id = f"run-{run_id}-demo"
    kv_bytes = kv_bytes or [s[3] * kv_scale for s in SESSIONS]
    spor_flags = spor_flags or [s[4] for s in SESSIONS]
    rows = [{"audit_id": audit_id, "session_id": sid, "pcer": p if pcer is None else pcer[i], "spor": spor,
             "kv_cache_bytes": kv, "kv_warning": kv > 15e6, "spor_warning": flag}
            for i, ((sid, p, spor, _, _), kv, flag) in enumerate(zip(SESSIONS, kv_bytes, spor_flags))]
    return {"audits": [{"audit_id": audit_id, "kv_bytes_per_token": bpt * kv_scale, "kv_bytes_source": "measured",
                        "kv_max_bytes": 15_000_000, "spor_max": 0.85}],
            "token_audit": rows}


def _priced_at_16_bits(tables: dict) -> dict:
    """A demo audit as newer runs store it: KV already priced at the 16-bit deployment dtype."""
    tables["audits"][0]["kv_bytes_detail"] = "measured here, priced at 16 bits (the deployment dtype)"
    return tables


def bill(audit_id, stable_usd, nocache_usd=100.0):
    return {"audits": [{"audit_id": audit_id, "whatif_calls": 10, "whatif_nocache_usd": nocache_usd,
                        "whatif_stable_usd": stable_usd, "whatif_achievable_usd": stable_usd,
                        "whatif_actual_usd": nocache_usd, "whatif_stable_pcer": 0.5,
                        "price_snapshot_date": "2026-11-30"}]}


def ttl(audit_id, multiplier):
    return {"audits": [{"audit_id": audit_id, "leakage_index": 1 - 1 / multiplier, "idle_timeout_s": 300.0}],
            "token_ttl_sweep": [{"audit_id": audit_id, "ttl_s": 300.0, "capacity_multiplier": multiplier,
                                 "recompute_tokens": 1000}]}


def reuse(reuse_ms, full_ms, exact=True, spread=0.05):
    return {"prefix_reuse": [
        {"turn": 3, "mode": m, "time_ms": t, "p25_ms": t * (1 - spread), "p75_ms": t * (1 + spread),
         "computed_tokens": tokens, "logits_match": exact}
        for m, t, tokens in (("session_prefix", reuse_ms, 20), ("recompute", full_ms, 400))]}


def evict(freed, allocator_freed):
    # Same keys in every row: the Store takes a table's columns from its first row.
    return {"prefix_reuse_evict": [
        {"phase": "before_evict", "sessions_held": 4, "disconnected_held": 2, "kv_bytes_held": 2 * freed + 1,
         "freed_bytes": None, "allocator_freed_bytes": None},
        {"phase": "after_evict", "sessions_held": 2, "disconnected_held": 0, "kv_bytes_held": freed + 1,
         "freed_bytes": freed, "allocator_freed_bytes": allocator_freed}]}


# --- the cases -----------------------------------------------------------------------------------------

CASES = [
    # claim_crossover.sql (arithmetic: the rule never changes these, on any device)
    Case("claim_crossover", "no crossover rows: every claim not measured", [Run(cpu())],
         {"crossover-gpt2-one-request": [(None, "not measured")], "crossover-gpt2-16x512": [(None, "not measured")],
          "crossover-7b-388": [(None, "not measured")]}),
    Case("claim_crossover", "GPT-2 formula at 6,751.3 tokens: one request confirmed, 8,192 > it confirmed",
         [Run(cpu(), {"crossover": [gpt2_formula(6751.3)]})],
         {"crossover-gpt2-one-request": [(None, "confirmed")], "crossover-gpt2-16x512": [(None, "confirmed")]},
         {("crossover-gpt2-one-request", None):
          "formula: 248,879,616 B weights (237.35 MiB) / 36,864 B per token = 6,751.3 tokens",
          ("crossover-gpt2-16x512", None):  # 8,192 / 6,751.3; floor(6,751.3 / 512) + 1 = 14
          "formula: 16 x 512 = 8,192 tokens = 1.21x the weights; KV passes them from 14 requests of 512 tokens"}),
    Case("claim_crossover", "GPT-2 crossover at 9,000 tokens: 6,751 refuted and 16 x 512 below the weights refuted",
         [Run(cpu(), {"crossover": [gpt2_formula(9000.0)]})],
         {"crossover-gpt2-one-request": [(None, "refuted")], "crossover-gpt2-16x512": [(None, "refuted")]}),
    Case("claim_crossover", "GPT-2 measured row of a gpt2 run, beside the formula row",
         [Run(cpu(), {"crossover": [gpt2_formula(6751.3), xover("gpt2", "measured", 1, 6752.9)]})],
         {"crossover-gpt2-one-request": [(None, "confirmed"), (1, "refuted")]}),
    Case("claim_crossover", "7B formula: MHA llama-2-7b at 25,705 tokens, falling with batch: refuted",
         [Run(cpu(), {"crossover": seven_b("formula", 25_705.0, 12_852.5)
                      + seven_b("formula", 122_532.0, 61_266.0, "llama-3.1-8b", LLAMA3)})],
         {"crossover-7b-388": [(None, "refuted")]}),
    Case("claim_crossover", "7B formula within 2x of 388 and growing with batch: confirmed (the threshold's inside)",
         [Run(cpu(), {"crossover": seven_b("formula", 700.0, 1400.0)
                      + seven_b("formula", 2800.0, 5600.0, "llama-3.1-8b", LLAMA3)})],
         {"crossover-7b-388": [(None, "confirmed")]}),
    Case("claim_crossover", "7B formula just past 2x of 388 (800 tokens): refuted (the threshold's outside)",
         [Run(cpu(), {"crossover": seven_b("formula", 800.0, 1600.0)
                      + seven_b("formula", 3200.0, 6400.0, "llama-3.1-8b", LLAMA3)})],
         {"crossover-7b-388": [(None, "refuted")]}),
    Case("claim_crossover", "7B formula at 388 per request that falls with batch (t2 < t1): refuted",
         [Run(cpu(), {"crossover": seven_b("formula", 388.0, 194.0)
                      + seven_b("formula", 1552.0, 776.0, "llama-3.1-8b", LLAMA3)})],
         {"crossover-7b-388": [(None, "refuted")]}),
    Case("claim_crossover", "measured 7B with a NULL crossover (sliding window caps the cache): the NULL guard refutes",
         [Run(cpu("mistral-7b"), {"crossover": seven_b("measured", None, None, "mistral-7b")})],
         {"crossover-7b-388": [(1, "refuted")]}),
    Case("claim_crossover", "measured 7B near 388 and growing with batch: confirmed; far from it: refuted",
         [Run(cuda("llama-2-7b"), {"crossover": seven_b("measured", 400.0, 800.0)}),
          Run(cuda("llama-3.1-8b"), {"crossover": seven_b("measured", 122_532.0, 61_266.0, "llama-3.1-8b",
                                                                LLAMA3)})],
         {"crossover-7b-388": [(1, "confirmed"), (2, "refuted")]}),

    # claim_memory.sql (arithmetic except memory-v1-vs-v2, an allocator measurement)
    Case("claim_memory", "no runs: the 36 KiB arithmetic confirmed, the rest not measured", [Run(cpu("tiny-gpt2"))],
         {"memory-gpt2-arithmetic": [(None, "confirmed")], "memory-gpt2-measured": [(None, "not measured")],
          "memory-v1-vs-v2": [(None, "not measured")]},
         {("memory-gpt2-arithmetic", None): "2 x 12 x 12 x 64 x 2 = 36,864 B = 36 KiB"}),
    Case("claim_memory", "GPT-2 measured on a float32 run: 73,728 B/token scaled by element size is confirmed",
         [Run(cpu("gpt2", "float32"), memory_rows(2 * GPT2_BPT16))],
         {"memory-gpt2-measured": [(1, "confirmed")], "memory-formula": [(1, "confirmed")],
          "memory-all-lengths": [(1, "confirmed")]},
         {("memory-gpt2-measured", 1): "73,728 B/token at float32 = 36,864 B/token at 2 B/element"}),
    Case("claim_memory", "GPT-2 measured at float16: 36,864 B/token confirmed",
         [Run(cuda("gpt2", "float16"), memory_rows(GPT2_BPT16))],
         {"memory-gpt2-measured": [(1, "confirmed")]}),
    Case("claim_memory", "GPT-2 measured at float32 off the formula (80,000 B/token): refuted",
         [Run(cpu("gpt2", "float32"), memory_rows(80_000.0, formula=2 * GPT2_BPT16))],
         {"memory-gpt2-measured": [(1, "refuted")], "memory-formula": [(1, "refuted")]}),
    Case("claim_memory", "grouped-query attention: the n_heads formula over-counts, refuted",
         [Run(cpu("tiny-llama-gqa"), memory_rows(2 * 2 * 2 * 16 * 4, heads=(8, 2), layers=2, head_dim=16))],
         {"memory-formula": [(1, "refuted")]}),
    Case("claim_memory", "a hybrid: the formula over every layer and head refuted on the growth, the fixed state apart",
         [Run(cpu("hybrid-model", "bfloat16"), HYBRID)],
         {"memory-formula": [(1, "refuted")], "memory-all-lengths": [(1, "expected")]},
         {("memory-formula", 1): "2,048 B/token growth measured (+ 1 MiB of fixed state per request); "
                                 "the profiler write-up's formula gives 65,536"}),
    Case("claim_memory", "multi-head latent attention: the per-head formula does not describe a latent cache",
         [Run(cpu("mla-model", "bfloat16"), MLA)],
         {"memory-formula": [(1, "refuted")], "memory-all-lengths": [(1, "confirmed")]},
         {("memory-formula", 1): "2,304 B/token measured: one latent of 576 values per layer; the profiler "
                                 "write-up's formula counts K and V per head"}),
    Case("claim_memory", "attention-head count not recorded anywhere: the formula not measured",
         [Run(cpu("tiny-gpt2"), memory_rows(2 * 2 * 4 * 16 * 4, heads=(None, 4), layers=2, head_dim=16))],
         {"memory-formula": [(1, "not measured")]}),
    Case("claim_memory", "sliding-window model: bytes/token fall with length yet match the formula: expected",
         [Run(cpu("mistral-7b"), memory_rows(1000.0, seqs=(16, 64), bpts=[1000.0, 800.0]))],
         {"memory-all-lengths": [(1, "expected")]}),
    Case("claim_memory", "a shape that does not match the formula: all-lengths refuted",
         [Run(cpu("tiny-gpt2"), memory_rows(1000.0, match=False))],
         {"memory-all-lengths": [(1, "refuted")]}),
    Case("claim_memory", "allocator delta above the cache on a GPU run: v1-vs-v2 confirmed; equal to it: refuted",
         [Run(cuda(), {"allocator_memory": [{"bytes_per_token": 40_000.0, "formula_bytes_per_token": 36_864,
                                      "cache_only_delta_bytes": 1, "expected_kv_bytes": 1}]}),
          Run(cuda("gpt2", "bfloat16"), {"allocator_memory": [{"bytes_per_token": 36_864.0, "formula_bytes_per_token": 36_864,
                                                        "cache_only_delta_bytes": 1, "expected_kv_bytes": 1}]})],
         {"memory-v1-vs-v2": [(1, "confirmed"), (2, "refuted")]}),
    Case("claim_memory", "allocator measurement from a CPU run: not yet measured on a GPU (figure kept as context)",
         [Run(cpu(), {"allocator_memory": [{"bytes_per_token": 40_000.0, "formula_bytes_per_token": 36_864,
                                     "cache_only_delta_bytes": 1, "expected_kv_bytes": 1}]})],
         {"memory-v1-vs-v2": [(1, PENDING, "confirmed")]}),

    # claim_pressure.sql (request bytes arithmetic; what fits and what is free are GPU measurements)
    Case("claim_pressure", "no 512-token gpt2 rows: 882 MiB and 414 from the seed's arithmetic only",
         [Run(cpu())],
         {"pressure-49x512-bytes": [(None, "confirmed")], "pressure-49-fit": [(None, "not measured")],
          "pressure-kv-vs-model": [(None, "not measured")], "pressure-theoretical-max": [(None, "inconsistent")]},
         {("pressure-49x512-bytes", None): "49 x 512 x 36,864 B = 924,844,032 B = 882.0 MiB (924.8 MB)",
          # floor(7.5 x 2^30 / 18 MiB) = 426, floor(7.5e9 / 18 MiB) = 397, 414 x 18 MiB = 7,452 MiB = 7.28 GiB
          ("pressure-theoretical-max", None): "7.5 GiB / 18 MiB = 426; 7.5 GB (SI) / 18 MiB = 397; 414 needs 7.28 GiB free"}),
    Case("claim_pressure", "18 MiB requests at float16 on a GPU: bytes and 3.7x confirmed; 414 of 7.5 GiB confirmed",
         [Run(cuda(), {"concurrent_capacity": [capacity()]})],
         {"pressure-49x512-bytes": [(None, "confirmed"), (1, "confirmed")],
          "pressure-kv-vs-model": [(1, "confirmed")],
          "pressure-theoretical-max": [(None, "inconsistent"), (1, "confirmed")]}),
    Case("claim_pressure", "18 MiB at float32 (36 MiB/request) scaled to 2-byte elements: 882 MiB confirmed",
         [Run(cpu("gpt2", "float32"), {"concurrent_capacity": [capacity(bpr=2 * 512 * GPT2_BPT16, dtype_bytes=4,
                                                                   weights=4 * GPT2_PARAMS)]})],
         {"pressure-49x512-bytes": [(None, "confirmed"), (1, "confirmed")], "pressure-kv-vs-model": [(1, "confirmed")]}),
    Case("claim_pressure", "other request size and weights: bytes refuted, 3.7x refuted, 415 of 7.5 GiB refuted",
         [Run(cuda(), {"concurrent_capacity": [capacity(bpr=20 * 2**20, weights=GPT2_PARAMS, theoretical=415)]})],
         {"pressure-49x512-bytes": [(None, "confirmed"), (1, "refuted")], "pressure-kv-vs-model": [(1, "refuted")],
          "pressure-theoretical-max": [(None, "inconsistent"), (1, "refuted")]}),
    Case("claim_pressure", "theoretical max on a GPU with 139 GiB free: differs by hardware",
         [Run(cuda(), {"concurrent_capacity": [capacity(free=139 * 2**30, theoretical=7900)]})],
         {"pressure-theoretical-max": [(None, "inconsistent"), (1, "differs by hardware")]}),
    Case("claim_pressure", "49-fit: an OOM below 49 on a GPU refutes",
         [Run(cuda(), {"concurrent_capacity": [capacity(stop="oom", measured=30)]})],
         {"pressure-49-fit": [(1, "refuted")]}),
    Case("claim_pressure", "49-fit: 49 or more admitted on a GPU is expected",
         [Run(cuda(), {"concurrent_capacity": [capacity(stop="oom", measured=60)]})],
         {"pressure-49-fit": [(1, "expected")]}),
    Case("claim_pressure", "49-fit: a GPU run stopped by its cap with room for 49 under its ceiling: expected",
         [Run(cuda(), {"concurrent_capacity": [capacity(stop="cap", measured=20, ceiling_max=300)]})],
         {"pressure-49-fit": [(1, "expected")]}),
    Case("claim_pressure", "49-fit: a GPU whose ceiling holds fewer than 49: differs by hardware",
         [Run(cuda(), {"concurrent_capacity": [capacity(stop="cap", measured=20, ceiling_max=30)]})],
         {"pressure-49-fit": [(1, "differs by hardware")]}),
    Case("claim_pressure", "49-fit: a CPU run stopped by its time budget: not measured, and the rule says pending",
         [Run(cpu("gpt2", "float16"), {"concurrent_capacity": [capacity(stop="time", measured=20)]})],
         {"pressure-49-fit": [(1, PENDING, "not measured")]}),
    Case("claim_pressure", "theoretical max from a CPU run: the GPU measurement stays pending",
         [Run(cpu("gpt2", "float16"), {"concurrent_capacity": [capacity()]})],
         {"pressure-theoretical-max": [(None, "inconsistent"), (1, PENDING, "confirmed")]}),

    # claim_decode.sql (growth is arithmetic; variation and boundness are GPU measurements)
    Case("claim_decode", "no decode rows: not measured, and the inference is unsupported regardless of data",
         [Run(cpu())],
         {"decode_growth_per_step": [(None, "not measured")], "decode_variation_64_512": [(None, "not measured")],
          "decode_bandwidth_bound": [(None, "unsupported")]}),
    Case("claim_decode", "gpt2 grows 36,864 B per sequence per step: confirmed",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.2)]) + decode([(64, 12.0)], batch=4)})],
         {"decode_growth_per_step": [(1, "confirmed")]}),
    Case("claim_decode", "another model matching its own formula: expected",
         [Run(cpu("tiny-gpt2"), {"decode_cost": decode([(64, 1.0)], growth=1024)})],
         {"decode_growth_per_step": [(1, "expected")]}),
    Case("claim_decode", "gpt2 at float32 grows 73,728 B: expected, not confirmed",
         [Run(cpu("gpt2", "float32"), {"decode_cost": decode([(64, 1.0)], growth=2 * GPT2_BPT16)})],
         {"decode_growth_per_step": [(1, "expected")]}),
    Case("claim_decode", "a shape whose growth differs from batch x formula: refuted",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0)]) + decode([(128, 10.0)], match=False)})],
         {"decode_growth_per_step": [(1, "refuted")]}),
    Case("claim_decode", "GPU: flat within 6% over 64-512 confirmed; near the copy roof: bandwidth-bound confirmed",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (256, 10.3), (512, 10.5)], roof=0.8)})],
         {"decode_variation_64_512": [(1, "confirmed")],
          "decode_bandwidth_bound": [(None, "unsupported"), (1, "confirmed")]}),
    Case("claim_decode", "GPU: 64-512 window flat although prefix 2048 is slow: the window is used, confirmed",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.5), (2048, 30.0)])})],
         {"decode_variation_64_512": [(1, "confirmed")]}),
    Case("claim_decode", "GPU: variation and growth read from the eager mode only (a static step 3x slower at 512)",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.5)])
                       + decode([(64, 5.0), (512, 15.0)], growth=1, match=False, mode="static")})],
         {"decode_variation_64_512": [(1, "confirmed")], "decode_growth_per_step": [(1, "confirmed")]}),
    Case("claim_decode", "GPU: fewer than two prefixes in 64-512, whole range 50%: differs by hardware",
         [Run(cuda(), {"decode_cost": decode([(16, 10.0), (1024, 15.0)])})],
         {"decode_variation_64_512": [(1, "differs by hardware")]}),
    Case("claim_decode", "the seed's RTX 2070, 50% across 64-512: refuted there, not 'differs by hardware'",
         [Run(cuda(device_name=RTX, gpu_name=RTX), {"decode_cost": decode([(64, 10.0), (512, 15.0)])})],
         {"decode_variation_64_512": [(1, "refuted")]}),
    Case("claim_decode", "GPU: 10% of the copy roof: bandwidth-bound refuted",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.5)], roof=0.1)})],
         {"decode_bandwidth_bound": [(None, "unsupported"), (1, "refuted")]}),
    Case("claim_decode", "GPU: the eager step above 105% of its read roof is a measurement error: not measured",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.5)], roof=1.2, over_roof=True)})],
         {"decode_bandwidth_bound": [(None, "unsupported"), (1, "not measured")]}),
    Case("claim_decode", "GPU: near the roof but within 4x the last-level cache says nothing of DRAM: not measured",
         [Run(cuda(), {"decode_cost": decode([(64, 10.0), (512, 10.5)], roof=0.8, dram_sized=False)})],
         {"decode_bandwidth_bound": [(None, "unsupported"), (1, "not measured")]}),
    Case("claim_decode", "CPU run: variation and boundness pending a GPU, growth (arithmetic) keeps its verdict",
         [Run(cpu("gpt2", "float16"), {"decode_cost": decode([(64, 10.0), (512, 10.1)], roof=0.1)})],
         {"decode_growth_per_step": [(1, "confirmed")], "decode_variation_64_512": [(1, PENDING, "confirmed")],
          "decode_bandwidth_bound": [(None, "unsupported"), (1, PENDING, "refuted")]}),

    # claim_compaction.sql (GPU measurements)
    Case("claim_compaction", "no compaction rows: not measured", [Run(cuda())],
         {"compact_small_5mb": [(None, "not measured")], "compact_large_10mb": [(None, "not measured")],
          "compact_best_pct_peak": [(None, "not measured")]}),
    Case("claim_compaction", "the seed's RTX 2070 within 25% of 19.2 and 52.5 GB/s: confirmed",
         [Run(cuda(device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("naive", 1_000_000, 20.0), compact("batched", 1_000_000, 40.0),
                                 compact("naive", 50_000_000, 50.0), compact("batched", 50_000_000, 60.0,
                                                                             pct_peak=0.134, peak=448.0)]})],
         {"compact_small_5mb": [(1, "confirmed")], "compact_large_10mb": [(1, "confirmed")],
          # 13.4% of peak on the seed's own card is within 25% of its 14.9%: not "differs by hardware".
          "compact_best_pct_peak": [(1, "confirmed")]}),
    Case("claim_compaction", "the seed's RTX 2070, best gather at 30% of peak: twice its 14.9%, refuted",
         [Run(cuda(device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("batched", 50_000_000, 134.0, pct_peak=0.30, peak=448.0)]})],
         {"compact_best_pct_peak": [(1, "refuted")]}),
    Case("claim_compaction", "the seed's RTX 2070 far from 19.2 and 52.5 GB/s: refuted",
         [Run(cuda(device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("naive", 1_000_000, 5.0), compact("naive", 50_000_000, 100.0)]})],
         {"compact_small_5mb": [(1, "refuted")], "compact_large_10mb": [(1, "refuted")]}),
    Case("claim_compaction", "another GPU: sizes differ by hardware; batched at 60% of peak refutes 14.9%",
         [Run(cuda(), {"compaction": [compact("naive", 1_000_000, 20.0), compact("naive", 50_000_000, 50.0),
                                          compact("batched", 50_000_000, 2880.0, pct_peak=0.6, peak=4800.0)]})],
         {"compact_small_5mb": [(1, "differs by hardware")], "compact_large_10mb": [(1, "differs by hardware")],
          "compact_best_pct_peak": [(1, "refuted")]}),
    Case("claim_compaction", "no theoretical peak: the share of roof decides (70% of roof refutes 14.9%)",
         [Run(cuda(), {"compaction": [compact("batched", 50_000_000, 10.0, pct_roof=0.7)]})],
         {"compact_best_pct_peak": [(1, "refuted")]}),
    Case("claim_compaction", "a row above 105% of its roof takes part in nothing: small not measured",
         [Run(cuda(device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("naive", 1_000_000, 19.2, over_roof=True),
                                 compact("naive", 50_000_000, 52.0, dram_sized=True)]})],
         {"compact_small_5mb": [(None, "not measured")], "compact_large_10mb": [(1, "confirmed")]}),
    Case("claim_compaction", "over 10 MB but under 4x the last-level cache is not a DRAM figure: large not measured",
         [Run(cuda(device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("naive", 1_000_000, 19.2), compact("naive", 50_000_000, 52.0, dram_sized=False)]})],
         {"compact_small_5mb": [(1, "confirmed")], "compact_large_10mb": [(None, "not measured")]}),
    Case("claim_compaction", "the best single-launch gather is triton's (60% of peak) though batched is at 20%: refuted",
         [Run(cuda(), {"compaction": [compact("batched", 50_000_000, 960.0, pct_peak=0.2, peak=4800.0),
                                          compact("triton", 50_000_000, 2880.0, pct_peak=0.6, peak=4800.0)]})],
         {"compact_best_pct_peak": [(1, "refuted")]}),
    Case("claim_compaction", "run with no device_kind: the rule's NULL guard keeps it pending, not confirmed",
         [Run(cuda(device_kind=None, device_name=RTX, gpu_name=RTX),
              {"compaction": [compact("naive", 1_000_000, 20.0), compact("batched", 1_000_000, 40.0)]})],
         {"compact_small_5mb": [(1, PENDING, "confirmed")]}),

    # claim_fragmentation.sql (a GPU allocator measurement)
    Case("claim_fragmentation", "skipped on the CPU: not measured, with the skip reason",
         [Run(cpu(), experiment="fragmentation", status="skipped", reason="needs the CUDA caching allocator")],
         {"frag_retained_after_evict": [(None, "not measured")]}),
    Case("claim_fragmentation", "GPU keeps 300 MB reserved after evicting 400 MB: confirmed; 50 of 400: refuted",
         [Run(cuda(), {"fragmentation": frag(300, 400)}), Run(cuda("gpt2", "bfloat16"), {"fragmentation": frag(50, 400)})],
         {"frag_retained_after_evict": [(1, "confirmed"), (2, "refuted")]}),

    # claim_interference.sql (the seed's own figures are inconsistent; runs are GPU measurements)
    Case("claim_interference", "no runs: the seed's arithmetic inconsistent, compact-alone not measured", [Run(cpu())],
         {"interference-both-faster": [(None, "inconsistent")], "interference-compact-alone": [(None, "not measured")]},
         {("interference-both-faster", None):  # 1.289 ms x 51.2 GB/s and 0.903 ms x 73.2 GB/s
          "the profiler write-up's bytes: 1289 us x 51.2 GB/s = 66.0 MB; 903 us x 73.2 GB/s = 66.1 MB"}),
    Case("claim_interference", "GPU: both slower than compaction alone refutes the speed-up; another GPU differs",
         [Run(cuda(), {"interference": interference(1.0, 0.5, 1.2)})],
         {"interference-both-faster": [(None, "inconsistent"), (1, "refuted")],
          "interference-compact-alone": [(1, "differs by hardware")]}),
    Case("claim_interference", "GPU: both under 95% of the longer part violates the bound: not measured",
         [Run(cuda(), {"interference": interference(1.289, 0.4, 0.903)})],
         {"interference-both-faster": [(None, "inconsistent"), (1, "not measured")]}),
    Case("claim_interference", "GPU: a run flagged bound_violated is not evidence either way",
         [Run(cuda(), {"interference": interference(1.0, 0.5, 1.2, violated=True)})],
         {"interference-both-faster": [(None, "inconsistent"), (1, "not measured")]}),
    Case("claim_interference", "the seed's RTX 2070 at 50 GB/s alone: confirmed; at 20 GB/s: refuted",
         [Run(cuda(gpu_name=RTX), {"interference": interference(1.0, 0.5, 1.2, compact_gbs=50.0)}),
          Run(cuda("gpt2", "bfloat16", gpu_name=RTX), {"interference": interference(1.0, 0.5, 1.2)})],
         {"interference-compact-alone": [(1, "confirmed"), (2, "refuted")]}),
    Case("claim_interference", "CPU threads: the run rows are pending a GPU",
         [Run(cpu(), {"interference": interference(1.0, 0.5, 1.2)})],
         {"interference-both-faster": [(None, "inconsistent"), (1, PENDING, "refuted")],
          "interference-compact-alone": [(1, PENDING, "differs by hardware")]}),

    # claim_token_article.sql
    Case("claim_token_article", "empty DB: every claim not measured", [Run(cpu("tiny-gpt2"))],
         {c: [(None, "not measured")] for c in
          ("token-kv-constant", "token-ratios-sess-001", "token-ratios-sess-002", "token-ratios-sess-003",
           "token-kv-guardrail", "token-spor-guardrail", "token-prefix-compute", "token-api-bill",
           "token-evict-frees", "token-double-capacity")}),
    Case("claim_token_article", "a tiny test model prices nothing: constant and KV guardrail not measured",
         [Run(cpu("tiny-gpt2"), {**memory_rows(1500.0), **demo_audit(1)})],
         {"token-kv-constant": [(None, "not measured")], "token-kv-guardrail": [(None, "not measured")],
          "token-spor-guardrail": [(1, "confirmed")]}),
    Case("claim_token_article", "1,500 B/token at 16-bit from a float32 run's 3,000: constant confirmed",
         [Run(cpu("small-model", "float32"), memory_rows(3000.0))],
         {"token-kv-constant": [(1, "confirmed")]}),
    Case("claim_token_article", "a hybrid is priced by what it adds per token (2,048 B), not its state spread over a prefill",
         [Run(cpu("hybrid-model", "bfloat16"), HYBRID)],
         {"token-kv-constant": [(1, "confirmed")]},
         {("token-kv-constant", 1): "2,048 B/token measured (hybrid-model, bfloat16) = 2,048 B/token at 16-bit: "
                                    "1.4x the constant"}),
    Case("claim_token_article", "GPT-2 at 36,864 B/token: the constant refuted",
         [Run(cpu("gpt2", "float16"), memory_rows(GPT2_BPT16))],
         {"token-kv-constant": [(1, "refuted")]}),
    Case("claim_token_article", "no cache-tensor rows: the demo audit's measured bytes/token price the constant",
         [Run(cpu("gpt2", "float16"), {"audits": [{"audit_id": "x", "kv_bytes_per_token": float(GPT2_BPT16),
                                                   "kv_bytes_source": "measured"}]})],
         {"token-kv-constant": [(1, "refuted")]}),
    Case("claim_token_article", "demo audit reproducing the article's sessions: ratios and both guardrails confirmed",
         [Run(cpu("small-model", "float16"), demo_audit(1))],
         {"token-ratios-sess-001": [(1, "confirmed")], "token-ratios-sess-002": [(1, "confirmed")],
          "token-ratios-sess-003": [(1, "confirmed")], "token-kv-guardrail": [(1, "confirmed")],
          "token-spor-guardrail": [(1, "confirmed")]}),
    Case("claim_token_article", "a session whose PCER differs from the article: that session refuted",
         [Run(cpu("small-model", "float16"), demo_audit(1, pcer=[0.930233, 0.01, 0.592593]))],
         {"token-ratios-sess-001": [(1, "confirmed")], "token-ratios-sess-002": [(1, "refuted")]}),
    Case("claim_token_article", "KV guardrail priced at 16-bit on a float32 run: 20 MB at float32 is 10 MB, confirmed",
         [Run(cpu("small-model", "float32"), demo_audit(1, kv_bytes=[7e6, 20e6, 40e6]))],
         {"token-kv-guardrail": [(1, "confirmed")]}),
    Case("claim_token_article", "KV guardrail on a float32 run whose demo audit already priced at 16 bits "
         "(newer runs; its detail says so): not halved a second time, so 20 MB and 40 MB cross, refuted",
         [Run(cpu("small-model", "float32"), _priced_at_16_bits(demo_audit(1, kv_bytes=[7e6, 20e6, 40e6])))],
         {"token-kv-guardrail": [(1, "refuted")]}),
    Case("claim_token_article", "KV guardrail re-priced from the run's cache-tensor measurement (float32 "
         "cache_tensors scaled to 16 bits) whatever price the audit used: 5,000 B/token at 16 bits flags sess-002 too, refuted",
         [Run(cpu("small-model", "float32"), {**demo_audit(1),
                                              "cache_tensors": [{"seq_len": 64, "batch_size": 1, "cached_tokens": 64,
                                                                "kv_bytes": 64 * 10000, "bytes_per_token": 10000.0}]})],
         {"token-kv-guardrail": [(1, "refuted")]},
         # the article's 3.68 / 6.23 / 21.00 MB at 1,500 B/token, re-priced at 5,000
         {("token-kv-guardrail", 1): "12.3 / 20.8 / 70.0 MB at 5,000 B/token (small-model at 16-bit; this run "
                                     "used float32); over 15 MB: sess-002, sess-003"}),
    Case("claim_token_article", "KV guardrail at GPT-2's bytes/token: every session crosses 15 MB, refuted",
         [Run(cpu("gpt2", "float16"), demo_audit(1, kv_scale=GPT2_BPT16 / 1500))],
         {"token-kv-guardrail": [(1, "refuted")]}),
    Case("claim_token_article", "SPOR guardrail flagging another set of sessions: refuted",
         [Run(cpu("small-model", "float16"), demo_audit(1, spor_flags=[True, False, False]))],
         {"token-spor-guardrail": [(1, "refuted")]}),
    Case("claim_token_article", "prefix reuse faster with separated spreads: confirmed (not a GPU claim: CPU counts)",
         [Run(cpu(), reuse(2.0, 20.0))], {"token-prefix-compute": [(1, "confirmed")]}),
    Case("claim_token_article", "prefix reuse faster but spreads overlap: expected",
         [Run(cpu(), reuse(9.0, 10.0, spread=0.2))], {"token-prefix-compute": [(1, "expected")]}),
    Case("claim_token_article", "prefix reuse not faster: refuted", [Run(cpu(), reuse(10.0, 10.0))],
         {"token-prefix-compute": [(1, "refuted")]}),
    Case("claim_token_article", "prefix reuse changed the logits: refuted however fast",
         [Run(cpu(), reuse(2.0, 20.0, exact=False))], {"token-prefix-compute": [(1, "refuted")]}),
    Case("claim_token_article", "real logs saving 60% with a stable prefix: 55% confirmed; 50%: refuted; demo: not measured",
         [Run(cpu(), bill("logs-a", 40.0)), Run(cpu("gpt2", "float16"), bill("logs-b", 50.0)),
          Run(cpu("gpt2", "bfloat16"), bill("run-3-demo", 10.0))],
         {"token-api-bill": [(1, "confirmed"), (2, "refuted"), (3, "not measured")]}),
    Case("claim_token_article", "eviction on a GPU: allocator frees at least the caches: confirmed; less: refuted",
         [Run(cuda(), evict(1000, 1000)), Run(cuda("gpt2", "bfloat16"), evict(1000, 10))],
         {"token-evict-frees": [(1, "confirmed"), (2, "refuted")]}),
    Case("claim_token_article", "eviction on a GPU that freed nothing: refuted", [Run(cuda(), evict(0, None))],
         {"token-evict-frees": [(1, "refuted")]}),
    Case("claim_token_article", "eviction on a CPU (no allocator counter): pending a GPU",
         [Run(cpu(), evict(1000, None))], {"token-evict-frees": [(1, PENDING, "confirmed")]}),
    Case("claim_token_article", "idle timeout doubling capacity on real logs: confirmed; x1.5: refuted; demo: not measured",
         [Run(cpu(), ttl("logs-a", 2.5)), Run(cpu("gpt2", "float16"), ttl("logs-b", 1.5)),
          Run(cpu("gpt2", "bfloat16"), ttl("run-3-demo", 9.0))],
         {"token-double-capacity": [(1, "confirmed"), (2, "refuted"), (3, "not measured")]}),
]


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("verdicts") / "empty.duckdb"
    Store(path).close()  # the schema once; each case copies the file
    return path


@pytest.fixture(scope="module")
def query_folders(tmp_path_factory):
    """claim query -> a folder holding only it, the rule and the macros: the ledger then reads that one query."""
    base = tmp_path_factory.mktemp("claim-queries")
    folders = {}
    for name in queries_mod.names_with_prefix("claim_"):
        folder = folders[name] = base / name
        folder.mkdir()
        for keep in (name, "claims_verdicts", "_macros"):
            (folder / f"{keep}.sql").write_text(queries_mod.sql_text(keep), encoding="utf-8")
    return folders


def ledger_of(path, folder, run_ids) -> list[dict]:
    """The ledger's rows of one claim query, through the build's own code (union, checks, rule)."""
    con = duckdb.connect(str(path))
    try:
        return claims_mod.ledger(queries_mod.Queries(con, folder), run_ids)
    finally:
        con.close()


def write_case(path, case: Case) -> list[int]:
    ids = []
    with Store(path) as store:
        for run in case.runs:
            run_id = store.begin_run(run.meta)
            store.record_experiment(run_id, run.experiment, run.status, run.reason, run.tables)
            store.finish_run(run_id, "complete")
            ids.append(run_id)
    return ids


def test_every_claim_query_has_cases():
    assert {c.query for c in CASES} == set(queries_mod.names_with_prefix("claim_"))


def _sql_code(name: str) -> str:
    return re.sub(r"--[^\n]*", "", queries_mod.sql_text(name))  # comments may quote a verdict in prose


def test_claim_queries_name_verdicts_only_as_parameters():
    """The verdict words are defined once (analysis/verdicts.py): no claim query, nor the rule, spells one."""
    spelled = re.compile("'(%s)'" % "|".join(map(re.escape, VERDICTS)))
    for name in queries_mod.names_with_prefix("claim_") + ["claims_verdicts"]:
        assert not spelled.findall(_sql_code(name)), f"{name}.sql spells a verdict; use its parameter ($confirmed, ...)"


def test_every_verdict_a_claim_query_can_give_is_reached():
    """Each claim query's verdict parameters (its CASE branches) all appear among its cases' expectations."""
    for name in queries_mod.names_with_prefix("claim_"):
        given = {SQL_PARAMETERS[p] for p in re.findall(r"\$([a-z_]+)", _sql_code(name)) if p in SQL_PARAMETERS}
        assert given, f"{name}: gives no verdict parameter"
        reached = {row[-1] if len(row) == 3 else row[1]
                   for c in CASES if c.query == name for rows in c.expect.values() for row in rows}
        assert given <= reached, f"{name}: no case reaches {sorted(given - reached)}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_verdict(case, empty_db, tmp_path, query_folders):
    db = tmp_path / "case.duckdb"
    shutil.copyfile(empty_db, db)
    run_ids = write_case(db, case)
    assert run_ids == list(range(1, len(case.runs) + 1))
    rows = ledger_of(db, query_folders[case.query], run_ids)
    for claim_id, expected in case.expect.items():
        got = [r for r in rows if r["claim_id"] == claim_id]
        want = [(run, verdict, data[0] if data else verdict) for run, verdict, *data in expected]
        assert [(r["run_id"], r["verdict"], r["data_verdict"]) for r in got] == want, \
            f"{case.branch}: {claim_id}: " + "; ".join(f"{r['measured_value']} / {r['reasoning']}" for r in got)
        for r in got:
            if r["verdict"] == PENDING:  # the CPU figure stays as context, and the reasoning says why
                assert r["measured_value"] and "only a GPU run can confirm or refute" in r["reasoning"]
    for (claim_id, run), value in case.values.items():
        assert [r["measured_value"] for r in rows if (r["claim_id"], r["run_id"]) == (claim_id, run)] == [value]


def test_a_replay_adds_to_the_article_claims_it_does_not_measure(empty_db, tmp_path, query_folders):
    """A replayed trace (no run, no audit) judges the 55% bill claim as a simulation; the claim still gets the
    row saying no audit priced a bill here: a replay adds evidence, it is not the claim's own data."""
    db = tmp_path / "replay.duckdb"
    shutil.copyfile(empty_db, db)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO replays (replay_id, sources, model, gpu, tp, n_requests, ceiling_hit_rate, "
                "ceiling_tokens, target) VALUES ('r1', 'trace.jsonl', 'm', 'H200', 8, 100, 0.2, 1000, 0.9)")
    con.close()
    rows = ledger_of(db, query_folders["claim_token_article"], [])
    bill = [(r["run_id"], r["verdict"], (r["measured_value"] or "").split(",")[0]) for r in rows
            if r["claim_id"] == "token-api-bill"]
    assert bill == [(None, "refuted", "replayed real traffic (simulation)"), (None, "not measured", "")]


# --- the verdicts as the built pages show them ---------------------------------------------------------

def claim_verdicts(text: str) -> dict:
    """{(claim_id, run id or None): verdict} from claims.html: a claim's id is the `cid` span of its first
    row (the claim cell spans its rows); a row's runs are listed in its run cell ("run 2, run 3": runs with
    the same figure and verdict share a row), or none."""
    doc, verdicts, claim = Doc(text), {}, None
    for row in doc.all("tr"):
        for cid in doc.all("span", "cid", within=row):
            claim = cid.text.strip()
        cells = doc.all("td", "verdict-cell", within=row)
        if not cells:
            continue
        runs = [None]
        for cell in doc.all("td", "run", within=row):
            found = [int(n) for abbr in doc.all("abbr", within=cell) for n in re.findall(r"run (\d+)", abbr.text)]
            runs = found or runs
        for run in runs:
            assert (claim, run) not in verdicts, (claim, run)
            verdicts[claim, run] = cells[-1].text.strip()
    return verdicts


def table_rows(text: str, table_id: str) -> list[list[str]]:
    """Cell texts of every row of the table with this id (header row first)."""
    table = Doc(text).table(table_id)
    return [table["head"], *table["rows"]]


PAGE_RUNS = [
    Run(cpu("gpt2", "float32"), memory_rows(2 * GPT2_BPT16)),                              # 1
    Run(cuda("mistral-7b"), {"crossover": seven_b("measured", None, None, "mistral-7b")}),  # 2
    Run(cpu("gpt2", "float16"), {"concurrent_capacity": [capacity(stop="time")]}),               # 3
    Run(cuda("gpt2", "bfloat16"), {"concurrent_capacity": [capacity(stop="oom", measured=30)]}),  # 4
]


@pytest.fixture(scope="module")
def verdict_site(empty_db, tmp_path_factory):
    from kvreport.analysis.site import build_site

    base = tmp_path_factory.mktemp("verdict-site")
    db = base / "k.duckdb"
    shutil.copyfile(empty_db, db)
    write_case(db, Case("claim_memory", "pages", PAGE_RUNS, {}))
    build_site(db, base / "site")
    return base / "site"


@pytest.mark.slow
def test_claims_page_shows_the_verdict_of_each_named_claim(verdict_site):
    got = claim_verdicts((verdict_site / "claims.html").read_text(encoding="utf-8"))
    assert {k: got.get(k) for k in [
        ("memory-gpt2-measured", 1), ("memory-gpt2-arithmetic", None), ("crossover-7b-388", 2),
        ("pressure-49-fit", 3), ("pressure-49-fit", 4), ("pressure-theoretical-max", None),
        ("decode_bandwidth_bound", None)]} == {
        ("memory-gpt2-measured", 1): "confirmed",         # float32 GPT-2: 73,728 B = 36 KiB at 2 B/element
        ("memory-gpt2-arithmetic", None): "confirmed",
        ("crossover-7b-388", 2): "refuted",               # the NULL-crossover guard
        ("pressure-49-fit", 3): PENDING,                   # a CPU run never decides a GPU measurement
        ("pressure-49-fit", 4): "refuted",                 # an OOM below 49 on a GPU
        ("pressure-theoretical-max", None): "inconsistent",
        ("decode_bandwidth_bound", None): "unsupported"}


@pytest.mark.parametrize("page, claim, run, verdict", [
    ("crossover", "For 7B models (~14 GB weights): KV crossover at ~388 tokens x batch_size", "2", "refuted"),
    ("pressure", "seq=512: 49+ requests fit beside GPT-2 on an 8 GB card without OOM", "3", PENDING),
    ("pressure", "seq=512: 49+ requests fit beside GPT-2 on an 8 GB card without OOM", "4", "refuted"),
])
def test_topic_page_shows_the_verdict_of_a_named_claim(verdict_site, page, claim, run, verdict):
    header, *body = table_rows((verdict_site / f"{page}.html").read_text(encoding="utf-8"), f"{page}-claims")
    c, r, v = (header.index(k) for k in ("claim", "run", "verdict"))
    assert [row[v] for row in body if row[c] == claim and row[r] == run] == [verdict]


@pytest.mark.slow
def test_claims_page_shows_the_ledgers_verdict_for_every_claim_and_run(built_site):
    """The fixture site: each (claim, run) row of claims.html carries the verdict of the same row of the
    ledger CSV (which also keeps superseded runs), and every claim of the ledger is on the page."""
    import csv

    with open(built_site / "data" / "claims-ledger.csv", newline="", encoding="utf-8") as f:
        ledger = {(r["claim_id"], int(r["run_id"]) if r["run_id"] else None): r["verdict"] for r in csv.DictReader(f)}
    shown = claim_verdicts((built_site / "claims.html").read_text(encoding="utf-8"))
    assert shown and {k: ledger.get(k) for k in shown} == shown
    assert {c for c, _ in shown} == {c for c, _ in ledger}
