"""`kvreport audit`: token audits of LLM traffic logs (filled in by the token-audit work)."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    return None
