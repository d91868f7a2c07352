"""The per-session guardrails: what the KV limit is set against, and the lines that report both limits.

A fixed KV limit flags every session of real traffic once a real model prices it (the token-audit article's
15 MB is a few hundred tokens of a small model at 16 bits), so by default the limit is relative to the GPU the
audit is set against (--gpu): a session over 1/max_num_seqs of its memory is one the GPU, given over wholly to
KV, could not hold a full default vLLM batch of. The count is reported beside the per-session distribution (p50, p90,
max of KV and SPOR), which the audits row stores, so a limit that trips everywhere still says something.
"""
from __future__ import annotations

from dataclasses import dataclass

from .kv_pricing import Memory

ARTICLE_KV_MAX_MB = 15.0  # the token-audit article's guardrail: the demo audit checks the article's claims with it
ARTICLE_BASIS = "the token-audit article's guardrail"

# vLLM's default max_num_seqs (the most sequences it batches), by the GPU's total memory and name:
# vllm-project/vllm, vllm/engine/arg_utils.py, EngineArgs._set_default_args at commit 99d7eb5d6a51:
# `device_memory >= 70 * GiB_bytes and "a100" not in device_name` -> 1024, otherwise 256 (both usage contexts).
VLLM_LARGE_GPU_BYTES = 70 * 2**30
VLLM_MAX_NUM_SEQS_LARGE = 1024
VLLM_MAX_NUM_SEQS = 256


@dataclass(frozen=True)
class KvLimit:
    mb: float      # MB = 10^6 bytes
    basis: str     # what the figure is, in words (stored as audits.kv_max_basis)


def vllm_max_num_seqs(memory_bytes: int, gpu: str) -> int:
    """vLLM's default batch size on a GPU of this memory and name (see VLLM_LARGE_GPU_BYTES)."""
    large = memory_bytes >= VLLM_LARGE_GPU_BYTES and "a100" not in gpu.lower()
    return VLLM_MAX_NUM_SEQS_LARGE if large else VLLM_MAX_NUM_SEQS


def kv_limit(kv_max_mb: float | None, memory: Memory) -> KvLimit:
    """--kv-max-mb as given; else 1/max_num_seqs of the --gpu's memory (module docstring)."""
    if kv_max_mb is not None:
        return KvLimit(kv_max_mb, "given with --kv-max-mb")
    if memory.bytes is None or memory.gpu is None:  # no named GPU to be relative to: the article's figure, named
        return KvLimit(ARTICLE_KV_MAX_MB, ARTICLE_BASIS)
    seqs = vllm_max_num_seqs(memory.bytes, memory.gpu)
    return KvLimit(memory.bytes / seqs / 1e6,
                   f"1/{seqs} of one {memory.gpu}'s {memory.bytes / 1e9:g} GB: all of it KV holds vLLM's default "
                   f"batch of {seqs} sessions no larger")


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _mb(v) -> str:
    return "n/a" if v is None else f"{v / 1e6:,.1f} MB"


def lines(s: dict) -> list[str]:
    """The guardrail lines of the command's output, from the audits row `s`: each limit's count out of the
    sessions, with the per-session distribution beside it."""
    n = s["n_sessions"]
    out = [(f"  guardrails: SPOR > {s['spor_max']:g}: {s['n_spor_warnings']:,} of {n:,} session(s); per-session "
            f"SPOR p50 {_pct(s['session_spor_p50'])}, p90 {_pct(s['session_spor_p90'])}, "
            f"max {_pct(s['session_spor_max'])}")]
    if s["n_kv_warnings"] is None:
        out.append("  guardrails: KV: not priced (no --model or --kv-bytes-per-token)")
    else:
        out.append(f"  guardrails: KV > {_mb(s['kv_max_bytes'])} ({s['kv_max_basis']}): {s['n_kv_warnings']:,} of "
                   f"{n:,} session(s); per-session KV p50 {_mb(s['session_kv_p50_bytes'])}, "
                   f"p90 {_mb(s['session_kv_p90_bytes'])}, max {_mb(s['session_kv_max_bytes'])}")
    return out
