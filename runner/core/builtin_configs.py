"""The hand-written built-in architectures: hyperparameters copied from each model's published config.json,
for the names the catalogue (runner/core/catalogue/) does not carry yet. Plain data, no imports: the model
facts read them as configs, the measuring code builds them with transformers."""
from __future__ import annotations

# Built-in names: runner/core/catalogue/<name>.json (published config.json files with their sources) first, then
# the hand-written architectures below for the names the catalogue does not carry yet.
# name -> (config class, hyperparameters), copied from each model's published config.json.
BUILTIN: dict[str, tuple[str, dict]] = {
    "gpt2": ("GPT2Config", dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)),
    "gpt2-medium": ("GPT2Config", dict(n_layer=24, n_head=16, n_embd=1024, n_positions=1024, vocab_size=50257)),
    "llama-2-7b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096, rms_norm_eps=1e-5)),
    "mistral-7b": ("MistralConfig", dict(  # v0.1: the release with a 4096-token sliding window
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768, sliding_window=4096,
        rms_norm_eps=1e-5)),
    "qwen2.5-0.5b": ("Qwen2Config", dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
        rms_norm_eps=1e-6, rope_theta=1000000.0, use_sliding_window=False, sliding_window=32768)),
    "qwen2.5-7b": ("Qwen2Config", dict(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768, tie_word_embeddings=False,
        rms_norm_eps=1e-6, rope_theta=1000000.0, use_sliding_window=False, sliding_window=131072)),
}
LEGACY_MODEL_TYPES = {"GPT2Config": "gpt2", "LlamaConfig": "llama", "MistralConfig": "mistral",
                       "Qwen2Config": "qwen2"}

# A GPT-2-shaped toy for tests and --quick smoke runs on slow CPUs; not listed as a real architecture.
TEST_MODELS: dict[str, tuple[str, dict]] = {
    "tiny-gpt2": ("GPT2Config", dict(n_layer=2, n_head=4, n_embd=64, n_positions=512, vocab_size=512,
                                      bos_token_id=0, eos_token_id=0)),
    "tiny-llama-gqa": ("LlamaConfig", dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=512, max_position_embeddings=512)),
}
