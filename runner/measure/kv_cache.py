"""One adapter over the cache objects every transformers release returns (5.x `.layers`, 4.4x key/value
lists, legacy tuples): `read_cache` gives each layer's tensors, `cache_bytes` and `cache_bytes_per_layer`
their sizes (every tensor a layer holds; 0-d bookkeeping left out). A layer of a class it does not know
raises CacheLayoutError: a cache we cannot read is never reported as smaller than it is.
Method: docs/methods/memory.md."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

# Base classes whose instances this adapter reads, by name so no transformers import is needed here.
_ATTENTION_BASES = ("CacheLayerMixin",)              # DynamicLayer, sliding, static, indexed, quantized...
_STATE_BASES = ("LinearAttentionCacheLayerMixin",)   # LinearAttentionLayer and the hybrid layers
_EMPTY_BASES = ("DummyLayer",)                       # a layer with no cache (MLP/MoE-only, KV-shared)
# Attributes that hold a cache's contents but are neither K nor V: counted as state.
_STATE_ATTRS = ("conv_states", "recurrent_states", "ssm_states")
# Per-model cache classes without `.layers` (4.4x Mamba hybrids): lists of K, V and state tensors.
_LIST_CACHE_ATTRS = ("key_cache", "value_cache", "conv_states", "ssm_states")


class CacheLayoutError(TypeError):
    """A cache or cache layer this adapter cannot account for; the message names its type."""


@dataclass
class LayerCache:
    """What one layer's cache holds after a forward pass."""
    index: int
    layer_class: str                  # e.g. DynamicSlidingWindowLayer, LinearAttentionLayer
    keys: object | None = None        # tensor or None
    values: object | None = None
    states: list = field(default_factory=list)  # [(name, tensor)]: conv/recurrent states
    # Other per-token key tensors beside K (a sparse-attention indexer's keys, DeepSeek-V3.2 / GLM-5):
    # counted with K, as they grow with the sequence as K does.
    extra_keys: list = field(default_factory=list)  # [(name, tensor)]

    @property
    def k_bytes(self) -> int:
        own = tensor_bytes(self.keys) if self.keys is not None else 0
        return own + sum(tensor_bytes(t) for _, t in self.extra_keys)

    @property
    def v_bytes(self) -> int:
        return tensor_bytes(self.values) if self.values is not None else 0

    @property
    def state_bytes(self) -> int:
        return sum(tensor_bytes(t) for _, t in self.states)

    @property
    def total_bytes(self) -> int:
        return self.k_bytes + self.v_bytes + self.state_bytes

    @property
    def cached_tokens(self) -> int | None:
        """Tokens the K tensor holds (its sequence axis), None for a layer without K."""
        return int(self.keys.shape[-2]) if self.keys is not None and self.keys.dim() >= 2 else None

    def tensors(self) -> list:
        return ([t for t in (self.keys, self.values) if t is not None] + [t for _, t in self.extra_keys]
                + [t for _, t in self.states])


def _mro_names(obj) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def _is_tensor(value) -> bool:
    return hasattr(value, "numel") and hasattr(value, "element_size") and hasattr(value, "dim")


def _tensors_in(value) -> list:
    """The tensors an attribute holds: a tensor, or a dict/list/tuple of them (None entries skipped)."""
    if _is_tensor(value):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(item)]
    return []


def read_layer(index: int, layer) -> LayerCache:
    """One layer object of a 5.x cache, whatever its class; CacheLayoutError for an unknown class."""
    names = _mro_names(layer)
    out = LayerCache(index, type(layer).__name__)
    if names & set(_EMPTY_BASES):
        return out
    if not names & set(_ATTENTION_BASES + _STATE_BASES):
        raise CacheLayoutError(
            f"cache layer {index} is a {type(layer).__module__}.{type(layer).__name__}, a layer type this "
            "kvreport cannot read (known: attention layers with keys/values, linear-attention/Mamba state "
            "layers, empty layers); its bytes would be missed, so nothing is reported")
    for attr, value in vars(layer).items():
        if attr == "keys":
            out.keys = value if _is_tensor(value) and value.dim() > 0 else None
        elif attr == "values":
            out.values = value if _is_tensor(value) and value.dim() > 0 else None
        else:
            # Anything else that holds a multi-element tensor is cache contents (conv/recurrent states,
            # an indexer's keys, quantized K/V); 0-d tensors are bookkeeping (window length, counters).
            target = out.extra_keys if attr.endswith("_keys") else out.states
            for i, t in enumerate(_tensors_in(value)):
                if t.dim() > 0:
                    target.append((f"{attr}[{i}]" if not _is_tensor(value) else attr, t))
    return out


def _list_cache_layers(cache) -> list[LayerCache]:
    """A pre-5.x per-model cache (HybridMambaAttentionDynamicCache and kin): parallel lists per layer."""
    lists = {a: getattr(cache, a) for a in _LIST_CACHE_ATTRS if isinstance(getattr(cache, a, None), (list, tuple))}
    n = max(len(v) for v in lists.values())
    out = []
    for i in range(n):
        def at(attr, i=i):
            seq = lists.get(attr)
            t = seq[i] if seq is not None and i < len(seq) else None
            return t if _is_tensor(t) and t.dim() > 0 and t.numel() > 0 else None
        layer = LayerCache(i, type(cache).__name__, at("key_cache"), at("value_cache"))
        layer.states = [(a, at(a)) for a in ("conv_states", "ssm_states") if at(a) is not None]
        out.append(layer)
    return out


def read_cache(cache) -> list[LayerCache]:
    """Every layer of the cache, in order, with every tensor it holds."""
    if cache is None:
        raise ValueError("the model returned no cache (use_cache was off?)")
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [read_layer(i, layer) for i, layer in enumerate(layers)]
    if any(isinstance(getattr(cache, a, None), (list, tuple)) for a in _LIST_CACHE_ATTRS):
        return _list_cache_layers(cache)
    if isinstance(cache, (tuple, list)):
        return [LayerCache(i, "tuple", kv[0], kv[1]) for i, kv in enumerate(cache)]
    raise CacheLayoutError(f"unrecognised cache type {type(cache).__module__}.{type(cache).__name__}: "
                           "kvreport cannot count its bytes")


def cache_layers(cache) -> list[tuple[object, object]]:
    """[(K, V), ...] for the layers that hold K and V (attention layers), whatever the cache type."""
    return [(layer.keys, layer.values) for layer in read_cache(cache) if layer.keys is not None]


def tensor_bytes(t) -> int:
    return t.numel() * t.element_size()


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages the tensors keep alive: what memory really holds, which is more than
    the tensors' own bytes when one is a view into a larger buffer (a sliding-window layer right after a
    prefill longer than its window keeps a view of the whole prefill's K/V)."""
    seen, total = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


def cache_bytes_per_layer(cache) -> list[tuple[int, int]]:
    """[(k_bytes, v_bytes), ...] per attention layer: the bytes the cache tensors really hold."""
    return [(tensor_bytes(k), tensor_bytes(v)) for k, v in cache_layers(cache)]


def cache_bytes(cache) -> int:
    """Every byte the cache holds: K, V and constant-size states, all layers."""
    return sum(layer.total_bytes for layer in read_cache(cache))


def cache_seq_len(cache) -> int:
    k, _ = cache_layers(cache)[0]
    return int(k.shape[-2])


def _cache_kwarg(model) -> str:
    # transformers 5.2x renamed the forward argument to `cache` and warns on the old name; older ones
    # only know `past_key_values`.
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params and "past_key_values" not in params else "past_key_values"


def forward_with_cache(model, input_ids, cache=None, last_logits_only: bool = False):
    """One forward pass that returns (logits, cache); `cache=None` is a prefill. `last_logits_only`: logits
    of the last position only (transformers' logits_to_keep=1, where the model takes it), as a serving
    engine's prefill computes them; for GPT-2 the full [tokens x 50,257] head is most of a short CPU prefill."""
    kwargs = {"use_cache": True}
    if last_logits_only and "logits_to_keep" in inspect.signature(model.forward).parameters:
        kwargs["logits_to_keep"] = 1
    if cache is not None:
        kwargs[_cache_kwarg(model)] = cache
    out = model(input_ids, **kwargs)
    # 5.2x outputs name the field `cache` (and warn on `past_key_values`); older ones only have the latter.
    new_cache = out["cache"] if "cache" in out else getattr(out, "past_key_values", None)
    return out.logits, new_cache
