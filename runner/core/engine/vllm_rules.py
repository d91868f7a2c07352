"""vLLM's KV cache rules, one small profile per release, each read from that release's wheel.

Every field says which file and function of which release it comes from (paths under vllm/ in the wheel
`pip download vllm==X --no-deps`). The rules are what `layout.py` applies; nothing here is measured. A
release whose source was not read has no profile: asking for it is an error, never a silent substitute.

Assumed throughout: a CUDA GPU of the Hopper generation (FlashAttention for GQA layers, FlashMLA for MLA
layers), the OpenAI API server's defaults (`vllm serve`), no speculative decoding, no prefix caching on
hybrid models (mamba_cache_mode "none"), the default KV cache layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UserError


class EngineError(UserError):
    """An engine release or setting kvreport has no rules for (exit 2)."""


@dataclass(frozen=True)
class VllmProfile:
    release: str
    block_size: int            # attention block size in tokens for GQA/MHA layers
    block_size_source: str
    mla_block_size: int        # FlashMLA's only kernel block size
    mla_block_size_source: str
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    hybrid_alignment: str      # "multiple_of_16" or "kernel_block": how the attention block grows for Mamba
    hybrid_alignment_source: str
    hybrid_mla_align: int      # MLA hybrids: the attention block is also a multiple of this (0: no rule)
    uniform_type_group: bool   # layers of one kind with different page sizes share one group
    group_size_rule: str       # "min" (smallest kind's layer count) or "min_or_max_1.5"
    grouping_source: str
    mamba_ssm_dtype_from_config: bool  # NemotronH / Qwen3.5 config classes override mamba_ssm_cache_dtype
    mamba_ssm_dtype_source: str
    indexer_bytes_per_token: int | None  # DSA indexer key: 128 fp8 values + a 4-byte scale (None: no DSA)
    indexer_source: str
    sparse_mla_fp8_bytes_per_token: int | None  # fp8_ds_mla: DeepSeek-V3.2's own fp8 layout
    log_style: str             # "blocks": num_blocks // groups x block; "concurrency": concurrency x max_model_len
    log_source: str
    defaults_source: str       # max_num_seqs / max_num_batched_tokens by GPU memory
    skip_source: str
    added_architectures: frozenset = field(default_factory=frozenset)  # not in this release's registry
    # (model_type, config field, the layer letters this release's model class builds, its source): a config
    # whose pattern holds another letter fails to load (the class indexes its layer table by letter)
    layer_patterns: tuple[tuple[str, str, str, str], ...] = ()
    not_modelled: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"vllm=={self.release}"

    def max_num_seqs(self, gpu_gib: float | None, gpu_name: str = "") -> int:
        """engine/arg_utils.py EngineArgs.get_batch_defaults, OPENAI_API_SERVER: 1024 on GPUs of at least
        70 GiB that are not an A100, 256 otherwise (the same in every profiled release)."""
        return 1024 if gpu_gib is not None and gpu_gib >= 70 and "a100" not in gpu_name.lower() else 256

    def max_num_batched_tokens(self, gpu_gib: float | None, gpu_name: str = "") -> int:
        """The same function: 8192 on those large GPUs, 2048 otherwise (OPENAI_API_SERVER)."""
        return 8192 if gpu_gib is not None and gpu_gib >= 70 and "a100" not in gpu_name.lower() else 2048


# Architectures in the catalogue that a release's model registry (model_executor/models/registry.py) lacks:
# vLLM refuses to load them ("Model architectures [...] are not supported").
_NEW_AFTER_0_10 = frozenset({
    "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "MiMoV2FlashForCausalLM", "Gemma4ForConditionalGeneration",
    "MiniMaxM2ForCausalLM"})

_SKIP = ("v1/core/single_type_kv_cache_manager.py: SlidingWindowManager frees the blocks wholly before token "
         "num_computed - window + 1, ChunkedLocalAttentionManager those before (num_computed // chunk) x chunk; "
         "a request of L tokens is allocated its last token with num_computed = L - 1")

PROFILES: dict[str, VllmProfile] = {p.release: p for p in (
    VllmProfile(
        release="0.10.2",
        block_size=16, block_size_source="platforms/cuda.py CudaPlatform.check_and_update_config: block_size 16 "
        "when unset",
        mla_block_size=64, mla_block_size_source="platforms/cuda.py check_and_update_config: FlashMLA sets "
        "block_size 64",
        gpu_memory_utilization=0.9, gpu_memory_utilization_source="config/cache.py CacheConfig."
        "gpu_memory_utilization = 0.9",
        hybrid_alignment="multiple_of_16", hybrid_alignment_source="model_executor/models/config.py "
        "HybridAttentionMambaModelConfig.verify_and_update_config: attn_block_size = 16 x cdiv(mamba page, 16 x "
        "attention page of one token); the Mamba page padded to the attention page",
        hybrid_mla_align=0, uniform_type_group=False, group_size_rule="min",
        grouping_source="v1/core/kv_cache_utils.py "
        "_get_kv_cache_config_uniform_page_size: group size = fewest layers of one kind; unify_kv_cache_spec_page_size",
        mamba_ssm_dtype_from_config=False, mamba_ssm_dtype_source="model_executor/layers/mamba/mamba_utils.py "
        "_mamba_state_dtype: mamba_ssm_cache_dtype 'auto' = the model dtype; no config class overrides it",
        indexer_bytes_per_token=None, indexer_source="no DSA models in model_executor/models/registry.py",
        sparse_mla_fp8_bytes_per_token=None,
        log_style="blocks", log_source="v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_page_size / "
        "get_kv_cache_config: 'GPU KV cache size: num_blocks // groups x min block_size tokens', then "
        "'Maximum concurrency for max_model_len tokens per request: num_blocks / blocks per request'",
        defaults_source="engine/arg_utils.py EngineArgs._set_default_args_v1 (70 GiB rule)",
        skip_source=_SKIP,
        added_architectures=_NEW_AFTER_0_10,
        layer_patterns=(("nemotron_h", "hybrid_override_pattern", "M-*", "model_executor/models/nemotron_h.py "
                         "ALL_DECODER_LAYER_TYPES: M, -, * (the MoE layer E came later)"),),
    ),
    VllmProfile(
        release="0.20.0",
        block_size=16, block_size_source="config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 16; "
        "platforms/interface.py update_block_size_for_backend keeps FlashAttention's preference",
        mla_block_size=64, mla_block_size_source="v1/attention/backends/mla/flashmla.py "
        "get_supported_kernel_block_sizes = [64]",
        gpu_memory_utilization=0.92, gpu_memory_utilization_source="config/cache.py CacheConfig."
        "gpu_memory_utilization default 0.92",
        hybrid_alignment="kernel_block", hybrid_alignment_source="platforms/interface.py "
        "Platform._align_hybrid_block_size: attn_block_size = align x cdiv(mamba page, align x attention page of "
        "one token), align = max(backend's smallest kernel block, block_size); Mamba page padded to match",
        hybrid_mla_align=0, uniform_type_group=True, group_size_rule="min_or_max_1.5",
        grouping_source="v1/core/kv_cache_utils.py "
        "get_kv_cache_groups: UniformTypeKVCacheSpecs for one kind; _get_kv_cache_groups_uniform_page_size: group "
        "size = fewest layers of one kind, or the most when below 1.5x the fewest",
        mamba_ssm_dtype_from_config=True, mamba_ssm_dtype_source="model_executor/models/config.py "
        "NemotronHForCausalLMConfig (config's mamba_ssm_cache_dtype, else float32), "
        "Qwen3_5ForConditionalGenerationConfig (config's mamba_ssm_dtype)",
        indexer_bytes_per_token=132, indexer_source="model_executor/models/deepseek_v2.py Indexer: "
        "DeepseekV32IndexerCache(head_dim=128 + 128 // 128 x 4, dtype=uint8), an MLAAttentionSpec",
        sparse_mla_fp8_bytes_per_token=656,
        log_style="blocks", log_source="v1/core/kv_cache_utils.py _report_kv_cache_config: num_blocks // "
        "groups x min block_size; get_max_concurrency_for_kv_cache_config",
        defaults_source="engine/arg_utils.py EngineArgs.get_batch_defaults (70 GiB rule)",
        skip_source=_SKIP,
    ),
    VllmProfile(
        release="0.34.0",
        block_size=64, block_size_source="config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 64",
        mla_block_size=64, mla_block_size_source="v1/attention/backends/mla/flashmla.py "
        "get_supported_kernel_block_sizes = [64]",
        gpu_memory_utilization=1.0, gpu_memory_utilization_source="config/cache.py "
        "resolved_gpu_memory_utilization: 1.0 with the extensible KV cache (the CUDA default), else 0.92",
        hybrid_alignment="kernel_block", hybrid_alignment_source="platforms/interface.py "
        "Platform._align_hybrid_block_size: align = max(smallest kernel block, block_size 64), rounded to every "
        "backend's kernel block; Mamba page padded to match",
        hybrid_mla_align=128, uniform_type_group=True, group_size_rule="min_or_max_1.5",
        grouping_source="v1/core/kv_cache_planning.py "
        "get_kv_cache_groups, _get_kv_cache_groups_uniform_page_size",
        mamba_ssm_dtype_from_config=True, mamba_ssm_dtype_source="model_executor/models/config.py "
        "NemotronHForCausalLMConfig, Qwen3_5ForConditionalGenerationConfig",
        indexer_bytes_per_token=132, indexer_source="model_executor/models/deepseek_v2.py DeepseekV32IndexerCache",
        sparse_mla_fp8_bytes_per_token=656,
        log_style="concurrency", log_source="v1/core/kv_cache_utils.py update_kv_cache_capacity: 'GPU KV cache "
        "size: int(concurrency x max_model_len) tokens, Maximum concurrency for ...: Nx' on one line; "
        "get_max_concurrency_for_kv_cache_config sums each group's blocks",
        defaults_source="engine/arg_utils.py EngineArgs.get_batch_defaults (70 GiB rule)",
        skip_source=_SKIP,
        not_modelled=("block-outermost packed groups (v1/core/kv_cache_planning.py _get_packed_kv_cache_groups), "
                      "used only when the resolved KV cache layout is block-outermost",),
    ),
)}
NEWEST = max(PROFILES, key=lambda r: tuple(int(x) for x in r.split(".")))
DEFAULT_PROFILE = PROFILES[NEWEST]


def profile_for(text: str | None) -> VllmProfile:
    """`vllm==X.Y.Z` (or `vllm`, the newest) -> its profile; anything else is an EngineError naming it."""
    if text is None or text.strip() in ("vllm", ""):
        return DEFAULT_PROFILE
    engine, sep, release = text.strip().partition("==")
    if engine != "vllm" or not sep:
        raise EngineError(f"--engine {text}: expected vllm==X.Y.Z (profiles: {', '.join(names())})")
    if release not in PROFILES:
        raise EngineError(f"--engine {text}: kvreport has no rules for vLLM {release} "
                          f"(profiles: {', '.join(names())})")
    return PROFILES[release]


def names() -> list[str]:
    return [p.name for p in PROFILES.values()]
