"""model_facts against the installed transformers itself, on tiny synthetic configs of every supported family:
the bytes each cache layer really holds after a prefill (keys, values, conv and recurrent states) and the
parameter count of the model transformers builds (on the meta device). Windows and chunks are 8 tokens, so the
prefills of 5, 7, 8 and 12 tokens fall below, at the cap, at the window and above it."""
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from packaging.version import Version  # noqa: E402

from kvreport.runner.core.model_facts import facts_from_config  # noqa: E402

# Where a newer transformers lays a cache out differently from the release the facts follow (5.24): the test
# must then fail (strict xfail), so a fix on either side is noticed. (config name, first release that differs)
NEWER_RELEASE_DIFFERENCES = {
    ("falcon-new", "5.25.0"): "transformers 5.25's Falcon (new_decoder_architecture) caches its num_kv_heads K/V "
                              "heads; 5.24 (the facts) caches them repeated to every attention head",
}

SMALL = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=64, pad_token_id=0)
MLA = dict(hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_hidden_layers=3, num_attention_heads=4,
           num_key_value_heads=4, vocab_size=64, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
           v_head_dim=12, n_routed_experts=4, num_experts_per_tok=2, first_k_dense_replace=1, n_shared_experts=1)
CONFIGS = {
    "gpt2": dict(model_type="gpt2", n_layer=2, n_head=4, n_embd=32, vocab_size=64, n_positions=64),
    "llama-bias-tied": dict(model_type="llama", head_dim=12, attention_bias=True, mlp_bias=True,
                            tie_word_embeddings=True, **SMALL),
    "mistral-swa": dict(model_type="mistral", sliding_window=8, **SMALL),
    "qwen2-swa-upper": dict(model_type="qwen2", use_sliding_window=True, sliding_window=8, max_window_layers=2, **SMALL),
    "qwen3": dict(model_type="qwen3", head_dim=16, **SMALL),
    "qwen3_moe": dict(model_type="qwen3_moe", head_dim=16, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=16, mlp_only_layers=[1], **SMALL),
    "phi3-swa": dict(model_type="phi3", sliding_window=8, **SMALL),
    "falcon-mq": dict(model_type="falcon", hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                      vocab_size=64, multi_query=True),
    "falcon-new": dict(model_type="falcon", hidden_size=32, num_attention_heads=4, num_kv_heads=2,
                       num_hidden_layers=2, vocab_size=64, new_decoder_architecture=True),
    "gemma3_text": dict(model_type="gemma3_text", head_dim=16, sliding_window=8, sliding_window_pattern=3,
                        **{**SMALL, "num_hidden_layers": 6}),
    "gpt_oss": dict(model_type="gpt_oss", head_dim=16, sliding_window=8, num_local_experts=4, num_experts_per_tok=2,
                    **SMALL),
    "llama4_text": dict(model_type="llama4_text", head_dim=16, attention_chunk_size=8, num_local_experts=2,
                        intermediate_size_mlp=40, interleave_moe_layer_step=2, **SMALL),
    "deepseek_v3": dict(model_type="deepseek_v3", q_lora_rank=24, n_group=2, topk_group=1, **MLA),
    "deepseek_v2-no-q-lora": dict(model_type="deepseek_v2", q_lora_rank=None, **MLA),
    "qwen3_next": dict(model_type="qwen3_next", head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
                       linear_key_head_dim=8, linear_value_head_dim=8, num_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=16, shared_expert_intermediate_size=16, **SMALL),
    "jamba": dict(model_type="jamba", attn_layer_period=2, attn_layer_offset=1, num_experts=2, expert_layer_period=2,
                  expert_layer_offset=1, mamba_d_state=8, use_mamba_kernels=False, **SMALL),
    "nemotron_h": dict(model_type="nemotron_h", hybrid_override_pattern="M-*M", hidden_size=32, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=8, vocab_size=64, intermediate_size=48, mamba_num_heads=4,
                       mamba_head_dim=8, n_groups=2, ssm_state_size=8, conv_kernel=4, chunk_size=8,
                       use_mamba_kernels=False),
    "deepseek_v32": dict(model_type="deepseek_v32", q_lora_rank=24, n_group=2, topk_group=1, index_head_dim=16,
                         index_n_heads=2, index_topk=4, **MLA),
    "glm_moe_dsa-shared": dict(model_type="glm_moe_dsa", q_lora_rank=24, index_head_dim=16, index_n_heads=2,
                               index_topk=4, index_topk_pattern="FSF", **MLA),
    "gemma4_text-moe-k_eq_v": dict(model_type="gemma4_text", head_dim=16, global_head_dim=24, sliding_window=8,
                                   attention_k_eq_v=True, num_global_key_value_heads=1, enable_moe_block=True,
                                   num_experts=4, top_k_experts=2, moe_intermediate_size=16,
                                   hidden_size_per_layer_input=0, **{**SMALL, "num_hidden_layers": 6}),
    "gemma4_text-shared-ple": dict(model_type="gemma4_text", head_dim=16, global_head_dim=24, sliding_window=8,
                                   num_kv_shared_layers=1, use_double_wide_mlp=True, hidden_size_per_layer_input=8,
                                   vocab_size_per_layer_input=64, **{**SMALL, "num_hidden_layers": 7}),
    "mimo_v2_flash": dict(model_type="mimo_v2_flash", head_dim=16, v_head_dim=12, sliding_window_size=7,
                          n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                          **{**SMALL, "num_hidden_layers": 6}),
    "mixtral-swa": dict(model_type="mixtral", sliding_window=8, num_local_experts=4, num_experts_per_tok=2, **SMALL),
    "minimax_m2": dict(model_type="minimax_m2", head_dim=16, num_local_experts=4, num_experts_per_tok=2, **SMALL),
    "qwen3_5_text": dict(model_type="qwen3_5_text", head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
                         linear_key_head_dim=8, linear_value_head_dim=8, **SMALL),
    "qwen3_5_moe_text": dict(model_type="qwen3_5_moe_text", head_dim=16, linear_num_key_heads=2,
                             linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, num_experts=4,
                             num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16,
                             **SMALL),
    "nemotron_h-moe": dict(model_type="nemotron_h", hybrid_override_pattern="ME*E", hidden_size=32,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, vocab_size=64,
                           intermediate_size=48, mamba_num_heads=4, mamba_head_dim=8, n_groups=2, ssm_state_size=8,
                           conv_kernel=4, chunk_size=8, n_routed_experts=4, num_experts_per_tok=2,
                           moe_intermediate_size=16, moe_shared_expert_intermediate_size=24, moe_latent_size=16,
                           use_mamba_kernels=False),
    "mamba": dict(model_type="mamba", hidden_size=32, num_hidden_layers=2, vocab_size=64, state_size=8,
                  conv_kernel=4, use_bias=True),
    "falcon_mamba": dict(model_type="falcon_mamba", hidden_size=32, num_hidden_layers=2, vocab_size=64,
                         state_size=8, expand=2, conv_kernel=4, time_step_rank=3),
    "mamba2": dict(model_type="mamba2", hidden_size=32, num_hidden_layers=2, vocab_size=64, num_heads=4, head_dim=16,
                   n_groups=2, state_size=8, expand=2, chunk_size=8),
    "generic-olmo2-swa": dict(model_type="olmo2", sliding_window=8, **SMALL),
    "generic-cohere2": dict(model_type="cohere2", sliding_window=8, layer_types=["sliding_attention",
                            "full_attention"] * 2, **SMALL),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _config(raw):
    transformers.logging.set_verbosity_error()
    return transformers.AutoConfig.for_model(**raw)


def _held_bytes(layer) -> tuple[int, int, int]:
    """K, V and state bytes one transformers cache layer holds."""
    def size(t):
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0
    state = sum(size(t) for name in ("conv_states", "recurrent_states")
                for t in (getattr(layer, name, None) or {}).values())
    # a DSA layer's indexer keys grow per token beside the latent: model_facts counts them with the keys
    keys = size(getattr(layer, "keys", None)) + size(getattr(layer, "indexer_keys", None))
    return keys, size(getattr(layer, "values", None)), state


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_facts_match_what_transformers_builds_and_caches(name, request):
    for (config, since), why in NEWER_RELEASE_DIFFERENCES.items():
        if config == name and Version(transformers.__version__) >= Version(since):
            request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    raw = CONFIGS[name]
    facts = facts_from_config(raw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(_config(raw)).eval()
    if facts.rules == "family":  # the generic reading counts weights as a Llama-shaped decoder, and says so
        assert facts.weight_params == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    for dtype in ("float32", "bfloat16"):
        model.to(DTYPES[dtype])
        for seq, batch in ((5, 2), (7, 1), (8, 2), (12, 1)):
            with torch.no_grad():
                cache = model(input_ids=torch.randint(1, 64, (batch, seq)), use_cache=True).past_key_values
            assert len(cache.layers) == len(facts.layers)
            for i, layer in enumerate(cache.layers):
                want = facts.layer_cache_bytes(i, seq, batch, dtype)
                assert _held_bytes(layer) == (want["k_bytes"], want["v_bytes"], want["state_bytes"]), \
                    f"{dtype}: layer {i} ({want['kind']}, {type(layer).__name__}) after {seq} tokens x {batch}"
            assert sum(sum(_held_bytes(layer)) for layer in cache.layers) == facts.cache_bytes(seq, batch, dtype)
