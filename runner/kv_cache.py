"""One adapter over the cache objects that different transformers releases return.

- 5.x:   DynamicCache with `.layers`, each layer holding `.keys` / `.values`
- 4.4x:  DynamicCache with parallel `.key_cache` / `.value_cache` lists
- older: a tuple of (key, value) tuples ("legacy cache")
The GPU image runs an older transformers than PyPI's latest, so every experiment reads caches through here.
"""
from __future__ import annotations

import inspect


def cache_layers(cache) -> list[tuple[object, object]]:
    """[(K, V), ...] per layer, whatever the cache type. Layers not yet filled are skipped."""
    if cache is None:
        raise ValueError("the model returned no cache (use_cache was off?)")
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers if getattr(layer, "keys", None) is not None]
    key_cache = getattr(cache, "key_cache", None)
    if key_cache is not None:
        return list(zip(key_cache, cache.value_cache))
    if isinstance(cache, (tuple, list)):
        return [(kv[0], kv[1]) for kv in cache]
    raise TypeError(f"unrecognised cache type {type(cache).__name__}")


def tensor_bytes(t) -> int:
    return t.numel() * t.element_size()


def cache_bytes_per_layer(cache) -> list[tuple[int, int]]:
    """[(k_bytes, v_bytes), ...]: the bytes the cache tensors really hold, not a formula."""
    return [(tensor_bytes(k), tensor_bytes(v)) for k, v in cache_layers(cache)]


def cache_bytes(cache) -> int:
    return sum(k + v for k, v in cache_bytes_per_layer(cache))


def cache_seq_len(cache) -> int:
    k, _ = cache_layers(cache)[0]
    return int(k.shape[-2])


def _cache_kwarg(model) -> str:
    # transformers 5.2x renamed the forward argument to `cache` and warns on the old name; older ones
    # only know `past_key_values`.
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params and "past_key_values" not in params else "past_key_values"


def forward_with_cache(model, input_ids, cache=None):
    """One forward pass that returns (logits, cache); `cache=None` is a prefill."""
    kwargs = {"use_cache": True}
    if cache is not None:
        kwargs[_cache_kwarg(model)] = cache
    out = model(input_ids, **kwargs)
    # 5.2x outputs name the field `cache` (and warn on `past_key_values`); older ones only have the latter.
    new_cache = out["cache"] if "cache" in out else getattr(out, "past_key_values", None)
    return out.logits, new_cache
