"""Compare kvreport's engine view with a vLLM release's own KV cache code, on a CPU (no GPU, no model weights).

Run in a venv holding that vLLM wheel installed with --no-deps plus the small pure-Python modules its KV cache
code imports (see .ci/run, step vllm-oracle). For every catalogue model at TP 1/2/4/8 and 4k/32k/128k it feeds
kvreport's per-layer specs (layout.aligned_specs: page, block size, window, after the hybrid alignment) to the
release's get_kv_cache_groups and get_kv_cache_config_from_groups, and drives its KVCacheManager through one
request (a chunked prefill of seq - 1 tokens, then one decode step), then compares: the number of groups, their
block sizes and pages, the block count for a given memory, and the blocks held. Exit 1 on any difference.

What it does not check: how kvreport turns a config into per-layer bytes (heads per rank, MLA widths, Mamba
shapes) and the hybrid alignment itself, which vLLM computes from the model class; those are checked against
the figures vLLM logs in tests/test_engine.py.
"""
from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace as NS

import torch
import vllm
from vllm import SamplingParams
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.core.kv_cache_utils import (generate_scheduler_kv_cache_config, get_kv_cache_config_from_groups,
                                         get_kv_cache_groups)
from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec, FullAttentionSpec, MambaSpec, MLAAttentionSpec,
                                        SlidingWindowSpec)
from vllm.v1.request import Request

from kvreport.runner.core import engine
from kvreport.runner.core.engine.layout import aligned_specs
from kvreport.runner.core.engine.capacity import text_config
from kvreport.runner.core.model_facts import builtin_names, load

MEMORY = 40 * 2**30
SEQS = (4096, 32768, 131072)


def vllm_spec(s, max_model_len: int, kv: str = "auto"):
    """The same page, block size and window in vLLM's classes (bytes carried as uint8 elements)."""
    u8 = torch.uint8
    if s.kind == "mamba":
        return MambaSpec(block_size=max_model_len, shapes=((s.state_bytes,),), dtypes=(u8,),
                         page_size_padded=s.page_padded)
    if s.kind in ("mla", "indexer"):  # mla_attention.py gives the latent the cache dtype; the DSA indexer has none
        return MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=s.token_bytes, dtype=u8,
                                cache_dtype_str=kv if s.kind == "mla" else None)
    k = s.token_bytes // 2
    kw = dict(block_size=s.block_size, num_kv_heads=1, head_size=k, head_size_v=s.token_bytes - k, dtype=u8)
    if s.kind == "sliding":
        return SlidingWindowSpec(sliding_window=s.window, **kw)
    if s.kind == "chunked":
        kw.pop("head_size_v")
        assert s.token_bytes % 2 == 0
        return ChunkedLocalAttentionSpec(attention_chunk_size=s.window, **{**kw, "head_size": k})
    return FullAttentionSpec(**kw)


def held_by_vllm(cfg, max_model_len: int, seq: int) -> int:
    block = min(g.kv_cache_spec.block_size for g in cfg.kv_cache_groups)
    mgr = KVCacheManager(cfg, max_model_len=max_model_len, hash_block_size=block, max_num_batched_tokens=2048,
                         enable_caching=False)
    req = Request("r", [0] * (seq - 1), SamplingParams(max_tokens=2), None)
    while req.num_computed_tokens < seq - 1:  # chunked prefill, 2,048 tokens a step
        n = min(2048, seq - 1 - req.num_computed_tokens)
        assert mgr.allocate_slots(req, n) is not None, "out of blocks"
        req.num_computed_tokens += n
    req.append_output_token_ids(0)
    assert mgr.allocate_slots(req, 1) is not None, "out of blocks"  # the decode step
    held = 0
    for m in mgr.coordinator.single_type_managers:
        held += sum(1 for b in m.req_to_blocks.get("r", []) if not b.is_null)
    return held


def check(name: str, profile, tp: int, kv: str = "auto") -> list[str]:
    target, raw = engine.resolve(name)
    facts = load(target)
    if engine.refusals(facts, raw, profile, tp):
        return []
    ours = engine.layout_for(facts, raw, profile, tp, kv)
    if not ours.groups:
        return []
    limit = facts.max_positions or max(SEQS)
    specs, _, _ = aligned_specs(facts, text_config(raw), profile, tp, kv)
    vc = NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=2048),
            cache_config=NS(num_gpu_blocks_override=None, mamba_cache_mode="none"),
            model_config=NS(max_model_len=limit),
            parallel_config=NS(decode_context_parallel_size=1, prefill_context_parallel_size=1))
    groups = get_kv_cache_groups(vc, {f"layer.{i}": vllm_spec(s, limit, kv) for i, s in enumerate(specs)})
    cfg = get_kv_cache_config_from_groups(vc, groups, MEMORY)
    diffs = []
    theirs = sorted((g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes) for g in groups)
    mine = sorted((g.spec.block_size if g.spec.kind != "mamba" else limit, g.page_bytes) for g in ours.groups)
    if len(groups) != len(ours.groups) or theirs != mine:
        diffs.append(f"groups {theirs} != {mine}")
    if cfg.num_blocks != ours.num_blocks(MEMORY):
        diffs.append(f"num_blocks {cfg.num_blocks} != {ours.num_blocks(MEMORY)}")
    reached = [seq for seq in SEQS if seq <= limit] or [limit]
    pool = get_kv_cache_config_from_groups(vc, groups, 2 * max(ours.request_bytes(s) for s in reached) +
                                           ours.block_bytes * 4)  # room for one request of each length
    for seq in reached:
        try:
            got = held_by_vllm(generate_scheduler_kv_cache_config([pool]), limit, seq)
        except Exception as exc:  # noqa: BLE001 - a failed allocation is a difference to report
            got = f"{type(exc).__name__}: {exc}"
        want = ours.held_blocks(seq)
        if got != want:
            diffs.append(f"{seq} tokens: vLLM holds {got} blocks, kvreport {want}")
    return [f"{name} TP {tp} {kv}: {d}" for d in diffs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=None)
    args = ap.parse_args()
    release = vllm.__version__.split("+")[0]
    profile = engine.profile_for(f"vllm=={release}")
    failures, checked = [], 0
    for name in args.models or builtin_names():
        for tp in (1, 2, 4, 8):
            for kv in ("auto", "fp8"):
                found = check(name, profile, tp, kv)
                print(f"{name} TP {tp} {kv}: {'ok' if not found else 'DIFFERS'}", flush=True)
                failures += found
                checked += 1
    for line in failures:
        print(line)
    print(f"vllm=={release}: {checked} model x TP x KV dtype cases, {len(failures)} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
