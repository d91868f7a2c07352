"""KV-faithful replicas: a model too large to build whole (or one asked for with --replica) is built with the
cache-relevant fields of its config kept and everything else shrunk (MLP and expert widths, vocabulary, layers
cut to the shortest prefix that repeats every distinct cache layer), so its cache tensors are exactly the
published model's per layer. Only the cache experiments run on a replica (models.REPLICA_EXPERIMENTS)."""
from __future__ import annotations

import copy
import os
import re

import torch
from transformers import AttentionInterface, AutoModelForCausalLM
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

from ..core.errors import ModelError
from ..core.model_facts import ModelFactsError, facts_from_config
from .kv_cache import forward_with_cache, read_cache
from .probes import cuda_free_bytes, host_total_bytes

# Fields that never reach the cache, shrunk in a replica (MLP and expert widths), and what they become.
_WIDTH_FIELDS = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size",
                 "ffn_hidden_size", "expert_intermediate_size", "n_inner", "mlp_hidden_size")
_EXPERT_COUNT_FIELDS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")
_TOP_K_FIELDS = ("num_experts_per_tok", "experts_per_token", "moe_topk", "top_k", "top_k_experts", "moe_top_k",
                 "num_experts_per_token")
_PER_LAYER_STRINGS = ("hybrid_override_pattern",)  # one character per layer
# The SSD (Mamba-2) scan's block length: how the state is computed, not what it is; the torch fallback
# pads every prefill to a whole block, so a small one keeps a CPU replica fast. Only shrunk in configs with
# a Mamba state (Llama 4's attention_chunk_size is a different field and is always kept).
_SCAN_CHUNK_FIELDS = ("chunk_size", "mamba_chunk_size")
_SSM_MARKERS = ("ssm_state_size", "mamba_d_state", "mamba_n_heads", "mamba_num_heads", "mamba_d_ssm")
REPLICA_SCAN_CHUNK = 8
REPLICA_WIDTH = 16
REPLICA_VOCAB = 512
REPLICA_HIDDEN = 64
CACHE_ONLY_ATTENTION = "kvreport_cache_only"


def register_cache_only_attention() -> str:
    """An attention function that returns zeros of the right shape. The cache is written by the model's
    own attention module before this is called (`cache.update(...)`), so every cached tensor is the
    model's; only the attention arithmetic, which never reaches the cache, is skipped. Used on replicas,
    whose timed experiments are skipped anyway: a prefill past a 8k-token chunk costs seconds, not minutes."""
    def cache_only_attention(module, query, key, value, attention_mask, **kwargs):
        batch, _heads, q_len, _ = query.shape
        return torch.zeros(batch, q_len, query.shape[1], value.shape[-1], dtype=query.dtype,
                           device=query.device), None

    AttentionInterface.register(CACHE_ONLY_ATTENTION, cache_only_attention)
    # Masks as for sdpa: some layers read the mask themselves (DeepSeek-V3.2 / GLM-5's sparse-attention
    # indexer picks its top-k keys under it).

    AttentionMaskInterface.register(CACHE_ONLY_ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    return CACHE_ONLY_ATTENTION


def instantiate(config, device, dtype, attention: str | None = None):
    prev = torch.get_default_dtype()
    torch.manual_seed(0)
    kwargs = {"attn_implementation": attention} if attention else {}
    try:
        torch.set_default_dtype(dtype)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, **kwargs)
    finally:
        torch.set_default_dtype(prev)
    model.to(dtype=dtype)
    model.config.use_cache = True
    return model.eval()


def meta_parameter_count(config) -> int:
    """Parameters of the model `config` describes, counted on the meta device (nothing allocated)."""
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def _n_layers(config) -> int:
    return int(config.num_hidden_layers)


def _per_layer_attrs(config) -> list[str]:
    """Config fields with one entry per layer (layer_types, a hybrid pattern string): kept, and cut to the
    built layers when a replica builds fewer."""
    n = _n_layers(config)
    out = []
    for attr, value in vars(config).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, (list, tuple)) and len(value) == n and n > 1:
            out.append(attr)
        elif attr in _PER_LAYER_STRINGS and isinstance(value, str) and len(value) == n:
            out.append(attr)
    return out


def _layer_signatures(config, facts) -> list[tuple]:
    """What makes two layers' caches alike: the facts' cache specs and every per-layer config field."""
    attrs = _per_layer_attrs(config)
    n = _n_layers(config)
    sigs = []
    for i in range(n):
        spec = facts.layers[i] if facts is not None and len(facts.layers) == n else None
        sigs.append((spec, tuple(getattr(config, a)[i] for a in attrs)))
    return sigs


def _cut_layers(config, n: int):
    attrs = _per_layer_attrs(config)
    for attr in attrs:
        setattr(config, attr, getattr(config, attr)[:n])
    config.num_hidden_layers = n
    return config


def _shrink(config, shrunk: dict) -> None:
    """MLP/expert widths, expert counts (top-k kept within them) and vocab: none of them reaches the cache."""
    def set_(attr, value):
        old = getattr(config, attr, None)
        if isinstance(old, int) and not isinstance(old, bool) and old > value:
            setattr(config, attr, value)
            shrunk[attr] = [old, value]

    for attr in _WIDTH_FIELDS:
        set_(attr, REPLICA_WIDTH)
    top_k = max([getattr(config, a) for a in _TOP_K_FIELDS if isinstance(getattr(config, a, None), int)] or [1])
    n_group = getattr(config, "n_group", None) or 1
    topk_group = getattr(config, "topk_group", None) or n_group
    # DeepSeek-style group routing scores each group by its top-2 experts and picks top-k among topk_group
    # groups: every group needs at least 2 experts and the chosen groups at least top-k in all.
    experts = n_group * max(2, -(-top_k // topk_group)) if n_group > 1 else max(2, top_k)
    for attr in _EXPERT_COUNT_FIELDS:
        set_(attr, experts)
    set_("vocab_size", REPLICA_VOCAB)
    if any(getattr(config, m, None) is not None for m in _SSM_MARKERS):
        for attr in _SCAN_CHUNK_FIELDS:
            set_(attr, REPLICA_SCAN_CHUNK)
    for attr, value in list(vars(config).items()):
        if attr.endswith("_token_id") and isinstance(value, int) and value >= getattr(config, "vocab_size", 0):
            setattr(config, attr, None)
            shrunk[attr] = [value, None]


def _probe_layer_bytes(config, prefix: int, hidden: int) -> list[int] | None:
    """Per-layer cache bytes of a `prefix`-layer build at hidden width `hidden` after 3 tokens, or None
    when the architecture cannot be built at that width."""
    probe = _cut_layers(copy.deepcopy(config), prefix)
    probe.hidden_size = hidden
    try:
        model = instantiate(probe, "cpu", torch.float32, register_cache_only_attention())
        with torch.no_grad():
            _, cache = forward_with_cache(model, torch.zeros(1, 3, dtype=torch.long))
        return [layer.total_bytes for layer in read_cache(cache)]
    except Exception:  # noqa: BLE001 - a width the architecture rejects means: keep the published width
        return None


def _prefix_length(sigs: list[tuple]) -> tuple[int, list[int]]:
    """The shortest prefix holding a layer of every distinct signature, and for each layer the prefix layer
    that stands for it."""
    first: dict = {}
    for i, sig in enumerate(sigs):
        first.setdefault(sig, i)
    return max(first.values()) + 1, [first[sig] for sig in sigs]


def model_budget_bytes(device) -> int:
    """Bytes of weights a build may take: KVREPORT_MODEL_BUDGET_GB, else 60% of free GPU memory, or on
    the CPU min(8 GiB, 25% of RAM)."""
    raw = os.environ.get("KVREPORT_MODEL_BUDGET_GB")
    if raw:
        # ASCII digits only (float() would take '١٢'), finite, positive and below a petabyte
        if not re.fullmatch(r"[0-9]{1,7}(\.[0-9]{1,6})?", raw.strip()) or float(raw) <= 0:
            raise ModelError(f"environment variable KVREPORT_MODEL_BUDGET_GB={raw[:40]!r}: expected a number of "
                             "GiB above 0, e.g. 8 or 0.5")
        return int(float(raw) * 2**30)
    if getattr(device, "type", str(device)) == "cuda":
        return int(0.6 * cuda_free_bytes(device)[0])

    return int(min(8 * 2**30, 0.25 * host_total_bytes()))


def plan_replica(config, raw: dict | None, dtype_bytes: int, budget_bytes: int, facts=None,
                 force: bool | str = False) -> tuple[object, dict | None, list[int] | None]:
    """(config to build, replica record or None for the model itself, layer map or None).

    The model itself when its weights fit the budget (and not `force`); else a KV-faithful replica: every
    attention field and the layer pattern kept, MLP/expert widths, expert count and vocab shrunk, the hidden
    width too when two probe builds at different widths hold the same cache; and where even that does not
    fit, one layer per distinct cache kind (the shortest prefix holding each), the others measured as it.
    `force`: True builds a replica even when the model fits; "per_kind" builds the one-layer-per-kind replica
    whatever the budget (the smallest build: tests)."""
    full_params = meta_parameter_count(config)
    if not force and full_params * dtype_bytes <= budget_bytes:
        return config, None, None
    replica = copy.deepcopy(config)
    shrunk: dict = {}
    _shrink(replica, shrunk)
    if facts is None and raw is not None:
        facts = _facts_or_none(raw)
    sigs = _layer_signatures(replica, facts)
    prefix, layer_map = _prefix_length(sigs)
    hidden = int(replica.hidden_size)
    if hidden > REPLICA_HIDDEN:
        small = _probe_layer_bytes(replica, prefix, REPLICA_HIDDEN)
        if small is not None and small == _probe_layer_bytes(replica, prefix, 2 * REPLICA_HIDDEN):
            replica.hidden_size = REPLICA_HIDDEN
            shrunk["hidden_size"] = [hidden, REPLICA_HIDDEN]
    record = {"of": getattr(config, "model_type", None), "layers": _n_layers(config), "shrunk": shrunk,
              "full_parameters": full_params, "attention": f"{CACHE_ONLY_ATTENTION} (zeros; the cache is "
              "written by the model's own attention module)", "weights": "random"}
    if "hidden_size" not in shrunk and hidden > REPLICA_HIDDEN:
        record["hidden_size_kept"] = "the cache depends on it (probe builds at two widths differ)"
    params = meta_parameter_count(replica)
    per_kind = force == "per_kind"
    if (not per_kind and params * dtype_bytes <= budget_bytes) or prefix == _n_layers(config):
        record.update(instantiated="all layers", layers_built=_n_layers(config), parameters=params)
        return replica, record, None
    _cut_layers(replica, prefix)
    params = meta_parameter_count(replica)
    if params * dtype_bytes > budget_bytes and not per_kind:
        raise ModelError(f"{getattr(config, 'model_type', '?')}: even one layer per cache kind ({prefix} layers, "
                         f"{params * dtype_bytes / 2**30:,.1f} GiB) exceeds the build budget of "
                         f"{budget_bytes / 2**30:,.1f} GiB (KVREPORT_MODEL_BUDGET_GB)")
    record.update(instantiated=f"layers 0..{prefix - 1} of {_n_layers(config)}: one of each cache kind; the "
                  "others are measured as the built layer of the same kind", layers_built=prefix,
                  parameters=params, layer_map=layer_map)
    return replica, record, layer_map


def _facts_or_none(raw: dict):
    try:
        return facts_from_config(raw)
    except ModelFactsError:
        return None
