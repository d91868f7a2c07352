"""The words kvreport stores and judges with, defined once as str enums: each member IS its word (equal to the
string, stored, bound, written to JSON and rendered as the word itself), so a DB row or a page reads the same
as a plain string would.

Verdict: a claim's verdict in the claims ledger (analysis/claims.py); Change: a metric's change between two
runs of one configuration (analysis/regressions.py); CacheKind: what a layer keeps per token or per sequence
(runner/core/model_facts).
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A stored word: str() and format() give the word itself (as enum.StrEnum, which Python 3.10 lacks)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Verdict(Word):
    """A claim's verdict, in the order the claims page's legend lists them."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    DIFFERS_BY_HARDWARE = "differs by hardware"
    EXPECTED = "expected"
    INCONSISTENT = "inconsistent"
    UNSUPPORTED = "unsupported"
    GPU_PENDING = "not yet measured on a GPU"  # a GPU measurement with only CPU evidence (claims_verdicts.sql)
    NOT_MEASURED = "not measured"


class Change(Word):
    """How one metric moved from a baseline run to a later run of the same configuration."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    WITHIN_NOISE = "within noise"  # the medians moved, the interquartile ranges still overlap
    CHANGED = "changed"  # moved, and the metric says neither lower nor higher is better
    UNCHANGED = "unchanged"
    NOT_COMPARABLE = "not comparable"


class CacheKind(Word):
    """What one layer of a model keeps in its cache, as the model facts name it."""

    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MLA_LATENT = "mla_latent"
    MLA_PER_HEAD = "mla_per_head"
    LINEAR_STATE = "linear_state"
    MAMBA_STATE = "mamba_state"
    CONV_STATE = "conv_state"
    RWKV_STATE = "rwkv_state"
    NONE = "none"
