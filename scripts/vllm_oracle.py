"""Compare kvreport's engine view with a vLLM release's own KV cache code, on a CPU (no GPU, no model weights).

Run in a venv holding that vLLM wheel installed with --no-deps plus the small pure-Python modules its KV cache
code imports (see .ci/run, step 1b). For every catalogue model at TP 1/2/4/8 and 4k/32k/128k it feeds
kvreport's per-layer specs (layout.aligned_specs: page, block size, window, after the hybrid alignment) to the
release's own grouping and block-count functions, and drives its KVCacheManager through one request (a
chunked prefill of seq - 1 tokens, then one decode step), then compares: the number of groups, their block
sizes and pages, the block count for a given memory, and the blocks held. Exit 1 on any difference.

The functions moved between releases; one small adapter per API generation (`ADAPTERS`) calls each release's
own, named with its file beside it. What it does not check: how kvreport turns a config into per-layer bytes
(heads per rank, MLA widths, Mamba shapes) and the hybrid alignment itself, which vLLM computes from the model
class; those are checked against the figures vLLM logs in tests/test_engine.py.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from types import SimpleNamespace as NS

import torch
import vllm
from vllm import SamplingParams
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec, FullAttentionSpec, MambaSpec,
                                        SlidingWindowSpec)
from vllm.v1.request import Request

from kvreport.runner.core import engine
from kvreport.runner.core.engine.capacity import text_config
from kvreport.runner.core.engine.layout import aligned_specs
from kvreport.runner.core.model_facts import builtin_names, load

MEMORY = 40 * 2**30
SEQS = (4096, 32768, 131072)
CHUNK = 2048  # the chunked prefill's step and max_num_batched_tokens
U8 = torch.uint8


class Release020:
    """0.11 to 0.33: v1/core/kv_cache_utils.py get_kv_cache_groups, get_kv_cache_config_from_groups,
    generate_scheduler_kv_cache_config; MLAAttentionSpec(cache_dtype_str); KVCacheManager(hash_block_size)."""

    def __init__(self):
        from vllm.v1.core import kv_cache_utils
        self.utils = kv_cache_utils

    def vllm_config(self, limit: int):
        return NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=CHUNK),
                  cache_config=NS(num_gpu_blocks_override=None, mamba_cache_mode="none"),
                  model_config=NS(max_model_len=limit),
                  parallel_config=NS(decode_context_parallel_size=1, prefill_context_parallel_size=1))

    def spec(self, s, limit: int, kv: str):
        """The same page, block size and window in vLLM's classes (bytes carried as uint8 elements)."""
        if s.kind == "mamba":
            return MambaSpec(block_size=limit, shapes=((s.state_bytes,),), dtypes=(U8,),
                             page_size_padded=s.page_padded)
        if s.kind in ("mla", "indexer"):  # mla_attention.py gives the latent the cache dtype; the indexer none
            from vllm.v1.kv_cache_interface import MLAAttentionSpec  # from 0.11 on
            return MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=s.token_bytes, dtype=U8,
                                    cache_dtype_str=kv if s.kind == "mla" else None)
        k = s.token_bytes // 2
        kw = dict(block_size=s.block_size, num_kv_heads=1, head_size=k, head_size_v=s.token_bytes - k, dtype=U8)
        if s.kind == "sliding":
            return SlidingWindowSpec(sliding_window=s.window, **kw)
        if s.kind == "chunked":
            assert s.token_bytes % 2 == 0
            kw.pop("head_size_v")
            return ChunkedLocalAttentionSpec(attention_chunk_size=s.window, **kw)
        return FullAttentionSpec(**kw)

    def plan(self, vc, specs: dict, memory: int):
        """(the groups, the worker's KV cache config for `memory` bytes)."""
        groups = self.utils.get_kv_cache_groups(vc, specs)
        return groups, self.utils.get_kv_cache_config_from_groups(vc, groups, memory)

    def manager(self, vc, cfg, limit: int):
        cfg = self.utils.generate_scheduler_kv_cache_config([cfg])
        block = min(g.kv_cache_spec.block_size for g in cfg.kv_cache_groups)
        return KVCacheManager(cfg, max_model_len=limit, hash_block_size=block, max_num_batched_tokens=CHUNK,
                              enable_caching=False)

    def request(self, seq: int):
        return Request("r", [0] * (seq - 1), SamplingParams(max_tokens=2), None)


class Release010(Release020):
    """0.10.x: v1/core/kv_cache_utils.py get_kv_cache_config builds groups and blocks in one call (no separate
    grouping function); AttentionSpec(use_mla) with one head_size for K and V, MLA pages hold one latent;
    KVCacheManager(kv_cache_config, max_model_len, enable_caching); Request(..., eos_token_id)."""

    def spec(self, s, limit: int, kv: str):
        if s.kind == "mamba":
            return MambaSpec(block_size=limit, shapes=((s.state_bytes,),), dtypes=(U8,),
                             page_size_padded=s.page_padded)
        if s.kind == "mla":  # kv_cache_interface.py AttentionSpec.page_size_bytes: coef 1 when use_mla
            return FullAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=s.token_bytes, dtype=U8,
                                     use_mla=True)
        assert s.kind != "indexer" and s.token_bytes % 2 == 0, s  # no DSA in 0.10; coef 2 x head_size
        kw = dict(block_size=s.block_size, num_kv_heads=1, head_size=s.token_bytes // 2, dtype=U8, use_mla=False)
        if s.kind == "sliding":
            return SlidingWindowSpec(sliding_window=s.window, **kw)
        if s.kind == "chunked":
            return ChunkedLocalAttentionSpec(attention_chunk_size=s.window, **kw)
        return FullAttentionSpec(**kw)

    def plan(self, vc, specs: dict, memory: int):
        # get_kv_cache_config less its first line, check_enough_kv_cache_memory (a startup refusal when one
        # max_model_len request does not fit `memory`, which kvreport reports as 0 requests instead)
        u = self.utils
        vc.cache_config.block_size = min(s.block_size for s in specs.values())  # what its log line reads
        if u.is_kv_cache_type_uniform(specs):
            cfg = u._get_kv_cache_config_uniform_type(vc, specs, memory)
        elif u.is_kv_cache_page_size_uniform(specs):
            cfg = u._get_kv_cache_config_uniform_page_size(vc, specs, memory)
        else:
            raise NotImplementedError("get_kv_cache_config: page sizes differ")  # what 0.10 raises
        return cfg.kv_cache_groups, cfg

    def manager(self, vc, cfg, limit: int):
        return KVCacheManager(cfg, max_model_len=limit, enable_caching=False)

    def request(self, seq: int):
        return Request("r", [0] * (seq - 1), SamplingParams(max_tokens=2), None, None)


class Release034(Release020):
    """0.34: grouping and block counts moved to v1/core/kv_cache_planning.py (get_kv_cache_groups,
    get_kv_cache_config_from_groups), which read the resolved KV cache layout and the HiSparse setting;
    KVCacheManager takes scheduler_block_size (kv_cache_utils.resolve_kv_cache_block_sizes)."""

    def __init__(self):
        super().__init__()
        from vllm.v1.core import kv_cache_planning
        from vllm.v1.kv_cache_layout import KVCacheLayout
        self.planning = kv_cache_planning
        # v1/attention/backends/utils.py resolve_kv_cache_layout: FlashAttention and FlashMLA declare no
        # supported_kv_cache_layouts, so the first of _DEFAULT_LAYOUT_PREFERENCE, LBNHC (layer-outermost)
        self.layout = KVCacheLayout.LBNHC

    def vllm_config(self, limit: int):
        vc = super().vllm_config(limit)
        vc.attention_config = NS(hisparse_config=None)  # v1/hisparse/layout.py: None unless configured
        vc.cache_config = NS(num_gpu_blocks_override=None, mamba_cache_mode="none", kv_cache_layout=self.layout.name,
                             get_resolved_kv_cache_layout=lambda: self.layout, prefix_cache_retention_interval=None,
                             enable_prefix_caching=False, prefix_match_unit=None, block_size=None)
        vc.kv_transfer_config = None
        return vc

    def plan(self, vc, specs: dict, memory: int):
        groups = self.planning.get_kv_cache_groups(vc, specs)
        return groups, self.planning.get_kv_cache_config_from_groups(vc, groups, memory)

    def manager(self, vc, cfg, limit: int):
        cfg = self.utils.generate_scheduler_kv_cache_config([cfg])
        vc.cache_config.block_size = min(g.kv_cache_spec.block_size for g in cfg.kv_cache_groups)
        sched, hashed = self.utils.resolve_kv_cache_block_sizes(cfg, vc)
        return KVCacheManager(cfg, max_model_len=limit, scheduler_block_size=sched, hash_block_size=hashed,
                              max_in_flight_tokens=CHUNK, enable_caching=False)


def adapter_for(release: str):
    """The adapter for the API generation `release` belongs to."""
    version = tuple(int(x) for x in release.split(".")[:2])
    if version < (0, 11):
        return Release010()
    if version < (0, 34):
        return Release020()
    return Release034()


def held_by_vllm(mgr, req, seq: int) -> int:
    while req.num_computed_tokens < seq - 1:  # chunked prefill, CHUNK tokens a step
        n = min(CHUNK, seq - 1 - req.num_computed_tokens)
        assert mgr.allocate_slots(req, n) is not None, "out of blocks"
        req.num_computed_tokens += n
    req.append_output_token_ids(0)
    assert mgr.allocate_slots(req, 1) is not None, "out of blocks"  # the decode step
    held = 0
    for m in mgr.coordinator.single_type_managers:
        held += sum(1 for b in m.req_to_blocks.get("r", []) if not b.is_null)
    return held


def check(rel, name: str, profile, tp: int, kv: str = "auto") -> list[str] | None:
    """The differences for one case; None where kvreport says the release refuses it or it has no KV cache."""
    target, raw = engine.resolve(name)
    facts = load(target)
    if engine.refusals(facts, raw, profile, tp):
        return None
    try:
        ours = engine.layout_for(facts, raw, profile, tp, kv)
    except engine.EngineError as exc:
        ours = exc
    if not isinstance(ours, engine.EngineError) and not ours.groups:
        return None
    limit = facts.max_positions or max(SEQS)
    vc = rel.vllm_config(limit)
    specs, _, _ = aligned_specs(facts, text_config(raw), profile, tp, kv)
    try:
        groups, cfg = rel.plan(vc, {f"layer.{i}": rel.spec(s, limit, kv) for i, s in enumerate(specs)}, MEMORY)
    except NotImplementedError as exc:  # the release cannot group these pages: it refuses the model
        return [] if isinstance(ours, engine.EngineError) else [f"{name} TP {tp} {kv}: vLLM refuses ({exc}), "
                                                                 f"kvreport lays it out"]
    if isinstance(ours, engine.EngineError):
        return [f"{name} TP {tp} {kv}: kvreport refuses ({ours}), vLLM lays it out"]
    diffs = []
    theirs = sorted((g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes) for g in groups)
    mine = sorted((g.spec.block_size if g.spec.kind != "mamba" else limit, g.page_bytes) for g in ours.groups)
    if len(groups) != len(ours.groups) or theirs != mine:
        diffs.append(f"groups {theirs} != {mine}")
    if cfg.num_blocks != ours.num_blocks(MEMORY):
        diffs.append(f"num_blocks {cfg.num_blocks} != {ours.num_blocks(MEMORY)}")
    reached = [seq for seq in SEQS if seq <= limit] or [limit]
    room = 2 * max(ours.request_bytes(s) for s in reached) + ours.block_bytes * 4  # one request of each length
    _, pool = rel.plan(vc, {f"layer.{i}": rel.spec(s, limit, kv) for i, s in enumerate(specs)}, room)
    for seq in reached:
        try:
            got = held_by_vllm(rel.manager(vc, pool, limit), rel.request(seq), seq)
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
    logging.getLogger("vllm").setLevel(logging.WARNING)  # the planning functions log every config they build
    release = vllm.__version__.split("+")[0]
    profile = engine.profile_for(f"vllm=={release}")
    rel = adapter_for(release)
    kvs = ("auto", "fp8")
    failures, checked, refused, start = [], 0, 0, time.monotonic()
    for name in args.models or builtin_names():
        for tp in (1, 2, 4, 8):
            for kv in kvs:
                found = check(rel, name, profile, tp, kv)
                print(f"{name} TP {tp} {kv}: {'refused' if found is None else 'DIFFERS' if found else 'ok'}",
                      flush=True)
                failures += found or []
                checked += found is not None
                refused += found is None
    for line in failures:
        print(line)
    print(f"vllm=={release}: {checked} model x TP x KV dtype cases compared ({refused} refused by the release), "
          f"{len(failures)} difference(s), {time.monotonic() - start:.0f} s")
    if not checked:
        print("nothing was compared")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
