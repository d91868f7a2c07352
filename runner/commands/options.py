"""Option values more than one command parses, parsed one way."""
from __future__ import annotations

from ..core.errors import UserError


def token_counts(option: str, text: str, example: str) -> list[int]:
    """'4096,32768' -> [4096, 32768]; anything but positive whole numbers is one UserError naming `option`."""
    try:
        values = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"{option} {text}: expected comma-separated token counts, e.g. {example}") from None
    if not values or any(v < 1 for v in values):
        raise UserError(f"{option} {text}: expected comma-separated token counts >= 1, e.g. {example}")
    return values
