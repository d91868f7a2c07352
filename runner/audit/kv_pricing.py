"""What a session's context costs in KV-cache bytes, and how much memory there is to hold it.

A session of t tokens holds kv_bytes_at(t) = t x bytes_per_token - sum over caps of b x max(0, t - cap)
+ constant_bytes (sql/setup/macros.sql): every layer adds its bytes per token until its cap (a sliding window - 1, a
chunk - 1), and Mamba / linear-attention layers hold a constant state. The curve comes from the model's config
alone (runner/core/model_facts.py: no torch, no transformers), so an audit starts fast and `--model` takes a catalogue
name, a built-in name, a config.json or a checkpoint folder. For a model whose cache has neither caps nor
constant states the curve is a straight line, and a measurement in the DB (cache_tensors) replaces its slope.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.model_facts import ModelFactsError, load
from .defaults import DEFAULT_GPU
from .sqlfiles import run_sql, value

# Distinct caps the SQL curve has slots for (sql/setup/macros.sql kv_bytes_at); real models have one or two.
CAP_SLOTS = 3
PRICING_DTYPE = "bfloat16"  # serving precision: the audit prices 16-bit caches


@dataclass(frozen=True)
class Pricing:
    bytes_per_token: float
    source: str   # 'measured' | 'formula' | 'given'
    detail: str
    # (bytes per token that stop growing at cap, cap in tokens), one per distinct cap; and the constant states
    capped: tuple[tuple[float, int], ...] = ()
    constant_bytes: float = 0.0

    @property
    def priced(self) -> bool:
        """False for UNPRICED: the audit runs on token counts and stores no KV byte figure."""
        return self.source != UNPRICED_SOURCE

    @property
    def stored_bytes_per_token(self) -> float | None:
        """What the audits row records as the KV bytes per token: none when the audit is not priced."""
        return self.bytes_per_token if self.priced else None

    def kv_bytes_at(self, tokens: int) -> float:
        """The curve sql/setup/macros.sql kv_bytes_at computes, in Python (for messages and tests)."""
        return tokens * self.bytes_per_token - sum(b * max(0, tokens - cap) for b, cap in self.capped) + \
            self.constant_bytes

    def curve(self) -> dict:
        """The SQL parameters of the curve: bytes_per_token, kv_constant_bytes and CAP_SLOTS (bytes, cap) pairs."""
        if len(self.capped) > CAP_SLOTS:
            raise ValueError(f"{len(self.capped)} distinct caps; the audit's curve has {CAP_SLOTS} slots")
        slots = list(self.capped) + [(0.0, 0)] * (CAP_SLOTS - len(self.capped))
        out = {"bytes_per_token": float(self.bytes_per_token), "kv_constant_bytes": float(self.constant_bytes)}
        for i, (b, cap) in enumerate(slots, 1):
            out[f"kv_cap_bytes_{i}"], out[f"kv_cap_{i}"] = float(b), int(cap)
        return out


@dataclass(frozen=True)
class Memory:
    bytes: int | None
    source: str | None
    gpu: str | None = None  # the --gpu name it is the memory of; None: measured or assumed memory


def formula(model: str, facts=None) -> Pricing:
    """The curve from the model's config (runner/core/model_facts.py), at 16 bits."""
    facts = facts or load(model)
    per_token, capped, constant = facts.pricing_terms(PRICING_DTYPE)
    if len(capped) > CAP_SLOTS:
        raise UserError(f"--model {model}: {len(capped)} distinct attention windows; the audit prices at most "
                        f"{CAP_SLOTS}")
    kinds = ", ".join(f"{g['count']} {g['kind']}" for g in facts.groups())
    detail = f"formula for {model} ({kinds} layers; 16-bit): {per_token:,} B/token"
    if capped:
        detail += "; " + "; ".join(f"{b:,} B/token of it stop growing at {cap:,} tokens" for b, cap in capped)
    if constant:
        detail += f"; plus {constant:,} B of constant state per session"
    if capped or constant:
        detail += " (each session priced at its own length)"
    detail += " (no measurement in the DB)" if not (capped or constant) else ""
    return Pricing(float(per_token), "formula", detail, tuple((float(b), int(c)) for b, c in capped), float(constant))


def _has(con, table: str, column: str | None = None) -> bool:
    return value(con, "kv/has_column", table=table, column=column)


def measured(con, model: str) -> Pricing | None:
    """The newest measurement of `model` in the DB from a 16-bit run (what serving uses and the audit prices)."""
    if con is None or not (_has(con, "cache_tensors") and _has(con, "runs")):
        return None
    row = run_sql(con, "kv/measured", model=model).fetchone()
    if row is None:
        return None
    run_id, dtype, seq, bpt = row
    return Pricing(float(bpt), "measured",
                   f"measured for {model}: {bpt:,.0f} B/token from the cache tensors of run {run_id} "
                   f"({dtype}, {seq}-token prefill)")


MODEL_HINT = ("--model takes an open model whose cache you would serve this traffic with (a built-in name, see "
              "`kvreport models`, a config.json or a checkpoint folder): API models such as gpt-4o publish no "
              "architecture. Or give the cache size itself with --kv-bytes-per-token N")

UNPRICED_SOURCE = "not priced"
# No --model and no --kv-bytes-per-token: the audit runs its KV curve at one "byte" per token, so the shares it
# keeps (the leakage index, the TTL sweep's freed share and capacity multiplier) are shares of token-seconds, the
# same as of byte-seconds for any cache that grows linearly with its tokens, and every byte figure is stored as
# NULL (metrics/unpriced.sql). No model is guessed: a stand-in's bytes would read as this traffic's.
UNPRICED = Pricing(1.0, UNPRICED_SOURCE, "not priced (no --model or --kv-bytes-per-token)")
UNPRICED_NOTICE = ("KV cache not priced: no --model or --kv-bytes-per-token, so the audit stores no KV bytes, KV "
                   "guardrail or idle-KV dollars. To price it, give --model naming an open model that would serve "
                   "this traffic (`kvreport models` lists the built-in ones; or a config.json), or "
                   "--kv-bytes-per-token N.")


def given(bytes_per_token: float) -> Pricing:
    """A flat bytes/token figure the user gave (--kv-bytes-per-token), priced as given."""
    return Pricing(float(bytes_per_token), "given",
                   f"given with --kv-bytes-per-token: {bytes_per_token:,.0f} B/token, priced as given")


def kv_pricing(model: str | None, con=None) -> Pricing:
    """A straight-line model: its measured bytes/token when the DB has one, else the formula. A model with caps
    or constant states: the formula's curve, since one bytes/token figure cannot price every length.
    None: UNPRICED. A name that is neither a model nor measured in the DB: a UserError (api_model_hint for an
    API model's name, else the loader's message with MODEL_HINT)."""
    if model is None:
        return UNPRICED
    try:
        facts = load(model)
    except ModelFactsError as exc:
        found = measured(con, model)  # a model measured earlier whose config is not at hand
        if found is None:
            raise UserError(api_model_hint(model) or f"{exc}. {MODEL_HINT}") from None
        return found
    curve = formula(model, facts)
    if curve.capped or curve.constant_bytes:
        return curve
    return measured(con, model) or curve


def api_model_hint(model: str) -> str | None:
    """One line for an API model's name given to --model (one genai-prices lists, such as gpt-4o), else None."""
    try:
        from .dollars import _genai_model
        found, _ = _genai_model(None, model)
    except Exception:  # noqa: BLE001 - no price data at hand: the generic hint is said instead
        return None
    if found is None:
        return None
    provider = found[0].id
    return (f"--model {model}: an API model ({provider}'s, per genai-prices), whose architecture and so KV bytes "
            "per token are not published; --model takes an open model that would serve this traffic (see "
            "`kvreport models`, or a config.json), or give --kv-bytes-per-token N")


# Memory of GPUs named without a size, in datasheet GB (10^9 bytes). H100 SXM: 80 GB HBM3
# (glennklockwood.com/garden/processors/h100, "Specifications"); H200: 141 GB HBM3e
# (lzwjava.github.io/nvidia-h200-gpu-specs-en, table "GPU Memory"). A name with a size ("A100 40GB", "48GB")
# is priced at that size.
GPU_MEMORY_GB = {"H100": 80.0, "H200": 141.0}
_GPU_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)


def gpu_memory(gpu: str) -> Memory:
    """The memory that idle KV and the TTL sweep are set against: the whole memory of the named GPU (`--gpu`),
    never a figure from whatever run the DB holds, so one audit prices the same in any DB. Weights and
    activations are not subtracted (the serving model is not known here), so sessions that fit and idle
    GPU-hours are figures for a GPU given over to KV. Raises UserError for a name without a size or
    a known one."""
    name = " ".join(str(gpu).split())
    m = _GPU_SIZE.search(name)
    gb = float(m.group(1)) if m else next((v for k, v in GPU_MEMORY_GB.items()
                                            if re.fullmatch(rf"(nvidia\s+)?{k}(\s+\w+)?", name, re.IGNORECASE)), None)
    if not gb or gb <= 0:
        raise UserError(f"--gpu {gpu!r}: no memory size known for it; give one with the name, e.g. "
                        f"'A100 40GB' or '48GB' (known without a size: {', '.join(GPU_MEMORY_GB)})")
    return Memory(int(gb * 1e9), f"the whole {gb:g} GB of one {name} (--gpu; default {DEFAULT_GPU}), weights "
                                 "not subtracted", name)
