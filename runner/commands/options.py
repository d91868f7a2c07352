"""Option values more than one command parses, parsed one way: each is a whole or finite number in a stated
range, or one UserError naming the option (exit 2), never a traceback or a figure from inf or nan.

The ceilings are sanity bounds far past any real setting, not facts about hardware or engines: they keep an
absurd value (1e308, 2**63) from becoming an overflow, an inf in the output or a run that never ends."""
from __future__ import annotations

import math

from ..core.engine import parse_size
from ..core.errors import UserError

TOKENS_MAX = 10**12       # a sequence, a pool or a block of tokens
COUNT_MAX = 1_000_000     # GPUs, sequences in a batch, CPUs
BYTES_MAX = 2**50         # 1 PiB of GPU, host or KV memory
RATE_MIN, RATE_MAX = 1e-3, 1e6  # tokens per second of one request (below: hold times overflow to inf)


def whole(option: str, value: int, low: int = 1, high: int = COUNT_MAX) -> int:
    """A whole number in [low, high], else a UserError naming `option`."""
    if not low <= value <= high:
        raise UserError(f"{option} {value}: expected a whole number from {low:,} to {high:,}")
    return value


def finite(option: str, value: float, low: float, high: float, unit: str = "") -> float:
    """A finite number in [low, high], else a UserError naming `option`."""
    if not (math.isfinite(value) and low <= value <= high):
        raise UserError(f"{option} {value}: must be a finite number >= {low:g} and <= {high:g}"
                        + (f" ({unit})" if unit else ""))
    return float(value)


def size(option: str, text: str) -> int:
    """'80GB', '3.81GiB', ... -> bytes (engine.parse_size), at least one byte and at most BYTES_MAX."""
    try:
        n = parse_size(text, option)
    except OverflowError:  # a finite number whose bytes are not (1e300GB)
        n = BYTES_MAX + 1
    if not 1 <= n <= BYTES_MAX:
        raise UserError(f"{option} {text}: expected a size from 1 byte to {BYTES_MAX // 2**40:,} TiB, such as 80GB")
    return n


def token_counts(option: str, text: str, example: str) -> list[int]:
    """'4096,32768' -> [4096, 32768]; anything but whole numbers from 1 to TOKENS_MAX is one UserError naming
    `option`."""
    try:
        values = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"{option} {text}: expected comma-separated token counts, e.g. {example}") from None
    if not values or any(not 1 <= v <= TOKENS_MAX for v in values):
        raise UserError(f"{option} {text}: expected comma-separated token counts from 1 to {TOKENS_MAX:,}, "
                        f"e.g. {example}")
    return values
