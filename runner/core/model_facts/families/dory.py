"""Dory: a looped decoder; its recurrent section runs n_recurrent_loops times, and in the default "per_loop"
mode every loop after the first caches into its own copy of the recurrent layers.

Source: transformers 5.25.0 models/dory/configuration_dory.py and modeling_dory.py:
- DoryConfig.__post_init__: released configs (and to_dict) list each layer as an attention block followed by
  an "mlp" block, with num_hidden_layers, n_input_layers, n_recurrent_layers and n_output_layers counted in
  blocks; the model keeps every other entry and halves the counts. layer_types default: every 4th layer full,
  the others sliding; n_recurrent_layers defaults to the layers left between the input and output sections.
- DoryModel.forward: `per_loop` appends deep copies of the recurrent section's cache layers for loops 1, 2, ...
  (`cache.layers += [copy.deepcopy(c) for c in recurrent_cache * (n_loops - 1)]`); `last_loop` appends
  DoryPastReader views of the same layers, which write nothing.
- Defaults: num_hidden_layers 36, num_attention_heads 16, num_key_value_heads 4, head_dim 256, sliding_window
  1024, n_input_layers 8, n_output_layers 8, n_recurrent_loops 2, hidden_size 2560, intermediate_size 7168,
  vocab_size 131072.
Each layer's cache is read as transformers' cache reads it (the generic reading).
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from .generic import generic


def dory(c: ConfigReader) -> Built:
    raw = dict(c.raw)
    n_layers = c.opt("num_hidden_layers", 36)
    n_in, n_out = c.opt("n_input_layers", 8), c.opt("n_output_layers", 8)
    n_rec = c.maybe("n_recurrent_layers")
    n_rec = None if n_rec is None else c._int("n_recurrent_layers", n_rec)
    types = raw.get("layer_types")
    if isinstance(types, list) and "mlp" in types:  # the released form: attention and mlp blocks, counted in blocks
        types = types[::2]
        n_layers, n_in, n_out = n_layers // 2, n_in // 2, n_out // 2
        n_rec = None if n_rec is None else n_rec // 2
    if types is None:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n_layers)]
    if n_rec is None:
        n_rec = n_layers - n_in - n_out
    if n_rec < 0 or n_in + n_rec + n_out != n_layers:
        raise ModelFactsError(f"{c.where}: n_input_layers + n_recurrent_layers + n_output_layers must equal "
                              f"num_hidden_layers (model_type dory)")
    loops = c.opt("n_recurrent_loops", 2)
    if loops < 1:
        raise ModelFactsError(f"{c.where}: config field 'n_recurrent_loops' is {loops}, expected at least 1")
    raw.update(layer_types=types, num_hidden_layers=n_layers, num_key_value_heads=c.opt("num_key_value_heads", 4),
               head_dim=c.opt("head_dim", 256), sliding_window=c.opt("sliding_window", 1024),
               num_attention_heads=c.opt("num_attention_heads", 16), hidden_size=c.opt("hidden_size", 2560),
               intermediate_size=c.opt("intermediate_size", 7168), vocab_size=c.opt("vocab_size", 131072))
    inner = ConfigReader(raw, c.where, c.model_type)
    built = generic(inner)
    c.defaults_used.extend(inner.defaults_used)
    layers = list(built.layers)
    per_loop = c.opt("recurrent_kv_cache_mode", "per_loop") == "per_loop"
    if per_loop:
        layers += layers[n_in:n_in + n_rec] * (loops - 1)
    notes = [f"the {n_rec} recurrent layers run {loops} times, " +
             (f"each loop after the first caching into its own copy ({len(layers)} cache layers)" if per_loop
              else "only the last one writing the cache"),
             "weights: counted as a Llama-shaped decoder (attention, gated MLP, embeddings), analytic"]
    return Built(layers, built.params, notes)
