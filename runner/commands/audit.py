"""`kvreport audit`: token audits of LLM traffic logs (PCER, SPOR, KV footprint and leakage, bloat). Parses the
options into an AuditRequest, calls the library (runner/audit/api.py) and prints what it stored (output.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..audit.defaults import DEFAULT_GPU, DEFAULT_MEMORY_LIMIT
from .output import Output, audit_lines


def audit(
    paths: Annotated[list[Path], typer.Argument(help="Log files (shapes: see --format): API responses, batch "
                                                     "results, LiteLLM and Langfuse logs, OpenTelemetry exports, "
                                                     "session records. Folders (every file in them) and quoted "
                                                     "globs ('logs/2026-11-*.jsonl.gz') too; .gz and .zst are "
                                                     "read as they are.")],
    format: Annotated[str, typer.Option("--format", help="auto (exact: a record two formats accept is an error), "
                                                         "sessions, openai, anthropic (JSONL envelopes), otel, "
                                                         "openai-chat, openai-response, anthropic-message (bare API "
                                                         "objects), openai-batch, anthropic-batch (batch results), "
                                                         "litellm, langfuse.")] = "auto",
    model: Annotated[str | None, typer.Option(help="Open model whose KV bytes/token price the tokens (measured at "
                                                   "16 bits in the DB if there, else the formula at 16 bits). "
                                                   "Without it (or --kv-bytes-per-token) KV is not priced.")] = None,
    kv_bytes_per_token: Annotated[float | None, typer.Option(help="KV cache bytes per token, instead of --model "
                                                                  "(e.g. for an API model).")] = None,
    db: Annotated[Path, typer.Option(help="DuckDB file to store the audit in.")] = Path("kvreport.duckdb"),
    tokenizer: Annotated[str | None, typer.Option(help="Local tokenizer.json (or folder) to count tokens in logged "
                                                       "message content. Never downloads.")] = None,
    idle_timeout: Annotated[float, typer.Option(help="Seconds after its last activity a session counts as idle "
                                                     "(leaked KV).")] = 300.0,
    strict: Annotated[bool, typer.Option("--strict", help="Fail (store nothing) if any record is rejected.")] = False,
    spor_max: Annotated[float, typer.Option(help="Guardrail: warn when a session's SPOR exceeds this.")] = 0.85,
    kv_max_mb: Annotated[float | None, typer.Option(help="Guardrail: warn when a session's KV footprint exceeds "
                                                         "this many MB (10^6 bytes). Default: 1/max_num_seqs of "
                                                         "--gpu's memory (vLLM's default batch; the token-audit "
                                                         "article used 15).")] = None,
    memory_limit: Annotated[str, typer.Option(help="DuckDB memory limit while auditing (it spills to disk "
                                                   "beyond it); the process peaks about 150 MB above it.")
                            ] = DEFAULT_MEMORY_LIMIT,
    prices: Annotated[Path | None, typer.Option(help="TOML or JSON file of USD-per-million-token rates that "
                                                     "override genai-prices (negotiated prices, self-hosted "
                                                     "models).")] = None,
    gpu_hour_price: Annotated[float | None, typer.Option(help="USD per GPU-hour: turns idle KV memory (and what "
                                                              "each TTL frees) into GPU-hours and dollars.")] = None,
    gpu: Annotated[str, typer.Option(help="The GPU idle KV, the TTL sweep and the KV guardrail are set against: "
                                          "its whole memory (weights not subtracted). H100, H200, or any name with "
                                          "a size: "
                                          "'A100 40GB', '48GB'.")] = DEFAULT_GPU,
    session_key: Annotated[list[str] | None, typer.Option(
        "--session-key", help="JSON path of the session id in each record, e.g. metadata.conversation_id or "
                              "'request.headers.\"x-session-id\"'. Repeatable: the first non-null wins. Replaces "
                              "the format's own session fields; a call with none is its own session.")] = None,
    time_key: Annotated[str | None, typer.Option(
        "--time-key", help="JSON path of each call's time (ISO-8601 or Unix s/ms/us/ns), replacing the format's "
                           "own.")] = None,
    since: Annotated[str | None, typer.Option(help="Audit only calls at or after this time (ISO 8601; no offset: "
                                                   "UTC). Calls outside the window, or without a time, are "
                                                   "skipped.")] = None,
    until: Annotated[str | None, typer.Option(help="Audit only calls before this time (ISO 8601; no offset: "
                                                   "UTC).")] = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS",
        help="Run the audit as Ray tasks (pip install 'kvreport[ray]'), with the same results: 'local' starts a "
             "Ray on this machine; 'auto' or ray://HOST:10001 use that cluster.")] = None,
    ray_workers: Annotated[int | None, typer.Option(help="CPUs of the local Ray that --ray starts (default: all "
                                                         "of this machine's).")] = None,
    ray_scratch: Annotated[Path | None, typer.Option(help="Folder for --ray's intermediate Parquet (removed "
                                                          "afterwards); on a multi-node cluster one every node "
                                                          "mounts. Default: the system temp folder.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the audit's id, its counts and the DB "
                                                              "file: no notes, no progress, no figures.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print each file's lines and lines/s as it "
                                                                  "is read (a terminal shows them in the bar).")
                       ] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Print the steps the audit would run (and skip) for "
                                                            "these files and options, and why; read and store "
                                                            "nothing.")] = False,
):
    """Audit LLM traffic logs: PCER, SPOR, KV-cache footprint and leakage, TTL eviction, prompt bloat."""
    from ..audit.api import AuditRequest, audit as audit_logs  # here, not above: `audit --help` needs neither

    request = AuditRequest(fmt=format, model=model, kv_bytes_per_token=kv_bytes_per_token, tokenizer=tokenizer,
                           idle_timeout=idle_timeout, strict=strict, spor_max=spor_max, kv_max_mb=kv_max_mb,
                           memory_limit=memory_limit, prices=prices, gpu_hour_price=gpu_hour_price, gpu=gpu,
                           session_keys=tuple(session_key or ()), time_key=time_key, since=since, until=until,
                           ray=ray, ray_workers=ray_workers, ray_scratch=ray_scratch)
    if explain:
        from ..audit.explain import plan_lines

        typer.echo("\n".join(plan_lines(paths, request)))
        return
    with Output(quiet=quiet, verbose=verbose) as out:
        result = audit_logs(paths, request, db=db, on_event=out, progress=out.wants_progress)
    out.result(audit_lines(result, request))


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
