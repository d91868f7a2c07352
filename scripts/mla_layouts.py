"""Which KV-cache layout a DeepSeek-V3-shaped (MLA) layer gets in each transformers release, measured.

A tiny DeepseekV3 model (2 layers, hidden 64, random weights, 4 routed experts) runs one forward pass with
use_cache on 5 tokens; the cache object it returns is inspected: its class, each layer's key and value tensor
shapes and bytes. The dimensions are chosen so every candidate layout has a different width:
  per-head K: qk_nope_head_dim + qk_rope_head_dim = 12 + 8 = 20 per head (4 heads), V: v_head_dim = 10;
  compressed latent: kv_lora_rank (+ rope part) = 16 (+ 8 = 24), one "head".

  python scripts/mla_layouts.py --measure          # this interpreter's transformers; prints one JSON object
  python scripts/mla_layouts.py 4.51.3 5.0.0 ...   # each version in its own pip --target folder, sharing this
                                                   # interpreter's torch; writes runner/core/catalogue/mla_layouts.json
Nothing downloads at run time except the pip installs of the releases themselves (and their dependencies).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "runner" / "core" / "catalogue" / "mla_layouts.json"
SCRATCH = Path(os.environ.get("MLA_SCRATCH", "/tmp/mla_layouts"))

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            n_shared_experts=1, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
            first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=32, qk_nope_head_dim=12,
            qk_rope_head_dim=8, v_head_dim=10, max_position_embeddings=64, rope_scaling=None,
            tie_word_embeddings=False)
SEQ = 5


def _layout(key_shape, value_shape) -> str:
    heads, nope, rope, v, rank = (TINY["num_attention_heads"], TINY["qk_nope_head_dim"], TINY["qk_rope_head_dim"],
                                  TINY["v_head_dim"], TINY["kv_lora_rank"])
    if key_shape and key_shape[-1] in (rank, rank + rope) and (len(key_shape) < 4 or key_shape[1] == 1):
        return "latent"
    if key_shape and len(key_shape) == 4 and key_shape[1] == heads and key_shape[-1] == nope + rope \
            and value_shape and value_shape[-1] in (v, nope + rope):  # some releases pad V to K's width
        return "per_head"
    return "other"


def _tensor(t):
    if t is None or not hasattr(t, "shape"):
        return None, 0
    return list(t.shape), t.numel() * t.element_size()


def _layers(cache):
    """(layer class, key tensor, value tensor) per layer, for every cache shape transformers has returned."""
    if isinstance(cache, (tuple, list)):  # legacy tuple of (key, value) per layer
        return [(type(layer).__name__, layer[0], layer[1]) for layer in cache]
    if hasattr(cache, "layers"):  # 4.56+ style: cache.layers[i].keys / .values
        return [(type(layer).__name__, getattr(layer, "keys", None), getattr(layer, "values", None))
                for layer in cache.layers]
    if hasattr(cache, "key_cache"):  # DynamicCache before the per-layer objects
        return [("key_cache/value_cache lists", k, v) for k, v in zip(cache.key_cache, cache.value_cache)]
    raise TypeError(f"unknown cache object {type(cache).__name__}")


def measure() -> dict:
    import torch
    import transformers

    result = {"transformers": transformers.__version__, "torch": torch.__version__}
    if not hasattr(transformers, "DeepseekV3Config"):
        result["error"] = "this release has no DeepseekV3Config (DeepSeek-V3 not in the library)"
        return result
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.DeepseekV3Config(**TINY)
    config.use_cache = True
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, TINY["vocab_size"], (1, SEQ))
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
    cache = out.past_key_values
    result["cache_class"] = type(cache).__name__
    layers = []
    for layer_class, k, v in _layers(cache):
        k_shape, k_bytes = _tensor(k)
        v_shape, v_bytes = _tensor(v)
        layers.append({"layer_class": layer_class, "key_shape": k_shape, "value_shape": v_shape,
                       "key_bytes": k_bytes, "value_bytes": v_bytes, "dtype": str(k.dtype) if k is not None else None,
                       "layout": _layout(k_shape, v_shape)})
    result["layers"] = layers
    first = layers[0] if layers else {}
    result.update(key_shape=first.get("key_shape"), value_shape=first.get("value_shape"),
                  layout=first.get("layout"),
                  cache_bytes_all_layers=sum(layer["key_bytes"] + layer["value_bytes"] for layer in layers))
    return result


def run_version(version: str) -> dict:
    target = SCRATCH / f"tf-{version}"
    if not (target / ".done").exists():
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                            f"transformers=={version}"], capture_output=True, text=True)
        if r.returncode != 0:
            return {"transformers": version, "error": "pip install failed: " + r.stderr.strip().splitlines()[-1]}
        (target / ".done").write_text("")
    env = dict(os.environ, PYTHONPATH=str(target), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    r = subprocess.run([sys.executable, __file__, "--measure"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip() or "no output").splitlines()
        return {"transformers": version, "error": f"measurement failed: {lines[-1]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _version_key(version: str):
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def _layout_runs(versions: dict) -> list[dict]:
    """Consecutive measured releases with the same layout, oldest first: where the layout changed."""
    runs: list[dict] = []
    for version in sorted(versions, key=_version_key):
        layout = versions[version].get("layout") or ("no DeepseekV3" if "DeepseekV3Config" in
                                                     versions[version].get("error", "") else "error")
        if runs and runs[-1]["layout"] == layout:
            runs[-1]["last_measured"] = version
        else:
            runs.append({"layout": layout, "first_measured": version, "last_measured": version})
    return runs


def main(argv: list[str]) -> int:
    if argv == ["--measure"]:
        print(json.dumps(measure()))
        return 0
    if not argv:
        print("usage: mla_layouts.py --measure | VERSION [VERSION ...]", file=sys.stderr)
        return 2
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results.setdefault("what", "KV-cache layout of a DeepseekV3 (MLA) layer per transformers release, measured by "
                               "scripts/mla_layouts.py on a tiny random-weight model (config in 'tiny_config'), "
                               f"one forward pass with use_cache on {SEQ} tokens, CPU, float32")
    results["tiny_config"] = TINY
    results["layout_meaning"] = {
        "latent": "one head; key width kv_lora_rank (16) or kv_lora_rank + qk_rope_head_dim (24): the compressed "
                  "latent is cached (value, if any, holds the rope part)",
        "per_head": "num_attention_heads (4) heads; key width qk_nope_head_dim + qk_rope_head_dim (20), value width "
                    "v_head_dim (10) or padded to the key width: decompressed per-head K and V are cached",
        "other": "neither of the above"}
    versions = results.setdefault("versions", {})
    for version in argv:
        versions[version] = run_version(version)
        v = versions[version]
        print(version, v.get("cache_class"), v.get("key_shape"), v.get("value_shape"), v.get("layout"),
              v.get("error", ""), flush=True)
        results["versions"] = versions = dict(sorted(versions.items(), key=lambda kv: _version_key(kv[0])))
        results["layout_runs"] = _layout_runs(versions)
        OUT.write_text(json.dumps(results, indent=2) + "\n")  # after each version: one failure costs no others
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
