"""Reformer: no K/V at all; each layer caches its (layer-normed) input hidden states, and an LSH layer also the
bucket ids of its tokens once its attention runs chunked.

Source: transformers 5.25.0 models/reformer/modeling_reformer.py:
- ReformerDynamicCache.update keeps `states` (one hidden_size vector per token, the model dtype) and `buckets`
  per layer; ReformerAttention.forward caches `hidden_states[:, :orig_sequence_length]` after its layer norm.
- LSHSelfAttention.forward hashes (int64 argmax ids, [batch, heads, num_hashes, tokens]) only when
  `not do_standard_self_attention`, i.e. when the (padded) length exceeds lsh_attn_chunk_length; otherwise, and
  in every LocalSelfAttention layer, the cache gets an empty bucket tensor.
- ReformerModel.forward pads the prompt to a multiple of the least common multiple of the chunk lengths when it
  is longer than the smallest chunk length and not such a multiple (_get_least_common_mult_chunk_len,
  _get_min_chunk_len); buckets and states are cut back to the prompt's own tokens before caching.
configuration_reformer.py: attn_layers (local, lsh) x 3, hidden_size 256, num_attention_heads 12,
attention_head_size 64, num_hashes 1, lsh_attn_chunk_length 64, local_attn_chunk_length 64, feed_forward_size
512, vocab_size 320; num_hidden_layers = len(attn_layers).
"""
from __future__ import annotations

import math

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from ..specs import ReformerStateSpec


def reformer(c: ConfigReader) -> Built:
    types = c.raw.get("attn_layers", ["local", "lsh"] * 3)
    if not isinstance(types, list) or not types or any(t not in ("local", "lsh") for t in types):
        raise ModelFactsError(f"{c.where}: config field 'attn_layers' must be a non-empty list of 'local' and "
                              f"'lsh' (model_type reformer)")
    h, n_heads = c.opt("hidden_size", 256), c.opt("num_attention_heads", 12)
    head, hashes = c.opt("attention_head_size", 64), c.opt("num_hashes", 1)
    lsh_chunk = c.opt("lsh_attn_chunk_length", 64) if "lsh" in types else 0
    local_chunk = c.opt("local_attn_chunk_length", 64) if "local" in types else 0
    chunks = [x for x in (lsh_chunk, local_chunk) if x]
    if not all(chunks):
        raise ModelFactsError(f"{c.where}: Reformer chunk lengths must be positive (model_type reformer)")
    lcm, shortest = math.lcm(*chunks), min(chunks)
    layers = [(ReformerStateSpec(h, n_heads * hashes if t == "lsh" else 0, lsh_chunk if t == "lsh" else 0, lcm,
                                 shortest),) for t in types]
    # per layer: attention (LSH: shared query-key, value, output; local: query, key, value, output), its norm,
    # the feed-forward (dense in, dense out, its norm)
    ff, all_heads = c.opt("feed_forward_size", 512), n_heads * head
    params = sum((3 if t == "lsh" else 4) * h * all_heads + 2 * h + 2 * h * ff + ff + h + 2 * h for t in types)
    vocab = c.opt("vocab_size", 320)
    params += vocab * h * (1 if c.opt("tie_word_embeddings", False) else 2) + vocab + 2 * 2 * h
    return Built(layers, params, ["caches hidden states (and LSH bucket ids), not keys and values",
                                  "weights: analytic, axial position embeddings not counted"])
