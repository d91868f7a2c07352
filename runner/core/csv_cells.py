"""Spreadsheet-safe CSV cells (OWASP "CSV injection"): a text cell a spreadsheet would run as a formula gets a
leading single quote; control bytes (a NUL, a BEL) are written as \\xNN. Numbers stay numbers: only text is
touched, and text that is a plain number ("-5", "+1.5e3") is left as it is."""
from __future__ import annotations

import re

from .untrusted import quoted

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_CONTROL_BYTES = [c for c in range(32) if chr(c) not in "\t\n\r"] + [127]
_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c in _CONTROL_BYTES) + "]")


def csv_safe_text(text: str) -> str:
    """One text cell as a spreadsheet may open it without running anything."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def csv_safe_sql(column: str) -> str:
    """csv_safe_text as a DuckDB expression on a VARCHAR column, named as the column."""
    col = quoted(column)
    escaped = col
    for c in _CONTROL_BYTES:
        escaped = f"replace({escaped}, chr({c}), '\\x{c:02x}')"
    formula = "regexp_matches(" + col + ", '^[=+@\\-' || chr(9) || chr(13) || ']')"
    number = "regexp_matches(" + col + ", '" + _PLAIN_NUMBER.pattern + "')"
    return f"CASE WHEN {formula} AND NOT {number} THEN chr(39) || {escaped} ELSE {escaped} END AS {col}"
