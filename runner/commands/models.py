"""`kvreport models`: the built-in architectures and their formula KV bytes per token."""
from __future__ import annotations

import json
from typing import Annotated

import typer


def models(json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False):
    """List built-in architectures with their KV-cache geometry (formula bytes/token at 16-bit)."""
    from ..models import describe_builtin

    rows = describe_builtin()
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    header = f"{'name':<14} {'layers':>6} {'heads':>5} {'kv_heads':>8} {'head_dim':>8} {'window':>7} {'KV B/token (16-bit)':>20}"
    typer.echo(header)
    for r in rows:
        typer.echo(f"{r['name']:<14} {r['n_layers']:>6} {r['n_heads']:>5} {r['n_kv_heads']:>8} "
                   f"{r['head_dim']:>8} {r['sliding_window'] or '-':>7} {r['kv_bytes_per_token']:>20,}")


def register(app: typer.Typer) -> None:
    app.command("models")(models)
