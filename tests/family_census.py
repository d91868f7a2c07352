"""The family census: every model_type of the installed transformers that has a causal-LM class, built from a
tiny config (its config class's defaults, sizes made small in the config and every sub-config, windows and
chunks 8 tokens), one CPU prefill below and above every window, every tensor in the returned cache summed (the
cache object's own attributes too), and compared with the model facts of the config as save_pretrained writes it
(for MLA, in the layout the measured release's source caches, where it was read). A few families are built or
prefilled otherwise, each named with its reason: FAMILY_TINY (settings their own validation or model needs),
CLASS_CONFIG (a causal-LM class taking another config class), TEXT_MODEL_ONLY (a tower needing packages the
test environments lack), FAMILY_INPUTS (a prefill that takes other inputs than token ids).

Measuring (torch, transformers) and comparing (model facts only) are apart: each measurement is a JSON record
(the saved config and the bytes held per prefill length), so `--save FILE.jsonl` keeps them and
`--recompare FILE.jsonl` compares them again with the current model facts without building a model.
Each family is measured in a worker process of its own pool: one that runs past its time is killed and
replaced, and workers are recycled after a few families so a leak in one family never reaches the rest.

    python tests/family_census.py [--workers N] [--timeout S] [--save F.jsonl] [model_type ...]
    python tests/family_census.py --recompare F.jsonl
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import sys
import time
import warnings
from collections import Counter

SEQS = (5, 12)  # below and above the 8-token windows and chunks
STATUSES = ("exact", "wrong", "refused", "no_build", "no_cache")
TINY = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=128, sliding_window=8, attention_chunk_size=8, max_position_embeddings=256,
            n_layer=8, n_head=4, n_embd=64, d_model=64, num_layers=8, num_heads=4, n_positions=256,
            moe_intermediate_size=32, num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2,
            state_size=8, ssm_state_size=8, chunk_size=8, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
            qk_nope_head_dim=8, v_head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
            # encoders, vision and audio towers of multimodal wrappers: small too, or a build takes minutes
            encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, depth=2, embed_dim=64, num_global_key_value_heads=2,
            global_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
            linear_value_head_dim=8, mamba_num_heads=4, mamba_head_dim=8, mamba_d_state=8, n_groups=2,
            mamba_n_groups=2, index_head_dim=16, index_n_heads=2, index_topk=4, shared_expert_intermediate_size=32,
            moe_shared_expert_intermediate_size=32, intermediate_size_mlp=64, hidden_size_per_layer_input=8,
            vocab_size_per_layer_input=128, ffn_hidden_size=64, n_inner=64, kv_channels=16, d_ff=64, d_kv=16,
            num_decoder_layers=2, image_size=32, patch_size=8, sliding_window_size=8, attention_window_size=8,
            n_group=1, topk_group=1, num_expert_group=1, num_experts_per_token=2, mamba_n_heads=4, mamba_d_head=32,
            mamba_d_ssm=128, layers_block_type=None,
            # towers whose adapters must match the (tiny) hidden size (dots3_note's validate_architecture)
            adapter_in_dim=64, adapter_out_dim=64, adapter_input_size=64, hidden_size_global=64)
# Fields dropped from TINY where the class derives them: a None there would hide the derived value.
_NONE_IS_DEFAULT = {"layers_block_type"}
QWEN4_QSA = {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 16, "indexer_budget": 8,
             "indexer_compress_ratio": 4}
GEMMA4_DRAFTER = {"hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0, "num_hidden_layers": 8,
                  "num_kv_shared_layers": 8}
# Families whose config classes check a relation TINY breaks (each class's validate_architecture).
FAMILY_TINY = {"zaya": {"num_experts_per_tok": 1, "layer_types": ["hybrid_sliding", "hybrid"] * 4}, "dots1": {"n_shared_experts": 1},
               # three indexed layers, the last two reusing the first one's K/V
               "kolibri1_1": {"index_num_heads": 1, "layer_types": ["sliding_attention", "indexed_attention"] * 3 +
                              ["sliding_attention"] * 2, "index_layers": [1], "kv_source_layers": [0, 1, 2, 1, 4, 1, 6, 7]}, "mamba2": {"head_dim": 32},
               # hybrids whose defaults at 8 layers have no attention layer, which transformers cannot run
               "bamba": {"attn_layer_indices": [1, 5]},
               "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"] * 4},
               "lfm2_moe": {"layer_types": ["conv", "full_attention"] * 4},
               "gpt_neo": {"attention_types": [[["global", "local"], 4]]}, "gemma3n_text": {"num_kv_shared_layers": 2},
               "gemma3n": {"text_config": {"num_kv_shared_layers": 2}},
               "xmod": {"default_language": "en_XX"},
               # defaults their own validation rejects, which every published config sets: Moshi's
               # audio_vocab_size None, Cohere Compass's empty rope_parameters (it needs one per layer type)
               "moshi": {"audio_vocab_size": 128},
               # BLT's hashed byte-group embeddings (500,002 rows by default) would take minutes to build
               "blt": {"encoder_hash_byte_group_vocab": 512, "local_attention_window_len": 8},
               # Qwen4-Exp's indexer sizes default to null, which its model divides (published configs set them)
               "qwen4_exp_text": QWEN4_QSA, "qwen4_exp": {"text_config": QWEN4_QSA},
               # Cohere Compass: 5.17's rotary embedding splits each head by mrope_section (default [22, 22, 20],
               # for head_dim 128: models/cohere_compass/modeling_cohere_compass.py), so one that fits head_dim 16
               "cohere_compass_text": {"rope_parameters": {"full_attention": {"rope_type": "default",
                                                                               "rope_theta": 10000.0,
                                                                               "mrope_section": [3, 3, 2]}}},
               # DBRX's sizes go by its own names; its defaults leave clip_qkv None, which its attention's
               # torch.clamp rejects, and its attention config has no rope_theta (the published configs set both)
               "dbrx": {"n_heads": 4, "n_layers": 4, "attn_config": {"kv_n_heads": 1, "rope_theta": 10000.0,
                                                                     "clip_qkv": 8.0},
                        "ffn_config": {"ffn_hidden_size": 64, "moe_num_experts": 4, "moe_top_k": 2}},
               # xLSTM rounds its q/k and v widths up to a multiple of 64 (configuration_xlstm.qk_dim): a width
               # below 128 gives the cache one head size and the layers another
               "xlstm": {"hidden_size": 128, "embedding_dim": 128, "num_blocks": 8},
               # Reformer's causal LM needs is_decoder (ReformerModelWithLMHead's check), axial position sizes that
               # sum to hidden_size and cover the padded prompt, one attn_layers entry per layer; 8-token chunks so
               # the 12-token prompt runs its LSH layers chunked (and caches their bucket ids)
               "reformer": {"is_decoder": True, "attn_layers": ["local", "lsh"] * 4, "axial_pos_embds_dim": [32, 32],
                            "axial_pos_shape": [16, 16], "lsh_attn_chunk_length": 8, "local_attn_chunk_length": 8,
                            "attention_head_size": 16, "feed_forward_size": 64},
               # Dory in its saved form (an attention and an mlp block per layer, counts in blocks): 8 layers, 2 in,
               # 4 recurrent run 3 times, 2 out (its defaults, 8 in and 8 out, leave 8 layers no recurrent section)
               "dory": {"num_hidden_layers": 16, "layer_types": (["sliding_attention", "mlp"] * 3 +
                                                                  ["full_attention", "mlp"]) * 2,
                        "n_input_layers": 4, "n_recurrent_layers": 8, "n_output_layers": 4, "n_recurrent_loops": 3},
               # Gemma 4 assistants (drafters): their validate_architecture wants no per-layer inputs and every
               # layer reading the target model's K/V (configuration_gemma4_assistant.py); 8 layers, 8 shared
               "gemma4_assistant": {"text_config": GEMMA4_DRAFTER}, "gemma4_unified_assistant": {"text_config": GEMMA4_DRAFTER},
               # the looped layers must lie within the 8 layers, on attention-residual block boundaries
               "inkling2_loop_text": {"swa_num_attention_heads": 4, "swa_num_key_value_heads": 2, "swa_head_dim": 16,
                                      "n_layers_per_attn_res_block": 2, "loop_layer_index_start": 2,
                                      "loop_layer_index_end": 6}}
SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "encoder_config", "decoder_config", "speech_config",
               "perceiver_config", "vq_config", "depth_decoder_config", "backbone_config", "patcher_config",
               "global_config")


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


def _layers_of(defaults: dict) -> int | None:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(defaults.get(key), int):
            return defaults[key]
    return None


def _tiny_overrides(defaults: dict) -> dict:
    """TINY's fields that the config (or one of its sub-configs, recursively) has. A config whose defaults list
    something per layer (layer_types, a sparsity pattern) keeps the first 8 layers of each such list, so its
    pattern (a full layer among sliding ones, an indexer layer) survives; per_layer_config keeps those layers."""
    out = {k: v for k, v in TINY.items() if k in defaults and k not in _NONE_IS_DEFAULT}
    if "qk_rope_head_dim" in defaults and "head_dim" in defaults:  # MLA: head_dim is the rotary part
        out["head_dim"] = TINY["qk_rope_head_dim"]
    if "kv_lora_rank" in defaults and "num_key_value_heads" in defaults:  # MLA: every head has its K/V
        out["num_key_value_heads"] = TINY["num_attention_heads"]
    if "rotary_dim" in defaults and defaults["rotary_dim"]:
        out["rotary_dim"] = 8
    n = _layers_of(defaults)
    per_layer = {k: v for k, v in defaults.items() if isinstance(v, list) and n and len(v) == n and n > 8}
    if per_layer:
        for key in ("num_hidden_layers", "n_layer", "num_layers"):
            if key in defaults:
                out[key] = 8
        out.update({k: v[:8] for k, v in per_layer.items()})
    for key in SUB_CONFIGS:
        sub = defaults.get(key)
        if isinstance(sub, dict):  # per_layer_config is derived again from the fields it overrides
            out[key] = {**{k: v for k, v in sub.items() if k != "per_layer_config"}, **_tiny_overrides(sub)}
    return out


def tiny_config(model_type: str, cls=None):
    """The tiny config of a family, from `cls` (default: its model_type's config class)."""
    from transformers import CONFIG_MAPPING
    cls = cls or CONFIG_MAPPING[model_type]
    fixes = FAMILY_TINY.get(model_type, {})
    try:
        defaults = cls().to_dict()
    except Exception:  # noqa: BLE001 - defaults its own validation rejects: with the family's fixes, then
        defaults = cls(**fixes).to_dict()
    overrides = _tiny_overrides(defaults)
    for key, value in fixes.items():  # a sub-config's fixes merge into its tiny sizes
        overrides[key] = {**overrides[key], **value} if key in SUB_CONFIGS and isinstance(overrides.get(key), dict) \
            else value
    return cls(**overrides)


def _drafter_inputs(model, config, seq: int) -> dict:
    """Gemma 4 assistants (drafters) run on the target model's embeddings and K/V: their forward needs
    inputs_embeds (2 x backbone_hidden_size) and shared_kv_states, one (K, V) per layer type
    (models/gemma4_assistant/modeling_gemma4_assistant.py, Gemma4AssistantForCausalLM.forward, 5.25.0)."""
    import torch
    text, shared = config.get_text_config(), {}
    for i, layer in enumerate(model.model.layers):
        attn = layer.self_attn
        kv = text.per_layer_config[i].num_key_value_heads
        shared.setdefault(attn.layer_type, tuple(torch.randn(1, kv, seq, attn.head_dim) for _ in range(2)))
    return {"inputs_embeds": torch.randn(1, seq, 2 * config.backbone_hidden_size), "shared_kv_states": shared}


def _codebook_inputs(model, config, seq: int) -> dict:
    """MusicGen's decoder takes one row of ids per codebook (modeling_musicgen.py, MusicgenForCausalLM.forward:
    input_ids of (batch x num_codebooks, seq))."""
    import torch
    return {"input_ids": torch.randint(3, 100, (config.num_codebooks, seq))}


# Families whose prefill takes other inputs than one row of token ids.
FAMILY_INPUTS = {"gemma4_assistant": _drafter_inputs, "gemma4_unified_assistant": _drafter_inputs,
                 "musicgen": _codebook_inputs, "musicgen_melody": _codebook_inputs}
# Families whose causal-LM class takes another config class than the model_type's own: MusicgenForCausalLM is
# the decoder alone, built from MusicgenDecoderConfig (its config_class); MusicgenConfig (text encoder, audio
# encoder, decoder) belongs to MusicgenForConditionalGeneration. The census builds the class from its own config.
CLASS_CONFIG = {"musicgen", "musicgen_melody"}
# Multimodal families whose towers need packages the test environments do not install: the census builds the
# causal LM of their text_config, which is the model a text-only prefill of the wrapper runs (Gemma 3n's vision
# tower is a TimmWrapperModel, needing timm and pillow; Gemma3nModel.forward hands input_ids alone to its
# language_model, a Gemma3nTextModel, models/gemma3n/modeling_gemma3n.py 5.25.0). The facts still read the
# wrapper's config, as `kvreport models` would.
TEXT_MODEL_ONLY = {"gemma3n"}


def measure_one(model_type: str) -> dict:
    """The measurement record of one family: {"model_type", "status": measured | no_build,
    "config": the JSON save_pretrained writes, "held": {seq: bytes}, "detail"}."""
    warnings.filterwarnings("ignore")
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    record: dict = {"model_type": model_type, "transformers": transformers.__version__}
    try:
        torch.manual_seed(0)
        if model_type in CLASS_CONFIG:
            from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            model_cls = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
            config = tiny_config(model_type, model_cls.config_class)
            model = model_cls(config).eval()
        else:
            config = tiny_config(model_type)
            built = config.get_text_config() if model_type in TEXT_MODEL_ONLY else config
            model = transformers.AutoModelForCausalLM.from_config(built).eval()
        record["config"] = config.to_json_string(use_diff=True)
    except Exception as exc:  # noqa: BLE001 - the census records why a family could not be built
        return {**record, "status": "no_build", "detail": f"build: {_short(exc)}"}
    vocab = getattr(config.get_text_config(), "vocab_size", 128) or 128
    held = {}
    for seq in SEQS:
        try:
            with torch.no_grad():
                inputs = FAMILY_INPUTS[model_type](model, config, seq) if model_type in FAMILY_INPUTS else \
                    {"input_ids": torch.randint(3, max(4, min(vocab, 120)), (1, seq))}
                out = model(**inputs, use_cache=True)
        except Exception as exc:  # noqa: BLE001
            return {**record, "status": "no_build", "detail": f"prefill: {_short(exc)}"}
        cache = getattr(out, "past_key_values", None)
        if cache is None:
            # Mamba's cache_params, Dory's cache, xLSTM's state, Reformer's past_buckets_states
            cache = getattr(out, "cache_params", None) or getattr(out, "cache", None) or getattr(out, "state", None) \
                or getattr(out, "past_buckets_states", None)
        # no cache returned: nothing held (exact where the facts say so, status no_cache where they do not)
        held[seq] = _tensor_bytes(cache, set()) if cache is not None else 0
        if cache is None:
            record["detail"] = f"the prefill returned no cache ({type(out).__name__})"
    return {"detail": "", **record, "status": "measured", "held": held}


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def compare(record: dict) -> tuple[str, str, str]:
    """(status, detail, cache kinds) of one measurement record against the current model facts."""
    from kvreport.runner.core.model_facts import ModelFactsError, facts_from_config, mla_layout_read_for
    from kvreport.runner.core.model_facts.config import parse_json_text
    if record["status"] != "measured":
        return record["status"], record.get("detail", ""), ""
    try:
        facts = facts_from_config(parse_json_text(record["config"], "census"))
    except ModelFactsError as exc:
        return "refused", str(exc)[:200], ""
    # MLA: the layout the measured release's source caches, where it was read (the facts carry both)
    layout = mla_layout_read_for(record.get("transformers", ""), facts.model_type) if facts.mla_layouts else None
    if layout:
        facts = facts.with_mla_layout(layout)
    kinds = "+".join(sorted({s.kind for layer in facts.layers for s in layer})) or "none"
    for seq, held in sorted((int(s), b) for s, b in record["held"].items()):
        want = facts.cache_bytes(seq, 1, "float32")
        if held != want:
            if not held and record.get("detail"):
                return "no_cache", f"{record['detail']}; facts say {want} B", kinds
            return "wrong", f"seq {seq}: cache holds {held} B, facts say {want} B ({facts.rules})", kinds
    return "exact", facts.rules, kinds


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _worker(conn) -> None:
    while True:
        model_type = conn.recv()
        if model_type is None:
            return
        try:
            record = measure_one(model_type)
        except BaseException as exc:  # noqa: BLE001 - anything at all: the parent must get an answer
            record = {"model_type": model_type, "status": "no_build", "detail": f"worker: {_short(exc)}"}
        conn.send(record)


class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.task: str | None = None
        self.started = 0.0
        self.done = 0

    def give(self, model_type: str) -> None:
        self.task, self.started = model_type, time.monotonic()
        self.conn.send(model_type)

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.conn.send(None)
            except OSError:
                kill = True
            self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()


def measure_all(types=None, workers: int = 2, timeout_s: float = 120, recycle_after: int = 20, progress=None):
    """Measurement records of every family, each in a worker process of a pool of `workers`: a worker past
    `timeout_s` on one family is killed and replaced, and each is replaced after `recycle_after` families."""
    types = list(types or causal_lm_types())
    ctx = multiprocessing.get_context("spawn")
    todo, records = list(reversed(types)), {}
    pool = [_Worker(ctx) for _ in range(min(workers, len(types)))]
    try:
        while todo or any(w.task for w in pool):
            for i, w in enumerate(pool):
                if w.task is None and todo:
                    if w.done >= recycle_after or not w.proc.is_alive():
                        w.stop()
                        pool[i] = w = _Worker(ctx)
                    w.give(todo.pop())
            busy = [w for w in pool if w.task]
            now = time.monotonic()
            wait_s = max(0.1, min(w.started + timeout_s - now for w in busy))
            ready = multiprocessing.connection.wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                                                    timeout=wait_s)
            for i, w in enumerate(pool):
                if not w.task:
                    continue
                record = None
                if w.conn in ready:
                    try:
                        record = w.conn.recv()
                    except (EOFError, OSError):
                        record = {"status": "no_build", "detail": "worker died (crashed inside the prefill)"}
                elif w.proc.sentinel in ready:
                    record = {"status": "no_build", "detail": f"worker died (exit code {w.proc.exitcode})"}
                elif time.monotonic() - w.started > timeout_s:
                    record = {"status": "no_build", "detail": f"timed out after {timeout_s:g} s"}
                if record is None:
                    continue
                record = {"model_type": w.task, **record}
                records[w.task] = record
                if progress is not None:  # one line per family as it completes: a cut-short census keeps them
                    print(json.dumps(record), file=progress, flush=True)
                w.task, w.done = None, w.done + 1
                if record["status"] == "no_build" and record["detail"].startswith(("timed out", "worker died")):
                    w.stop(kill=True)
                    pool[i] = _Worker(ctx)
    finally:
        for w in pool:
            w.stop(kill=w.task is not None)
    return records


def read_records(path: str) -> dict[str, dict]:
    records = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                records[record["model_type"]] = record
    return records


def table(results: dict[str, tuple[str, str, str]]) -> str:
    """Families per status, and exact families per cache kind."""
    by_status = Counter(s for s, _, _ in results.values())
    lines = [f"{len(results)} families: " + ", ".join(f"{s} {by_status.get(s, 0)}" for s in STATUSES)]
    kinds = Counter(k for s, _, k in results.values() if s == "exact")
    lines.append("exact per cache kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_types", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--save", help="write each measurement record to this JSONL file")
    parser.add_argument("--recompare", help="compare the records of this JSONL file again, measuring nothing")
    args = parser.parse_args(argv)
    if args.recompare:
        records = read_records(args.recompare)
        if args.model_types:
            records = {t: r for t, r in records.items() if t in args.model_types}
    else:
        with open(args.save, "w", encoding="utf-8") if args.save else open(__import__("os").devnull, "w") as fh:
            records = measure_all(args.model_types or None, args.workers, args.timeout, progress=fh)
    results = {t: compare(r) for t, r in sorted(records.items())}
    for t, (status, detail, kinds) in results.items():
        print(f"{t:32} {status:9} {kinds:28} {detail}")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
