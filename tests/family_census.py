"""The family census: every model_type of the installed transformers that has a causal-LM class, built from a
tiny config (its config class's defaults, sizes made small, windows and chunks 8 tokens), one CPU prefill below
and above every window, every tensor in the returned cache summed (the cache object's own attributes too), and
compared with the model facts of the config as save_pretrained writes it. Run as a script it prints the table:
`python tests/family_census.py`."""
from __future__ import annotations

import json
import multiprocessing
import sys
import warnings
from collections import Counter

SEQS = (5, 12)  # below and above the 8-token windows and chunks
TINY = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=128, sliding_window=8, attention_chunk_size=8, max_position_embeddings=256,
            n_layer=4, n_head=4, n_embd=64, d_model=64, num_layers=4, num_heads=4, n_positions=256,
            moe_intermediate_size=32, num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2,
            state_size=8, ssm_state_size=8, chunk_size=8, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
            qk_nope_head_dim=8, v_head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _tensor_bytes(obj, seen: set, depth: int = 0) -> int:
    import torch
    if depth > 4 or id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):  # one-element tensors are bookkeeping (a sliding layer's length counter)
        return obj.numel() * obj.element_size() if obj.numel() > 1 else 0
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v, seen, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v, seen, depth + 1) for v in obj)
    if hasattr(obj, "__dict__") and type(obj).__module__.startswith("transformers"):
        return sum(_tensor_bytes(v, seen, depth + 1) for v in vars(obj).values())
    return 0


def census_one(model_type: str) -> tuple[str, str, str]:
    """(model_type, status, detail): status exact | wrong | refused | no_build | no_cache."""
    warnings.filterwarnings("ignore")
    import torch
    import transformers
    from transformers import CONFIG_MAPPING
    from kvreport.runner.core.model_facts import ModelFactsError, facts_from_config
    from kvreport.runner.core.model_facts.config import parse_json_text
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    try:
        cls = CONFIG_MAPPING[model_type]
        defaults = cls().to_dict()
        overrides = {k: v for k, v in TINY.items() if k in defaults}
        config = cls(**overrides)
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).eval()
    except Exception as exc:  # noqa: BLE001 - the census records why a family could not be built
        return model_type, "no_build", f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    try:
        facts = facts_from_config(parse_json_text(config.to_json_string(use_diff=True), "census"))
    except ModelFactsError as exc:
        return model_type, "refused", str(exc)[:160]
    vocab = getattr(config.get_text_config(), "vocab_size", 128) or 128
    for seq in SEQS:
        try:
            with torch.no_grad():
                out = model(input_ids=torch.randint(3, min(vocab, 120), (1, seq)), use_cache=True)
        except Exception as exc:  # noqa: BLE001
            return model_type, "no_build", f"prefill: {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
        cache = getattr(out, "past_key_values", None)
        if cache is None:
            cache = getattr(out, "cache_params", None) or getattr(out, "cache", None)
        held = _tensor_bytes(cache, set()) if cache is not None else 0
        want = facts.cache_bytes(seq, 1, "float32")
        if held != want:
            return model_type, "wrong", f"seq {seq}: cache holds {held} B, facts say {want} B ({facts.rules})"
    return model_type, "exact", facts.rules


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def run_census(types=None, workers: int = 2, timeout_s: int = 120, progress=None) -> dict[str, tuple[str, str]]:
    types = types or causal_lm_types()
    ctx = multiprocessing.get_context("spawn")
    out = {}
    with ctx.Pool(workers) as pool:
        pending = {t: pool.apply_async(census_one, (t,)) for t in types}
        for t, job in pending.items():
            try:
                _, status, detail = job.get(timeout=timeout_s)
            except multiprocessing.TimeoutError:
                status, detail = "no_build", f"timed out after {timeout_s} s"
            except Exception as exc:  # noqa: BLE001
                status, detail = "no_build", f"{type(exc).__name__}: {exc}"[:160]
            out[t] = (status, detail)
            if progress is not None:  # one line per family as it completes, so a cut-short census keeps its rows
                print(json.dumps([t, status, detail]), file=progress, flush=True)
    return out


if __name__ == "__main__":
    results = run_census(sys.argv[1:] or None, progress=sys.stdout)
    print(Counter(s for s, _ in results.values()), file=sys.stderr)
