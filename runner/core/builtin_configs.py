"""The hand-written built-in architectures: hyperparameters copied from each model's published config.json,
for the names the catalogue (runner/core/catalogue/) does not carry yet. Plain data, no imports: the model
facts read them as configs, the measuring code builds them with transformers."""
from __future__ import annotations

# Built-in names: runner/core/catalogue/<name>.json (published config.json files with their sources) first, then
# the hand-written architectures below for the names the catalogue does not carry yet.
# name -> (config class, hyperparameters), copied from each model's published config.json.
#
# UNSOURCED: none of these six carries a citation, because the published config.json could not be read here (no
# host but package registries is reachable, so the Hugging Face hub was not asked). Looked for on 2026-12-02 with
# the search tool (docs, code corpora), the GitHub file index (find_files, find_string) and `fetch` of
# ai-dynamo/aiconfigurator (every revision of its model_configs/ caches only Mixtral among these families). Each
# entry's comment says what turned up; only fine-tunes, re-uploads and old revisions did, which are not the
# published file. They stay here, listed as waiting in runner/core/catalogue/README.md, until a source is read;
# when one is, the model moves to the catalogue and the published values replace these.
BUILTIN: dict[str, tuple[str, dict]] = {
    # openai-community/gpt2: the docs corpus holds tree pages (config.json 665 bytes, last changed by "Update
    # config.json") and the diffs of commits 8bfcadd and 7979bb7, but the file itself only at its first revision
    # 703af34 (176 bytes; also in the fork baffo32/gpt2-ptmap); commit 26b7c7a, between them, is not held, so
    # the current file cannot be rebuilt from the diffs.
    "gpt2": ("GPT2Config", dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)),
    # openai-community/gpt2-medium: only the file page at 0a83037 (341 bytes, no model_type or
    # activation_function), an old revision; otherwise fine-tunes whose config says "_name_or_path": "gpt2-medium".
    "gpt2-medium": ("GPT2Config", dict(n_layer=24, n_head=16, n_embd=1024, n_positions=1024, vocab_size=50257)),
    # meta-llama/Llama-2-7b-hf: no page of the repository is held; only fine-tunes naming it in "_name_or_path"
    # and the gojiteji/LLM-Comparer Space's copy, of which only tree and commit-list pages are held, not the file.
    "llama-2-7b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096, rms_norm_eps=1e-5)),
    # mistralai/Mistral-7B-v0.1: no page of the repository is held; only fine-tunes, quantised re-uploads and
    # mlx-community's converted params-style config.json (211 bytes, a different format).
    "mistral-7b": ("MistralConfig", dict(  # v0.1: the release with a 4096-token sliding window
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768, sliding_window=4096,
        rms_norm_eps=1e-5)),
    # Qwen/Qwen2.5-0.5B: no page of the repository is held; only fine-tunes and re-uploads (their dtype,
    # transformers_version and added fields differ from each other, so none can stand for the original).
    "qwen2.5-0.5b": ("Qwen2Config", dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
        rms_norm_eps=1e-6, rope_theta=1000000.0, use_sliding_window=False, sliding_window=32768)),
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
